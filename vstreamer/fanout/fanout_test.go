package fanout

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/vstream-cdc/vstream/position"
	"github.com/vstream-cdc/vstream/sqltext"
)

// These tests drive hubs with a binlog written here: transactions of one GTID event, a few
// rows-like events and an XID, in one file. The engine's tests drive them with MariaDB.

// binlog is a server's binlog that grows as the test writes it; a dump from a position sends
// an artificial rotate, then every transaction after the position, then waits for more.
type binlog struct {
	mu     sync.Mutex
	txns   [][]*replication.BinlogEvent
	grow   chan struct{}
	opened int
	// broken, when set, is what a dump returns once it has sent every transaction.
	broken error
}

func newBinlog() *binlog { return &binlog{grow: make(chan struct{})} }

// write appends n transactions of rows events each.
func (b *binlog) write(n, rows int) { b.writeTables(n, rows, nil) }

// writeTables appends n transactions that each change the tables given, in order: a table map
// (table id i+1 for tables[i]) and rows events for each; with no tables, rows events of no
// table.
func (b *binlog) writeTables(n, rows int, tables []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	pos := uint32(4)
	if len(b.txns) > 0 {
		last := b.txns[len(b.txns)-1]
		pos = last[len(last)-1].Header.LogPos
	}
	for range n {
		seq := uint64(len(b.txns) + 1)
		ev := func(e replication.Event, t replication.EventType) *replication.BinlogEvent {
			pos += 10
			return &replication.BinlogEvent{Header: &replication.EventHeader{EventType: t, LogPos: pos, EventSize: 10},
				Event: e, RawData: make([]byte, 10)}
		}
		txn := []*replication.BinlogEvent{ev(&replication.MariadbGTIDEvent{GTID: mysql.MariadbGTID{DomainID: 0, ServerID: 1, SequenceNumber: seq}},
			replication.MARIADB_GTID_EVENT)}
		if len(tables) == 0 {
			for range rows {
				txn = append(txn, ev(&replication.RowsEvent{}, replication.WRITE_ROWS_EVENTv2))
			}
		}
		for i, name := range tables {
			id := uint64(i + 1)
			txn = append(txn, ev(&replication.TableMapEvent{TableID: id, Schema: []byte("db"), Table: []byte(name)}, replication.TABLE_MAP_EVENT))
			for range rows {
				txn = append(txn, ev(&replication.RowsEvent{TableID: id}, replication.WRITE_ROWS_EVENTv2))
			}
		}
		txn = append(txn, ev(&replication.XIDEvent{XID: seq}, replication.XID_EVENT))
		b.txns = append(b.txns, txn)
	}
	close(b.grow)
	b.grow = make(chan struct{})
}

func (b *binlog) open(pos position.Position, push func(*replication.BinlogEvent) error) (Source, func(), error) {
	b.mu.Lock()
	b.opened++
	b.mu.Unlock()
	set, _ := pos.GTIDSet.(*mysql.MariadbGTIDSet)
	var from uint64
	if g := set.Sets[0]; g != nil {
		from = g.SequenceNumber
	}
	ctx, cancel := context.WithCancel(context.Background())
	d := &dump{b: b, txn: int(from), ctx: ctx}
	d.pending = []*replication.BinlogEvent{{Header: &replication.EventHeader{EventType: replication.ROTATE_EVENT},
		Event: &replication.RotateEvent{Position: 4, NextLogName: []byte("binlog.000001")}}}
	if !pushDumps {
		return d, cancel, nil
	}
	p := pushed(make(chan error, 1))
	go func() {
		for {
			ev, err := d.GetEvent(context.Background())
			if err == nil {
				err = push(ev)
			}
			if err != nil {
				p <- err
				return
			}
		}
	}()
	return p, cancel, nil
}

// pushDumps has the binlog's dumps push their events (see OpenFunc) rather than hand them
// out: TestPushedDumps runs the tests so.
var pushDumps bool

// pushed is a pushing dump's Source: its end.
type pushed chan error

func (p pushed) GetEvent(ctx context.Context) (*replication.BinlogEvent, error) {
	select {
	case err := <-p:
		return nil, err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// TestPushedDumps runs the hub's tests on dumps that push their events.
func TestPushedDumps(t *testing.T) {
	pushDumps = true
	defer func() { pushDumps = false }()
	for _, tc := range []struct {
		name string
		test func(*testing.T)
	}{
		{"FellBehindMidTransaction", TestFellBehindMidTransaction},
		{"PendingMissed", TestPendingMissed},
		{"CatchUpHandsOver", TestCatchUpHandsOver},
		{"LeaveOut", TestLeaveOut},
		{"AloneReadAhead", TestAloneReadAhead},
		{"CatchUpStaggeredStarts", TestCatchUpStaggeredStarts},
		{"CatchUpStalledCursor", TestCatchUpStalledCursor},
		{"CatchUpHandsOverToCatchUp", TestCatchUpHandsOverToCatchUp},
		{"HandedOverBoundaryGone", TestHandedOverBoundaryGone},
		{"CatchUpAloneNotHeld", TestCatchUpAloneNotHeld},
		{"FailedIn", TestFailedIn},
		{"SkipRun", TestSkipRun},
		{"HeldEventsReadWhenTheRingIsFull", TestHeldEventsReadWhenTheRingIsFull},
	} {
		t.Run(tc.name, tc.test)
	}
}

type dump struct {
	b       *binlog
	ctx     context.Context
	txn     int
	pending []*replication.BinlogEvent
}

func (d *dump) GetEvent(ctx context.Context) (*replication.BinlogEvent, error) {
	for len(d.pending) == 0 {
		d.b.mu.Lock()
		if d.txn < len(d.b.txns) {
			d.pending = d.b.txns[d.txn]
			d.txn++
			d.b.mu.Unlock()
			break
		}
		grow, broken := d.b.grow, d.b.broken
		d.b.mu.Unlock()
		if broken != nil {
			return nil, broken
		}
		select {
		case <-grow:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-d.ctx.Done():
			return nil, context.Canceled
		}
	}
	ev := d.pending[0]
	d.pending = d.pending[1:]
	return ev, nil
}

// marks ends a transaction at its XID, or its query (a DDL's) but MySQL's BEGIN.
type marks struct{}

func (marks) Mark(ev *replication.BinlogEvent) (GTID, bool, bool) {
	switch e := ev.Event.(type) {
	case *replication.MariadbGTIDEvent:
		return GTID{Text: fmt.Sprintf("0-1-%d", e.GTID.SequenceNumber)}, true, false
	case *replication.GTIDEvent:
		return GTID{MySQL: e}, true, false
	case *replication.QueryEvent:
		return GTID{}, false, !sqltext.IsBegin(e.Query)
	case *replication.XIDEvent:
		return GTID{}, false, true
	}
	return GTID{}, false, false
}

func pos(t *testing.T, seq int) position.Position {
	t.Helper()
	p, err := position.Parse(fmt.Sprintf("MariaDB/0-1-%d", seq))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// read returns the XIDs (transactions) and rows events a cursor hands out until XID last.
func read(t *testing.T, c *Cursor, last uint64) (xids []uint64, rows int) {
	t.Helper()
	xids, rows, err := readUntil(c, last, nil)
	if err != nil {
		t.Fatal(err)
	}
	return xids, rows
}

// readUntil is read for any goroutine; each, if set, is called after every event.
func readUntil(c *Cursor, last uint64, each func()) (xids []uint64, rows int, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		ev, err := c.GetEvent(ctx)
		if err != nil {
			return xids, rows, fmt.Errorf("after XIDs %v: %w", xids, err)
		}
		for _, ev := range unrun(ev) {
			switch e := ev.Event.(type) {
			case *replication.XIDEvent:
				xids = append(xids, e.XID)
				if e.XID == last {
					return xids, rows, nil
				}
			case *replication.RowsEvent:
				rows++
			}
		}
		if each != nil {
			each()
		}
	}
}

func seqs(from, to uint64) []uint64 {
	var out []uint64
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

func equal(a, b []uint64) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

// TestFellBehindMidTransaction: a cursor that stops inside a transaction while the ring
// moves on gets, once it reads again, the rest of that transaction and every later one, each
// event once.
func TestFellBehindMidTransaction(t *testing.T) {
	b := newBinlog()
	p := NewPool(Config{MaxEvents: 8, NewMarker: func() Marker { return marks{} }})
	var kinds []Kind
	slow := p.Attach(pos(t, 0), true, b.open, func(k Kind) { kinds = append(kinds, k) })
	defer slow.Close()
	fast := p.Attach(pos(t, 0), true, b.open, nil)
	defer fast.Close()
	b.write(1, 3)
	// The slow cursor reads the rotate, the GTID and one rows event of transaction 1.
	for range 3 {
		if _, err := slow.GetEvent(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	b.write(20, 3)
	if xids, rows := read(t, fast, 21); !equal(xids, seqs(1, 21)) || rows != 63 {
		t.Fatalf("fast cursor: XIDs %v, %d rows", xids, rows)
	}
	xids, rows := read(t, slow, 21)
	if !equal(xids, seqs(1, 21)) || rows != 62 {
		t.Errorf("slow cursor: XIDs %v and %d rows, want 1..21 and 62 (one was read before)", xids, rows)
	}
	if len(kinds) < 2 || kinds[0] != Shared || kinds[1] != CatchUp {
		t.Errorf("slow cursor served by %v, want shared then catch-up", kinds)
	}
}

// TestPendingMissed: a cursor at a position ahead of the shared hub that the hub passes
// without a boundary there (it is not a prefix of the hub's binlog) reads from a dump of its
// own; one the hub reaches reads from the hub.
func TestPendingMissed(t *testing.T) {
	b := newBinlog()
	p := NewPool(Config{NewMarker: func() Marker { return marks{} }})
	head := p.Attach(pos(t, 0), true, b.open, nil)
	defer head.Close()
	// Ahead of the hub, and on its way.
	ahead := p.Attach(pos(t, 3), false, b.open, nil)
	defer ahead.Close()
	// Ahead, in another domain the hub will never pass through.
	other, err := position.Parse("MariaDB/0-1-2,5-1-1")
	if err != nil {
		t.Fatal(err)
	}
	missed := p.Attach(other, false, b.open, nil)
	defer missed.Close()
	b.write(6, 1)
	if xids, _ := read(t, head, 6); !equal(xids, seqs(1, 6)) {
		t.Errorf("head: %v", xids)
	}
	if xids, _ := read(t, ahead, 6); !equal(xids, seqs(4, 6)) {
		t.Errorf("ahead: %v", xids)
	}
	if ahead.Kind() != Shared {
		t.Errorf("ahead is served by %s", ahead.Kind())
	}
	if xids, _ := read(t, missed, 6); !equal(xids, seqs(3, 6)) {
		t.Errorf("missed: %v", xids)
	}
	if missed.Kind() != CatchUp {
		t.Errorf("missed is served by %s", missed.Kind())
	}
}

// TestCatchUpHandsOver: cursors from one old position share one catch-up dump, which ends
// once they are handed to the shared hub.
func TestCatchUpHandsOver(t *testing.T) {
	b := newBinlog()
	b.write(10, 2)
	p := NewPool(Config{NewMarker: func() Marker { return marks{} }})
	head := p.Attach(pos(t, 10), true, b.open, nil)
	defer head.Close()
	var olds []*Cursor
	for range 5 {
		c := p.Attach(pos(t, 2), false, b.open, nil)
		defer c.Close()
		olds = append(olds, c)
	}
	b.write(5, 2)
	for i, c := range olds {
		if xids, _ := read(t, c, 15); !equal(xids, seqs(3, 15)) {
			t.Errorf("cursor %d: %v", i, xids)
		}
		if c.Kind() != Shared {
			t.Errorf("cursor %d ends on %s", i, c.Kind())
		}
	}
	b.mu.Lock()
	opened := b.opened
	b.mu.Unlock()
	if opened != 2 {
		t.Errorf("%d dumps opened, want 2 (shared, and one catch-up)", opened)
	}
	if r := p.Readers(); r[Shared] != 1 || r[CatchUp] != 0 {
		t.Errorf("readers %v, want the shared one only", r)
	}
}

// TestLeaveOut: a cursor that leaves out a table, or a type of event, hands out every other
// event, each once, also when it falls behind inside a transaction, and can name the table
// ids it left out.
func TestLeaveOut(t *testing.T) {
	b := newBinlog()
	p := NewPool(Config{MaxEvents: 12, NewMarker: func() Marker { return marks{} }})
	all := p.Attach(pos(t, 0), true, b.open, nil)
	defer all.Close()
	var asked []string
	some := p.Attach(pos(t, 0), true, b.open, nil)
	defer some.Close()
	some.LeaveOut(func(t *Table) bool {
		asked = append(asked, t.DB+"."+t.Name)
		return t.Name == "b"
	})
	noRows := p.Attach(pos(t, 0), true, b.open, nil)
	defer noRows.Close()
	noRows.LeaveOut(nil, replication.WRITE_ROWS_EVENTv2)
	none := p.Attach(pos(t, 0), true, b.open, nil)
	defer none.Close()
	none.LeaveOut(func(*Table) bool { return true })
	b.writeTables(1, 2, []string{"a", "b"})
	// The cursor that leaves out b reads the rotate, the GTID, a's table map and one of its
	// rows events, then stops while the ring moves on.
	for range 4 {
		if _, err := some.GetEvent(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	b.writeTables(20, 2, []string{"a", "b"})
	if xids, rows := read(t, all, 21); !equal(xids, seqs(1, 21)) || rows != 84 {
		t.Fatalf("all tables: XIDs %v, %d rows", xids, rows)
	}
	if xids, rows := read(t, noRows, 21); !equal(xids, seqs(1, 21)) || rows != 0 {
		t.Errorf("leaving out rows events: XIDs %v, %d rows", xids, rows)
	}
	// A cursor that leaves out every table hands out each transaction's GTID event and XID
	// as one event when it has read the transaction's end (in this small ring, not always).
	ctx0, cancel0 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel0()
	var ends []uint64
	collapsed := 0
	for len(ends) == 0 || ends[len(ends)-1] != 21 {
		ev, err := none.GetEvent(ctx0)
		if err != nil {
			t.Fatal(err)
		}
		switch e := ev.Event.(type) {
		case *TxnEnds:
			for i, txn := range e.Txns {
				g, ok1 := txn.First.Event.(*replication.MariadbGTIDEvent)
				x, ok2 := txn.Last.Event.(*replication.XIDEvent)
				if !ok1 || !ok2 || g.GTID.SequenceNumber != x.XID || i == len(e.Txns)-1 && ev.Header != txn.Last.Header {
					t.Fatalf("TxnEnds of %T and %T", txn.First.Event, txn.Last.Event)
				}
				ends = append(ends, x.XID)
				collapsed++
			}
		case *replication.XIDEvent:
			ends = append(ends, e.XID)
		case *replication.RowsEvent, *replication.TableMapEvent:
			t.Fatalf("a cursor that leaves out every table handed out a %T", e)
		}
	}
	if !equal(ends, seqs(1, 21)) || collapsed == 0 {
		t.Errorf("leaving out every table: XIDs %v, %d of them as TxnEnds", ends, collapsed)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var xids []uint64
	rows := 0
	for len(xids) == 0 || xids[len(xids)-1] != 21 {
		ev, err := some.GetEvent(ctx)
		if err != nil {
			t.Fatal(err)
		}
		switch e := ev.Event.(type) {
		case *replication.XIDEvent:
			xids = append(xids, e.XID)
		case *replication.RowsEvent:
			rows++
			if e.TableID != 1 {
				t.Fatalf("handed out a rows event of table id %d", e.TableID)
			}
		case *replication.TableMapEvent:
			if string(e.Table) != "a" {
				t.Fatalf("handed out the table map of %s", e.Table)
			}
		}
	}
	if !equal(xids, seqs(1, 21)) || rows != 41 {
		t.Errorf("leaving out b: XIDs %v and %d rows, want 1..21 and 41 (one was read before)", xids, rows)
	}
	if some.Kind() != CatchUp && some.Kind() != Shared {
		t.Errorf("kind %s", some.Kind())
	}
	if len(asked) == 0 || len(asked) > 4 {
		t.Errorf("asked about %v: want each table once per hub", asked)
	}
	if name, ok := some.TableName(2); !ok || name != "b" {
		t.Errorf("table id 2 named %q, %v", name, ok)
	}
}

// TestAloneReadAhead: a hub with one cursor reads at most AloneBytes ahead of it and holds
// no more, but for the event waiting to go in; once a second cursor joins, the ring grows to MaxBytes; the first cursor still
// reads every transaction once.
func TestAloneReadAhead(t *testing.T) {
	b := newBinlog()
	p := NewPool(Config{MaxBytes: 1000, AloneBytes: 100, NewMarker: func() Marker { return marks{} }})
	c := p.Attach(pos(t, 0), true, b.open, nil)
	defer c.Close()
	// Each event is 10 bytes: 50 transactions of 5 events are 2,500.
	b.write(50, 3)
	held := func() (bytes int, next uint64) {
		h := c.hub
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.bytes, h.next
	}
	settled := func(t *testing.T, want func(bytes int) bool) int {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			bytes, next := held()
			time.Sleep(20 * time.Millisecond)
			if again, next2 := held(); want(bytes) && again == bytes && next2 == next {
				return bytes
			}
			if time.Now().After(deadline) {
				t.Fatalf("the ring did not settle: %d bytes", bytes)
			}
		}
	}
	if bytes := settled(t, func(n int) bool { return n >= 90 }); bytes > 110 {
		t.Fatalf("a hub with one cursor holds %d bytes, above AloneBytes 100 and an event", bytes)
	}
	other := p.Attach(pos(t, 0), true, b.open, nil)
	defer other.Close()
	if bytes := settled(t, func(n int) bool { return n > 110 }); bytes > 1010 {
		t.Fatalf("a hub with two cursors holds %d bytes, above MaxBytes 1000 and an event", bytes)
	}
	if xids, rows := read(t, c, 50); !equal(xids, seqs(1, 50)) || rows != 150 {
		t.Errorf("first cursor: XIDs %v and %d rows, want 1..50 and 150", xids, rows)
	}
}

func (b *binlog) dumps() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.opened
}

// TestCatchUpStaggeredStarts: streams started one after another from one old position, on
// a binlog many times a ring, share one catch-up dump while they start close together (a
// second wave, started once the first one's ring has moved on, shares a second), and each
// reads every transaction once, the slower readers too.
func TestCatchUpStaggeredStarts(t *testing.T) {
	b := newBinlog()
	// 300 transactions of 5 events: 1,500 events through rings of 64.
	b.write(300, 3)
	p := NewPool(Config{MaxEvents: 64, CatchUpWait: 2 * time.Second, NewMarker: func() Marker { return marks{} }})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed []string
	var kinds []Kind
	started := make(chan struct{}, 1)
	wave := func(n int) {
		for i := range n {
			c := p.Attach(pos(t, 0), false, b.open, nil)
			mu.Lock()
			kinds = append(kinds, c.Kind())
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				events := 0
				xids, rows, err := readUntil(c, 300, func() {
					events++
					if i%3 == 0 && events%50 == 0 {
						// A slower reader.
						time.Sleep(time.Millisecond)
					}
					if events == 500 {
						select {
						case started <- struct{}{}:
						default:
						}
					}
				})
				if err == nil && (!equal(xids, seqs(1, 300)) || rows != 900) {
					err = fmt.Errorf("XIDs %v and %d rows, want 1..300 and 900", xids, rows)
				}
				if err != nil {
					mu.Lock()
					failed = append(failed, err.Error())
					mu.Unlock()
				}
			}()
			if i > 0 {
				// The first two of a wave start together, as a restart of many consumers
				// starts them; the others one after another.
				time.Sleep(5 * time.Millisecond)
			}
		}
	}
	wave(15)
	// The first wave is well past the first ring's worth of events.
	<-started
	wave(15)
	wg.Wait()
	for _, f := range failed {
		t.Error(f)
	}
	if n := b.dumps(); n > 2 {
		t.Errorf("%d dumps opened for two waves of streams from one position, want at most 2", n)
	}
	for i, k := range kinds {
		if k != CatchUp {
			t.Errorf("cursor %d started on %s", i, k)
		}
	}
}

// TestCatchUpStalledCursor: a cursor of a catch-up hub that stops reading holds up the
// others for CatchUpWait at most: they read every transaction while it reads nothing; once
// it reads again it gets every event once, from a dump of its own.
func TestCatchUpStalledCursor(t *testing.T) {
	b := newBinlog()
	b.write(300, 3)
	p := NewPool(Config{MaxEvents: 64, CatchUpWait: 200 * time.Millisecond, NewMarker: func() Marker { return marks{} }})
	var kinds []Kind
	stalled := p.Attach(pos(t, 0), false, b.open, func(k Kind) { kinds = append(kinds, k) })
	defer stalled.Close()
	var others []*Cursor
	for range 4 {
		c := p.Attach(pos(t, 0), false, b.open, nil)
		defer c.Close()
		others = append(others, c)
	}
	// The stalled cursor reads the rotate, the GTID and one rows event of transaction 1.
	for range 3 {
		if _, err := stalled.GetEvent(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, len(others))
	for i, c := range others {
		wg.Add(1)
		go func() {
			defer wg.Done()
			xids, rows, err := readUntil(c, 300, nil)
			if err == nil && (!equal(xids, seqs(1, 300)) || rows != 900) {
				err = fmt.Errorf("XIDs %v and %d rows", xids, rows)
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("cursor %d beside a stalled one: %v", i, err)
		}
	}
	if xids, rows := read(t, stalled, 300); !equal(xids, seqs(1, 300)) || rows != 899 {
		t.Errorf("stalled cursor: XIDs %v and %d rows, want 1..300 and 899 (one was read before)", xids, rows)
	}
	if n := b.dumps(); n != 2 {
		t.Errorf("%d dumps opened, want 2 (the shared catch-up one, and the stalled cursor's)", n)
	}
	if len(kinds) != 1 || kinds[0] != CatchUp {
		t.Errorf("stalled cursor served by %v, want catch-up readers only", kinds)
	}
}

// TestCatchUpHandsOverToCatchUp: with no shared hub, a catch-up hub that reaches a boundary
// another catch-up hub holds hands its cursor over and ends its dump.
func TestCatchUpHandsOverToCatchUp(t *testing.T) {
	b := newBinlog()
	b.write(40, 1)
	p := NewPool(Config{NewMarker: func() Marker { return marks{} }})
	ahead := p.Attach(pos(t, 20), false, b.open, nil)
	defer ahead.Close()
	if xids, _ := read(t, ahead, 40); !equal(xids, seqs(21, 40)) {
		t.Fatalf("cursor from 20: %v", xids)
	}
	behind := p.Attach(pos(t, 5), false, b.open, nil)
	defer behind.Close()
	if xids, _ := read(t, behind, 40); !equal(xids, seqs(6, 40)) {
		t.Fatalf("cursor from 5: %v", xids)
	}
	b.write(5, 1)
	for i, c := range []*Cursor{ahead, behind} {
		if xids, _ := read(t, c, 45); !equal(xids, seqs(41, 45)) {
			t.Errorf("cursor %d: %v", i, xids)
		}
	}
	if n := b.dumps(); n != 2 {
		t.Errorf("%d dumps opened, want 2", n)
	}
	if r := p.Readers(); r[Shared] != 0 || r[CatchUp] != 1 {
		t.Errorf("readers %v, want one catch-up reader", r)
	}
	if ahead.hub != behind.hub {
		t.Error("the cursors read from two hubs")
	}
}

// TestHandedOverBoundaryGone: cursors handed over to a hub that dropped the boundary before
// they got there read on from another dump, each event once.
func TestHandedOverBoundaryGone(t *testing.T) {
	b := newBinlog()
	b.write(40, 1)
	p := NewPool(Config{MaxEvents: 8, CatchUpWait: 10 * time.Millisecond, NewMarker: func() Marker { return marks{} }})
	ahead := p.Attach(pos(t, 20), false, b.open, nil)
	defer ahead.Close()
	read(t, ahead, 40)
	var behind [2]*Cursor
	var got [2][]uint64
	for i := range behind {
		behind[i] = p.Attach(pos(t, 5), false, b.open, nil)
		defer behind[i].Close()
	}
	first := behind[0].hub
	for i, c := range behind {
		got[i], _ = read(t, c, 37)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		first.mu.Lock()
		ho := first.handover
		first.mu.Unlock()
		if ho != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the catch-up hub did not hand over")
		}
		time.Sleep(time.Millisecond)
	}
	// The hub handed over to moves on past the boundary.
	b.write(10, 1)
	read(t, ahead, 50)
	for i, c := range behind {
		more, _ := read(t, c, 50)
		if got[i] = append(got[i], more...); !equal(got[i], seqs(6, 50)) {
			t.Errorf("cursor %d from 5: %v", i, got[i])
		}
	}
}

// TestCatchUpAloneNotHeld: a stream resuming alone from an old position reads the whole
// binlog through a ring smaller than it without waiting for streams that might start at its
// position too (the hold that gathers a wave of streams needs a second one to start).
func TestCatchUpAloneNotHeld(t *testing.T) {
	b := newBinlog()
	b.write(300, 3)
	p := NewPool(Config{MaxEvents: 64, CatchUpWait: time.Hour, NewMarker: func() Marker { return marks{} }})
	c := p.Attach(pos(t, 0), false, b.open, nil)
	defer c.Close()
	done := make(chan error, 1)
	go func() {
		xids, rows, err := readUntil(c, 300, func() {})
		if err == nil && (!equal(xids, seqs(1, 300)) || rows != 900) {
			err = fmt.Errorf("XIDs %v and %d rows, want 1..300 and 900", xids, rows)
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a stream resuming alone was held for streams starting at its position")
	}
}

// TestFailedIn: when the dump fails (an event go-mysql cannot decode, say), every cursor
// returns its error once it has read what the ring holds, and names the file the dump was
// in: a cursor placed inside a running dump may have been told no file by a rotate.
func TestFailedIn(t *testing.T) {
	b := newBinlog()
	p := NewPool(Config{MaxBytes: 100000, NewMarker: func() Marker { return marks{} }})
	first := p.Attach(pos(t, 0), true, b.open, nil)
	defer first.Close()
	b.write(5, 2)
	read(t, first, 5)
	second := p.Attach(pos(t, 3), false, b.open, nil)
	defer second.Close()
	broken := errors.New("event cannot be decoded")
	b.mu.Lock()
	b.broken = broken
	close(b.grow)
	b.grow = make(chan struct{})
	b.mu.Unlock()
	for name, c := range map[string]*Cursor{"first": first, "second": second} {
		if c.FailedIn() != "" {
			t.Errorf("%s cursor: FailedIn %q before any failure", name, c.FailedIn())
		}
		_, _, err := readUntil(c, 1000, nil)
		if !errors.Is(err, broken) {
			t.Fatalf("%s cursor: %v, want the dump's error", name, err)
		}
		if got := c.FailedIn(); got != "binlog.000001" {
			t.Errorf("%s cursor: FailedIn %q, want binlog.000001", name, got)
		}
	}
}
