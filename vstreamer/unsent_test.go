package vstreamer

import (
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/vstream-cdc/vstream/filter"
)

// TestUnsentEvents: a stream's reader drops the table maps and rows events of the tables the
// stream leaves out (and MariaDB's annotate rows events when it carries no sources), and
// hands on everything else, judging a table id again when it names another table.
func TestUnsentEvents(t *testing.T) {
	flt, err := filter.New(filterSKA)
	if err != nil {
		t.Fatal(err)
	}
	tm := func(id uint64, db, table string) *replication.BinlogEvent {
		return &replication.BinlogEvent{Header: &replication.EventHeader{EventType: replication.TABLE_MAP_EVENT},
			Event: &replication.TableMapEvent{TableID: id, Schema: []byte(db), Table: []byte(table)}}
	}
	rows := func(id uint64) *replication.BinlogEvent {
		return &replication.BinlogEvent{Header: &replication.EventHeader{EventType: replication.WRITE_ROWS_EVENTv2},
			Event: &replication.RowsEvent{TableID: id}}
	}
	annotate := &replication.BinlogEvent{Header: &replication.EventHeader{EventType: replication.MARIADB_ANNOTATE_ROWS_EVENT},
		Event: &replication.MariadbAnnotateRowsEvent{Query: []byte("INSERT INTO skb VALUES (1)")}}
	restart := &replication.BinlogEvent{Header: &replication.EventHeader{EventType: replication.FORMAT_DESCRIPTION_EVENT},
		Event: &replication.FormatDescriptionEvent{}}
	xid := &replication.BinlogEvent{Header: &replication.EventHeader{EventType: replication.XID_EVENT}, Event: &replication.XIDEvent{}}

	ks := &keyspaceStream{cfg: &Config{Database: "test"}, filter: flt}
	s := &stream{keyspaces: []*keyspaceStream{ks}}
	s.use(ks)
	u := unsent{s: s}
	for i, step := range []struct {
		ev   *replication.BinlogEvent
		drop bool
	}{
		{rows(1), false}, // a table id not seen yet: the stream goroutine decides
		{tm(1, "test", "ska"), false},
		{rows(1), false},
		{tm(2, "test", "skb"), true},
		{rows(2), true},
		{annotate, true},
		{tm(3, "other", "ska"), true}, // another database
		{rows(3), true},
		{tm(4, "test", "_ska_gho"), true}, // an online schema change's table
		{tm(2, "test", "ska"), false},     // the id now names a streamed table
		{rows(2), false},
		{tm(1, "test", "skb"), true},
		{rows(1), true},
		{restart, false}, // ids are reused after a restart
		{rows(1), false},
		{xid, false},
	} {
		if got := u.drops(step.ev); got != step.drop {
			t.Errorf("step %d: %v drops %v, want %v", i, step.ev.Header.EventType, got, step.drop)
		}
	}

	// A stream of several keyspaces sends the tables of each keyspace's database.
	multi := &stream{keyspaces: []*keyspaceStream{ks, {cfg: &Config{Database: "test2"}, filter: flt}}}
	multi.use(ks)
	mu := unsent{s: multi}
	for _, ev := range []*replication.BinlogEvent{tm(5, "test2", "ska"), rows(5), tm(6, "test", "ska")} {
		if mu.drops(ev) {
			t.Errorf("a stream of two keyspaces does not get %v", ev.Header.EventType)
		}
	}
	if !mu.drops(tm(7, "test2", "skb")) {
		t.Errorf("a stream of two keyspaces gets the table map of test2.skb")
	}

	s.withSrc = true
	for _, ev := range []*replication.BinlogEvent{tm(2, "test", "skb"), rows(2), annotate} {
		if u.drops(ev) {
			t.Errorf("a stream with sources does not get %v", ev.Header.EventType)
		}
	}
}
