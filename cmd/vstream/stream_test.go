package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/internal/testdb"
	"github.com/vstream-cdc/vstream/internal/testkit"
	"github.com/vstream-cdc/vstream/internal/testserver"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

var db *testdb.Server

func TestMain(m *testing.M) {
	os.Exit(testdb.RunTests(m, testdb.Options{Database: "test"}, &db))
}

// serveReal starts vstreamd's server on the test MariaDB and returns its address.
func serveReal(t *testing.T) string {
	t.Helper()
	return testserver.Serve(t, db, "test")
}

// vstream runs the command to its end and returns its stdout.
func vstream(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	if code := run(ctx, args, &stdout, &stderr); code != 0 {
		t.Fatalf("vstream %q: exit %d, stderr:\n%s", args, code, stderr.String())
	}
	return stdout.String()
}

// untilWriter collects the output and cancels the run once a line holds the marker: the
// printer writes whole batches, so the batch of the marker is complete when it is seen.
type untilWriter struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	marker string
	cancel context.CancelFunc
}

func (w *untilWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.marker) {
		w.cancel()
	}
	return len(p), nil
}

// streamUntil runs vstream until marker is printed.
func streamUntil(t *testing.T, marker string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w := &untilWriter{marker: marker, cancel: cancel}
	var stderr bytes.Buffer
	if code := run(ctx, args, w, &stderr); code != 0 {
		t.Fatalf("vstream %q: exit %d, stderr:\n%s", args, code, stderr.String())
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !strings.Contains(w.buf.String(), w.marker) {
		t.Fatalf("vstream %q ended before printing %q:\n%s", args, marker, w.buf.String())
	}
	return w.buf.String()
}

var (
	clockRE = regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d `)
	stampRE = regexp.MustCompile(`"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"`)
)

// normalize replaces what differs between runs and servers: clock times, positions and
// timestamps. Only positions of the server's flavor (MariaDB/0-1-5, MySQL56/uuid:1-5) become
// FLAVOR/GTID, so one golden holds for both flavors and a position of the wrong one shows.
func normalize(s string) string {
	s = clockRE.ReplaceAllString(s, "HH:MM:SS ")
	gtidRE := regexp.MustCompile(regexp.QuoteMeta(db.PositionFlavor()) + `/[0-9a-f:,-]+`)
	s = gtidRE.ReplaceAllString(s, "FLAVOR/GTID")
	return stampRE.ReplaceAllString(s, `"TIMESTAMP"`)
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs:\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

// TestOutputGolden streams a table of many column types from a real server, from a position
// "vstream position" printed, and compares the text and json outputs with their goldens.
func TestOutputGolden(t *testing.T) {
	addr := serveReal(t)
	testkit.MustExec(t, db, "DROP TABLE IF EXISTS people", `CREATE TABLE people (
		id INT PRIMARY KEY, name VARCHAR(20), nick VARCHAR(10) CHARACTER SET latin1, balance DECIMAL(10,2),
		score DOUBLE, born DATE, seen DATETIME(3), photo VARBINARY(8), note TEXT NULL, flags BIT(4),
		big BIGINT UNSIGNED, tiny TINYINT, kind ENUM('a','b'), doc JSON)`)
	pos := strings.TrimSpace(vstream(t, "position", "--server", addr))
	testkit.MustExec(t, db,
		`INSERT INTO people VALUES (1, 'alice', 'café', 3.50, 1.25, '1990-01-02', '2024-05-06 07:08:09.123',
			0x00ff, NULL, b'1010', 18446744073709551615, -5, 'b', '{"a": [1, 2]}')`,
		`INSERT INTO people (id, name) VALUES (2, 'bob "b" o''b')`,
		`UPDATE people SET balance = 4.00, note = 'hi' WHERE id = 1`,
		`DELETE FROM people WHERE id = 2`,
		`ALTER TABLE people ADD COLUMN extra INT`,
		`INSERT INTO people (id, name, extra) VALUES (99, 'end', 7)`,
	)
	text := streamUntil(t, "id=99 ", "--server", addr, "--position", pos, "--tables", "people", "--output", "text")
	golden(t, "stream.text", normalize(text))
	if strings.Contains(text, "\x1b[") {
		t.Error("text output to a pipe has colours")
	}
	js := streamUntil(t, `"id":99,`, "--server", addr, "--position", pos, "--tables", "people")
	golden(t, "stream.json", normalize(js))

	// Every json line is an object, and the position of the last can be passed back: a
	// stream resumed from it prints nothing of what came before.
	lines := strings.Split(strings.TrimSpace(js), "\n")
	last := lines[len(lines)-1]
	var row struct {
		Position map[string]any `json:"position"`
	}
	if err := jsonUnmarshal(last, &row); err != nil || row.Position == nil {
		t.Fatalf("last json line %s: %v", last, err)
	}
	resume := last[strings.Index(last, `"position":`)+len(`"position":`) : strings.LastIndex(last, `,"timestamp"`)]
	testkit.MustExec(t, db, `INSERT INTO people (id, name) VALUES (100, 'after')`)
	after := streamUntil(t, `"id":100,`, "--server", addr, "--position", resume, "--tables", "people")
	if strings.Contains(after, `"id":99,`) || strings.Count(strings.TrimSpace(after), "\n") != 0 {
		t.Errorf("resumed from the printed position, got:\n%s", after)
	}
}

// TestPositionCommand: vstream position prints the server's binlog position as a VGTID that
// --position takes back.
func TestPositionCommand(t *testing.T) {
	addr := serveReal(t)
	testkit.MustExec(t, db, "CREATE TABLE IF NOT EXISTS pos_t (id INT PRIMARY KEY)", "INSERT INTO pos_t VALUES (1) ON DUPLICATE KEY UPDATE id = id")
	out := strings.TrimSpace(vstream(t, "position", "--server", addr))
	var v binlogdata.VGtid
	if err := protojson.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("position %q: %v", out, err)
	}
	want, err := db.Position()
	if err != nil {
		t.Fatal(err)
	}
	if sg := v.GetShardGtids(); len(sg) != 1 || sg[0].GetGtid() != want || sg[0].GetKeyspace() != "test" {
		t.Errorf("position = %s, want %s in keyspace test", out, want)
	}
	// --format does not change what a subcommand reads.
	if avro := strings.TrimSpace(vstream(t, "position", "--server", addr, "--format", "avro")); avro != out {
		t.Errorf("position with --format avro = %s, want %s", avro, out)
	}
	if _, err := parseArgs([]string{"--position", out}, env(nil), &bytes.Buffer{}); err != nil {
		t.Errorf("--position does not take the printed position back: %v", err)
	}
}

// TestTablesCommand: vstream tables names each selected table with the key its copy goes by,
// and says why a table without one cannot be copied.
func TestTablesCommand(t *testing.T) {
	addr := serveReal(t)
	testkit.MustExec(t, db,
		"DROP TABLE IF EXISTS tk_pk, tk_uk, tk_none, tk_empty, other_t",
		"CREATE TABLE tk_pk (a INT, b INT, v INT, PRIMARY KEY (b, a))",
		"CREATE TABLE tk_uk (u INT NOT NULL, v INT, UNIQUE KEY (u))",
		"CREATE TABLE tk_none (v INT)",
		"CREATE TABLE tk_empty (id INT PRIMARY KEY)",
		"CREATE TABLE other_t (id INT PRIMARY KEY)",
		"INSERT INTO tk_pk VALUES (1, 2, 3), (4, 5, 6)",
		"INSERT INTO tk_uk VALUES (1, 2), (3, 4)",
		"INSERT INTO tk_none VALUES (1), (2)",
	)
	got := vstream(t, "tables", "--server", addr, "--tables", "/^tk_")
	golden(t, "tables.txt", got)
	// A filter of one empty table lists it too.
	if got := vstream(t, "tables", "--server", addr, "--tables", "tk_empty"); !strings.HasPrefix(got, "tk_empty\tcopyable") {
		t.Errorf("tables of an empty table: %q", got)
	}
	// A filter that selects nothing is the server's refusal, passed on.
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"tables", "--server", addr, "--tables", "/^nothing_"}, &stdout, &stderr); code != 1 ||
		!strings.Contains(stderr.String(), "selects no table") {
		t.Errorf("tables for no table: exit %d, stderr %q", code, stderr.String())
	}
}

// TestTablesWarnsUnmatched: a --tables rule that matches no table of the server is warned
// about at the start, alone or beside rules that match.
func TestTablesWarnsUnmatched(t *testing.T) {
	addr := serveReal(t)
	testkit.MustExec(t, db, "CREATE TABLE IF NOT EXISTS tw_here (id INT PRIMARY KEY)")
	for _, c := range []struct {
		tables string
		warned []string
	}{
		{"nosuch", []string{`"nosuch"`}},
		{"tw_here,nosuch,/^tw_", []string{`"nosuch"`}},
		{"tw_here,/^tw_", nil},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), []string{"--server", addr, "--tables", c.tables, "--timeout", "1s"}, &stdout, &stderr)
		if code != 0 {
			t.Fatalf("--tables %s: exit %d, stderr %q", c.tables, code, stderr.String())
		}
		if n := strings.Count(stderr.String(), "matches no table"); n != len(c.warned) {
			t.Errorf("--tables %s: %d warnings, want %d: %q", c.tables, n, len(c.warned), stderr.String())
		}
		for _, w := range c.warned {
			if !strings.Contains(stderr.String(), "--tables "+w+" matches no table") {
				t.Errorf("--tables %s: no warning for %s: %q", c.tables, w, stderr.String())
			}
		}
	}
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

// TestFormatOutputs: with --format, each output keeps what a consumer needs of every message:
// an Avro schema message its schema id and subject headers, records their topic, key and
// position, a Debezium delete its tombstone.
func TestFormatOutputs(t *testing.T) {
	addr := serveReal(t)
	testkit.MustExec(t, db, "DROP TABLE IF EXISTS fmt_t", "CREATE TABLE fmt_t (id INT PRIMARY KEY, v VARCHAR(10))")
	pos := strings.TrimSpace(vstream(t, "position", "--server", addr))
	testkit.MustExec(t, db, "INSERT INTO fmt_t VALUES (1, 'a')", "DELETE FROM fmt_t WHERE id = 1", "INSERT INTO fmt_t VALUES (2, 'end')")
	common := []string{"--server", addr, "--position", pos, "--tables", "fmt_t"}

	type msg struct {
		Topic       string            `json:"topic"`
		Key         json.RawMessage   `json:"key"`
		KeyBase64   string            `json:"key_base64"`
		Headers     map[string]string `json:"headers"`
		Tombstone   bool              `json:"tombstone"`
		Value       json.RawMessage   `json:"value"`
		ValueBase64 string            `json:"value_base64"`
		Position    json.RawMessage   `json:"position"`
	}
	decode := func(out string) []msg {
		var ms []msg
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			var m msg
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("line %s: %v", l, err)
			}
			ms = append(ms, m)
		}
		return ms
	}

	// Avro: 5 messages are the key and value schemas, then insert, delete and insert records
	// (the delete's tombstone is off in this format's defaults or not, the count covers both).
	avro := decode(vstream(t, append([]string{"--format", "avro", "--output", "json", "--max-events", "5"}, common...)...))
	var schemas, records int
	for _, m := range avro {
		switch {
		case m.Headers["vstream.schema.id"] != "":
			schemas++
			if !strings.HasPrefix(m.Headers["vstream.schema.subject"], m.Topic) || len(m.Value) == 0 {
				t.Errorf("schema message %+v: want subject <topic>-key|value and the schema as its value", m)
			}
		default:
			records++
			if m.Topic == "" || (m.KeyBase64 == "" && len(m.Key) == 0) || len(m.Position) == 0 {
				t.Errorf("avro record %+v: want topic, key and position", m)
			}
			if !m.Tombstone && m.ValueBase64 == "" {
				t.Errorf("avro record %+v: want its binary value in value_base64", m)
			}
		}
	}
	if schemas < 2 || records == 0 {
		t.Errorf("avro: %d schema messages, %d records", schemas, records)
	}

	// Debezium JSON: the delete is followed by its tombstone; records embed key and value.
	dbz := decode(streamUntil(t, `"id":2`, append([]string{"--format", "debezium-json", "--output", "json"}, common...)...))
	var tombstones int
	for _, m := range dbz {
		if m.Tombstone {
			tombstones++
			if len(m.Key) == 0 || len(m.Value) != 0 {
				t.Errorf("tombstone %+v: want a key and no value", m)
			}
		} else if len(m.Key) == 0 || len(m.Value) == 0 || m.Topic == "" || len(m.Position) == 0 {
			t.Errorf("debezium record %+v: want topic, key, value and position", m)
		}
	}
	if tombstones != 1 {
		t.Errorf("%d tombstones, want 1:\n%+v", tombstones, dbz)
	}

	// Text names topic, headers and tombstone; protojson prints the whole message.
	text := vstream(t, append([]string{"--format", "avro", "--output", "text", "--max-events", "3"}, common...)...)
	if !strings.Contains(text, "vstream.schema.id=") || !strings.Contains(text, "vstream.schema.subject=") {
		t.Errorf("text avro output lacks the schema headers:\n%s", text)
	}
	pj := vstream(t, append([]string{"--format", "debezium-json", "--output", "protojson", "--max-events", "1"}, common...)...)
	for _, want := range []string{`"topic":`, `"key":`, `"value":`, `"position":`} {
		if !strings.Contains(pj, want) {
			t.Errorf("protojson message lacks %s: %s", want, pj)
		}
	}
}
