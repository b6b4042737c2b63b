package vstreamer

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/internal/testkit"
)

// A transaction that rolls back to a savepoint after changing a non-transactional table: the
// server writes the undone changes and then ROLLBACK TO; the client receives only what was
// committed, with rows or statements.
func TestRollbackToSavepoint(t *testing.T) {
	// enforce_gtid_consistency, which MySQL's GTIDs need, refuses a change of a MyISAM table
	// inside a transaction.
	skipOnMySQL(t, "a transaction that changes a non-transactional table violates GTID consistency")
	testkit.MustExec(t, db, "CREATE TABLE sv_inno (id INT PRIMARY KEY) ENGINE=InnoDB", "CREATE TABLE sv_my (id INT PRIMARY KEY) ENGINE=MyISAM",
		"CREATE TABLE sv_late (id INT PRIMARY KEY) ENGINE=InnoDB")
	ts := startStream(t, newEngine(t), Request{Position: "current", Filter: rules(&binlogdata.Rule{Match: "/^sv_/"})})
	ts.expect("GTID", "OTHER", "VGTID")
	cases := []struct {
		name   string
		format string
		sql    []string
		want   []string
	}{{
		name:   "rows",
		format: "ROW",
		sql: []string{"BEGIN", "INSERT INTO sv_inno VALUES (1)", "SAVEPOINT a", "INSERT INTO sv_my VALUES (1)",
			"INSERT INTO sv_inno VALUES (2)", "SAVEPOINT b", "INSERT INTO sv_inno VALUES (3)", "ROLLBACK TO SAVEPOINT a",
			"INSERT INTO sv_inno VALUES (4)", "COMMIT"},
		want: []string{
			"BEGIN", "FIELD sv_my id:INT32", "ROW sv_my +[1]", "GTID", "COMMIT", "VGTID",
			"BEGIN", "FIELD sv_inno id:INT32", "ROW sv_inno +[1]", "ROW sv_inno +[4]", "GTID", "COMMIT", "VGTID",
		},
	}, {
		// MariaDB writes the transaction's rows up to the non-transactional change as a
		// transaction ending in ROLLBACK, and the rest as another.
		name:   "a transaction written and rolled back; its FIELD event is sent again",
		format: "ROW",
		sql: []string{"BEGIN", "SAVEPOINT a", "INSERT INTO sv_late VALUES (1)", "INSERT INTO sv_my VALUES (2)",
			"ROLLBACK TO a", "INSERT INTO sv_late VALUES (2)", "COMMIT"},
		want: []string{
			"BEGIN", "ROW sv_my +[2]", "GTID", "COMMIT", "VGTID",
			"BEGIN", "GTID", "COMMIT", "VGTID",
			"BEGIN", "FIELD sv_late id:INT32", "ROW sv_late +[2]", "GTID", "COMMIT", "VGTID",
		},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			statementMode(t, c.format, c.sql...)
			ts.t = t
			ts.expect(c.want...)
		})
	}
	ts.t = t
	// What the client received is what the tables hold.
	got, err := queryStringOn(t, "SELECT GROUP_CONCAT(id ORDER BY id) FROM sv_inno")
	if err != nil || got != "1,4" {
		t.Errorf("sv_inno holds %q (%v), want 1,4", got, err)
	}
}

// streamUntilError runs a stream of the tables matching match, runs sqls once it has
// started, and returns the GTID of the last transaction of sqls and the stream's error.
func streamUntilError(t *testing.T, req Request, format string, sqls ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	started := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		first := true
		errc <- newEngine(t).Stream(ctx, req, func([]*binlogdata.VEvent) error {
			if first {
				first = false
				close(started)
			}
			return nil
		})
	}()
	<-started
	statementMode(t, format, sqls...)
	return lastGTID(t), <-errc
}

// When the undone changes already went out in an earlier batch, the stream ends naming the
// transaction.
func TestRollbackToSavepointAfterSend(t *testing.T) {
	// enforce_gtid_consistency, which MySQL's GTIDs need, refuses a change of a MyISAM table
	// inside a transaction.
	skipOnMySQL(t, "a transaction that changes a non-transactional table violates GTID consistency")
	testkit.MustExec(t, db, "CREATE TABLE sb_inno (id INT PRIMARY KEY) ENGINE=InnoDB", "CREATE TABLE sb_my (id INT PRIMARY KEY) ENGINE=MyISAM")
	gtid, err := streamUntilError(t, Request{Position: "current", Filter: rules(&binlogdata.Rule{Match: "/^sb_/"}), MaxBatchBytes: 1}, "ROW",
		"BEGIN", "INSERT INTO sb_inno VALUES (1)", "SAVEPOINT a", "INSERT INTO sb_inno VALUES (2)", "INSERT INTO sb_my VALUES (1)",
		"ROLLBACK TO a", "COMMIT")
	if !errors.Is(err, ErrPartialRollback) || !strings.Contains(err.Error(), "transaction "+gtid+" ") || !strings.Contains(err.Error(), "max_batch_bytes") {
		t.Fatalf("err = %v, want ErrPartialRollback naming transaction %s", err, gtid)
	}
}

// Statements rolled back are another matter: the server writes the statements on
// non-transactional tables in the same transaction, and they stay. The stream cannot tell
// them apart and ends naming the transaction.
func TestRollbackOfStatements(t *testing.T) {
	// enforce_gtid_consistency, which MySQL's GTIDs need, refuses a change of a MyISAM table
	// inside a transaction.
	skipOnMySQL(t, "a transaction that changes a non-transactional table violates GTID consistency")
	testkit.MustExec(t, db, "CREATE TABLE ss_inno (id INT PRIMARY KEY) ENGINE=InnoDB", "CREATE TABLE ss_my (id INT PRIMARY KEY) ENGINE=MyISAM")
	for _, end := range []string{"ROLLBACK TO a", "ROLLBACK"} {
		t.Run(end, func(t *testing.T) {
			sqls := []string{"BEGIN", "INSERT INTO ss_inno VALUES (1)", "SAVEPOINT a", "INSERT INTO ss_my VALUES (1)",
				"INSERT INTO ss_inno VALUES (2)", end}
			if end != "ROLLBACK" {
				sqls = append(sqls, "COMMIT")
			}
			gtid, err := streamUntilError(t, Request{Position: "current", Filter: rules(&binlogdata.Rule{Match: "/^ss_/"})}, "STATEMENT", sqls...)
			if !errors.Is(err, ErrStatementChange) || !strings.Contains(err.Error(), "transaction "+gtid+" ") {
				t.Fatalf("err = %v, want ErrStatementChange naming transaction %s", err, gtid)
			}
			testkit.MustExec(t, db, "DELETE FROM ss_inno", "DELETE FROM ss_my")
		})
	}
}

// A savepoint statement whose name cannot be read ends the stream: were it a ROLLBACK TO,
// streaming on would send changes the transaction undid.
func TestUnreadableSavepointStatement(t *testing.T) {
	for _, sql := range []string{"ROLLBACK TO", "ROLLBACK WORK TO SAVEPOINT", "SAVEPOINT `unterminated", "RELEASE sp1"} {
		s := &stream{cursor: cursor{inTxn: true, eventGTI: "0-1-7"}}
		err := s.query(0, &replication.QueryEvent{Query: []byte(sql)})
		if !errors.Is(err, ErrStatementChange) || !strings.Contains(err.Error(), "0-1-7") || !strings.Contains(err.Error(), sql) {
			t.Errorf("%q: err = %v, want ErrStatementChange naming the transaction and the statement", sql, err)
		}
	}
	// Readable ones are kept, as before.
	s := &stream{cursor: cursor{inTxn: true}}
	for _, sql := range []string{"SAVEPOINT sp1", "ROLLBACK TO sp1", "RELEASE SAVEPOINT sp1"} {
		if err := s.query(0, &replication.QueryEvent{Query: []byte(sql)}); err != nil {
			t.Errorf("%q: %v", sql, err)
		}
	}
}
