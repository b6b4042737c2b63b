package vstreamer

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/vstream-cdc/vstream/filter"
	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/internal/testkit"
	"github.com/vstream-cdc/vstream/internal/testkit/evtext"
)

func rules(rs ...*binlogdata.Rule) *binlogdata.Filter { return &binlogdata.Filter{Rules: rs} }

func TestFilterStreaming(t *testing.T) {
	testkit.MustExec(t, db,
		// A collation the filter compares (MySQL's default, utf8mb4_0900_ai_ci, is refused).
		"CREATE TABLE fp (id INT PRIMARY KEY, name VARCHAR(20), qty INT, status ENUM('new','paid','gone'), created DATETIME) COLLATE utf8mb4_general_ci",
		"CREATE TABLE fx_keep (id INT PRIMARY KEY)",
		"CREATE TABLE fx_secret (id INT PRIMARY KEY)",
	)
	e := newEngine(t)
	ts := startStream(t, e, Request{Position: "current", Filter: rules(
		&binlogdata.Rule{Match: "fp", Filter: "select qty, id, name from fp where qty > 5 and status in ('NEW', 'paid') and created >= '2024-01-01'"},
		&binlogdata.Rule{Match: "fx_secret", Filter: "exclude"},
		&binlogdata.Rule{Match: "/^fx_"},
	)})
	ts.expect("GTID", "OTHER", "VGTID")
	cases := []struct {
		name string
		sql  []string
		want []string
	}{{
		name: "projection in select order, WHERE keeps matching rows only",
		sql: []string{"INSERT INTO fp VALUES (1, 'a', 10, 'new', '2024-05-01'), (2, 'b', 3, 'new', '2024-05-01'), " +
			"(3, 'c', 10, 'gone', '2024-05-01'), (4, NULL, 7, 'paid', '2024-01-01 00:00:00'), (5, 'e', 9, 'new', '2023-12-31 23:59:59')"},
		want: []string{"BEGIN", "FIELD fp qty:INT32 id:INT32 name:VARCHAR", "ROW fp +[10 1 a] +[7 4 NULL]", "GTID", "COMMIT", "VGTID"},
	}, {
		name: "update moving a row out of the WHERE sends both images",
		sql:  []string{"UPDATE fp SET qty = 1 WHERE id = 1"},
		want: []string{"BEGIN", "ROW fp [10 1 a]>[1 1 a]", "GTID", "COMMIT", "VGTID"},
	}, {
		name: "update moving a row into the WHERE sends both images",
		sql:  []string{"UPDATE fp SET qty = 6 WHERE id = 2"},
		want: []string{"BEGIN", "ROW fp [3 2 b]>[6 2 b]", "GTID", "COMMIT", "VGTID"},
	}, {
		name: "update outside the WHERE before and after sends nothing",
		sql:  []string{"UPDATE fp SET name = 'cc' WHERE id = 3"},
		want: []string{"BEGIN", "GTID", "COMMIT", "VGTID"},
	}, {
		name: "delete of a matching row",
		sql:  []string{"DELETE FROM fp WHERE id = 4"},
		want: []string{"BEGIN", "ROW fp -[7 4 NULL]", "GTID", "COMMIT", "VGTID"},
	}, {
		name: "a DDL that moves columns keeps the projection by name",
		sql:  []string{"ALTER TABLE fp ADD COLUMN extra INT FIRST, MODIFY name VARCHAR(20) AFTER extra", "INSERT INTO fp (id, name, qty, status, created, extra) VALUES (6, 'f', 50, 'paid', '2025-01-01', 99)"},
		want: []string{
			"GTID", "DDL ALTER TABLE fp ADD COLUMN extra INT FIRST, MODIFY name VARCHAR(20) AFTER extra", "VGTID",
			"BEGIN", "FIELD fp qty:INT32 id:INT32 name:VARCHAR", "ROW fp +[50 6 f]", "GTID", "COMMIT", "VGTID",
		},
	}, {
		name: "exclude wins over a later regex rule",
		sql:  []string{"INSERT INTO fx_secret VALUES (1)", "INSERT INTO fx_keep VALUES (1)"},
		want: []string{"BEGIN", "GTID", "COMMIT", "VGTID", "BEGIN", "FIELD fx_keep id:INT32", "ROW fx_keep +[1]", "GTID", "COMMIT", "VGTID"},
	}, {
		name: "a regex rule picks up a table created in the stream",
		sql:  []string{"CREATE TABLE fx_new (id INT PRIMARY KEY, v VARCHAR(5))", "INSERT INTO fx_new VALUES (1, 'x')"},
		want: []string{
			"GTID", "DDL CREATE TABLE fx_new (id INT PRIMARY KEY, v VARCHAR(5))", "VGTID",
			"BEGIN", "FIELD fx_new id:INT32 v:VARCHAR", "ROW fx_new +[1 x]", "GTID", "COMMIT", "VGTID",
		},
	}, {
		name: "RENAME to a streamed name is DDL, from an unstreamed one",
		sql:  []string{"CREATE TABLE zz_plain (id INT PRIMARY KEY)", "RENAME TABLE zz_plain TO fx_renamed"},
		want: []string{
			"GTID", "OTHER", "VGTID",
			"GTID", "DDL RENAME TABLE zz_plain TO fx_renamed", "VGTID",
		},
	}, {
		name: "DDL on an excluded table is OTHER",
		sql:  []string{"ALTER TABLE fx_secret ADD COLUMN c INT"},
		want: []string{"GTID", "OTHER", "VGTID"},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			testkit.MustExec(t, db, c.sql...)
			ts.t = t
			ts.expect(c.want...)
		})
	}
	ts.t = t
}

func TestFilterKeyspaceID(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE fk (id BIGINT UNSIGNED PRIMARY KEY, v INT)")
	e := newEngine(t)
	// Known hash-vindex keyspace ids: 1 -> 166b40b44aba4bd6, 2 -> 06e7ea22ce92708f, 4 -> d2fd8867d50d2dfe.
	ts := startStream(t, e, Request{Position: "current", Filter: rules(
		&binlogdata.Rule{Match: "fk", Filter: "select id, keyspace_id() as ksid from fk where in_keyrange('-80')"},
	)})
	ts.expect("GTID", "OTHER", "VGTID")
	testkit.MustExec(t, db, "INSERT INTO fk VALUES (1, 0), (2, 0), (4, 0)")
	evs := ts.expect("BEGIN", "FIELD fk id:UINT64 keyspace_id:VARBINARY", "ROW", "GTID", "COMMIT", "VGTID")
	var got []string
	for _, rc := range evs[2].RowEvent.RowChanges {
		c := evtext.Cells(rc.After)
		got = append(got, string(c[0])+"="+hexOf(c[1]))
	}
	if strings.Join(got, " ") != "1=166b40b44aba4bd6 2=06e7ea22ce92708f" {
		t.Errorf("rows in -80 = %v", got)
	}
}

func hexOf(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

func TestFilterRejectedUpFront(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE fr (id INT PRIMARY KEY, name VARCHAR(10), ts DATETIME)", "CREATE TABLE fr_nopk (v INT)")
	e := newEngine(t)
	cases := []struct {
		rule *binlogdata.Rule
		msg  string
	}{
		{&binlogdata.Rule{Match: "fr", Filter: "select nope from fr"}, "column nope not found in table fr"},
		{&binlogdata.Rule{Match: "fr", Filter: "select id from fr where missing = 1"}, "column missing not found in table fr"},
		{&binlogdata.Rule{Match: "fr", Filter: "select id from fr where id = 'abc'"}, "is not a number"},
		{&binlogdata.Rule{Match: "fr", Filter: "select id from fr where ts > 'yesterday'"}, "is not a date"},
		{&binlogdata.Rule{Match: "fr", Filter: "select upper(name) from fr"}, "unsupported function: upper(name)"},
		{&binlogdata.Rule{Match: "/^fr_nopk$", Filter: "-80"}, "primary key of one integer column"},
		{&binlogdata.Rule{Match: "fr", Filter: "select id, keyspace_id() from fr where in_keyrange(name, 'hash', '-80')"}, "needs an integer column"},
	}
	for _, c := range cases {
		t.Run(c.msg, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := e.Stream(ctx, Request{Position: "current", Filter: rules(c.rule)}, func([]*binlogdata.VEvent) error { return nil })
			if !errors.Is(err, filter.ErrInvalid) || !strings.Contains(err.Error(), c.msg) || !strings.Contains(err.Error(), "rule 1") {
				t.Fatalf("err = %v, want ErrInvalid naming rule 1 and %q", err, c.msg)
			}
		})
	}
}

// TestBestEffortColumnDroppedBehindTheStream streams rows logged without column names after
// a column was dropped without a binlog entry: the schema no longer fits the rows.
func TestBestEffortColumnDroppedBehindTheStream(t *testing.T) {
	testkit.MustExec(t, db, "SET GLOBAL binlog_row_metadata = 'MINIMAL'")
	t.Cleanup(func() { testkit.MustExec(t, db, "SET GLOBAL binlog_row_metadata = 'FULL'") })
	testkit.MustExec(t, db, "CREATE TABLE be (id INT PRIMARY KEY, a INT, b VARCHAR(5))")
	start := headPos(t)
	// A fresh connection picks up the global metadata setting.
	conn, err := db.Conn("test")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"INSERT INTO be VALUES (1, 2, 'x')", "SET sql_log_bin = 0", "ALTER TABLE be DROP COLUMN b"} {
		if _, err := conn.Execute(q); err != nil {
			t.Fatal(err)
		}
	}
	conn.Close()
	e := newEngine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	strict := Request{Position: start, Filter: rules(&binlogdata.Rule{Match: "be"})}
	// While the server logs without names, only BEST_EFFORT streams start.
	err = e.Stream(ctx, strict, func([]*binlogdata.VEvent) error { return nil })
	if !errors.Is(err, ErrServerConfig) || !strings.Contains(err.Error(), "binlog_row_metadata is MINIMAL") {
		t.Fatalf("ERR_ON_MISMATCH under MINIMAL: err = %v, want ErrServerConfig naming binlog_row_metadata", err)
	}
	ts := startStream(t, e, Request{Position: start, Filter: &binlogdata.Filter{
		Rules: []*binlogdata.Rule{{Match: "be"}}, FieldEventMode: binlogdata.Filter_BEST_EFFORT}})
	ts.expect("BEGIN", "FIELD be @1:INT32 @2:INT32 @3:VARCHAR", "ROW be +[1 2 x]", "GTID", "COMMIT", "VGTID")
	// Once the server logs names again, a strict stream starts and fails on the old rows
	// logged without them.
	testkit.MustExec(t, db, "SET GLOBAL binlog_row_metadata = 'FULL'")
	err = e.Stream(ctx, strict, func([]*binlogdata.VEvent) error { return nil })
	if !errors.Is(err, ErrSchema) {
		t.Fatalf("ERR_ON_MISMATCH: err = %v, want ErrSchema", err)
	}
}

// TestKeyrangeSplitsUpdates: with a keyrange rule an update that moves a row across ranges
// is a delete on the stream it leaves and an insert on the one it enters.
func TestKeyrangeSplitsUpdates(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE ks_split (id BIGINT PRIMARY KEY, v INT)", "INSERT INTO ks_split VALUES (1, 0)")
	e := newEngine(t)
	// id 1 hashes below 80, id 4 above.
	low := startStream(t, e, Request{Position: "current", Filter: rules(&binlogdata.Rule{Match: "/^ks_split$", Filter: "-80"})})
	high := startStream(t, e, Request{Position: "current", Filter: rules(&binlogdata.Rule{Match: "/^ks_split$", Filter: "80-"})})
	low.expect("GTID", "OTHER", "VGTID")
	high.expect("GTID", "OTHER", "VGTID")
	testkit.MustExec(t, db, "UPDATE ks_split SET id = 4 WHERE id = 1", "UPDATE ks_split SET v = 1 WHERE id = 4")
	low.expect("BEGIN", "FIELD ks_split id:INT64 v:INT32", "ROW ks_split -[1 0]", "GTID", "COMMIT", "VGTID", "BEGIN", "GTID", "COMMIT", "VGTID")
	high.expect("BEGIN", "FIELD ks_split id:INT64 v:INT32", "ROW ks_split +[4 0]", "GTID", "COMMIT", "VGTID", "BEGIN", "ROW ks_split [4 0]>[4 1]", "GTID", "COMMIT", "VGTID")
}

// TestMissingTables: a named rule for a table that does not exist yet is planned when the
// table appears in the binlog (Vitess's TestMissingTables), select and WHERE included; only
// a copy needs its tables up front.
func TestMissingTables(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE mt_here (id INT PRIMARY KEY, v INT)")
	e := newEngine(t)
	ts := startStream(t, e, Request{Position: "current", Filter: rules(
		&binlogdata.Rule{Match: "mt_here", Filter: "select * from mt_here"},
		&binlogdata.Rule{Match: "mt_later", Filter: "select v, id from mt_later where (v > 1)"},
	)})
	ts.expect("GTID", "OTHER", "VGTID")
	testkit.MustExec(t, db,
		"INSERT INTO mt_here VALUES (101, 1010)",
		"CREATE TABLE mt_later (id INT PRIMARY KEY, v INT)",
		"INSERT INTO mt_later VALUES (1, 1), (2, 20)",
	)
	ts.expect(
		"BEGIN", "FIELD mt_here id:INT32 v:INT32", "ROW mt_here +[101 1010]", "GTID", "COMMIT", "VGTID",
		"GTID", "DDL CREATE TABLE mt_later (id INT PRIMARY KEY, v INT)", "VGTID",
		"BEGIN", "FIELD mt_later v:INT32 id:INT32", "ROW mt_later +[20 2]", "GTID", "COMMIT", "VGTID",
	)

	// A copy cannot wait for its table.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := e.Stream(ctx, Request{Filter: rules(&binlogdata.Rule{Match: "mt_never"})}, func([]*binlogdata.VEvent) error { return nil })
	if !errors.Is(err, filter.ErrInvalid) || !strings.Contains(err.Error(), "table mt_never is not present in the database") {
		t.Fatalf("copy of a missing table: err = %v", err)
	}
}

// TestFilterRollup: the literal 1 as a column (rowstreamer_test.go's rollups), in the copy
// and the binlog, for a table with a key and one without.
func TestFilterRollup(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE fr_roll (id INT PRIMARY KEY, val VARBINARY(10))", "INSERT INTO fr_roll VALUES (1, 'aaa'), (2, 'bbb')",
		"CREATE TABLE fr_roll_nokey (val VARBINARY(10))", "INSERT INTO fr_roll_nokey VALUES ('x')")
	e := newEngine(t)
	ts := startStream(t, e, Request{CopyTablesWithoutKey: true, Filter: rules(
		&binlogdata.Rule{Match: "fr_roll", Filter: "select 1, val from fr_roll"},
		&binlogdata.Rule{Match: "fr_roll_nokey", Filter: "select 1 from fr_roll_nokey"},
	)})
	ts.expect("BEGIN", "FIELD fr_roll 1:INT64 val:VARBINARY", "ROW fr_roll +[1 aaa] +[1 bbb]", "LASTPK", "COPY_COMPLETED", "COMMIT", "VGTID",
		"BEGIN", "FIELD fr_roll_nokey 1:INT64", "ROW fr_roll_nokey +[1]", "LASTPK", "COPY_COMPLETED", "COPY_COMPLETED", "COMMIT", "VGTID")
	testkit.MustExec(t, db, "INSERT INTO fr_roll VALUES (3, 'ccc')", "DELETE FROM fr_roll_nokey")
	ts.expect("BEGIN", "ROW fr_roll +[1 ccc]", "GTID", "COMMIT", "VGTID", "BEGIN", "ROW fr_roll_nokey -[1]", "GTID", "COMMIT", "VGTID")
}

// TestFilterBinaryLiterals: hexadecimal and bit literals select the same rows in the copy
// (pushed down to the server) and in the binlog (evaluated here).
func TestFilterBinaryLiterals(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE fb_lit (id INT PRIMARY KEY, raw VARBINARY(4))", "INSERT INTO fb_lit VALUES (1, X'00ff'), (2, X'00ff'), (3, X'0001')")
	e := newEngine(t)
	ts := startStream(t, e, Request{Filter: rules(&binlogdata.Rule{Match: "fb_lit", Filter: "select id from fb_lit where raw = X'00ff' and id >= 0x2"})})
	ts.expect("BEGIN", "FIELD fb_lit id:INT32", "ROW fb_lit +[2]", "LASTPK", "COPY_COMPLETED", "COPY_COMPLETED", "COMMIT", "VGTID")
	testkit.MustExec(t, db, "INSERT INTO fb_lit VALUES (4, X'0001'), (5, 0x00ff), (6, b'0000000011111111')")
	ts.expect("BEGIN", "ROW fb_lit +[5] +[6]", "GTID", "COMMIT", "VGTID")
}
