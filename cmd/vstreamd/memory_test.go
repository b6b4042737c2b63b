package main

import (
	"math"
	"runtime/debug"
	"testing"
)

// TestMemoryBudget: the soft memory limit follows the open streams, unless GOMEMLIMIT is set.
func TestMemoryBudget(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	for _, tc := range []struct {
		name      string
		gomemlim  string
		streams   []int
		wantLimit int64
	}{
		{name: "no stream", streams: nil, wantLimit: 16 << 20},
		{name: "one stream", streams: []int{1}, wantLimit: 40 << 20},
		{name: "streams open and end", streams: []int{1, 2, 3, 2}, wantLimit: 64 << 20},
		{name: "GOMEMLIMIT set", gomemlim: "1GiB", streams: []int{1, 2}, wantLimit: math.MaxInt64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			debug.SetMemoryLimit(math.MaxInt64)
			set := memoryBudget(func(k string) string {
				if k == "GOMEMLIMIT" {
					return tc.gomemlim
				}
				return ""
			})
			if (set == nil) != (tc.gomemlim != "") {
				t.Fatalf("memoryBudget returned %v with GOMEMLIMIT %q", set != nil, tc.gomemlim)
			}
			for _, n := range tc.streams {
				if set != nil {
					set(n)
				}
			}
			if got := debug.SetMemoryLimit(-1); got != tc.wantLimit {
				t.Errorf("memory limit %d, want %d", got, tc.wantLimit)
			}
		})
	}
}
