package vstreamer

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/internal/testkit"
	"github.com/vstream-cdc/vstream/internal/testkit/evtext"
)

// statementMode runs sqls in a session logging binlog_format=format, then puts the session
// back to ROW (the test connection is shared by the package's tests).
func statementMode(t *testing.T, format string, sqls ...string) {
	t.Helper()
	t.Cleanup(func() { testkit.MustExec(t, db, "SET SESSION binlog_format = 'ROW'") })
	testkit.MustExec(t, db, append([]string{"SET SESSION binlog_format = '" + format + "'"}, sqls...)...)
	testkit.MustExec(t, db, "SET SESSION binlog_format = 'ROW'")
}

// Statement-based DML is streamed as INSERT, UPDATE, DELETE and REPLACE events carrying the
// statement in dml (Vitess's TestStatementMode), for the tables the filter selects only.
func TestStatementMode(t *testing.T) {
	testkit.MustExec(t, db,
		"CREATE TABLE stream1 (id INT, val VARBINARY(128), PRIMARY KEY (id))",
		"CREATE TABLE stream2 (id INT, val VARBINARY(128), PRIMARY KEY (id))",
		"CREATE TABLE stmt_hidden (id INT PRIMARY KEY, val INT)",
		"CREATE DATABASE IF NOT EXISTS stmt_other",
		"CREATE TABLE IF NOT EXISTS stmt_other.stream1 (id INT PRIMARY KEY)",
		"CREATE TABLE _stmt_old (id INT PRIMARY KEY)",
	)
	e := newEngine(t)
	ts := startStream(t, e, Request{Position: "current", Filter: rules(
		&binlogdata.Rule{Match: "stmt_hidden", Filter: "exclude"},
		&binlogdata.Rule{Match: "/.*/"},
	)})
	ts.expect("GTID", "OTHER", "VGTID")
	cases := []struct {
		name   string
		format string
		sql    []string
		want   []string
	}{{
		name:   "a transaction of statements",
		format: "STATEMENT",
		sql: []string{"begin", "insert into stream1 values (1, 'aaa')", "update stream1 set val='bbb' where id = 1",
			"delete from stream1 where id = 1", "commit"},
		want: []string{"BEGIN", "INSERT insert into stream1 values (1, 'aaa')", "UPDATE update stream1 set val='bbb' where id = 1",
			"DELETE delete from stream1 where id = 1", "GTID", "COMMIT", "VGTID"},
	}, {
		name:   "an autocommitted statement, REPLACE",
		format: "STATEMENT",
		sql:    []string{"REPLACE INTO stream2 VALUES (7, 'r')"},
		want:   []string{"BEGIN", "REPLACE REPLACE INTO stream2 VALUES (7, 'r')", "GTID", "COMMIT", "VGTID"},
	}, {
		name:   "a statement on a table the filter excludes is not sent; the position still advances",
		format: "STATEMENT",
		sql:    []string{"INSERT INTO stmt_hidden VALUES (1, 1)"},
		want:   []string{"BEGIN", "GTID", "COMMIT", "VGTID"},
	}, {
		name:   "a statement on another database's table of the same name is not sent",
		format: "STATEMENT",
		sql:    []string{"INSERT INTO stmt_other.stream1 VALUES (1)"},
		want:   []string{"BEGIN", "GTID", "COMMIT", "VGTID"},
	}, {
		name:   "a statement run from another database on a streamed table is sent",
		format: "STATEMENT",
		sql:    []string{"USE stmt_other", "INSERT INTO test.stream2 VALUES (8, 'q')", "USE test"},
		want:   []string{"BEGIN", "INSERT INSERT INTO test.stream2 VALUES (8, 'q')", "GTID", "COMMIT", "VGTID"},
	}, {
		name:   "an online schema change's table is not streamed",
		format: "STATEMENT",
		sql:    []string{"INSERT INTO _stmt_old VALUES (1)"},
		want:   []string{"BEGIN", "GTID", "COMMIT", "VGTID"},
	}, {
		name:   "a multi-table UPDATE is sent when it names a streamed table",
		format: "STATEMENT",
		sql:    []string{"UPDATE stmt_hidden h JOIN stream2 s ON s.id = h.id + 6 SET h.val = 2"},
		want:   []string{"BEGIN", "UPDATE UPDATE stmt_hidden h JOIN stream2 s ON s.id = h.id + 6 SET h.val = 2", "GTID", "COMMIT", "VGTID"},
	}, {
		name:   "MIXED logs safe statements as statements and unsafe ones as rows",
		format: "MIXED",
		sql:    []string{"INSERT INTO stream1 VALUES (2, 'safe')", "INSERT INTO stream1 VALUES (3, LEFT(UUID(), 0))"},
		want: []string{"BEGIN", "INSERT INSERT INTO stream1 VALUES (2, 'safe')", "GTID", "COMMIT", "VGTID",
			"BEGIN", "FIELD stream1 id:INT32 val:VARBINARY", "ROW stream1 +[3 ]", "GTID", "COMMIT", "VGTID"},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			statementMode(t, c.format, c.sql...)
			ts.t = t
			for _, ev := range ts.expect(c.want...) {
				checkStamps(t, ev)
			}
		})
	}
	ts.t = t
}

// OTHER carries no statement (Vitess's TestOther and TestMissingTables): a DDL of a table the
// filter leaves out, a GRANT, a statement wholly in an executable comment (TestStmtComment).
func TestOtherHasNoStatement(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE oth1 (id INT PRIMARY KEY)", "CREATE TABLE oth_short (id INT PRIMARY KEY)")
	e := newEngine(t)
	ts := startStream(t, e, Request{Position: "current", Filter: rules(&binlogdata.Rule{Match: "oth1", Filter: "select * from oth1"})})
	ts.expect("GTID", "OTHER", "VGTID")
	for _, sql := range []string{
		"ALTER TABLE oth_short RENAME TO _oth_short",
		"/*!40000 ALTER TABLE `oth1` DISABLE KEYS */",
		"REPAIR TABLE oth1",
		"OPTIMIZE TABLE oth1",
		"ANALYZE TABLE oth1",
		"GRANT SELECT ON test.oth1 TO CURRENT_USER()",
		"REVOKE SELECT ON test.oth1 FROM CURRENT_USER()",
		"CREATE DATABASE IF NOT EXISTS oth_db",
	} {
		t.Run(sql, func(t *testing.T) {
			testkit.MustExec(t, db, sql)
			ts.t = t
			evs := ts.expect("GTID", "OTHER", "VGTID")
			if evs[1].Statement != "" || evs[1].Dml != "" {
				t.Errorf("OTHER carries %q %q, want nothing", evs[1].Statement, evs[1].Dml)
			}
		})
	}
	ts.t = t
	// The stream goes on: rows of the table whose keys were disabled still arrive.
	testkit.MustExec(t, db, "INSERT INTO oth1 VALUES (1)")
	ts.expect("BEGIN", "FIELD oth1 id:INT32", "ROW oth1 +[1]", "GTID", "COMMIT", "VGTID")
}

// Rows of online schema change tables are not streamed (Vitess's TestOnlineDDLTables).
func TestOnlineDDLTables(t *testing.T) {
	internal := []string{
		"_1e275eef_3b20_11eb_a38f_04ed332e05c2_20201210204529_gho",
		"_vt_prg_1f9194b43b2011eb8a0104ed332e05c2_20201210194431_",
		"_product_old",
	}
	testkit.MustExec(t, db, "CREATE TABLE vitess_test (id INT, val VARBINARY(128), PRIMARY KEY (id))")
	for _, n := range internal {
		testkit.MustExec(t, db, "CREATE TABLE "+n+" (id INT, val VARBINARY(128), PRIMARY KEY (id))")
	}
	e := newEngine(t)
	ts := startStream(t, e, Request{Position: "current", Filter: rules(&binlogdata.Rule{Match: "/.*/"})})
	ts.expect("GTID", "OTHER", "VGTID")
	testkit.MustExec(t, db, "INSERT INTO vitess_test VALUES (1, 'abc')")
	for _, n := range internal {
		testkit.MustExec(t, db, "INSERT INTO "+n+" VALUES (1, 'abc')")
	}
	testkit.MustExec(t, db, "INSERT INTO vitess_test VALUES (2, 'abc')")
	ts.expect(
		"BEGIN", "FIELD vitess_test id:INT32 val:VARBINARY", "ROW vitess_test +[1 abc]", "GTID", "COMMIT", "VGTID",
		"BEGIN", "GTID", "COMMIT", "VGTID",
		"BEGIN", "GTID", "COMMIT", "VGTID",
		"BEGIN", "GTID", "COMMIT", "VGTID",
		"BEGIN", "ROW vitess_test +[2 abc]", "GTID", "COMMIT", "VGTID",
	)
}

// Nor are they copied: a copy selected by a regex leaves them out.
func TestOnlineDDLTablesNotCopied(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE ic_t (id INT PRIMARY KEY)", "CREATE TABLE _ic_t_old (id INT PRIMARY KEY)",
		"INSERT INTO ic_t VALUES (1)", "INSERT INTO _ic_t_old VALUES (1)")
	ts := startStream(t, newEngine(t), Request{Position: "", Filter: rules(&binlogdata.Rule{Match: "/ic_t/"})})
	ts.expect("BEGIN", "FIELD ic_t id:INT32", "ROW ic_t +[1]", "LASTPK", "COPY_COMPLETED", "COPY_COMPLETED", "COMMIT", "VGTID")
	testkit.MustExec(t, db, "INSERT INTO _ic_t_old VALUES (2)", "INSERT INTO ic_t VALUES (2)")
	ts.expect("BEGIN", "GTID", "COMMIT", "VGTID", "BEGIN", "ROW ic_t +[2]", "GTID", "COMMIT", "VGTID")
}

// A position holding a transaction the server has not executed fails with Vitess's
// "GTIDSet Mismatch" wording (Vitess's TestNoFutureGTID), which vtgate reads to try another
// tablet.
func TestNoFutureGTID(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE IF NOT EXISTS future1 (id INT PRIMARY KEY)", "INSERT INTO future1 VALUES (1)")
	p := serverPos(t)
	if err := p.Update(nextGTID(t)); err != nil {
		t.Fatal(err)
	}
	future := p.String()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := newEngine(t).Stream(ctx, Request{Position: future}, func([]*binlogdata.VEvent) error { return nil })
	if !errors.Is(err, ErrAhead) || !strings.Contains(err.Error(), "GTIDSet Mismatch") || !strings.Contains(err.Error(), future) {
		t.Fatalf("err = %v, want ErrAhead with GTIDSet Mismatch naming %s", err, future)
	}
}

// copyWithHook runs a copy stream of the sc_ tables, calling hook (once) when the first
// chunk of sc_a has been sent, and returns the events' short forms and the stream's error
// once done says to stop.
func copyWithHook(t *testing.T, hook func(), done func(evs []string) bool) ([]string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var evs []string
	hooked := false
	err := newEngine(t).Stream(ctx, Request{Position: "", Filter: rules(&binlogdata.Rule{Match: "/^sc_/"}), CopyChunkRows: 1},
		func(batch []*binlogdata.VEvent) error {
			for _, ev := range batch {
				evs = append(evs, evtext.Short(ev))
				if !hooked && ev.Type == binlogdata.VEventType_ROW && ev.RowEvent.TableName == "sc_a" {
					hooked = true
					defer hook()
				}
			}
			if done(evs) {
				cancel()
			}
			return nil
		})
	return evs, err
}

// A statement-based change during a table copy: a table whose copy has not begun takes it
// through its copy (the statement is not sent, like the rows events of such a table); a
// table partly copied cannot, and the stream ends naming it.
func TestStatementDuringCopy(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE sc_a (id INT PRIMARY KEY, v INT)", "CREATE TABLE sc_b (id INT PRIMARY KEY, v INT)",
		"INSERT INTO sc_a VALUES (1, 0), (2, 0), (3, 0)", "INSERT INTO sc_b VALUES (1, 0)")

	t.Run("a table not copied yet", func(t *testing.T) {
		copied := false
		evs, err := copyWithHook(t, func() { statementMode(t, "STATEMENT", "INSERT INTO sc_b VALUES (2, 0)") }, func(evs []string) bool {
			// One COPY_COMPLETED per table, then the final one.
			if n := len(slices.DeleteFunc(slices.Clone(evs), func(e string) bool { return e != "COPY_COMPLETED" })); !copied && n == 3 {
				// Once the copy is done, statements stream as usual.
				copied = true
				statementMode(t, "STATEMENT", "INSERT INTO sc_a VALUES (4, 0)")
			}
			return slices.Contains(evs, "INSERT INSERT INTO sc_a VALUES (4, 0)")
		})
		if err != nil {
			t.Fatal(err)
		}
		var rowsB, inserts []string
		for _, ev := range evs {
			if strings.HasPrefix(ev, "ROW sc_b") {
				rowsB = append(rowsB, ev)
			}
			if strings.HasPrefix(ev, "INSERT ") {
				inserts = append(inserts, ev)
			}
		}
		if strings.Join(rowsB, ", ") != "ROW sc_b +[1 0], ROW sc_b +[2 0]" || len(inserts) != 1 {
			t.Errorf("sc_b copied as %v and statements %v; want rows 1 and 2 copied and only the INSERT after the copy\n%s",
				rowsB, inserts, strings.Join(evs, "\n"))
		}
	})

	t.Run("a table partly copied", func(t *testing.T) {
		_, err := copyWithHook(t, func() { statementMode(t, "STATEMENT", "UPDATE sc_a SET v = v + 1") }, func([]string) bool { return false })
		if !errors.Is(err, ErrStatementChange) || !strings.Contains(err.Error(), "table sc_a") {
			t.Fatalf("err = %v, want ErrStatementChange naming sc_a", err)
		}
	})
}

// LOAD DATA logged as a statement carries the file's bytes, not rows: a load into a streamed
// table ends the stream naming it; a load into another table changes nothing streamed.
func TestLoadDataStatement(t *testing.T) {
	file := filepath.Join(db.FileDir(), "ld_rows.txt")
	if err := os.WriteFile(file, []byte("1\n2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(file) })
	testkit.MustExec(t, db, "CREATE TABLE ld_t (id INT PRIMARY KEY)", "CREATE TABLE ld_other (id INT PRIMARY KEY)")
	load := "LOAD DATA INFILE '" + file + "' INTO TABLE "

	ts := startStream(t, newEngine(t), Request{Position: "current", Filter: rules(&binlogdata.Rule{Match: "ld_t"})})
	ts.expect("GTID", "OTHER", "VGTID")
	statementMode(t, "STATEMENT", load+"ld_other")
	ts.expect("BEGIN", "GTID", "COMMIT", "VGTID")
	ts.stop()

	gtid, err := streamUntilError(t, Request{Position: "current", Filter: rules(&binlogdata.Rule{Match: "ld_t"})}, "STATEMENT", load+"ld_t")
	if !errors.Is(err, ErrStatementChange) || !strings.Contains(err.Error(), "transaction "+gtid+" ") ||
		!strings.Contains(err.Error(), "into table ld_t ") || !strings.Contains(err.Error(), "INTO TABLE `ld_t`") ||
		!strings.Contains(err.Error(), "(`id`)\"), whose rows") {
		t.Fatalf("err = %v, want ErrStatementChange naming transaction %s, table ld_t and the statement", err, gtid)
	}
}
