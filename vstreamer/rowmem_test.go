package vstreamer

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/internal/testkit"
	"github.com/vstream-cdc/vstream/internal/testkit/evtext"
)

// TestBinlogRowsReuseMemory: with SendRetainsNothing the ROW events of the binlog are built
// in the memory of ROW events already sent, and every send still sees its rows as the same
// stream without reuse sends them: no event's memory is written over before its batch was
// sent. Whole rows (decoded in place) and rows a filter projects and selects both reuse;
// small batches and transactions of many sizes make events of every size come and go.
func TestBinlogRowsReuseMemory(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE rm_t (id INT PRIMARY KEY, val VARCHAR(200), n BIGINT)")
	start := headPos(t)
	for i := 1; i <= 60; i++ {
		var vals []string
		for j := 0; j < i%7+1; j++ {
			id := i*10 + j
			vals = append(vals, fmt.Sprintf("(%d, '%s', %d)", id, strings.Repeat("v", (id*13)%180), id*id))
		}
		testkit.MustExec(t, db, "INSERT INTO rm_t VALUES "+strings.Join(vals, ", "))
		testkit.MustExec(t, db, fmt.Sprintf("UPDATE rm_t SET val = CONCAT(val, 'u'), n = n + 1 WHERE id %% %d = 0", i%5+2))
		if i%4 == 0 {
			testkit.MustExec(t, db, fmt.Sprintf("DELETE FROM rm_t WHERE id < %d AND id %% 3 = 0", i*5))
		}
	}
	testkit.MustExec(t, db, "INSERT INTO rm_t VALUES (0, 'end', 0)")
	end := `ROW rm_t +[0 end 0]`
	for _, c := range []struct {
		name   string
		filter string
	}{
		{"whole rows", ""},
		{"projected and selected", "select n, id from rm_t where id < 400"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rows := func(reuse bool) (texts []string, reused int) {
				t.Helper()
				e := newEngine(t)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				seen := map[*binlogdata.RowChange]bool{}
				err := e.Stream(ctx, Request{Position: start, Filter: rules(&binlogdata.Rule{Match: "rm_t", Filter: c.filter}),
					SendRetainsNothing: reuse, MaxBatchBytes: 300}, func(evs []*binlogdata.VEvent) error {
					for _, ev := range evs {
						if ev.Type != binlogdata.VEventType_ROW {
							continue
						}
						for _, rc := range ev.RowEvent.RowChanges {
							if seen[rc] {
								reused++
							}
							seen[rc] = true
						}
						text := evtext.Short(ev)
						texts = append(texts, text)
						if strings.HasPrefix(text, "ROW rm_t +[0 ") {
							cancel()
						}
					}
					return nil
				})
				if err != nil && ctx.Err() == nil {
					t.Fatal(err)
				}
				return texts, reused
			}
			want, _ := rows(false)
			got, reused := rows(true)
			if c.filter == "" && (len(want) == 0 || want[len(want)-1] != end) {
				t.Fatalf("the stream without reuse ended with %v, want %s", want[max(len(want)-1, 0):], end)
			}
			if !slices.Equal(got, want) {
				for i := range min(len(got), len(want)) {
					if got[i] != want[i] {
						t.Fatalf("ROW event %d: with reuse %s, without %s", i, got[i], want[i])
					}
				}
				t.Fatalf("%d ROW events with reuse, %d without", len(got), len(want))
			}
			if reused == 0 {
				t.Error("no ROW event's memory was reused")
			}
		})
	}
}
