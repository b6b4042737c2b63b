package vstreamer

import (
	"strconv"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/client"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/internal/testkit"
)

// binlogEvent is a row of SHOW BINLOG EVENTS: the server's own account of its binlog, which
// the event sources must agree with.
type binlogEvent struct {
	pos, end uint64
	typ      string
	serverID uint32
	info     string
}

func showBinlogEvents(t *testing.T, conn *client.Conn, file string) map[uint64]binlogEvent {
	t.Helper()
	res, err := conn.Execute("SHOW BINLOG EVENTS IN '" + file + "'")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	out := map[uint64]binlogEvent{}
	for i := 0; i < res.RowNumber(); i++ {
		var e binlogEvent
		pos, _ := res.GetUintByName(i, "Pos")
		end, _ := res.GetUintByName(i, "End_log_pos")
		sid, _ := res.GetUintByName(i, "Server_id")
		e.pos, e.end, e.serverID = pos, end, uint32(sid)
		e.typ = resultStringByName(res, i, "Event_type")
		e.info = resultStringByName(res, i, "Info")
		out[e.pos] = e
	}
	return out
}

func TestEventSource(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE src1 (id INT PRIMARY KEY, v VARCHAR(10))", "CREATE TABLE srcskip (id INT PRIMARY KEY)")
	conn, err := db.Conn("test")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	r, err := conn.Execute("SELECT CONNECTION_ID(), @@server_id")
	if err != nil {
		t.Fatal(err)
	}
	threadID, _ := r.GetUint(0, 0)
	serverID, _ := r.GetUint(0, 1)
	r.Close()
	if onMySQL() {
		// MariaDB annotates rows with their statement by default; MySQL when asked to.
		if _, err := conn.Execute("SET SESSION binlog_rows_query_log_events = ON"); err != nil {
			t.Fatal(err)
		}
	}

	e := newEngine(t)
	ts := startStream(t, e, Request{Position: "current", WithSource: true,
		Filter: &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "src1"}}}})
	ts.expect("GTID", "OTHER", "VGTID")

	const insert = "INSERT INTO src1 VALUES (1, 'a'), (2, 'b')"
	for _, q := range []string{
		insert,
		"BEGIN", "INSERT INTO srcskip VALUES (1)", "UPDATE src1 SET v = 'c' WHERE id = 2", "COMMIT",
		"ALTER TABLE src1 ADD COLUMN w INT",
	} {
		if _, err := conn.Execute(q); err != nil {
			t.Fatal(err)
		}
	}
	var evs []*binlogdata.VEvent
	if onMySQL() {
		// MySQL's rows query events are also sent as ROWS_QUERY, whatever their table
		// (TestRowsQueryEvent); the rest is as on MariaDB.
		all := ts.expect("BEGIN", "ROWS_QUERY "+insert, "FIELD", "ROW", "GTID", "COMMIT", "VGTID",
			"BEGIN", "ROWS_QUERY INSERT INTO srcskip VALUES (1)", "ROWS_QUERY UPDATE src1 SET v = 'c' WHERE id = 2", "ROW", "GTID", "COMMIT", "VGTID",
			"GTID", "DDL", "VGTID")
		for _, ev := range all {
			if ev.Type != binlogdata.VEventType_ROWS_QUERY {
				evs = append(evs, ev)
			}
		}
	} else {
		evs = ts.expect("BEGIN", "FIELD", "ROW", "GTID", "COMMIT", "VGTID",
			"BEGIN", "ROW", "GTID", "COMMIT", "VGTID",
			"GTID", "DDL", "VGTID")
	}
	file := evs[0].Source.GetFile()
	if file == "" {
		t.Fatalf("BEGIN has no binlog file: %v", evs[0].Source)
	}
	binlog := showBinlogEvents(t, conn, file)
	// at checks that an event's source names a real binlog event of the given type.
	at := func(ev *binlogdata.VEvent, typ string) binlogEvent {
		t.Helper()
		src := ev.GetSource()
		b, ok := binlog[src.GetStartPos()]
		if src.GetFile() != file || !ok || b.end != src.GetEndPos() || !strings.HasPrefix(b.typ, typ) || b.serverID != src.GetServerId() || b.serverID != uint32(serverID) {
			t.Errorf("%v source %v is not a %s event of %s (server's: %+v)", ev.Type, src, typ, file, b)
		}
		return b
	}

	begin, field, row, gtid, commit := evs[0], evs[1], evs[2], evs[3], evs[4]
	// MariaDB's GTID event begins the transaction; MySQL's is followed by a BEGIN query event,
	// which names the session.
	if b := at(begin, byFlavor("Gtid", "Query")); onMySQL() && (b.info != "BEGIN" || begin.Source.GetThreadId() != threadID) {
		t.Errorf("BEGIN source %v, want the BEGIN query of thread %d (the server's: %+v)", begin.Source, threadID, b)
	}
	if begin.Source.GetGtidSet() != gtid.Gtid {
		t.Errorf("BEGIN gtid_set %q, want the transaction's position %q", begin.Source.GetGtidSet(), gtid.Gtid)
	}
	at(field, "Table_map")
	if field.Source.GetDatabase() != "test" || field.Source.GetTableId() == 0 {
		t.Errorf("FIELD source %v", field.Source)
	}
	at(row, "Write_rows")
	if s := row.Source; s.GetRowsEventOrdinal() != 1 || s.GetTableId() != field.Source.GetTableId() || s.GetDatabase() != "test" || s.GetQuery() != insert {
		t.Errorf("ROW source %v", s)
	}
	if rc := row.RowEvent.RowChanges; len(rc) != 2 || rc[0].RowIndex != 0 || rc[1].RowIndex != 1 {
		t.Errorf("row indexes of a two-row event: %v", rc)
	}
	b := at(commit, "Xid")
	if want := "COMMIT /* xid=" + strconv.FormatUint(commit.Source.GetXid(), 10) + " */"; commit.Source.GetXid() == 0 || b.info != want {
		t.Errorf("COMMIT xid %d; the server logged %q", commit.Source.GetXid(), b.info)
	}

	// The second transaction's update is its second rows event: the first, on a filtered-out
	// table, still counts.
	upd := evs[7]
	at(upd, "Update_rows")
	if upd.Source.GetRowsEventOrdinal() != 2 {
		t.Errorf("update ordinal %d, want 2", upd.Source.GetRowsEventOrdinal())
	}

	ddl := evs[12]
	at(ddl, "Query")
	if s := ddl.Source; s.GetDatabase() != "test" || s.GetThreadId() != threadID || s.GetGtidSet() != evs[11].Gtid {
		t.Errorf("DDL source %v; want database test, thread %d, gtid_set %s", s, threadID, evs[11].Gtid)
	}
}

func TestEventSourceOfCopiedRows(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE srccopy (id INT PRIMARY KEY, v VARCHAR(10))", "INSERT INTO srccopy VALUES (1, 'a'), (2, 'b')")
	e := newEngine(t)
	ts := startStream(t, e, Request{WithSource: true, Filter: &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "srccopy"}}}})
	evs := ts.expect("BEGIN", "FIELD", "ROW")
	field, row := evs[1], evs[2]
	if s := field.Source; !s.GetSnapshot() || !strings.HasPrefix(s.GetCreateTable(), "CREATE TABLE `srccopy`") || s.GetFile() == "" || s.GetGtidSet() == "" {
		t.Errorf("copy FIELD source %v", s)
	}
	if s := row.Source; !s.GetSnapshot() || s.GetFile() != field.Source.GetFile() || s.GetStartPos() == 0 || s.GetDatabase() != "test" {
		t.Errorf("copied ROW source %v", s)
	}
	if len(row.RowEvent.RowChanges) != 2 {
		t.Errorf("copied rows: %v", row.RowEvent.RowChanges)
	}
}

// TestNoSourceByDefault keeps native streams as Vitess sends them.
func TestNoSourceByDefault(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE srcnone (id INT PRIMARY KEY)")
	e := newEngine(t)
	ts := startStream(t, e, Request{Position: "current", Filter: &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "srcnone"}}}})
	ts.expect("GTID", "OTHER", "VGTID")
	testkit.MustExec(t, db, "INSERT INTO srcnone VALUES (1), (2)")
	for _, ev := range ts.expect("BEGIN", "FIELD", "ROW", "GTID", "COMMIT", "VGTID") {
		if ev.Source != nil {
			t.Errorf("%v has a source: %v", ev.Type, ev.Source)
		}
		for _, rc := range ev.GetRowEvent().GetRowChanges() {
			if rc.RowIndex != 0 {
				t.Errorf("row index %d on a native stream", rc.RowIndex)
			}
		}
	}
}
