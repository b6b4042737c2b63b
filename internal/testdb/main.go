package testdb

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// RunTests is the body of a package's TestMain: it starts a server into *srv, runs the
// tests, stops the server and fails the run if the tests left goroutines behind.
func RunTests(m *testing.M, opts Options, srv **Server) int {
	s, err := Start(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "start mariadb:", err)
		return 1
	}
	*srv = s
	code := m.Run()
	s.Close()
	if code == 0 {
		if err := goleak.Find(libraryLeaks...); err != nil {
			fmt.Fprintln(os.Stderr, "goroutines left behind:", err)
			return 1
		}
	}
	return code
}

// libraryLeaks are goroutines a library leaves behind by its own race, not the tests'.
var libraryLeaks = []goleak.Option{
	// nats.go v1.55.0 starts this goroutine at a JetStream context's first async publish; it
	// reads the status channel under the publisher's lock once it runs, and a publisher
	// closed before that (cleanupReplySub sets the channel to nil) leaves it waiting on a
	// nil channel for good.
	goleak.IgnoreTopFunction("github.com/nats-io/nats.go/jetstream.(*jetStream).resetPendingAcksOnReconnect"),
}
