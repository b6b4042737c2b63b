package vstreamer

import (
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/vstream-cdc/vstream/vstreamer/fanout"
)

// TestMarks: where the shared reader's marker finds transactions start (with their GTIDs)
// and end, event by event, and that it allocates nothing for a transaction's events: it
// reads every transaction of the dump.
func TestMarks(t *testing.T) {
	sid := []byte{0x3e, 0x11, 0xfa, 0x47, 0x71, 0xca, 0x11, 0xe1, 0x9e, 0x33, 0xc8, 0x0a, 0xa9, 0x42, 0x95, 0x62}
	ev := func(e replication.Event) *replication.BinlogEvent {
		return &replication.BinlogEvent{Header: &replication.EventHeader{}, Event: e}
	}
	query := func(q string) *replication.BinlogEvent { return ev(&replication.QueryEvent{Query: []byte(q)}) }
	rows := []*replication.BinlogEvent{ev(&replication.TableMapEvent{}), ev(&replication.RowsEvent{})}
	xid := ev(&replication.XIDEvent{XID: 7})
	for _, c := range []struct {
		name   string
		events []*replication.BinlogEvent
		// want is each event's mark: "start <gtid>", "end" or "".
		want       []string
		noAllocate bool
	}{
		{"MySQL transaction", append(append([]*replication.BinlogEvent{ev(&replication.GTIDEvent{SID: sid, GNO: 45}), query("BEGIN")}, rows...), xid),
			[]string{"start 3e11fa47-71ca-11e1-9e33-c80aa9429562:45", "", "", "", "end"}, true},
		{"MySQL 8.4 tagged GTID", []*replication.BinlogEvent{ev(&replication.GtidTaggedLogEvent{GTIDEvent: replication.GTIDEvent{SID: sid, GNO: 3, Tag: mysql.NewTag("mytag")}}), query("BEGIN"), xid},
			[]string{"start 3e11fa47-71ca-11e1-9e33-c80aa9429562:mytag:3", "", "end"}, true},
		{"MySQL DDL", []*replication.BinlogEvent{ev(&replication.GTIDEvent{SID: sid, GNO: 46}), query("CREATE TABLE t (a int)")},
			[]string{"start 3e11fa47-71ca-11e1-9e33-c80aa9429562:46", "end"}, false},
		{"MySQL without a GTID", []*replication.BinlogEvent{ev(&replication.GTIDEvent{SID: make([]byte, 16), GNO: 1}), query("BEGIN"), xid},
			[]string{"", "", "end"}, true},
		{"MariaDB transaction", append(append([]*replication.BinlogEvent{ev(&replication.MariadbGTIDEvent{GTID: mysql.MariadbGTID{DomainID: 0, ServerID: 1, SequenceNumber: 12}})}, rows...), xid),
			[]string{"start 0-1-12", "", "", "end"}, true},
		{"MariaDB DDL", []*replication.BinlogEvent{ev(&replication.MariadbGTIDEvent{GTID: mysql.MariadbGTID{DomainID: 0, ServerID: 1, SequenceNumber: 13}, Flags: replication.BINLOG_MARIADB_FL_STANDALONE}), query("CREATE TABLE t (a int)")},
			[]string{"start 0-1-13", "end"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var m txnMarks
			for i, e := range c.events {
				g, start, end := m.Mark(e)
				got := ""
				switch {
				case start:
					got = "start " + gtidText(g)
				case end:
					got = "end"
				}
				if got != c.want[i] {
					t.Errorf("event %d (%T): %q, want %q", i, e.Event, got, c.want[i])
				}
			}
			if !c.noAllocate {
				return
			}
			if n := testing.AllocsPerRun(100, func() {
				for _, e := range c.events {
					m.Mark(e)
				}
			}); n != 0 {
				t.Errorf("%v allocations for the transaction's events, want none", n)
			}
		})
	}
}

// gtidText is a marked GTID as the stream writes it.
func gtidText(g fanout.GTID) string {
	switch {
	case g.MariaDB != nil:
		return formatMariaDBGTID(*g.MariaDB)
	case g.MySQL != nil:
		s, _ := mysqlGTIDString(g.MySQL)
		return s
	}
	return g.Text
}
