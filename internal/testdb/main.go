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
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutines left behind:", err)
			return 1
		}
	}
	return code
}
