package vstreamer

import (
	"context"
	"flag"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/internal/testdb"
	"github.com/vstream-cdc/vstream/internal/testkit/evtext"
)

var db *testdb.Server

func TestMain(m *testing.M) {
	// Every test that streams rows checks rowcodec's decoding of them against go-mysql's.
	verifyRows = true
	os.Exit(testdb.RunTests(m, testdb.Options{Database: "test"}, &db))
}

// companion runs every test's streams beside another stream of their engine, which reads
// the whole binlog from the head: streams that start at the head then share its reader
// instead of having one to themselves (go test ./vstreamer/ -args -companion).
var companion = flag.Bool("companion", false, "run a companion stream on every test engine")

func newEngine(t testing.TB) *Engine {
	t.Helper()
	e := bareEngine(t)
	if *companion {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		started := make(chan struct{}, 1)
		go func() {
			defer close(done)
			// Its end (the test's end, or a fault meant for the test's stream) is not the test's.
			_ = e.Stream(ctx, Request{Position: CurrentPosition}, func([]*binlogdata.VEvent) error {
				select {
				case started <- struct{}{}:
				default:
				}
				return nil
			})
		}()
		select {
		case <-started:
		case <-done:
		case <-time.After(5 * time.Second):
		}
		t.Cleanup(func() { cancel(); <-done })
	}
	return e
}

// bareEngine is newEngine without a companion, for tests that set the engine up further.
func bareEngine(t testing.TB) *Engine {
	t.Helper()
	e, err := NewEngine(Config{Addr: db.Addr(), User: db.User(), Password: db.Password(), Database: "test", Keyspace: "ks"})
	if err != nil {
		t.Fatal(err)
	}
	// The engine's idle SQL connections would stay open for the pool's idle timeout.
	t.Cleanup(e.conns.Close)
	return e
}

// testStream is a running stream whose events are read by the test.
type testStream struct {
	t      testing.TB
	events chan *binlogdata.VEvent
	errc   chan error
	cancel context.CancelFunc
	seen   []string // short forms of the last events read, for failure messages
}

func startStream(t testing.TB, e *Engine, req Request) *testStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ts := &testStream{t: t, events: make(chan *binlogdata.VEvent, 100000), errc: make(chan error, 1), cancel: cancel}
	go func() {
		ts.errc <- e.Stream(ctx, req, func(evs []*binlogdata.VEvent) error {
			for _, ev := range evs {
				ts.events <- ev
			}
			return nil
		})
	}()
	t.Cleanup(ts.stop)
	return ts
}

func (ts *testStream) stop() {
	ts.cancel()
	select {
	case err := <-ts.errc:
		if err != nil {
			ts.t.Errorf("stream ended with %v", err)
		}
		ts.errc <- nil
	case <-time.After(10 * time.Second):
		ts.t.Error("stream did not stop")
	}
}

// next returns the next event that is not a heartbeat (unless heartbeats are wanted).
func (ts *testStream) next(heartbeats bool) *binlogdata.VEvent {
	ts.t.Helper()
	timeout := time.After(15 * time.Second)
	for {
		select {
		case ev := <-ts.events:
			if ev.Type == binlogdata.VEventType_HEARTBEAT && !heartbeats {
				continue
			}
			ts.seen = append(ts.seen, evtext.Short(ev))
			if len(ts.seen) > 20 {
				ts.seen = ts.seen[1:]
			}
			return ev
		case err := <-ts.errc:
			ts.errc <- err
			ts.t.Fatalf("stream ended early: %v", err)
		case <-timeout:
			ts.t.Fatalf("timed out waiting for an event; last events:\n  %s", strings.Join(ts.seen, "\n  "))
		}
	}
}

// expect reads len(want) events and compares their short forms. A want that is a bare event
// type ("ROW") matches any event of that type.
func (ts *testStream) expect(want ...string) []*binlogdata.VEvent {
	ts.t.Helper()
	var got []string
	var evs []*binlogdata.VEvent
	same := true
	for _, w := range want {
		ev := ts.next(false)
		evs = append(evs, ev)
		g := evtext.Short(ev)
		got = append(got, g)
		if g != w && (strings.Contains(w, " ") || ev.Type.String() != w) {
			same = false
		}
	}
	if !same {
		ts.t.Fatalf("events differ\n got:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	return evs
}

// onConn runs a stream's SQL uses on conn, for tests that build a stream by hand.
func onConn(conn *client.Conn) sqlUse {
	return func(f func(*client.Conn) error) error { return f(conn) }
}
