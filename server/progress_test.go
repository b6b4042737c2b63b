package server

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/internal/testkit"
)

// TestCopyProgress: a copy of a table of several chunks tells the client, with each chunk's
// LASTPK (or, in another format, the chunk's messages), how many rows of the table are copied
// and how many the server estimates it has.
func TestCopyProgress(t *testing.T) {
	for _, format := range []string{"", "debezium-json"} {
		t.Run("format="+format, func(t *testing.T) { testCopyProgress(t, format) })
	}
}

func testCopyProgress(t *testing.T, format string) {
	const rows = 25
	values := make([]string, rows)
	for i := range values {
		values[i] = fmt.Sprintf("(%d)", i+1)
	}
	testkit.MustExec(t, db, "DROP TABLE IF EXISTS progress_t",
		"CREATE TABLE progress_t (id INT PRIMARY KEY)",
		"INSERT INTO progress_t VALUES "+strings.Join(values, ","),
		// Fresh statistics, so that the estimate is the table's size rather than zero.
		"ANALYZE TABLE progress_t")
	addr := serve(t, dbConfig(), Options{})
	cc := dial(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st := openStream(t, ctx, cc, startOf("", oneTable("progress_t", ""), format, &vstreamv1.Flags{CopyChunkRows: 10}))

	var got []*vstreamv1.CopyProgress
	messages := 0
	for done := false; !done && (format == "" || messages < rows || len(got) < 3); {
		resp, err := st.Recv()
		if err != nil {
			t.Fatalf("stream ended before the copy: %v (progress so far %v)", err, got)
		}
		lastpk := false
		for _, ev := range resp.GetEvents() {
			switch ev.GetType() {
			case binlogdata.VEventType_LASTPK:
				lastpk = true
			case binlogdata.VEventType_COPY_COMPLETED:
				done = done || ev.GetKeyspace() == ""
			}
		}
		messages += len(resp.GetMessages())
		if p := resp.GetCopyProgress(); len(p) > 0 && !lastpk && format == "" {
			t.Errorf("progress %v in a response without the chunk's LASTPK", p)
		}
		got = append(got, resp.GetCopyProgress()...)
	}
	if len(got) != 3 {
		t.Fatalf("progress reports %v, want one per chunk of 10 rows (3)", got)
	}
	for i, p := range got {
		want := min(int64(10*(i+1)), rows)
		if p.GetTable() != "progress_t" || p.GetRowsCopied() != want {
			t.Errorf("report %d: %v, want table progress_t with %d rows copied", i, p, want)
		}
		if p.GetRowsEstimated() < p.GetRowsCopied() || p.GetRowsEstimated() == 0 {
			t.Errorf("report %d: estimate %d, want the table's size as the server guesses it, not below %d",
				i, p.GetRowsEstimated(), p.GetRowsCopied())
		}
	}
	// The first chunk's estimate is the server's, not just the rows read.
	if got[0].GetRowsEstimated() <= got[0].GetRowsCopied() {
		t.Errorf("first estimate %d, want the server's estimate of %d rows", got[0].GetRowsEstimated(), rows)
	}
}
