package vstreamer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vstream-cdc/vstream/filter"
	"github.com/vstream-cdc/vstream/gen/query"
	"github.com/vstream-cdc/vstream/internal/testkit"
	"github.com/vstream-cdc/vstream/internal/testkit/evtext"
)

// batchString renders a rows batch as Vitess's row streamer tests write them: the first with
// fields and pkfields, the next ones with rows and lastpk.
func batchString(b *RowsBatch) string {
	var parts []string
	if len(b.Fields) > 0 {
		parts = append(parts, "fields:"+fieldsString(b.Fields))
		parts = append(parts, "pkfields:"+fieldsString(b.PKFields))
	}
	if len(b.Rows) > 0 {
		var rows []string
		for _, r := range b.Rows {
			rows = append(rows, evtext.Row(r))
		}
		parts = append(parts, "rows:"+strings.Join(rows, ""))
	}
	if b.LastPK != nil {
		parts = append(parts, "lastpk:"+evtext.Row(b.LastPK))
	}
	if b.Heartbeat {
		parts = append(parts, "heartbeat")
	}
	return strings.Join(parts, " ")
}

func fieldsString(fs []*query.Field) string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Name+":"+f.Type.String())
	}
	return "[" + strings.Join(out, " ") + "]"
}

// collectRows runs StreamRows and renders its batches; it checks every first batch has a GTID.
func collectRows(t *testing.T, e *Engine, req RowsRequest) ([]string, string, error) {
	t.Helper()
	var got []string
	var gtid string
	err := e.StreamRows(context.Background(), req, func(b *RowsBatch) error {
		if len(b.Fields) > 0 {
			gtid = b.GTID
		}
		got = append(got, batchString(b))
		return nil
	})
	return got, gtid, err
}

func lastPK(fields []*query.Field, vals ...string) *query.QueryResult {
	row := &query.Row{}
	for _, v := range vals {
		row.Lengths = append(row.Lengths, int64(len(v)))
		row.Values = append(row.Values, v...)
	}
	return &query.QueryResult{Fields: fields, Rows: []*query.Row{row}}
}

// TestStreamRowsScan follows Vitess's TestStreamRowsScan: single, composite, missing (all
// columns) and unique-key keys, projections, and resuming after a last key.
func TestStreamRowsScan(t *testing.T) {
	testkit.MustExec(t, db,
		"drop table if exists rs1, rs2, rs3, rs4, rs5",
		"create table rs1(id int, val varbinary(128), primary key(id))",
		"insert into rs1 values (1, 'aaa'), (2, 'bbb')",
		"create table rs2(id1 int, id2 int, val varbinary(128), primary key(id1, id2))",
		"insert into rs2 values (1, 2, 'aaa'), (1, 3, 'bbb')",
		"create table rs3(id int, val varbinary(128))",
		"insert into rs3 values (1, 'aaa'), (2, 'bbb')",
		"create table rs4(id1 int, id2 int, id3 int, val varbinary(128), primary key(id1, id2, id3))",
		"insert into rs4 values (1, 2, 3, 'aaa'), (2, 3, 4, 'bbb')",
		"create table rs5(id1 int not null, id2 int not null, id3 int not null, val varbinary(128), unique key id1_id2_id3 (id1, id2, id3))",
		"insert into rs5 values (1, 2, 3, 'aaa'), (2, 3, 4, 'bbb')",
	)
	e := newEngine(t)
	pk := func(names ...string) []*query.Field {
		var out []*query.Field
		for _, n := range names {
			out = append(out, &query.Field{Name: n})
		}
		return out
	}
	cases := []struct {
		query  string
		lastpk *query.QueryResult
		want   []string
	}{
		{"select val from rs1", nil, []string{
			"fields:[val:VARBINARY] pkfields:[id:INT32]",
			"rows:[aaa][bbb] lastpk:[2]",
		}},
		{"select * from rs1", nil, []string{
			"fields:[id:INT32 val:VARBINARY] pkfields:[id:INT32]",
			"rows:[1 aaa][2 bbb] lastpk:[2]",
		}},
		{"select * from rs1", lastPK(pk("id"), "1"), []string{
			"fields:[id:INT32 val:VARBINARY] pkfields:[id:INT32]",
			"rows:[2 bbb] lastpk:[2]",
		}},
		// Vitess reads only the row of lastpk; a client may leave its fields out.
		{"select * from rs1", lastPK(nil, "1"), []string{
			"fields:[id:INT32 val:VARBINARY] pkfields:[id:INT32]",
			"rows:[2 bbb] lastpk:[2]",
		}},
		{"select val, id from rs1", nil, []string{
			"fields:[val:VARBINARY id:INT32] pkfields:[id:INT32]",
			"rows:[aaa 1][bbb 2] lastpk:[2]",
		}},
		{"select * from rs2", nil, []string{
			"fields:[id1:INT32 id2:INT32 val:VARBINARY] pkfields:[id1:INT32 id2:INT32]",
			"rows:[1 2 aaa][1 3 bbb] lastpk:[1 3]",
		}},
		{"select * from rs2", lastPK(pk("id1", "id2"), "1", "2"), []string{
			"fields:[id1:INT32 id2:INT32 val:VARBINARY] pkfields:[id1:INT32 id2:INT32]",
			"rows:[1 3 bbb] lastpk:[1 3]",
		}},
		{"select * from rs3", nil, []string{
			"fields:[id:INT32 val:VARBINARY] pkfields:[id:INT32 val:VARBINARY]",
			"rows:[1 aaa][2 bbb] lastpk:[2 bbb]",
		}},
		{"select * from rs3", lastPK(pk("id", "val"), "1", "aaa"), []string{
			"fields:[id:INT32 val:VARBINARY] pkfields:[id:INT32 val:VARBINARY]",
			"rows:[2 bbb] lastpk:[2 bbb]",
		}},
		{"select * from rs4", lastPK(pk("id1", "id2", "id3"), "1", "2", "3"), []string{
			"fields:[id1:INT32 id2:INT32 id3:INT32 val:VARBINARY] pkfields:[id1:INT32 id2:INT32 id3:INT32]",
			"rows:[2 3 4 bbb] lastpk:[2 3 4]",
		}},
		{"select * from rs5", lastPK(pk("id1", "id2", "id3"), "1", "2", "3"), []string{
			"fields:[id1:INT32 id2:INT32 id3:INT32 val:VARBINARY] pkfields:[id1:INT32 id2:INT32 id3:INT32]",
			"rows:[2 3 4 bbb] lastpk:[2 3 4]",
		}},
		// Vitess's TestStreamRowsFilterInt: the last key read is sent even when the rule's
		// conditions leave that row out.
		{"select id, val from rs1 where id = 1", nil, []string{
			"fields:[id:INT32 val:VARBINARY] pkfields:[id:INT32]",
			"rows:[1 aaa] lastpk:[1]",
		}},
		// Nothing after the last key: only the first batch.
		{"select * from rs1", lastPK(pk("id"), "2"), []string{
			"fields:[id:INT32 val:VARBINARY] pkfields:[id:INT32]",
		}},
	}
	cur := headPos(t)
	for _, c := range cases {
		name := c.query
		if c.lastpk != nil {
			name += " after " + evtext.Row(c.lastpk.Rows[0])
		}
		t.Run(name, func(t *testing.T) {
			got, gtid, err := collectRows(t, e, RowsRequest{Query: c.query, LastPK: c.lastpk})
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(c.want, "\n  "))
			}
			if want := cur; gtid != want {
				t.Errorf("gtid %q, want the server's position %q", gtid, want)
			}
		})
	}
}

// TestStreamRowsMultiPacket follows Vitess's TestStreamRowsMultiPacket: responses are bounded
// by the batch size, each with the key of its last row.
func TestStreamRowsMultiPacket(t *testing.T) {
	testkit.MustExec(t, db,
		"drop table if exists rsm",
		"create table rsm(id int, val varbinary(128), primary key(id))",
		"insert into rsm values (1, '234'), (2, '6789'), (3, '1'), (4, '2345678901'), (5, '2')",
	)
	got, _, err := collectRows(t, newEngine(t), RowsRequest{Query: "select * from rsm", MaxBatchBytes: 10})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"fields:[id:INT32 val:VARBINARY] pkfields:[id:INT32]",
		"rows:[1 234][2 6789] lastpk:[2]",
		"rows:[3 1][4 2345678901] lastpk:[4]",
		"rows:[5 2] lastpk:[5]",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// TestStreamRowsSnapshot: rows and GTID come from one snapshot. Rows written after it are
// neither read nor in the GTID, so a client streaming the binlog from the GTID gets them.
func TestStreamRowsSnapshot(t *testing.T) {
	testkit.MustExec(t, db,
		"drop table if exists rss",
		"create table rss(id int primary key, val varchar(8))",
		"insert into rss values (1, 'a'), (2, 'b')",
	)
	before := headPos(t)
	var got []string
	var gtid string
	err := newEngine(t).StreamRows(context.Background(), RowsRequest{Query: "select * from rss"}, func(b *RowsBatch) error {
		if len(b.Fields) > 0 {
			// The snapshot is open and the rows not read yet.
			gtid = b.GTID
			testkit.MustExec(t, db, "insert into rss values (3, 'c')", "update rss set val = 'x' where id = 1")
		}
		got = append(got, batchString(b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := "rows:[1 a][2 b] lastpk:[2]"; len(got) != 2 || got[1] != want {
		t.Errorf("got %q, want the rows of the snapshot %q", got, want)
	}
	if want := before; gtid != want {
		t.Errorf("gtid %q, want %q (the position before the writes)", gtid, want)
	}
}

// TestStreamRowsHeartbeat follows Vitess's TestStreamRowsHeartbeat: while the read waits (here
// on a table another session holds locked), heartbeats go out.
func TestStreamRowsHeartbeat(t *testing.T) {
	testkit.MustExec(t, db,
		"drop table if exists rsh",
		"create table rsh(id int primary key)",
		"insert into rsh values (1)",
	)
	lock, err := db.Conn("test")
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	lockTable := func() error {
		_, err := lock.Execute("LOCK TABLES rsh WRITE")
		return err
	}
	// MySQL's snapshot takes the table's read lock, which would wait before the read begins:
	// there the table is locked once the snapshot is open (the fields are sent before the
	// rows are read), and the read waits as on MariaDB.
	if !onMySQL() {
		if err := lockTable(); err != nil {
			t.Fatal(err)
		}
	}
	beats := 0
	err = newEngine(t).StreamRows(context.Background(), RowsRequest{Query: "select * from rsh", HeartbeatInterval: 20 * time.Millisecond},
		func(b *RowsBatch) error {
			if len(b.Fields) > 0 && onMySQL() {
				return lockTable()
			}
			if b.Heartbeat {
				if beats++; beats == 3 {
					lock.Execute("UNLOCK TABLES")
				}
				return nil
			}
			if len(b.Rows) > 0 && beats < 3 {
				return errors.New("rows read while the table was locked")
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if beats < 3 {
		t.Errorf("%d heartbeats, want at least 3", beats)
	}
}

// TestStreamRowsCancel: a read the client leaves ends at once, even when the server is still
// waiting for its first row.
func TestStreamRowsCancel(t *testing.T) {
	testkit.MustExec(t, db,
		"drop table if exists rsc",
		"create table rsc(id int primary key)",
		"insert into rsc values (1)",
	)
	lock, err := db.Conn("test")
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if _, err := lock.Execute("LOCK TABLES rsc WRITE"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if onMySQL() {
		// MySQL's snapshot takes the table's read lock first: the read waits there, before
		// its fields are sent, and is left once the server shows it waiting.
		go func() {
			for ctx.Err() == nil {
				n, err := queryStringOn(t, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE 'LOCK TABLES%rsc%'")
				if err == nil && n != "0" {
					cancel()
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
		}()
	}
	done := make(chan error, 1)
	go func() {
		done <- newEngine(t).StreamRows(ctx, RowsRequest{Query: "select * from rsc"}, func(b *RowsBatch) error {
			if len(b.Fields) > 0 {
				time.AfterFunc(50*time.Millisecond, cancel)
			}
			return nil
		})
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("got %v, want context.Canceled", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the read did not end when its context did")
	}
}

func TestStreamRowsErrors(t *testing.T) {
	testkit.MustExec(t, db,
		"drop table if exists rse",
		"create table rse(id int primary key, val int)",
	)
	e := newEngine(t)
	cases := []struct {
		req  RowsRequest
		want string
	}{
		{RowsRequest{Query: "delete from rse"}, "want select <columns> from <table>"},
		{RowsRequest{Query: "select * from nosuch"}, "is not present"},
		{RowsRequest{Query: "select nosuch from rse"}, "nosuch"},
		{RowsRequest{Query: "select * from rse", LastPK: lastPK(nil, "1", "2")}, "the row has 2 values, the key 1 columns"},
		{RowsRequest{Query: "select * from rse", LastPK: lastPK([]*query.Field{{Name: "val"}}, "1")}, "over column val"},
	}
	for _, c := range cases {
		t.Run(c.req.Query, func(t *testing.T) {
			_, _, err := collectRows(t, e, c.req)
			if !errors.Is(err, filter.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want an invalid-filter error saying %q", err, c.want)
			}
		})
	}
}

// TestStreamTables follows Vitess's TestTableStreamer: every table, in name order, with its
// name on every batch and the same GTID on each table's first batch.
func TestStreamTables(t *testing.T) {
	// A database of its own, so that the other tests' tables do not show.
	testkit.MustExec(t, db, "drop database if exists tables_db", "create database tables_db",
		"create table tables_db.t1(id int, val varbinary(128), primary key(id))",
		"insert into tables_db.t1 values (1, 'aaa'), (2, 'bbb')",
		"create table tables_db.t2(id1 int, id2 int, val varbinary(128), primary key(id1, id2))",
		"insert into tables_db.t2 values (1, 2, 'aaa'), (1, 3, 'bbb')",
		"create table tables_db.t3(id int, val varbinary(128))",
		"insert into tables_db.t3 values (1, 'aaa'), (2, 'bbb')",
		"create table tables_db.t4(id1 int, id2 int, id3 int, val varbinary(128), primary key(id1, id2, id3))",
		"insert into tables_db.t4 values (1, 2, 3, 'aaa'), (2, 3, 4, 'bbb')",
		"create view tables_db.v1 as select * from tables_db.t1",
	)
	defer testkit.MustExec(t, db, "drop database tables_db")
	cur := headPos(t)
	e, err := NewEngine(Config{Addr: db.Addr(), User: db.User(), Password: db.Password(), Database: "tables_db"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	err = e.StreamTables(context.Background(), TablesRequest{}, func(b *RowsBatch) error {
		if len(b.Fields) > 0 && b.GTID != cur {
			return fmt.Errorf("table %s: gtid %q, want %q", b.Table, b.GTID, cur)
		}
		got = append(got, b.Table+" "+batchString(b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"t1 fields:[id:INT32 val:VARBINARY] pkfields:[id:INT32]",
		"t1 rows:[1 aaa][2 bbb] lastpk:[2]",
		"t2 fields:[id1:INT32 id2:INT32 val:VARBINARY] pkfields:[id1:INT32 id2:INT32]",
		"t2 rows:[1 2 aaa][1 3 bbb] lastpk:[1 3]",
		"t3 fields:[id:INT32 val:VARBINARY] pkfields:[id:INT32 val:VARBINARY]",
		"t3 rows:[1 aaa][2 bbb] lastpk:[2 bbb]",
		"t4 fields:[id1:INT32 id2:INT32 id3:INT32 val:VARBINARY] pkfields:[id1:INT32 id2:INT32 id3:INT32]",
		"t4 rows:[1 2 3 aaa][2 3 4 bbb] lastpk:[2 3 4]",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}
