package fanout

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/vstream-cdc/vstream/position"
)

// feed is a dump the test hands events to one at a time.
type feed chan *replication.BinlogEvent

func (f feed) GetEvent(ctx context.Context) (*replication.BinlogEvent, error) {
	select {
	case ev := <-f:
		return ev, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// TestWaitingCursorWokenPerTransaction: a cursor waiting at the head is woken once a
// transaction is whole, not by each of its inner events; by every event that may end one or
// stands outside one; and every wakeEvery events of a long transaction.
func TestWaitingCursorWokenPerTransaction(t *testing.T) {
	gtid := func(seq uint64) *replication.BinlogEvent {
		return &replication.BinlogEvent{Header: &replication.EventHeader{EventType: replication.MARIADB_GTID_EVENT, LogPos: 10},
			Event: &replication.MariadbGTIDEvent{GTID: mysql.MariadbGTID{ServerID: 1, SequenceNumber: seq}}}
	}
	of := func(typ replication.EventType, e replication.Event) *replication.BinlogEvent {
		return &replication.BinlogEvent{Header: &replication.EventHeader{EventType: typ, LogPos: 10}, Event: e}
	}
	tableMap := of(replication.TABLE_MAP_EVENT, &replication.TableMapEvent{TableID: 1, Schema: []byte("db"), Table: []byte("t")})
	rows := of(replication.WRITE_ROWS_EVENTv2, &replication.RowsEvent{TableID: 1})
	xid := of(replication.XID_EVENT, &replication.XIDEvent{})
	query := of(replication.QUERY_EVENT, &replication.QueryEvent{Query: []byte("INSERT INTO t VALUES (1)")})
	heartbeat := of(replication.HEARTBEAT_EVENT, &replication.GenericEvent{})
	mysqlGTID := of(replication.GTID_EVENT, &replication.GTIDEvent{SID: bytes.Repeat([]byte{0x3e}, 16), GNO: 2})
	begin := of(replication.QUERY_EVENT, &replication.QueryEvent{Query: []byte("BEGIN")})
	many := func(n int, ev *replication.BinlogEvent) []*replication.BinlogEvent {
		out := make([]*replication.BinlogEvent, n)
		for i := range out {
			out[i] = ev
		}
		return out
	}
	cases := []struct {
		name string
		// events are appended one by one; wakes after each says whether waiting cursors
		// were woken by it.
		events []*replication.BinlogEvent
		wakes  []bool
	}{
		{"row transaction", []*replication.BinlogEvent{gtid(1), tableMap, rows, rows, xid},
			[]bool{false, false, false, false, true}},
		{"statement inside a transaction may commit it", []*replication.BinlogEvent{gtid(1), query, xid},
			[]bool{false, true, true}},
		{"MySQL row transaction: its BEGIN does not wake", []*replication.BinlogEvent{mysqlGTID, begin, tableMap, rows, xid},
			[]bool{false, false, false, false, true}},
		{"BEGIN outside a transaction wakes", []*replication.BinlogEvent{begin},
			[]bool{true}},
		{"heartbeat between transactions", []*replication.BinlogEvent{heartbeat},
			[]bool{true}},
		{"long transaction", append(append([]*replication.BinlogEvent{gtid(1), tableMap}, many(wakeEvery, rows)...), xid),
			append(append(make([]bool, wakeEvery-1), true, false, false), true)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := make(feed)
			p := NewPool(Config{NewMarker: func() Marker { return marks{} }})
			at := "MariaDB/0-1-0"
			if tc.events[0] == mysqlGTID {
				at = "MySQL56/3e3e3e3e-3e3e-3e3e-3e3e-3e3e3e3e3e3e:1"
			}
			start, err := position.Parse(at)
			if err != nil {
				t.Fatal(err)
			}
			c := p.Attach(start, true, func(position.Position, func(*replication.BinlogEvent) error) (Source, func(), error) {
				return src, func() {}, nil
			}, nil)
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			got := make(chan *replication.BinlogEvent, len(tc.events))
			go func() {
				for {
					ev, err := c.GetEvent(ctx)
					if err != nil {
						return
					}
					for _, ev := range unrun(ev) {
						got <- ev
					}
				}
			}()
			h := c.hub
			// signal is the channel the cursor waits on, once it waits.
			signal := func() <-chan struct{} {
				for {
					h.mu.Lock()
					s, waited := h.signal, h.waited
					h.mu.Unlock()
					if waited {
						return s
					}
					if ctx.Err() != nil {
						t.Fatal("the cursor never waited")
					}
					time.Sleep(time.Millisecond)
				}
			}
			drained := 0
			for i, ev := range tc.events {
				wait := signal()
				src <- ev
				for appended := func() bool { h.mu.Lock(); defer h.mu.Unlock(); return h.next == uint64(i+1) }; !appended(); {
					time.Sleep(time.Millisecond)
				}
				woken := false
				select {
				case <-wait:
					woken = true
				default:
				}
				if woken != tc.wakes[i] {
					t.Fatalf("event %d (%v): woken %v, want %v", i, ev.Header.EventType, woken, tc.wakes[i])
				}
				if woken {
					// The cursor hands out every event appended so far, then waits again.
					for ; drained < i+1; drained++ {
						select {
						case <-got:
						case <-ctx.Done():
							t.Fatal("the woken cursor did not hand out the events appended")
						}
					}
				}
			}
		})
	}
}

// TestHeldEventsReadWhenTheRingIsFull: a transaction longer than the ring is read whole by a
// waiting cursor: the hub wakes it for the events it held back before waiting for room.
func TestHeldEventsReadWhenTheRingIsFull(t *testing.T) {
	b := newBinlog()
	p := NewPool(Config{MaxEvents: 4, NewMarker: func() Marker { return marks{} }})
	c := p.Attach(pos(t, 0), true, b.open, nil)
	defer c.Close()
	done := make(chan error, 1)
	var xids []uint64
	var rows int
	go func() {
		var err error
		xids, rows, err = readUntil(c, 3, nil)
		done <- err
	}()
	// The cursor waits at the head before the transactions, of 12 events each, are written.
	for waiting := false; !waiting; time.Sleep(time.Millisecond) {
		c.hub.mu.Lock()
		waiting = c.hub.waited
		c.hub.mu.Unlock()
	}
	b.write(3, 10)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !equal(xids, seqs(1, 3)) || rows != 30 {
		t.Errorf("XIDs %v and %d rows, want 1..3 and 30", xids, rows)
	}
}
