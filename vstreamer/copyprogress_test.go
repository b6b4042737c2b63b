package vstreamer

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/internal/testkit"
)

// progressLog is an Observer that keeps the copy's progress reports.
type progressLog struct {
	mu      sync.Mutex
	reports []string
	est     []int64
}

func (p *progressLog) Position(string, time.Time) {}

func (p *progressLog) CopyProgress(table string, copied, estimated int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reports = append(p.reports, fmt.Sprintf("%s %d", table, copied))
	p.est = append(p.est, estimated)
}

// TestCopyProgressEstimateRefreshed: the copy reports its progress once per chunk, and the
// server's estimate of the table's rows is read again as the copy goes: rows added while it
// runs (below the last key copied, so not copied) move the estimate, not the count.
func TestCopyProgressEstimateRefreshed(t *testing.T) {
	vals := func(from, to int) string {
		var v []string
		for i := from; i <= to; i++ {
			v = append(v, fmt.Sprintf("(%d)", i))
		}
		return strings.Join(v, ",")
	}
	testkit.MustExec(t, db, "DROP TABLE IF EXISTS cprog",
		"CREATE TABLE cprog (id INT PRIMARY KEY)",
		"INSERT INTO cprog VALUES "+vals(1, 30),
		"ANALYZE TABLE cprog")
	e := newEngine(t)
	obs := &progressLog{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	first := true
	err := e.Stream(ctx, Request{Filter: rules(&binlogdata.Rule{Match: "cprog"}), CopyChunkRows: 10, Observer: obs},
		func(evs []*binlogdata.VEvent) error {
			for _, ev := range evs {
				switch {
				case ev.Type == binlogdata.VEventType_LASTPK && first:
					// The copy waits on this send: the table grows meanwhile, below its last key.
					first = false
					testkit.MustExec(t, db, "INSERT INTO cprog VALUES "+vals(-300, -1), "ANALYZE TABLE cprog")
					time.Sleep(estimateEvery + 100*time.Millisecond)
				case ev.Type == binlogdata.VEventType_COPY_COMPLETED && ev.Keyspace == "":
					return io.EOF
				}
			}
			return nil
		})
	if err != nil && err != io.EOF {
		t.Fatal(err)
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	// The fourth chunk finds no rows past the third: it ends the table.
	if want := "cprog 10,cprog 20,cprog 30,cprog 30"; strings.Join(obs.reports, ",") != want {
		t.Fatalf("reports %q, want %q", obs.reports, want)
	}
	if obs.est[0] < 10 || obs.est[0] >= 100 {
		t.Errorf("first estimate %d, want about 30", obs.est[0])
	}
	if last := obs.est[len(obs.est)-1]; last < 200 {
		t.Errorf("estimates %v: the rows added during the copy are not in the last one", obs.est)
	}
}
