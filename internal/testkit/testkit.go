// Package testkit holds what tests across the module share and would otherwise write again
// in each package: SQL run on a test server that fails the test on error (MustExec), a wait
// for a condition with a deadline (WaitFor), a comparison of event lines (SameLines) and a
// vstreamd process on a port of its own (Vstreamd). Its subpackage evtext renders stream
// events as those lines.
//
// testkit links none of the module's generated protobuf types, so that interop/, whose test
// binary links Vitess's own under the same names, can use it too (TestNoGeneratedTypes).
package testkit

import (
	"slices"
	"strings"
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

// SameLines fails the test unless got and want are the same lines in the same order, showing
// both one line each.
func SameLines(t testing.TB, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s: lines differ\n got:\n  %s\nwant:\n  %s", what, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}
