package fanout

import (
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// oneGTID marks transactions as marks does, all with one GTID text: the marker's own cost
// (formatting the GTID) is not the hub's.
type oneGTID struct{}

func (oneGTID) Mark(ev *replication.BinlogEvent) (string, bool, bool) {
	switch ev.Event.(type) {
	case *replication.MariadbGTIDEvent:
		return "0-1-1", true, false
	case *replication.XIDEvent:
		return "", false, true
	}
	return "", false, false
}

// TestAppendAllocs: what the hub allocates to take a MariaDB transaction (GTID, rows, XID)
// into its ring: the GTID and XID events compacted, the boundary after the transaction and
// its position; the position moves by the GTID event's own GTID, not by its text parsed back.
func TestAppendAllocs(t *testing.T) {
	const txns = 1000
	p := NewPool(Config{MaxEvents: 8 * txns, NewMarker: func() Marker { return oneGTID{} }})
	h := newHub(p, Shared, pos(t, 0), nil, &Cursor{}, false)
	evs := make([][3]*replication.BinlogEvent, txns)
	for i := range evs {
		at := uint32(100 * (i + 1))
		hd := func(typ replication.EventType, n uint32) *replication.EventHeader {
			return &replication.EventHeader{EventType: typ, LogPos: at + n, EventSize: 10}
		}
		evs[i] = [3]*replication.BinlogEvent{
			{Header: hd(replication.MARIADB_GTID_EVENT, 0), RawData: make([]byte, 10),
				Event: &replication.MariadbGTIDEvent{GTID: mysql.MariadbGTID{ServerID: 1, SequenceNumber: uint64(i + 1)}}},
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
	// 7 on Go 1.26: the two compacted events, the boundary, and the position's set, map
	// and GTID; parsing the GTID's text back was 3 more.
	if per := allocs / txns; per > 8 {
		t.Errorf("the hub allocates %.2f times per transaction, want at most 8", per)
	}
	if last := h.bounds[len(h.bounds)-1].pos.String(); last != "MariaDB/0-1-1000" {
		t.Errorf("the hub's position after the transactions is %s, want MariaDB/0-1-1000", last)
	}
}
