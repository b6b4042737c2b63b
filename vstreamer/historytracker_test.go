package vstreamer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	"github.com/vstream-cdc/vstream/internal/faults"
	"github.com/vstream-cdc/vstream/internal/testdb"
	"github.com/vstream-cdc/vstream/internal/testkit"
	"github.com/vstream-cdc/vstream/position"
	"github.com/vstream-cdc/vstream/vstreamer/history"
)

// historyEngine is an engine keeping a schema history in dir, its tracker running until the
// test ends.
func historyEngine(t testing.TB, dir string) *Engine {
	t.Helper()
	e, err := NewEngine(Config{Addr: db.Addr(), User: db.User(), Password: db.Password(), Database: "test", Keyspace: "ks",
		SchemaHistoryDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	stop := runTracker(t, e)
	t.Cleanup(stop)
	return e
}

// runTracker runs e's tracker until the returned function is called, and waits until it has
// caught up with the server.
func runTracker(t testing.TB, e *Engine) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.RunSchemaHistory(ctx) }()
	waitTracker(t, e, serverPos(t))
	var once atomic.Bool
	return func() {
		if !once.CompareAndSwap(false, true) {
			return
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("RunSchemaHistory: %v", err)
		}
	}
}

// waitTracker waits until e's history is complete up to pos.
func waitTracker(t testing.TB, e *Engine, pos position.Position) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if cp, ok := e.hist.Checkpoint(); ok && cp.Contains(pos) && e.histLive.Load() {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	cp, _ := e.hist.Checkpoint()
	t.Fatalf("schema history did not reach %s (at %s)", pos, cp)
}

func serverPos(t testing.TB) position.Position {
	t.Helper()
	s, err := db.Position()
	if err != nil {
		t.Fatal(err)
	}
	p, err := position.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// firstFields streams table from pos and returns the fields of its first FIELD event.
func firstFields(t *testing.T, e *Engine, pos, table string) []*query.Field {
	t.Helper()
	ts := startStream(t, e, Request{Position: pos, Filter: &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: table}}}})
	defer ts.stop()
	for {
		if ev := ts.next(false); ev.Type == binlogdata.VEventType_FIELD {
			return ev.FieldEvent.Fields
		}
	}
}

func fieldsText(fs []*query.Field) string {
	var b strings.Builder
	for _, f := range fs {
		b.WriteString(prototext.MarshalOptions{}.Format(f) + "\n")
	}
	return b.String()
}

func sameFieldList(a, b []*query.Field) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !proto.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// TestSchemaHistoryResume resumes a stream from before a DDL and checks its FIELD is, field
// for field, the one a stream that read the same rows before the DDL sent, while a stream
// without a history describes the rows as the table is now.
func TestSchemaHistoryResume(t *testing.T) {
	const create = "(id BIGINT PRIMARY KEY AUTO_INCREMENT, n INT NOT NULL DEFAULT 7, s VARCHAR(50), j JSON, e ENUM('a','b'), u TINYINT UNSIGNED)"
	hist := historyEngine(t, t.TempDir())
	plain := newEngine(t)
	for _, c := range []struct {
		name  string
		table string
		ddl   []string
		// differs: without a history the rows are described otherwise. Where it is false the
		// binlog's names let today's matching by name find every column anyway.
		differs bool
		// sameOnMySQL: MySQL's binlog types (JSON is its own type there, not LONGTEXT) already
		// describe these rows as they were, history or not.
		sameOnMySQL bool
	}{
		{"add column", "sh_add", []string{"ALTER TABLE sh_add ADD COLUMN x INT FIRST"}, false, false},
		{"modify column", "sh_mod", []string{"ALTER TABLE sh_mod MODIFY s VARCHAR(80), MODIFY n BIGINT"}, true, false},
		{"rename column", "sh_rcol", []string{"ALTER TABLE sh_rcol RENAME COLUMN n TO m"}, false, false},
		{"drop column", "sh_dcol", []string{"ALTER TABLE sh_dcol DROP COLUMN j"}, true, true},
		{"json to text", "sh_json", []string{"ALTER TABLE sh_json MODIFY j LONGTEXT"}, true, true},
		{"rename table", "sh_rtab", []string{"RENAME TABLE sh_rtab TO sh_rtab2"}, true, false},
		{"drop table", "sh_dtab", []string{"DROP TABLE sh_dtab"}, true, false},
		{"several", "sh_many", []string{"ALTER TABLE sh_many ADD COLUMN x INT", "ALTER TABLE sh_many DROP COLUMN s, MODIFY x BIGINT"}, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			start := serverPos(t).String()
			testkit.MustExec(t, db, "CREATE TABLE "+c.table+" "+create,
				"INSERT INTO "+c.table+" (s, j, e, u) VALUES ('x', '{\"a\": 1}', 'b', 200)")
			before := firstFields(t, plain, start, c.table)
			// The tracker describes a table when it reads its DDL: the DDL under test must
			// come after that, or the history would hold the table it made.
			waitTracker(t, hist, serverPos(t))
			testkit.MustExec(t, db, c.ddl...)
			waitTracker(t, hist, serverPos(t))

			got := firstFields(t, hist, start, c.table)
			if !sameFieldList(got, before) {
				t.Errorf("resumed with the history:\n%s\nread before the DDL:\n%s", fieldsText(got), fieldsText(before))
			}
			// Without a history the same rows are described otherwise: the test shows the change.
			differs := c.differs && !(c.sameOnMySQL && db.Flavor() == testdb.MySQL)
			if now := firstFields(t, plain, start, c.table); differs && sameFieldList(now, before) {
				t.Errorf("without a history the FIELD is the same; the case shows nothing:\n%s", fieldsText(now))
			}
		})
	}
}

// TestSchemaHistoryTrackerRestarts stops the tracker, runs DDLs while it is stopped, and
// starts it again from its checkpoint; then breaks its binlog connection and makes it
// panic. Each time it starts again and records the next DDL.
func TestSchemaHistoryTrackerRestarts(t *testing.T) {
	dir := t.TempDir()
	testkit.MustExec(t, db, "CREATE TABLE sh_tr (id INT PRIMARY KEY, a VARCHAR(10))")
	e, err := NewEngine(Config{Addr: db.Addr(), User: db.User(), Password: db.Password(), Database: "test", SchemaHistoryDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	stop := runTracker(t, e)
	if _, err := NewEngine(Config{Addr: db.Addr(), User: db.User(), Database: "test", SchemaHistoryDir: dir}); err == nil ||
		!strings.Contains(err.Error(), history.ErrLocked.Error()) {
		t.Errorf("a second engine on the same directory: %v, want %v", err, history.ErrLocked)
	}
	stop()

	// Stopped: the DDLs are read from the binlog when the tracker starts again, and each is
	// described as the table is then (docs/schema-history.md, "Not exact").
	testkit.MustExec(t, db, "ALTER TABLE sh_tr ADD COLUMN b0 INT")
	afterB0 := serverPos(t)
	testkit.MustExec(t, db, "ALTER TABLE sh_tr CHANGE b0 b INT")
	afterB := serverPos(t)
	e, err = NewEngine(Config{Addr: db.Addr(), User: db.User(), Password: db.Password(), Database: "test", SchemaHistoryDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(runTracker(t, e))
	wantColumns(t, e, afterB0, "sh_tr", "id a b")
	wantColumns(t, e, afterB, "sh_tr", "id a b")

	// A DDL inside a transaction of its own: CREATE TABLE ... SELECT.
	testkit.MustExec(t, db, "CREATE TABLE sh_cts SELECT 1 AS x, 'y' AS z")
	wantColumns(t, e, serverPos(t), "sh_cts", "x z")

	// A broken binlog connection.
	restarts := e.SchemaHistoryRestarts()
	killBinlogDumps(t)
	waitRestarts(t, e, restarts)
	testkit.MustExec(t, db, "ALTER TABLE sh_tr ADD COLUMN c INT")
	wantColumns(t, e, serverPos(t), "sh_tr", "id a b c")

	// A panic: the tracker starts again, the test process and the streams go on.
	ts := startStream(t, e, Request{Position: "current", Filter: rules(&binlogdata.Rule{Match: "sh_tr"})})
	ts.expect("GTID", "OTHER", "VGTID")
	var panicked atomic.Bool
	restore := faults.Set(func(p faults.Point, _ string, data any) {
		if ev, ok := data.(*replication.BinlogEvent); ok && p == faults.SchemaHistory {
			if _, ok := ev.Event.(*replication.QueryEvent); ok && panicked.CompareAndSwap(false, true) {
				panic("injected")
			}
		}
	})
	restarts = e.SchemaHistoryRestarts()
	testkit.MustExec(t, db, "ALTER TABLE sh_tr ADD COLUMN d INT")
	waitRestarts(t, e, restarts)
	restore()
	wantColumns(t, e, serverPos(t), "sh_tr", "id a b c d")
	testkit.MustExec(t, db, "INSERT INTO sh_tr (id) VALUES (1)")
	ts.expect("GTID", "DDL ALTER TABLE sh_tr ADD COLUMN d INT", "VGTID",
		"BEGIN", "FIELD sh_tr id:INT32 a:VARCHAR b:INT32 c:INT32 d:INT32", "ROW sh_tr +[1 NULL NULL NULL NULL]", "GTID", "COMMIT", "VGTID")
	// The definitions before stay where they were.
	wantColumns(t, e, afterB, "sh_tr", "id a b")
}

func wantColumns(t *testing.T, e *Engine, pos position.Position, table, want string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cols, ok, err := e.hist.Lookup(ctx, "test", table, pos)
	if err != nil || !ok {
		t.Fatalf("lookup %s at %s: ok %v, err %v", table, pos, ok, err)
	}
	names := make([]string, len(cols))
	for i := range cols {
		names[i] = cols[i].Name
	}
	if got := strings.Join(names, " "); got != want {
		t.Errorf("%s at %s: columns %q, want %q", table, pos, got, want)
	}
}

func waitRestarts(t *testing.T, e *Engine, from uint64) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for e.SchemaHistoryRestarts() == from {
		if time.Now().After(deadline) {
			t.Fatal("the tracker did not start again")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// killBinlogDumps ends the server's binlog dump connections (the tracker's; no stream runs).
func killBinlogDumps(t *testing.T) {
	t.Helper()
	conn, err := db.Conn("test")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	r, err := conn.Execute("SELECT ID FROM information_schema.PROCESSLIST WHERE COMMAND LIKE 'Binlog Dump%'")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.RowNumber() == 0 {
		t.Fatal("no binlog dump connection to kill")
	}
	for i := range r.RowNumber() {
		id, _ := r.GetInt(i, 0)
		if _, err := conn.Execute(fmt.Sprintf("KILL %d", id)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSchemaHistoryMinimalMetadata: rows logged without column names (binlog_row_metadata
// MINIMAL), then a column dropped. Without a history a strict stream cannot name the old
// rows' columns (the table has one fewer now); with one it names them as they were written.
func TestSchemaHistoryMinimalMetadata(t *testing.T) {
	hist := historyEngine(t, t.TempDir())
	testkit.MustExec(t, db, "SET GLOBAL binlog_row_metadata = 'MINIMAL'")
	t.Cleanup(func() { testkit.MustExec(t, db, "SET GLOBAL binlog_row_metadata = 'FULL'") })
	testkit.MustExec(t, db, "CREATE TABLE sh_min (id INT PRIMARY KEY, a INT, b VARCHAR(5))")
	// The tracker describes the table when it reads the CREATE: the DROP must come after
	// that, or the history would hold the table it made.
	waitTracker(t, hist, serverPos(t))
	start := serverPos(t).String()
	// A fresh connection picks up the global metadata setting.
	conn, err := db.Conn("test")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Execute("INSERT INTO sh_min VALUES (1, 2, 'x')"); err != nil {
		t.Fatal(err)
	}
	_ = conn.Close() // done with it
	testkit.MustExec(t, db, "SET GLOBAL binlog_row_metadata = 'FULL'", "ALTER TABLE sh_min DROP COLUMN b")
	waitTracker(t, hist, serverPos(t))

	req := Request{Position: start, Filter: rules(&binlogdata.Rule{Match: "sh_min"})}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := newEngine(t).Stream(ctx, req, func([]*binlogdata.VEvent) error { return nil }); !errors.Is(err, ErrSchema) {
		t.Fatalf("without a history: err = %v, want ErrSchema", err)
	}
	ts := startStream(t, hist, req)
	ts.expect("BEGIN", "FIELD sh_min id:INT32 a:INT32 b:VARCHAR", "ROW sh_min +[1 2 x]", "GTID", "COMMIT", "VGTID")
}

// TestSchemaHistoryPurgedCheckpoint: a tracker whose checkpoint the server has purged starts
// from the current position, recording every table there, instead of failing over and over.
func TestSchemaHistoryPurgedCheckpoint(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{Addr: db.Addr(), User: db.User(), Password: db.Password(), Database: "test", SchemaHistoryDir: dir}
	e, err := NewEngine(cfg)
	if err != nil {
		t.Fatal(err)
	}
	stop := runTracker(t, e)
	testkit.MustExec(t, db, "CREATE TABLE sh_pg (id INT PRIMARY KEY, a INT)")
	created := serverPos(t)
	waitTracker(t, e, created)
	stop()

	testkit.MustExec(t, db, "ALTER TABLE sh_pg ADD COLUMN b INT", "FLUSH BINARY LOGS", "INSERT INTO sh_pg VALUES (1, 2, 3)")
	purgeBinlogs(t)

	if e, err = NewEngine(cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(runTracker(t, e))
	wantColumns(t, e, serverPos(t), "sh_pg", "id a b")
	wantColumns(t, e, created, "sh_pg", "id a")
	if n := e.SchemaHistoryRestarts(); n != 0 {
		t.Errorf("the tracker failed %d times", n)
	}
}
