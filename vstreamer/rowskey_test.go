package vstreamer

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/vstream-cdc/vstream/filter"
	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	"github.com/vstream-cdc/vstream/internal/testkit"
)

// TestStreamRowsDirectives follows Vitess's TestRowStreamerQuery: the ukColumns and ukForce
// directives make the read go by a unique key other than the primary key, which then keys
// pkfields and lastpk; a client resumes after a lastpk over those columns.
func TestStreamRowsDirectives(t *testing.T) {
	testkit.MustExec(t, db,
		"drop table if exists rd1, rd2",
		"create table rd1(id int, uk1 int, val varbinary(128), primary key(id), unique key uk2 (uk1), key kval (val))",
		"insert into rd1 values (1, 30, 'a'), (2, 20, 'b'), (3, 10, 'c')",
		// A composite unique key, named in another order than the index's.
		"create table rd2(id int primary key, a int not null, b varchar(8) not null, unique key ab (a, b))",
		"insert into rd2 values (1, 1, 'y'), (2, 1, 'x'), (3, 0, 'z')",
	)
	e := newEngine(t)
	byPK := []string{
		"fields:[id:INT32 uk1:INT32 val:VARBINARY] pkfields:[id:INT32]",
		"rows:[1 30 a][2 20 b][3 10 c] lastpk:[3]",
	}
	byUK := []string{
		"fields:[id:INT32 uk1:INT32 val:VARBINARY] pkfields:[uk1:INT32]",
		"rows:[3 10 c][2 20 b][1 30 a] lastpk:[30]",
	}
	cases := []struct {
		query  string
		lastpk *query.QueryResult
		want   []string
	}{
		{"select id, uk1, val from rd1", nil, byPK},
		{`select /*vt+ ukColumns="uk1" ukForce="uk2" */ id, uk1, val from rd1`, nil, byUK},
		{`select /*vt+ ukForce="uk2" */ id, uk1, val from rd1`, nil, byUK},
		{`select /*vt+ ukColumns="uk1" */ id, uk1, val from rd1`, nil, byUK},
		// ukForce may name a non-unique index when ukColumns give the key.
		{`select /*vt+ ukColumns="uk1" ukForce="kval" */ id, uk1, val from rd1`, nil, byUK},
		{`select /*vt+ ukColumns="uk1" ukForce="uk2" */ id, uk1, val from rd1`, lastPK([]*query.Field{{Name: "uk1"}}, "10"), []string{
			"fields:[id:INT32 uk1:INT32 val:VARBINARY] pkfields:[uk1:INT32]",
			"rows:[2 20 b][1 30 a] lastpk:[30]",
		}},
		// The filter still applies; the last key is the last row read.
		{`select /*vt+ ukColumns="uk1" ukForce="uk2" */ id, val from rd1 where id < 3`, nil, []string{
			"fields:[id:INT32 val:VARBINARY] pkfields:[uk1:INT32]",
			"rows:[2 b][1 a] lastpk:[30]",
		}},
		{`select /*vt+ ukColumns="b,a" */ * from rd2`, nil, []string{
			"fields:[id:INT32 a:INT32 b:VARCHAR] pkfields:[b:VARCHAR a:INT32]",
			"rows:[2 1 x][1 1 y][3 0 z] lastpk:[z 0]",
		}},
		{`select /*vt+ ukForce="ab" */ * from rd2`, lastPK([]*query.Field{{Name: "a"}, {Name: "b"}}, "1", "x"), []string{
			"fields:[id:INT32 a:INT32 b:VARCHAR] pkfields:[a:INT32 b:VARCHAR]",
			"rows:[1 1 y] lastpk:[1 y]",
		}},
	}
	for _, c := range cases {
		t.Run(c.query, func(t *testing.T) {
			got, _, err := collectRows(t, e, RowsRequest{Query: c.query, LastPK: c.lastpk})
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(c.want, "\n  "))
			}
		})
	}
}

// TestStreamRowsDirectivesRefused: directives naming what the table has not, or a key that
// is not unique, are the client's to fix, and say what to name instead.
func TestStreamRowsDirectivesRefused(t *testing.T) {
	testkit.MustExec(t, db,
		"drop table if exists rdx",
		"create table rdx(id int primary key, uk1 int, val varbinary(8), unique key uk2 (uk1), key kval (val))",
	)
	e := newEngine(t)
	for _, c := range []struct{ query, want string }{
		{`select /*vt+ ukColumns="nosuch" */ * from rdx`, "names column nosuch, which table rdx has not; name the columns of one of its unique keys: PRIMARY (id), uk2 (uk1)"},
		{`select /*vt+ ukForce="nosuch" */ * from rdx`, "names index nosuch, which table rdx has not; its indexes are PRIMARY (id), kval (val), uk2 (uk1)"},
		{`select /*vt+ ukColumns="uk1" ukForce="nosuch" */ * from rdx`, "names index nosuch"},
		{`select /*vt+ ukColumns="val" */ * from rdx`, "ukColumns (val) are not the columns of a unique key of rdx"},
		{`select /*vt+ ukColumns="id,uk1" */ * from rdx`, "ukColumns (id, uk1) are not the columns of a unique key"},
		{`select /*vt+ ukForce="kval" */ * from rdx`, "index kval of rdx, which is not unique"},
		{`select /*vt+ ukColumns="a%zz" */ * from rdx`, "not URL-escaped"},
		{`select /*vt+ ukColumns="uk1,UK1" */ * from rdx`, "names column UK1 twice"},
		// A lastpk over the primary key does not resume a read by another key.
		{`select /*vt+ ukForce="uk2" */ * from rdx`, "over column id"},
	} {
		t.Run(c.query, func(t *testing.T) {
			req := RowsRequest{Query: c.query}
			if strings.Contains(c.want, "over column") {
				req.LastPK = lastPK([]*query.Field{{Name: "id"}}, "1")
			}
			_, _, err := collectRows(t, e, req)
			if !errors.Is(err, filter.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want an invalid-filter error saying %q", err, c.want)
			}
		})
	}
}

// floatTextSQL makes a table of FLOAT and DOUBLE values whose server text differs from what
// a float64 formats to.
var floatTextSQL = []string{
	"drop table if exists rft",
	"create table rft(id int primary key, f float, d double, f2 float(7,3))",
	"insert into rft values (1, 1.1, 1.1, 1.1), (2, 3.99, -0.000123, -12.5), (3, 123456789, 1e20, null), (4, 1.5e-7, 2.5e-300, 0)",
}

// floatTextRows are those values as SELECT prints them, as Vitess's row and result
// streamers send them.
var floatTextRows = "rows:[1 1.1 1.1 1.100][2 3.99 -0.000123 -12.500][3 123457000 1e20 NULL][4 0.00000015 2.5e-300 0.000]"

// TestStreamRowsFloatText: VStreamRows, VStreamTables and VStreamResults send FLOAT and
// DOUBLE values as the server prints them ("1.1"), as Vitess's do; the VStream copy keeps
// the binlog's format (TestCopyTypes).
func TestStreamRowsFloatText(t *testing.T) {
	testkit.MustExec(t, db, floatTextSQL...)
	e := newEngine(t)
	want := []string{
		"fields:[id:INT32 f:FLOAT32 d:FLOAT64 f2:FLOAT32] pkfields:[id:INT32]",
		floatTextRows + " lastpk:[4]",
	}
	for _, q := range []string{"select * from rft", "select * from rft where f > 0"} {
		got, _, err := collectRows(t, e, RowsRequest{Query: q})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: got\n  %s\nwant\n  %s", q, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
		}
	}
	var rows []string
	err := e.StreamResults(context.Background(), ResultsRequest{Query: "select id, f, d, f2 from rft order by id"}, func(b *RowsBatch) error {
		if len(b.Rows) > 0 {
			rows = append(rows, batchString(b))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(rows, ""); got != floatTextRows {
		t.Errorf("results: got %s, want %s", got, floatTextRows)
	}
}

// TestCopyIgnoresDirectives: a VStream copy reads by its own key whatever directives its
// rule holds, and sends FLOAT as its binlog rows have it, not as VStreamRows does.
func TestCopyIgnoresDirectives(t *testing.T) {
	testkit.MustExec(t, db,
		"drop table if exists rdc",
		"create table rdc(id int primary key, uk1 int, f float, unique key uk2 (uk1))",
		"insert into rdc values (1, 30, 1.1), (2, 20, 2.5), (3, 10, -3)",
	)
	e := newEngine(t)
	rule := `select /*vt+ ukColumns="uk1" ukForce="uk2" */ * from rdc`
	ts := startStream(t, e, Request{Filter: rules(&binlogdata.Rule{Match: "rdc", Filter: rule})})
	evs := ts.expect("BEGIN", "FIELD rdc id:INT32 uk1:INT32 f:FLOAT32", "ROW rdc +[1 30 1.1E+00] +[2 20 2.5E+00] +[3 10 -3E+00]",
		"LASTPK", "COPY_COMPLETED", "COPY_COMPLETED", "COMMIT", "VGTID")
	lp := evs[3].LastPKEvent.TableLastPK.Lastpk
	if lp.Fields[0].Name != "id" || string(lp.Rows[0].Values) != "3" {
		t.Errorf("LASTPK %v, want id 3", lp)
	}
	got, _, err := collectRows(t, e, RowsRequest{Query: rule})
	if err != nil {
		t.Fatal(err)
	}
	want := "fields:[id:INT32 uk1:INT32 f:FLOAT32] pkfields:[uk1:INT32]\nrows:[3 10 -3][2 20 2.5][1 30 1.1] lastpk:[30]"
	if strings.Join(got, "\n") != want {
		t.Errorf("rows: got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), want)
	}
}
