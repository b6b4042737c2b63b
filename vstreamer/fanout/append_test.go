package fanout

import (
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/vstream-cdc/vstream/position"
)

// eventGTIDs marks transactions as the streams' marker does, by their GTID events' own GTIDs.
type eventGTIDs struct{}

func (eventGTIDs) Mark(ev *replication.BinlogEvent) (GTID, bool, bool) {
	switch e := ev.Event.(type) {
	case *replication.MariadbGTIDEvent:
		return GTID{MariaDB: &e.GTID}, true, false
	case *replication.GTIDEvent:
		return GTID{MySQL: e}, true, false
	case *replication.XIDEvent:
		return GTID{}, false, true
	}
	return GTID{}, false, false
}

// TestAppendAllocs: what the hub allocates to take a transaction (GTID, rows, XID) into its
// ring: the GTID and XID events compacted, the boundary after the transaction and its
// position; the position moves by the GTID event's own GTID, not by its text parsed back
// (3 allocations more on MariaDB, beside the marker's writing the text).
func TestAppendAllocs(t *testing.T) {
	const txns = 1000
	sid := []byte{0x3e, 0x11, 0xfa, 0x47, 0x71, 0xca, 0x11, 0xe1, 0x9e, 0x33, 0xc8, 0x0a, 0xa9, 0x42, 0x95, 0x62}
	for _, c := range []struct {
		name  string
		start string
		gtid  func(i int) (replication.EventType, replication.Event)
		// most allocations a transaction, on Go 1.26
		most float64
		last string
	}{
		{"MariaDB", "MariaDB/0-1-0", func(i int) (replication.EventType, replication.Event) {
			return replication.MARIADB_GTID_EVENT, &replication.MariadbGTIDEvent{GTID: mysql.MariadbGTID{ServerID: 1, SequenceNumber: uint64(i + 1)}}
		}, 8, "MariaDB/0-1-1000"},
		{"MySQL", "MySQL56/3e11fa47-71ca-11e1-9e33-c80aa9429562:1", func(i int) (replication.EventType, replication.Event) {
			return replication.GTID_EVENT, &replication.GTIDEvent{SID: sid, GNO: int64(i + 2)}
		}, 8, "MySQL56/3e11fa47-71ca-11e1-9e33-c80aa9429562:1-1001"},
	} {
		t.Run(c.name, func(t *testing.T) {
			start, err := position.Parse(c.start)
			if err != nil {
				t.Fatal(err)
			}
			p := NewPool(Config{MaxEvents: 8 * txns, NewMarker: func() Marker { return eventGTIDs{} }})
			h := newHub(p, Shared, start, nil, &Cursor{}, false)
			evs := make([][3]*replication.BinlogEvent, txns)
			for i := range evs {
				at := uint32(100 * (i + 1))
				hd := func(typ replication.EventType, n uint32) *replication.EventHeader {
					return &replication.EventHeader{EventType: typ, LogPos: at + n, EventSize: 10}
				}
				typ, gtid := c.gtid(i)
				evs[i] = [3]*replication.BinlogEvent{
					{Header: hd(typ, 0), RawData: make([]byte, 10), Event: gtid},
					{Header: hd(replication.WRITE_ROWS_EVENTv2, 10), RawData: make([]byte, 10), Event: &replication.RowsEvent{}},
					{Header: hd(replication.XID_EVENT, 20), RawData: make([]byte, 10), Event: &replication.XIDEvent{XID: uint64(i + 1)}},
				}
			}
			allocs := testing.AllocsPerRun(1, func() {
				for _, txn := range evs {
					for _, ev := range txn {
						h.append(ev)
					}
				}
			})
			// A few allocations once in the run (a set's intervals growing) are not per transaction.
			if per := allocs / txns; per > c.most+0.01 {
				t.Errorf("the hub allocates %.3f times per transaction, want at most %v", per, c.most)
			}
			if last := h.bounds[len(h.bounds)-1].pos.String(); last != c.last {
				t.Errorf("the hub's position after the transactions is %s, want %s", last, c.last)
			}
		})
	}
}
