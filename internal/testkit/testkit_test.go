package testkit

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// fatalRecorder is a testing.TB whose Fatalf records the failure and ends the goroutine,
// as the real one does, so that WaitFor's failure can be looked at.
type fatalRecorder struct {
	testing.TB
	failed string
}

func (r *fatalRecorder) Helper() {}

func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
	panic(r)
}

// runWaitFor runs WaitFor on a recorder and returns its failure, "" when it returned.
func runWaitFor(timeout time.Duration, cond func() bool) (failed string) {
	r := &fatalRecorder{}
	defer func() {
		if p := recover(); p != nil && p != any(r) {
			panic(p)
		}
		failed = r.failed
	}()
	WaitFor(r, timeout, "the thing", cond)
	return ""
}

// TestWaitFor: WaitFor returns once cond holds, polling as often as it must, and fails
// naming what it waited for when the deadline passes first.
func TestWaitFor(t *testing.T) {
	for _, c := range []struct {
		name    string
		timeout time.Duration
		holdsAt int // the poll at which cond first holds; 0 never
		want    string
	}{
		{"at once", time.Second, 1, ""},
		{"after some polls", 5 * time.Second, 10, ""},
		{"never", 100 * time.Millisecond, 0, "timed out after 100ms waiting for the thing"},
	} {
		t.Run(c.name, func(t *testing.T) {
			polls := 0
			start := time.Now()
			got := runWaitFor(c.timeout, func() bool {
				polls++
				return c.holdsAt != 0 && polls >= c.holdsAt
			})
			if got != c.want {
				t.Fatalf("failure %q, want %q", got, c.want)
			}
			if c.want == "" && polls != c.holdsAt {
				t.Errorf("cond polled %d times, want %d", polls, c.holdsAt)
			}
			if c.want != "" && time.Since(start) < c.timeout {
				t.Errorf("failed after %v, before the timeout %v", time.Since(start), c.timeout)
			}
		})
	}
}

// TestNoGeneratedTypes: testkit links none of the module's generated protobuf types. A test
// binary that links them beside Vitess's (interop/) panics at start: both register
// binlogdata.proto and its neighbours under the same names.
func TestNoGeneratedTypes(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for dep := range strings.Lines(string(out)) {
		if strings.HasPrefix(dep, "github.com/vstream-cdc/vstream/gen/") {
			t.Errorf("testkit depends on %s", strings.TrimSpace(dep))
		}
	}
}

// TestSameLines: SameLines passes the same lines in the same order and fails on any other,
// showing both.
func TestSameLines(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want []string
		fails     bool
	}{
		{"same", []string{"BEGIN", "COMMIT"}, []string{"BEGIN", "COMMIT"}, false},
		{"none", nil, []string{}, false},
		{"other order", []string{"COMMIT", "BEGIN"}, []string{"BEGIN", "COMMIT"}, true},
		{"one more", []string{"BEGIN", "COMMIT", "VGTID"}, []string{"BEGIN", "COMMIT"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := &fatalRecorder{}
			func() {
				defer func() {
					if p := recover(); p != nil && p != any(r) {
						panic(p)
					}
				}()
				SameLines(r, "events", c.got, c.want)
			}()
			if failed := r.failed != ""; failed != c.fails {
				t.Fatalf("failed %v (%q), want %v", failed, r.failed, c.fails)
			}
			if c.fails && !strings.Contains(r.failed, "  "+strings.Join(c.got, "\n  ")) {
				t.Errorf("failure does not show the lines got:\n%s", r.failed)
			}
		})
	}
}
