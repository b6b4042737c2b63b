// Package testkit holds what tests across the module share and would otherwise write again
// in each package: SQL run on a test server that fails the test on error (MustExec), a wait
// for a condition with a deadline (WaitFor), the short one-line form of a stream event the
// engine's tests compare against (Short), and a vstreamd process on a port of its own
// (Vstreamd).
package testkit

import (
	"testing"
	"time"

	"github.com/vstream-cdc/vstream/internal/testdb"
)

// MustExec runs sqls on db's default database in order and fails the test at the first
// that errs.
func MustExec(t testing.TB, db *testdb.Server, sqls ...string) {
	t.Helper()
	if err := db.Exec(sqls...); err != nil {
		t.Fatal(err)
	}
}

// WaitFor polls cond until it holds, and fails the test when timeout passes first; what
// names the awaited state in the failure. The first polls come within a millisecond, so
// that a test of something quick stays quick; the pause grows to 50ms, so that an
// expensive cond (a broker read, a query) is not run in a busy loop.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	pause := time.Millisecond
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(pause)
		pause = min(2*pause, 50*time.Millisecond)
	}
}
