package vstreamer

import (
	"fmt"
	"strings"
	"testing"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/internal/testdb"
	"github.com/vstream-cdc/vstream/internal/testkit"
	"github.com/vstream-cdc/vstream/internal/testkit/evtext"
)

// skipUnlessMySQL skips a test of what only MySQL writes.
func skipUnlessMySQL(t *testing.T, what string) {
	t.Helper()
	if db.Flavor() != testdb.MySQL {
		t.Skipf("MariaDB writes no %s", what)
	}
}

// streamTable starts a stream of table from the current position on a new engine, past the
// events of the table's CREATE.
func streamTable(t *testing.T, table string) (*Engine, *testStream) {
	t.Helper()
	e := newEngine(t)
	ts := startStream(t, e, Request{Position: "current", Filter: rules(&binlogdata.Rule{Match: table})})
	ts.expect("GTID", "OTHER", "VGTID")
	return e, ts
}

// TestMySQLCompressedTransactions: with binlog_transaction_compression=ON MySQL logs each
// transaction as one ZSTD TRANSACTION_PAYLOAD event; the stream sends its rows as if they had
// been logged one by one.
func TestMySQLCompressedTransactions(t *testing.T) {
	skipUnlessMySQL(t, "compressed transaction payloads")
	testkit.MustExec(t, db, "CREATE TABLE mzc (id INT PRIMARY KEY, v VARCHAR(20))")
	_, ts := streamTable(t, "mzc")
	testkit.MustExec(t, db,
		"SET SESSION binlog_transaction_compression = ON",
		"BEGIN",
		"INSERT INTO mzc VALUES (1, 'a'), (2, 'b')",
		"UPDATE mzc SET v = 'c' WHERE id = 2",
		"DELETE FROM mzc WHERE id = 1",
		"COMMIT",
		"SET SESSION binlog_transaction_compression = OFF",
	)
	ts.expect("BEGIN", "FIELD mzc id:INT32 v:VARCHAR", "ROW mzc +[1 a] +[2 b]", "ROW mzc [2 b]>[2 c]", "ROW mzc -[1 a]",
		"GTID", "COMMIT", "VGTID")
}

// TestMySQLTaggedGTIDs: MySQL 8.4's tagged GTIDs (SET gtid_next = 'AUTOMATIC:tag') reach the
// event GTIDs and the positions, and a stream resumes from a position holding them.
func TestMySQLTaggedGTIDs(t *testing.T) {
	skipUnlessMySQL(t, "tagged GTIDs")
	testkit.MustExec(t, db, "CREATE TABLE mtag (id INT PRIMARY KEY)")
	e, ts := streamTable(t, "mtag")
	testkit.MustExec(t, db,
		"SET gtid_next = 'AUTOMATIC:etl'",
		"INSERT INTO mtag VALUES (1)",
		"SET gtid_next = 'AUTOMATIC'",
	)
	evs := ts.expect("BEGIN", "FIELD mtag id:INT32", "ROW mtag +[1]", "GTID", "COMMIT", "VGTID")
	if g := evs[2].EventGtid; !strings.Contains(g, ":etl:") {
		t.Errorf("event GTID of the tagged transaction = %q, want uuid:etl:n", g)
	}
	pos := evs[5].Vgtid.ShardGtids[0].Gtid
	if !strings.Contains(pos, ":etl:") {
		t.Fatalf("position after the tagged transaction = %q, want it to hold the etl tag", pos)
	}
	testkit.MustExec(t, db, "INSERT INTO mtag VALUES (2)")
	ts.expect("BEGIN", "ROW mtag +[2]", "GTID", "COMMIT", "VGTID")

	// From the position after the tagged transaction, only what came after it.
	rs := startStream(t, e, Request{Position: pos, Filter: rules(&binlogdata.Rule{Match: "mtag"})})
	rs.expect("BEGIN", "FIELD mtag id:INT32", "ROW mtag +[2]", "GTID", "COMMIT", "VGTID")
}

// TestMySQLPartialJSONUpdates: with binlog_row_value_options=PARTIAL_JSON MySQL logs an
// update of a JSON column as diffs against the before image; the stream applies them, so the
// client sees the whole value after the update. Each update runs twice, on twin rows: once
// logged as diffs, once logged whole; both after images must be the same.
func TestMySQLPartialJSONUpdates(t *testing.T) {
	skipUnlessMySQL(t, "partial JSON updates (PARTIAL_UPDATE_ROWS_EVENT)")
	const doc = `'{"a": 1, "b": [1, 2, 3], "c": {"d": "x", "long key": "yy"}}'`
	testkit.MustExec(t, db, `CREATE TABLE mpj (id INT PRIMARY KEY, j JSON, k JSON, n INT)`,
		`INSERT INTO mpj VALUES (1, `+doc+`, '[1, 2]', 0), (101, `+doc+`, '[1, 2]', 0)`)
	_, ts := streamTable(t, "mpj")
	for i, c := range []struct{ name, set string }{
		{"replace", `j = JSON_REPLACE(j, '$.a', 2)`},
		{"set a new key and an array element", `j = JSON_SET(j, '$.e', 'new', '$.b[1]', 20)`},
		{"remove, then replace", `j = JSON_REPLACE(JSON_REMOVE(j, '$.c.d'), '$.a', 'three')`},
		{"insert into an array", `j = JSON_ARRAY_INSERT(j, '$.b[0]', 0)`},
		{"two JSON columns and a plain one", `j = JSON_SET(j, '$.a', 1.5), k = JSON_REPLACE(k, '$[0]', 'one'), n = n + 1`},
		{"a nested value", `j = JSON_SET(j, '$.c', JSON_OBJECT('x', JSON_ARRAY(1, true, null), 'when', CAST('2024-01-02 03:04:05.5' AS DATETIME(1))))`},
		{"a key with a space, a quote and unicode", `j = JSON_SET(j, '$."long key"', 'z', '$."q\\"é"', 'ü')`},
		{"a double and a big number", `j = JSON_SET(j, '$.f', 1e300, '$.g', 18446744073709551615, '$.h', -0.5)`},
		{"to NULL and back", `k = NULL`},
		{"the whole value", `j = '{"z": 0}', k = JSON_ARRAY(n)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			ts.t = t
			testkit.MustExec(t, db, "SET SESSION binlog_row_value_options = 'PARTIAL_JSON'",
				"UPDATE mpj SET "+c.set+" WHERE id = 1",
				"SET SESSION binlog_row_value_options = ''",
				"UPDATE mpj SET "+c.set+" WHERE id = 101")
			p, w := ts.txnRows(), ts.txnRows()
			if strings.ReplaceAll(p, "[1 ", "[101 ") != w {
				t.Fatalf("update %d logged as JSON diffs streams\n  %s\nlogged whole\n  %s", i, p, w)
			}
		})
	}
	ts.t = t
}

// txnRows reads the events of one transaction, through its VGTID, and returns the short form
// of its ROW events (a FIELD before them is read too).
func (ts *testStream) txnRows() string {
	ts.t.Helper()
	var rows []string
	for {
		ev := ts.next(false)
		switch ev.Type {
		case binlogdata.VEventType_ROW:
			rows = append(rows, evtext.Short(ev))
		case binlogdata.VEventType_VGTID:
			return strings.Join(rows, "\n  ")
		}
	}
}

// TestMySQLPartialJSONUnderMinimalImage: under binlog_row_image=MINIMAL the before image
// leaves out the JSON column, so MySQL logs the changed value whole even in a PARTIAL_JSON
// session; the stream sends it, with the columns the images hold.
func TestMySQLPartialJSONUnderMinimalImage(t *testing.T) {
	skipUnlessMySQL(t, "partial JSON updates (PARTIAL_UPDATE_ROWS_EVENT)")
	testkit.MustExec(t, db, `CREATE TABLE mpjn (id INT PRIMARY KEY, j JSON)`, `INSERT INTO mpjn VALUES (1, '{"a": 1}')`)
	_, ts := streamTable(t, "mpjn")
	testkit.MustExec(t, db, "SET SESSION binlog_row_image = 'MINIMAL'", "SET SESSION binlog_row_value_options = 'PARTIAL_JSON'",
		"UPDATE mpjn SET j = JSON_SET(j, '$.a', 2) WHERE id = 1",
		"SET SESSION binlog_row_image = 'FULL'", "SET SESSION binlog_row_value_options = ''")
	if got, want := ts.txnRows(), `ROW mpjn [1 NULL]>[NULL "{\"a\": 2}"]`; got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

// TestMySQLLargeCompressedTransaction: a compressed transaction of 20,000 rows, one
// TRANSACTION_PAYLOAD event of hundreds of inner events, streams every row.
func TestMySQLLargeCompressedTransaction(t *testing.T) {
	skipUnlessMySQL(t, "compressed transaction payloads")
	testkit.MustExec(t, db, "CREATE TABLE mzbig (id INT PRIMARY KEY, pad VARCHAR(200))")
	_, ts := streamTable(t, "mzbig")
	testkit.MustExec(t, db, "SET SESSION binlog_transaction_compression = ON", "BEGIN")
	for i := 0; i < 40; i++ {
		testkit.MustExec(t, db, fmt.Sprintf("INSERT INTO mzbig SELECT seq + %d, REPEAT('x', 200) FROM %s", i*500, db.Seq(500)))
	}
	testkit.MustExec(t, db, "COMMIT", "SET SESSION binlog_transaction_compression = OFF")
	rows := 0
	for {
		ev := ts.next(false)
		if ev.Type == binlogdata.VEventType_ROW {
			rows += len(ev.RowEvent.RowChanges)
		}
		if ev.Type == binlogdata.VEventType_COMMIT {
			break
		}
	}
	if rows != 20000 {
		t.Fatalf("%d rows streamed, want 20000", rows)
	}
}
