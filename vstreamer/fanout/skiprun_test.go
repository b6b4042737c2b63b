package fanout

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/vstream-cdc/vstream/position"
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

// writeDDL appends a transaction of a GTID event and a query.
func (b *binlog) writeDDL() {
	b.mu.Lock()
	defer b.mu.Unlock()
	last := b.txns[len(b.txns)-1]
	p := last[len(last)-1].Header.LogPos
	seq := uint64(len(b.txns) + 1)
	b.txns = append(b.txns, []*replication.BinlogEvent{
		{Header: &replication.EventHeader{EventType: replication.MARIADB_GTID_EVENT, LogPos: p + 10, EventSize: 10},
			Event: &replication.MariadbGTIDEvent{GTID: mysql.MariadbGTID{DomainID: 0, ServerID: 1, SequenceNumber: seq}}, RawData: make([]byte, 10)},
		{Header: &replication.EventHeader{EventType: replication.QUERY_EVENT, LogPos: p + 20, EventSize: 10},
			Event: &replication.QueryEvent{Query: []byte("CREATE TABLE c (id INT)")}, RawData: make([]byte, 10)},
	})
	close(b.grow)
	b.grow = make(chan struct{})
}

// rotate ends the last transaction written with a rotate to the next binlog file.
func (b *binlog) rotate() {
	b.mu.Lock()
	defer b.mu.Unlock()
	last := &b.txns[len(b.txns)-1]
	*last = append(*last, &replication.BinlogEvent{Header: &replication.EventHeader{EventType: replication.ROTATE_EVENT, LogPos: 4},
		Event: &replication.RotateEvent{Position: 4, NextLogName: []byte("binlog.000002")}, RawData: make([]byte, 10)})
}

// handedOut names the events a cursor hands out: a TxnEnds as "ends" and the GTID sequence
// number of each of its transactions, with ":query" for one that ends in a query.
func handedOut(t *testing.T, ev *replication.BinlogEvent) string {
	t.Helper()
	switch e := ev.Event.(type) {
	case *TxnEnds:
		out := "ends"
		for _, txn := range e.Txns {
			g, ok := txn.First.Event.(*replication.MariadbGTIDEvent)
			if !ok {
				t.Fatalf("a TxnEnds transaction starts with a %T", txn.First.Event)
			}
			switch l := txn.Last.Event.(type) {
			case *replication.XIDEvent:
				if l.XID != g.GTID.SequenceNumber {
					t.Fatalf("GTID %d ends with XID %d", g.GTID.SequenceNumber, l.XID)
				}
				out += fmt.Sprintf(" %d", l.XID)
			case *replication.QueryEvent:
				out += fmt.Sprintf(" %d:query", g.GTID.SequenceNumber)
			default:
				t.Fatalf("a TxnEnds transaction ends with a %T", l)
			}
		}
		if last := e.Txns[len(e.Txns)-1].Last; ev.Header != last.Header {
			t.Errorf("%s: the header is not its last event's", out)
		}
		return out
	case *replication.MariadbGTIDEvent:
		return fmt.Sprintf("gtid %d", e.GTID.SequenceNumber)
	case *replication.XIDEvent:
		return fmt.Sprintf("xid %d", e.XID)
	case *replication.TableMapEvent:
		return "map " + string(e.Table)
	case *replication.RowsEvent:
		return "rows"
	case *replication.RotateEvent:
		return "rotate"
	case *replication.QueryEvent:
		return "query"
	}
	return fmt.Sprintf("%T", ev.Event)
}

// endsOf is "ends" and the numbers from to to.
func endsOf(from, to int) string {
	out := "ends"
	for i := from; i <= to; i++ {
		out += fmt.Sprintf(" %d", i)
	}
	return out
}

// TestSkipRun: a cursor that leaves out table b hands out consecutive transactions of b, of
// which it hands out only the GTID event and the XID, as one TxnEnds that holds each one's
// two events in order; a run ends at anything else: a transaction it hands out more of, one it
// leaves nothing out of (a DDL), a rotate, and the end of what it read from the ring at once,
// which it cuts at a transaction's end.
func TestSkipRun(t *testing.T) {
	b, a := []string{"b"}, []string{"a"}
	for _, tc := range []struct {
		name  string
		write func(bl *binlog)
		want  []string
	}{
		{"wanted transaction", func(bl *binlog) {
			bl.writeTables(3, 1, b)
			bl.writeTables(1, 1, a)
			bl.writeTables(2, 1, b)
		}, []string{"rotate", "ends 1 2 3", "gtid 4", "map a", "rows", "xid 4", "ends 5 6"}},
		{"DDL", func(bl *binlog) {
			bl.writeTables(2, 1, b)
			bl.writeDDL()
			bl.writeTables(2, 1, b)
		}, []string{"rotate", "ends 1 2", "ends 3:query", "ends 4 5"}},
		{"DDL first", func(bl *binlog) {
			bl.writeTables(1, 1, a)
			bl.writeDDL()
			bl.writeTables(2, 1, b)
		}, []string{"rotate", "gtid 1", "map a", "rows", "xid 1", "ends 2:query", "ends 3 4"}},
		{"rotate", func(bl *binlog) {
			bl.writeTables(2, 1, b)
			bl.rotate()
			bl.writeTables(2, 2, b)
		}, []string{"rotate", "ends 1 2", "rotate", "ends 3 4"}},
		// The rotate and 40 transactions of 4 events: the first 64 events end inside
		// transaction 16, the next 64 with transaction 31.
		{"read ahead", func(bl *binlog) { bl.writeTables(40, 1, b) },
			[]string{"rotate", endsOf(1, 15), endsOf(16, 31), endsOf(32, 40)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bl := newBinlog()
			p := NewPool(Config{MaxEvents: 1024, NewMarker: func() Marker { return marks{} }})
			keep := p.Attach(pos0(t), true, bl.open, nil)
			defer keep.Close()
			tc.write(bl)
			bl.mu.Lock()
			last := uint64(len(bl.txns))
			bl.mu.Unlock()
			// Every event is in the ring before the cursor reads.
			if _, _, err := readUntil(keep, last, nil); err != nil {
				t.Fatal(err)
			}
			c := p.Attach(pos0(t), true, bl.open, nil)
			defer c.Close()
			c.LeaveOut(func(t *Table) bool { return t.Name == "b" })
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var got []string
			for len(got) < len(tc.want) {
				ev, err := c.GetEvent(ctx)
				if err != nil {
					t.Fatalf("after %q: %v", got, err)
				}
				got = append(got, handedOut(t, ev))
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("handed out\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

// TestSkipRunAllocs: a transaction a cursor leaves all but the ends of costs well below one
// allocation: the cursor allocates once or twice per run of them.
func TestSkipRunAllocs(t *testing.T) {
	const txns = 4096
	p, bl, keep := skipRing(t, txns)
	defer keep.Close()
	var err error
	allocs := testing.AllocsPerRun(1, func() {
		c := p.Attach(pos0(t), true, bl.open, nil)
		defer c.Close()
		c.LeaveOut(func(*Table) bool { return true })
		_, _, err = skipAll(c, txns)
	})
	if err != nil {
		t.Fatal(err)
	}
	if per := allocs / txns; per > 0.2 {
		t.Errorf("a skipped transaction costs %.3f allocations", per)
	}
}
