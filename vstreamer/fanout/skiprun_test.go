package fanout

import (
	"context"
	"runtime"
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/vstream-cdc/vstream/vstreamer/position"
)

// skipRing returns a pool whose shared hub holds txns transactions of table "t" (a GTID
// event, a table map, a rows event and an XID each), all of them read from the dump, and the
// cursor that keeps the hub open.
func skipRing(tb testing.TB, txns int) (*Pool, *binlog, *Cursor) {
	tb.Helper()
	b := newBinlog()
	p := NewPool(Config{MaxEvents: 4*txns + 16, NewMarker: func() Marker { return marks{} }})
	keep := p.Attach(pos0(tb), true, b.open, nil)
	b.writeTables(txns, 1, []string{"t"})
	if _, _, err := readUntil(keep, uint64(txns), nil); err != nil {
		tb.Fatal(err)
	}
	return p, b, keep
}

func pos0(tb testing.TB) position.Position {
	tb.Helper()
	p, err := position.Parse("MariaDB/0-1-0")
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// unrun returns the events a cursor handed out as ev, in order: a TxnEnds's, else ev.
func unrun(ev *replication.BinlogEvent) []*replication.BinlogEvent {
	run, ok := ev.Event.(*TxnEnds)
	if !ok {
		return []*replication.BinlogEvent{ev}
	}
	var evs []*replication.BinlogEvent
	for _, t := range run.Txns {
		evs = append(evs, t.First, t.Last)
	}
	return evs
}

// skipAll reads a cursor that leaves out every table until XID stop; it returns the events
// handed out and the transactions among them.
func skipAll(c *Cursor, stop uint64) (events, txns int, err error) {
	ctx := context.Background()
	for {
		ev, err := c.GetEvent(ctx)
		if err != nil {
			return events, txns, err
		}
		events++
		// No slice of the events: the benchmark counts the cursor's allocations.
		last := ev
		if run, ok := ev.Event.(*TxnEnds); ok {
			txns += len(run.Txns) - 1
			last = run.Txns[len(run.Txns)-1].Last
		}
		if x, ok := last.Event.(*replication.XIDEvent); ok {
			txns++
			if x.XID == stop {
				return events, txns, nil
			}
		}
	}
}

// BenchmarkSkipAll: what a cursor that leaves out every table costs per transaction it reads.
func BenchmarkSkipAll(b *testing.B) {
	const txns = 4096
	p, bl, keep := skipRing(b, txns)
	defer keep.Close()
	b.ReportAllocs()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	handed := 0
	for n := 0; n < b.N; {
		c := p.Attach(pos0(b), true, bl.open, nil)
		c.LeaveOut(func(*Table) bool { return true })
		events, read, err := skipAll(c, txns)
		c.Close()
		if err != nil {
			b.Fatal(err)
		}
		n += read
		handed += events
	}
	b.StopTimer()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(handed)/float64(b.N), "events/txn")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(b.N), "allocs/txn")
}
