package vstreamer

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/internal/testkit"
	"github.com/vstream-cdc/vstream/internal/testkit/evtext"
)

// setupTwoDatabases makes a table of one name in the configured database (test) and in a
// second one (ks_two), each with rows of its own.
func setupTwoDatabases(t *testing.T) {
	t.Helper()
	testkit.MustExec(t, db,
		"DROP DATABASE IF EXISTS ks_two", "CREATE DATABASE ks_two",
		"DROP TABLE IF EXISTS test.ksdb_t",
		"CREATE TABLE test.ksdb_t (id INT PRIMARY KEY, v VARCHAR(10))",
		"CREATE TABLE ks_two.ksdb_t (id INT PRIMARY KEY, v VARCHAR(10))",
		"INSERT INTO test.ksdb_t VALUES (1, 'one-a')",
		"INSERT INTO ks_two.ksdb_t VALUES (1, 'two-a'), (2, 'two-b')",
	)
	t.Cleanup(func() { _ = db.Exec("DROP DATABASE IF EXISTS ks_two", "DROP TABLE IF EXISTS test.ksdb_t") })
}

func newEngineDatabases(t *testing.T, databases ...string) *Engine {
	t.Helper()
	e, err := NewEngine(Config{Addr: db.Addr(), User: db.User(), Password: db.Password(), Database: "test", Keyspace: "ks",
		Databases: databases})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

var ksdbFilter = &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "ksdb_t"}}}

// nextRow reads to the next ROW event, checking that every event on the way that carries a
// keyspace carries want's, and that FIELD columns name database wantDB.
func nextRow(t *testing.T, ts *testStream, wantKS, wantDB string) *binlogdata.VEvent {
	t.Helper()
	for {
		ev := ts.next(false)
		checkLabels(t, ev, wantKS, wantDB)
		if ev.Type == binlogdata.VEventType_ROW {
			return ev
		}
	}
}

func checkLabels(t *testing.T, ev *binlogdata.VEvent, wantKS, wantDB string) {
	t.Helper()
	if ev.Keyspace != "" && ev.Keyspace != wantKS {
		t.Fatalf("%s event labelled keyspace %q, want %q", ev.Type, ev.Keyspace, wantKS)
	}
	if ev.Type == binlogdata.VEventType_VGTID && ev.Vgtid.ShardGtids[0].Keyspace != wantKS {
		t.Fatalf("VGTID of keyspace %q, want %q", ev.Vgtid.ShardGtids[0].Keyspace, wantKS)
	}
	if ev.Type == binlogdata.VEventType_FIELD {
		if ev.FieldEvent.Keyspace != wantKS || ev.FieldEvent.Fields[0].Database != wantDB {
			t.Fatalf("FIELD of keyspace %q database %q, want %q %q", ev.FieldEvent.Keyspace, ev.FieldEvent.Fields[0].Database, wantKS, wantDB)
		}
	}
	if ev.Type == binlogdata.VEventType_ROW && ev.RowEvent.Keyspace != wantKS {
		t.Fatalf("ROW of keyspace %q, want %q", ev.RowEvent.Keyspace, wantKS)
	}
}

// Two streams of one engine, one per database, each see their own database's changes to a
// table of the same name, labelled with their keyspace, the table name unqualified.
func TestStreamSecondDatabase(t *testing.T) {
	setupTwoDatabases(t)
	e := newEngineDatabases(t, "ks_two")
	first := startStream(t, e, Request{Position: CurrentPosition, Filter: ksdbFilter})
	second := startStream(t, e, Request{Keyspace: "ks_two", Position: CurrentPosition, Filter: ksdbFilter})
	for _, ts := range []*testStream{first, second} {
		ts.expect("GTID", "OTHER", "VGTID")
	}
	testkit.MustExec(t, db, "INSERT INTO test.ksdb_t VALUES (10, 'one-j')", "INSERT INTO ks_two.ksdb_t VALUES (20, 'two-t')")
	if got := evtext.Short(nextRow(t, first, "ks", "test")); got != "ROW ksdb_t +[10 one-j]" {
		t.Errorf("configured database: got %s", got)
	}
	if got := evtext.Short(nextRow(t, second, "ks_two", "ks_two")); got != "ROW ksdb_t +[20 two-t]" {
		t.Errorf("second database: got %s", got)
	}
	// A DDL of the second database reaches its stream, not the other's.
	testkit.MustExec(t, db, "ALTER TABLE ks_two.ksdb_t ADD COLUMN w INT", "INSERT INTO ks_two.ksdb_t VALUES (21, 'two-u', 7)",
		"INSERT INTO test.ksdb_t VALUES (11, 'one-k')")
	for {
		ev := second.next(false)
		checkLabels(t, ev, "ks_two", "ks_two")
		if ev.Type == binlogdata.VEventType_DDL {
			if !strings.Contains(ev.Statement, "ADD COLUMN w") {
				t.Errorf("DDL %q", ev.Statement)
			}
			break
		}
		if ev.Type == binlogdata.VEventType_ROW {
			t.Fatalf("a row before the DDL: %s", evtext.Short(ev))
		}
	}
	if got := evtext.Short(nextRow(t, second, "ks_two", "ks_two")); got != "ROW ksdb_t +[21 two-u 7]" {
		t.Errorf("second database after DDL: got %s", got)
	}
	if got := evtext.Short(nextRow(t, first, "ks", "test")); got != "ROW ksdb_t +[11 one-k]" {
		t.Errorf("configured database after the other's DDL: got %s", got)
	}
}

// A copy of the second database copies its table, not the configured database's one of the
// same name, then streams its changes.
func TestCopySecondDatabase(t *testing.T) {
	setupTwoDatabases(t)
	e := newEngineDatabases(t, AllDatabases)
	ts := startStream(t, e, Request{Keyspace: "ks_two", Filter: ksdbFilter})
	var rows []string
	for {
		ev := ts.next(false)
		checkLabels(t, ev, "ks_two", "ks_two")
		if ev.Type == binlogdata.VEventType_ROW {
			rows = append(rows, evtext.Short(ev))
		}
		if ev.Type == binlogdata.VEventType_COPY_COMPLETED && ev.Keyspace == "" {
			break
		}
	}
	if got, want := strings.Join(rows, "; "), "ROW ksdb_t +[1 two-a] +[2 two-b]"; got != want {
		t.Errorf("copied %s, want %s", got, want)
	}
	testkit.MustExec(t, db, "INSERT INTO test.ksdb_t VALUES (3, 'one-c')", "INSERT INTO ks_two.ksdb_t VALUES (3, 'two-c')")
	if got := evtext.Short(nextRow(t, ts, "ks_two", "ks_two")); got != "ROW ksdb_t +[3 two-c]" {
		t.Errorf("after the copy: got %s", got)
	}
}

// The snapshot reads of the tablet API read the database of their keyspace.
func TestReadsSecondDatabase(t *testing.T) {
	setupTwoDatabases(t)
	e := newEngineDatabases(t, "ks_two")
	got, _, err := collectRows(t, e, RowsRequest{Keyspace: "ks_two", Query: "select * from ksdb_t"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "fields:[id:INT32 v:VARCHAR] pkfields:[id:INT32]|rows:[1 two-a][2 two-b] lastpk:[2]"; strings.Join(got, "|") != want {
		t.Errorf("rows:\n got %s\nwant %s", strings.Join(got, "|"), want)
	}
	var tables []string
	err = e.StreamTables(context.Background(), TablesRequest{Keyspace: "ks_two"}, func(b *RowsBatch) error {
		if len(b.Rows) > 0 {
			tables = append(tables, b.Table+":"+evtext.Row(b.Rows[0]))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(tables, " "), "ksdb_t:[1 two-a]"; got != want {
		t.Errorf("tables: got %s, want %s", got, want)
	}
	var results []string
	err = e.StreamResults(context.Background(), ResultsRequest{Keyspace: "ks_two", Query: "select v from ksdb_t where id = 2"},
		func(b *RowsBatch) error {
			for _, r := range b.Rows {
				results = append(results, evtext.Row(r))
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(results, " "); got != "[two-b]" {
		t.Errorf("results: got %s", got)
	}
}

// Keyspaces not allowed, system schemas and databases the server lacks are refused before
// anything is streamed.
func TestKeyspaceRefused(t *testing.T) {
	setupTwoDatabases(t)
	listed := newEngineDatabases(t, "ks_two")
	all := newEngineDatabases(t, AllDatabases)
	for _, tc := range []struct {
		name     string
		e        *Engine
		keyspace string
		want     string
	}{
		{"not listed", listed, "ks_three", `keyspace "ks_three" is not served here; this server streams keyspaces "ks", "ks_two"`},
		{"configured database by its name", listed, "test", `database "test" is streamed as keyspace "ks"`},
		{"system schema", all, "mysql", "system schema"},
		{"system schema any case", all, "INFORMATION_SCHEMA", "system schema"},
		{"missing database", all, "ks_missing", `the server has no database "ks_missing"`},
		{"database of another case", all, "KS_TWO", `the server has no database "KS_TWO"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.e.Stream(context.Background(), Request{Keyspace: tc.keyspace, Position: CurrentPosition}, func([]*binlogdata.VEvent) error {
				return errors.New("no event expected")
			})
			if !errors.Is(err, ErrKeyspace) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want ErrKeyspace saying %q", err, tc.want)
			}
			_, _, err = collectRows(t, tc.e, RowsRequest{Keyspace: tc.keyspace, Query: "select * from ksdb_t"})
			if !errors.Is(err, ErrKeyspace) {
				t.Fatalf("rows: got %v, want ErrKeyspace", err)
			}
		})
	}
}

func TestConfigDatabases(t *testing.T) {
	for _, tc := range []struct {
		databases []string
		want      string
	}{
		{[]string{"a", "*"}, ""},
		{[]string{""}, "an empty name"},
		{[]string{"Performance_Schema"}, "system schema"},
		{[]string{"d"}, ""},
		{[]string{"k"}, "k is the keyspace of database d"},
	} {
		c := Config{Addr: "127.0.0.1:3306", User: "u", Database: "d", Keyspace: "k", Databases: tc.databases}
		err := c.Validate()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%q: got %v, want %q", tc.databases, err, tc.want)
		}
	}
}

// The VSchema is the configured keyspace's: a stream of another database takes keyspace ids
// from a one-integer primary key, where the configured one takes vsh's from its vindex on id2.
func TestVSchemaConfiguredKeyspaceOnly(t *testing.T) {
	testkit.MustExec(t, db, "DROP DATABASE IF EXISTS ks_two", "CREATE DATABASE ks_two", "DROP TABLE IF EXISTS test.vsh",
		"CREATE TABLE test.vsh (id1 INT, id2 INT, PRIMARY KEY (id1))",
		"CREATE TABLE ks_two.vsh (id1 INT, id2 INT, PRIMARY KEY (id1))")
	t.Cleanup(func() { _ = db.Exec("DROP DATABASE IF EXISTS ks_two", "DROP TABLE IF EXISTS test.vsh") })
	e := newVSchemaEngine(t)
	e.cfg.Databases = []string{"ks_two"}
	f := rules(&binlogdata.Rule{Match: "vsh", Filter: "select id1, id2, keyspace_id() from vsh"})
	configured := startStream(t, e, Request{Position: CurrentPosition, Filter: f})
	two := startStream(t, e, Request{Keyspace: "ks_two", Position: CurrentPosition, Filter: f})
	configured.expect("GTID", "OTHER", "VGTID")
	two.expect("GTID", "OTHER", "VGTID")
	testkit.MustExec(t, db, "INSERT INTO test.vsh VALUES (1, 2)", "INSERT INTO ks_two.vsh VALUES (1, 2)")
	// hash(2) = 06e7ea22ce92708f, hash(1) = 166b40b44aba4bd6.
	if got, want := evtext.Short(nextRow(t, configured, "ks", "test")), `ROW vsh +[1 2 "\x06\xe7\xea\"Βp\x8f"]`; got != want {
		t.Errorf("configured keyspace, by the vindex:\n got %s\nwant %s", got, want)
	}
	if got, want := evtext.Short(nextRow(t, two, "ks_two", "ks_two")), `ROW vsh +[1 2 "\x16k@\xb4J\xbaK\xd6"]`; got != want {
		t.Errorf("other keyspace, by the primary key:\n got %s\nwant %s", got, want)
	}
}

// The schema history records the configured database: a stream of another database resumed
// from before a DDL describes its rows as the table is now, while the configured database's
// stream describes them as they were written.
func TestSchemaHistoryConfiguredDatabaseOnly(t *testing.T) {
	testkit.MustExec(t, db, "DROP DATABASE IF EXISTS ks_two", "CREATE DATABASE ks_two", "DROP TABLE IF EXISTS test.ksh")
	t.Cleanup(func() { _ = db.Exec("DROP DATABASE IF EXISTS ks_two", "DROP TABLE IF EXISTS test.ksh") })
	hist := historyEngine(t, t.TempDir())
	hist.cfg.Databases = []string{"ks_two"}
	start := serverPos(t).String()
	for _, d := range []string{"test", "ks_two"} {
		testkit.MustExec(t, db, "CREATE TABLE "+d+".ksh (id INT PRIMARY KEY, n VARCHAR(50))", "INSERT INTO "+d+".ksh VALUES (1, 'x')")
		// The tracker describes a table when it reads its CREATE: the ALTER must come after.
		waitTracker(t, hist, serverPos(t))
		testkit.MustExec(t, db, "ALTER TABLE "+d+".ksh MODIFY n VARCHAR(80)")
	}
	waitTracker(t, hist, serverPos(t))
	fieldOfN := func(keyspace string) string {
		ts := startStream(t, hist, Request{Keyspace: keyspace, Position: start, Filter: rules(&binlogdata.Rule{Match: "ksh"})})
		defer ts.stop()
		for {
			if ev := ts.next(false); ev.Type == binlogdata.VEventType_FIELD {
				return ev.FieldEvent.Fields[1].ColumnType
			}
		}
	}
	if got := fieldOfN(""); got != "varchar(50)" {
		t.Errorf("configured database: n is %s, want varchar(50) as written", got)
	}
	if got := fieldOfN("ks_two"); got != "varchar(80)" {
		t.Errorf("other database: n is %s, want varchar(80) as the table is now", got)
	}
}
