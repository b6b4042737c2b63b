package sinktest

import (
	"fmt"
	"strings"
	"testing"
)

// recorder is a testing.TB that keeps what Check reports.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// Check fails on a duplicate, a missing change, a change out of order and a key split over
// two ordered sequences, and passes the records written.
func TestCheck(t *testing.T) {
	w := &Writer{perID: map[int][]int{1: {1, 3}, 2: {2}}}
	rec := func(id, seq int, order string) Got {
		return Got{Value: fmt.Appendf(nil, `{"before":"k%03d-s%08d","after":"k%03d-s%08d"}`, id, seq-1, id, seq), Order: order}
	}
	for _, tc := range []struct {
		name string
		got  []Got
		want string
	}{
		{"exact", []Got{rec(1, 1, "p0"), rec(2, 2, "p1"), rec(1, 3, "p0")}, ""},
		{"duplicate", []Got{rec(1, 1, "p0"), rec(2, 2, "p1"), rec(1, 3, "p0"), rec(1, 3, "p0")}, "more than once"},
		{"missing", []Got{rec(1, 1, "p0"), rec(1, 3, "p0")}, "key 2"},
		{"reordered", []Got{rec(1, 3, "p0"), rec(2, 2, "p1"), rec(1, 1, "p0")}, "key 1"},
		{"split", []Got{rec(1, 1, "p0"), rec(2, 2, "p1"), rec(1, 3, "p2")}, "two ordered sequences"},
	} {
		r := &recorder{TB: t}
		w.Check(r, tc.got)
		all := strings.Join(r.errs, "\n")
		if (tc.want == "") != (len(r.errs) == 0) || !strings.Contains(all, tc.want) {
			t.Errorf("%s: Check reported %q, want %q", tc.name, all, tc.want)
		}
	}
}
