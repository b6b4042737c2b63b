package client

import (
	"fmt"
	"testing"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
)

// A Snapshot request stays pending, and is asked again on every new stream, until a resume
// point comes after the server reported the copy of its table (progress or its
// COPY_COMPLETED): a stream resumed from that point goes on with the copy.
func TestSnapshotPending(t *testing.T) {
	progress := func(table string) []*vstreamv1.CopyProgress {
		return []*vstreamv1.CopyProgress{{Table: table, RowsCopied: 10}}
	}
	completed := func(table string) []*binlogdata.VEvent {
		return []*binlogdata.VEvent{{Type: binlogdata.VEventType_COPY_COMPLETED,
			LastPKEvent: &binlogdata.LastPKEvent{TableLastPK: &binlogdata.TableLastPK{TableName: table}}}}
	}
	type batch struct {
		events   []*binlogdata.VEvent
		progress []*vstreamv1.CopyProgress
		resumed  bool
	}
	for _, tc := range []struct {
		name    string
		asked   []Snapshot
		batches []batch
		// pending is what a new stream asks again.
		pending string
	}{
		{"not begun", []Snapshot{{Tables: []string{"a"}}}, nil, "[{[a] }]"},
		{"a resume point before the copy began", []Snapshot{{Tables: []string{"a"}}}, []batch{{resumed: true}}, "[{[a] }]"},
		{"begun, no resume point since", []Snapshot{{Tables: []string{"a"}}}, []batch{{progress: progress("a")}}, "[{[a] }]"},
		{"begun, then a resume point", []Snapshot{{Tables: []string{"a"}}}, []batch{{progress: progress("a")}, {resumed: true}}, "[]"},
		{"progress and resume point in one batch", []Snapshot{{Tables: []string{"a"}}}, []batch{{progress: progress("a"), resumed: true}}, "[]"},
		{"ended by COPY_COMPLETED", []Snapshot{{Tables: []string{"a"}}}, []batch{{events: completed("a"), resumed: true}}, "[]"},
		{"another table's copy", []Snapshot{{Tables: []string{"a"}}}, []batch{{progress: progress("b"), resumed: true}}, "[{[a] }]"},
		{"grouped by condition", []Snapshot{{Tables: []string{"b", "a"}}, {Tables: []string{"c"}, Where: "id > 5"}}, nil, "[{[a b] } {[c] id > 5}]"},
		{"asked again replaces the condition", []Snapshot{{Tables: []string{"a"}, Where: "id > 5"}, {Tables: []string{"a"}}}, nil, "[{[a] }]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &stream{}
			for _, sn := range tc.asked {
				s.addSnapshot(sn)
			}
			for _, b := range tc.batches {
				s.snapshotProgress(b.events, b.progress, b.resumed)
			}
			if got := fmt.Sprint(s.pendingSnapshots()); got != tc.pending {
				t.Fatalf("pending %s, want %s", got, tc.pending)
			}
		})
	}
}
