package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/vstream-cdc/vstream/internal/secure/securetest"
	"github.com/vstream-cdc/vstream/internal/sinktest"
	"github.com/vstream-cdc/vstream/internal/testserver"
	"github.com/vstream-cdc/vstream/server/encoder/avro"
)

// registryReader is the Node program that decodes records as Confluent's deserializer does.
const registryReader = "testdata/registry-reader"

// decoded is one record as the Node reader decoded it.
type decoded struct {
	Topic   string         `json:"topic"`
	KeyID   *int           `json:"keyId"`
	ValueID *int           `json:"valueId"`
	Key     map[string]any `json:"key"`
	Value   map[string]any `json:"value"`
}

// decodeWithRegistry writes the records for the Node reader and returns what it decoded,
// fetching every schema from the registry by the id in the record's frame.
func decodeWithRegistry(t *testing.T, registryURL string, got []sinktest.Got) []decoded {
	t.Helper()
	if _, err := os.Stat(filepath.Join(registryReader, "node_modules")); err != nil {
		npm := exec.Command("npm", "ci", "--no-audit", "--no-fund")
		npm.Dir = registryReader
		if out, err := npm.CombinedOutput(); err != nil {
			t.Fatalf("npm ci: %v\n%s", err, out)
		}
	}
	var in bytes.Buffer
	for _, g := range got {
		rec := map[string]any{"topic": g.Topic, "key": nil, "value": nil}
		if g.Key != "" {
			rec["key"] = base64.StdEncoding.EncodeToString([]byte(g.Key))
		}
		if !g.Tombstone {
			rec["value"] = base64.StdEncoding.EncodeToString(g.Value)
		}
		line, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		in.Write(append(line, '\n'))
	}
	file := filepath.Join(t.TempDir(), "records.jsonl")
	if err := os.WriteFile(file, in.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", filepath.Join(registryReader, "decode.js"), "--registry", registryURL, "--in", file)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node reader: %v\n%s", err, stderr.String())
	}
	var recs []decoded
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var d decoded
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			t.Fatalf("reader output %q: %v", sc.Text(), err)
		}
		recs = append(recs, d)
	}
	if len(recs) != len(got) {
		t.Fatalf("the reader decoded %d records of %d", len(recs), len(got))
	}
	return recs
}

// frameID is the schema id in a Confluent frame.
func frameID(t *testing.T, b []byte) int {
	t.Helper()
	if len(b) < 5 || b[0] != 0 {
		t.Fatalf("not a Confluent frame: %x", b)
	}
	return int(binary.BigEndian.Uint32(b[1:5]))
}

// startSink runs vstream-sink with args; its exit code arrives on the channel.
func startSink(args []string) (chan int, *syncBuffer) {
	var stderr syncBuffer
	code := make(chan int, 1)
	go func() { code <- run(args, env(nil), &stderr) }()
	return code, &stderr
}

// readTopic reads the committed records of topic until want came, failing when the sink
// exits first or a minute passes.
func readTopic(t *testing.T, brokers []string, topic string, want int, code chan int, stderr *syncBuffer) []sinktest.Got {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		got := sinktest.ReadKafka(t, brokers, strings.ReplaceAll(topic, ".", `\.`), want, 500*time.Millisecond)
		if len(got) >= want {
			return got
		}
		select {
		case c := <-code:
			t.Fatalf("vstream-sink exited %d with %d of %d records of %s:\n%s", c, len(got), want, topic, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d records of %s in a minute:\n%s", len(got), want, topic, stderr.String())
		}
	}
}

// TestSchemaRegistryAvro: vstream-sink with --format avro and a schema registry (franz-go's
// srfake, an in-process Confluent REST API) into Kafka (kfake), from a table copy through
// changes and a compatible ADD COLUMN: the key and value schemas are registered under
// <topic>-key and <topic>-value, the column makes value version 2, no schema message reaches
// Kafka, every record's frame carries a registry id, and a Node program using
// @kafkajs/confluent-schema-registry (schema fetched by id, decoded with avsc) decodes every
// record into the source's rows, the records after the DDL with version 2.
func TestSchemaRegistryAvro(t *testing.T) {
	fake := srfake.New()
	t.Cleanup(fake.Close)
	addr := testserver.Serve(t, db, "sinkcmd")
	brokers := sinktest.Kafka(t, 1)
	execOK(t, "DROP TABLE IF EXISTS sr_items", "CREATE TABLE sr_items (id INT PRIMARY KEY, name VARCHAR(20), qty BIGINT NOT NULL)",
		"INSERT INTO sr_items VALUES (1, 'one', 10), (2, 'two', 20), (3, NULL, 30)")
	const topic = "cdc.srv.sinkcmd.sr_items"
	args := []string{"--server", addr, "--sink", "kafka", "--kafka-brokers", strings.Join(brokers, ","), "--name", "sr-good",
		"--format", "avro", "--format-options", "topic.prefix=srv", "--tables", "sr_items", "--topic-prefix", "cdc.",
		"--position", "copy", "--heartbeat", "200ms", "--checkpoint-interval", "200ms", "--schema-registry-url", fake.URL()}
	code, stderr := startSink(args)
	readTopic(t, brokers, topic, 3, code, stderr)

	execOK(t, "UPDATE sr_items SET name = 'uno', qty = 11 WHERE id = 1", "DELETE FROM sr_items WHERE id = 2",
		"INSERT INTO sr_items VALUES (4, 'four', 40)",
		"ALTER TABLE sr_items ADD COLUMN note VARCHAR(10)",
		"INSERT INTO sr_items VALUES (5, 'five', 50, 'n5')", "UPDATE sr_items SET note = 'n3' WHERE id = 3")
	// r1 r2 r3, u1, d2 and its tombstone, c4, c5, u3.
	readTopic(t, brokers, topic, 9, code, stderr)
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-code:
		if c != 0 {
			t.Fatalf("exit %d:\n%s", c, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no stop after SIGTERM:\n%s", stderr.String())
	}

	// The registry: one key version, two value versions, the second with the new column.
	key1, ok := fake.GetSchema(topic+"-key", 1)
	if !ok {
		t.Fatalf("no %s-key version 1", topic)
	}
	if _, ok := fake.GetSchema(topic+"-key", 2); ok {
		t.Fatalf("%s-key has a version 2", topic)
	}
	val1, ok1 := fake.GetSchema(topic+"-value", 1)
	val2, ok2 := fake.GetSchema(topic+"-value", 2)
	if !ok1 || !ok2 || strings.Contains(val1.Schema.Schema, `"note"`) || !strings.Contains(val2.Schema.Schema, `"note"`) {
		t.Fatalf("value versions: 1 %v, 2 %v; want 2 to add note:\n%s\n%s", ok1, ok2, val1.Schema.Schema, val2.Schema.Schema)
	}
	// The source block names the flavor streamed (MariaDB's connector or MySQL's).
	t.Logf("value version 1 source: %s", regexp.MustCompile(`io\.debezium\.connector\.\w+\.Source`).FindString(val1.Schema.Schema))
	if _, ok := fake.GetSchema(topic+"-value", 3); ok {
		t.Fatalf("%s-value has a version 3", topic)
	}

	// Kafka: every record of every topic framed with ids the registry gave, no schema message.
	all := sinktest.ReadKafka(t, brokers, `cdc\..*`, 1<<20, 500*time.Millisecond)
	srcl, err := sr.NewClient(sr.URLs(fake.URL()))
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range all {
		if g.Headers[avro.HeaderMessage] != "" {
			t.Fatalf("a schema message reached Kafka: %+v", g.Headers)
		}
		for _, b := range [][]byte{[]byte(g.Key), g.Value} {
			if len(b) == 0 {
				continue
			}
			if _, err := srcl.SchemaByID(context.Background(), frameID(t, b)); err != nil {
				t.Fatalf("%s: frame id %d is not the registry's: %v", g.Topic, frameID(t, b), err)
			}
		}
	}

	recs := decodeWithRegistry(t, fake.URL(), all)
	type want struct {
		op    string // "" for the tombstone
		id    int
		after string // the decoded after image, or "null"
		value int    // the value schema's version
	}
	wants := []want{
		{"r", 1, "id=1 name=one qty=10", 1}, {"r", 2, "id=2 name=two qty=20", 1}, {"r", 3, "id=3 name=<nil> qty=30", 1},
		{"u", 1, "id=1 name=uno qty=11", 1}, {"d", 2, "null", 1}, {"", 2, "", 0}, {"c", 4, "id=4 name=four qty=40", 1},
		{"c", 5, "id=5 name=five note=n5 qty=50", 2}, {"u", 3, "id=3 name=<nil> note=n3 qty=30", 2},
	}
	var rows []decoded
	for _, r := range recs {
		if r.Topic == topic {
			rows = append(rows, r)
		} else if r.Value == nil && r.Key == nil {
			t.Fatalf("%s: a record with neither key nor value", r.Topic)
		}
	}
	if len(rows) != len(wants) {
		t.Fatalf("%d records of %s, want %d", len(rows), topic, len(wants))
	}
	ids := map[int]int{1: val1.ID, 2: val2.ID}
	for i, w := range wants {
		r := rows[i]
		if r.KeyID == nil || *r.KeyID != key1.ID || fmt.Sprint(r.Key["id"]) != fmt.Sprint(w.id) {
			t.Errorf("record %d: key %v (schema %v), want id %d with schema %d", i, r.Key, r.KeyID, w.id, key1.ID)
		}
		if w.op == "" {
			if r.Value != nil || r.ValueID != nil {
				t.Errorf("record %d: want the tombstone, got %v", i, r.Value)
			}
			continue
		}
		if r.ValueID == nil || *r.ValueID != ids[w.value] {
			t.Errorf("record %d: value schema id %v, want version %d's %d", i, r.ValueID, w.value, ids[w.value])
		}
		if r.Value["op"] != w.op || rowText(r.Value["after"]) != w.after {
			t.Errorf("record %d: op %v after %s, want %s %s", i, r.Value["op"], rowText(r.Value["after"]), w.op, w.after)
		}
	}
	// The last image of each key is the source's row.
	last := map[string]string{}
	for _, r := range rows {
		if r.Value != nil {
			last[fmt.Sprint(r.Key["id"])] = rowText(r.Value["after"])
		}
	}
	source := map[string]string{}
	if err := queryRows("SELECT id, name, qty, note FROM sr_items", func(vals []string) {
		// A row last written before the ADD COLUMN has no note in its image; its note is NULL.
		note := ""
		if vals[3] != "<nil>" {
			note = " note=" + vals[3]
		}
		source[vals[0]] = fmt.Sprintf("id=%s name=%s%s qty=%s", vals[0], vals[1], note, vals[2])
	}); err != nil {
		t.Fatal(err)
	}
	for id, row := range source {
		if last[id] != row {
			t.Errorf("key %s: last record %q, source %q", id, last[id], row)
		}
	}
	if last["2"] != "null" || len(source) != 4 {
		t.Errorf("deleted key 2: last image %q; source has %d rows", last["2"], len(source))
	}
}

// TestSchemaRegistryIncompatible: a column changed from INT to VARCHAR mid-stream makes a
// value schema the subject's BACKWARD level refuses (an int written before cannot be read as
// a string): vstream-sink stops with exit status 1 and an error naming the table, the
// subject, the level and the field; the registry keeps one version and no record of the
// change reaches Kafka. Started again once the subject's level is NONE, it delivers the
// change framed with version 2.
func TestSchemaRegistryIncompatible(t *testing.T) {
	fake := srfake.New(srfake.WithGlobalCompat(sr.CompatBackward))
	t.Cleanup(fake.Close)
	addr := testserver.Serve(t, db, "sinkcmd")
	brokers := sinktest.Kafka(t, 1)
	execOK(t, "DROP TABLE IF EXISTS sr_bad", "CREATE TABLE sr_bad (id INT PRIMARY KEY, v INT)", "INSERT INTO sr_bad VALUES (1, 1)")
	const topic = "cdc.srv.sinkcmd.sr_bad"
	args := []string{"--server", addr, "--sink", "kafka", "--kafka-brokers", strings.Join(brokers, ","), "--name", "sr-bad",
		"--format", "avro", "--format-options", "topic.prefix=srv", "--tables", "sr_bad", "--topic-prefix", "cdc.",
		"--position", "copy", "--heartbeat", "200ms", "--checkpoint-interval", "200ms", "--schema-registry-url", fake.URL()}
	code, stderr := startSink(args)
	readTopic(t, brokers, topic, 1, code, stderr)
	// The insert before the change is committed before the change is made: a batch holding
	// both would be aborted whole, since the sink commits at the batch's end.
	execOK(t, "INSERT INTO sr_bad VALUES (2, 2)")
	readTopic(t, brokers, topic, 2, code, stderr)
	execOK(t, "ALTER TABLE sr_bad MODIFY v VARCHAR(10)", "INSERT INTO sr_bad VALUES (3, 'three')")
	select {
	case c := <-code:
		if c != 1 {
			t.Fatalf("exit %d, want 1:\n%s", c, stderr.String())
		}
	case <-time.After(time.Minute):
		t.Fatalf("still running a minute after the incompatible change:\n%s", stderr.String())
	}
	out := stderr.String()
	for _, w := range []string{"table sinkcmd.sr_bad", "subject " + topic + "-value", "not BACKWARD compatible with version 1",
		"field before.v: [null, int] cannot be read as [null, string]"} {
		if !strings.Contains(out, w) {
			t.Errorf("the error lacks %q:\n%s", w, out)
		}
	}
	if _, ok := fake.GetSchema(topic+"-value", 2); ok {
		t.Error("the incompatible schema was registered")
	}
	got := sinktest.ReadKafka(t, brokers, strings.ReplaceAll(topic, ".", `\.`), 10, 500*time.Millisecond)
	if len(got) != 2 {
		t.Fatalf("%d records of %s, want the copied row and the insert before the change", len(got), topic)
	}

	// With the subject's level lowered to NONE, the sink started again resumes from its last
	// commit, registers the schema as version 2 and delivers the change.
	srcl, err := sr.NewClient(sr.URLs(fake.URL()))
	if err != nil {
		t.Fatal(err)
	}
	if res := srcl.SetCompatibility(context.Background(), sr.SetCompatibility{Level: sr.CompatNone}, topic+"-value"); res[0].Err != nil {
		t.Fatal(res[0].Err)
	}
	code, stderr = startSink(args)
	got = readTopic(t, brokers, topic, 3, code, stderr)
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-code:
		if c != 0 {
			t.Fatalf("exit %d:\n%s", c, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no stop after SIGTERM:\n%s", stderr.String())
	}
	v2, ok := fake.GetSchema(topic+"-value", 2)
	if !ok || len(got) != 3 || frameID(t, got[2].Value) != v2.ID {
		t.Fatalf("version 2 %v; %d records, the last framed with %d", ok, len(got), frameID(t, got[len(got)-1].Value))
	}
}

// rowText renders a decoded row image as "col=value ..." in column-name order, "null" for
// none.
func rowText(v any) string {
	m, ok := v.(map[string]any)
	if !ok {
		return "null"
	}
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	parts := make([]string, 0, len(names))
	for _, k := range names {
		parts = append(parts, fmt.Sprintf("%s=%v", k, m[k]))
	}
	return strings.Join(parts, " ")
}

func execOK(t *testing.T, sqls ...string) {
	t.Helper()
	if err := db.Exec(sqls...); err != nil {
		t.Fatal(err)
	}
}

// queryRows runs a query on the source and calls each with a row's values as text, "<nil>"
// for NULL.
func queryRows(query string, each func([]string)) error {
	c, err := db.Conn("sinkcmd")
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	res, err := c.Execute(query)
	if err != nil {
		return fmt.Errorf("%s: %w", query, err)
	}
	defer res.Close()
	for _, row := range res.Values {
		vals := make([]string, len(row))
		for i, v := range row {
			if v.Type == mysql.FieldValueTypeNull {
				vals[i] = "<nil>"
			} else if b, ok := v.Value().([]byte); ok {
				vals[i] = string(b)
			} else {
				vals[i] = fmt.Sprint(v.Value())
			}
		}
		each(vals)
	}
	return nil
}

// TestRegistryConfig: the schema-registry- keys are read into the registry's options (the
// password from a file, TLS on with an https URL) and refused where they cannot apply.
func TestRegistryConfig(t *testing.T) {
	pwFile := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pwFile, []byte("reg-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	kafka := []string{"--sink", "kafka", "--kafka-brokers", "k:9092", "--format", "avro"}
	for _, tc := range []struct {
		name string
		args []string
		err  string
		ok   func(*config) bool
	}{
		{name: "none", args: kafka, ok: func(c *config) bool { return c.parsed.registry == nil }},
		{name: "basic auth from a file", args: append(kafka, "--schema-registry-url", "http://r1:8081, http://r2:8081",
			"--schema-registry-user", "key", "--schema-registry-password-file", pwFile), ok: func(c *config) bool {
			o := c.parsed.registry
			return o != nil && len(o.URLs) == 2 && o.User == "key" && o.Password == "reg-secret" && o.TLS == nil
		}},
		{name: "https", args: append(kafka, "--schema-registry-url", "https://r:8081", "--schema-registry-tls-server-name", "reg.internal"),
			ok: func(c *config) bool {
				o := c.parsed.registry
				return o != nil && o.TLS != nil && o.TLS.ServerName == "reg.internal"
			}},
		{name: "token", args: append(kafka, "--schema-registry-url", "https://r:8081", "--schema-registry-token", "tok"),
			ok: func(c *config) bool { return c.parsed.registry.Token == "tok" }},
		{name: "not avro", args: []string{"--sink", "kafka", "--kafka-brokers", "k:9092", "--format", "debezium-json", "--schema-registry-url", "http://r:8081"},
			err: "schema-registry-url goes with format avro, not debezium-json"},
		{name: "nats", args: []string{"--sink", "nats", "--nats-url", "nats://n:4222", "--topic-prefix", "cdc.", "--format", "avro", "--schema-registry-url", "http://r:8081"},
			err: "schema-registry-url goes with sink kafka, not nats"},
		{name: "bad url", args: append(kafka, "--schema-registry-url", "r:8081"), err: `schema-registry-url "r:8081": want http://host:port`},
		{name: "tls with http", args: append(kafka, "--schema-registry-url", "http://r:8081", "--schema-registry-tls-ca", "/ca.pem"),
			err: "use https://"},
		{name: "user without password", args: append(kafka, "--schema-registry-url", "http://r:8081", "--schema-registry-user", "key"),
			err: "schema-registry-user and schema-registry-password go together"},
		{name: "user and token", args: append(kafka, "--schema-registry-url", "http://r:8081", "--schema-registry-user", "key",
			"--schema-registry-password", "p", "--schema-registry-token", "t"), err: "give one of them"},
		{name: "keys without url", args: append(kafka, "--schema-registry-user", "key"), err: "without schema-registry-url"},
		{name: "record strategy", args: append(kafka, "--schema-registry-url", "http://r:8081", "--schema-registry-subject-strategy", "record"),
			err: `schema-registry-subject-strategy "record": only topic`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := loadConfig(tc.args, env(nil))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tc.ok(cfg) {
				t.Fatalf("parsed %+v", cfg.parsed.registry)
			}
		})
	}
}

// TestSchemaRegistrySecured: vstream-sink reaches a registry (srfake's handler) served over
// TLS that wants a client certificate and basic auth, through the schema-registry- flags
// (CA, client certificate, user and password file): records are framed with its ids. With a
// wrong password the sink retries instead of stopping, names the registry in its log and never
// prints the password; SIGTERM then ends it with exit status 0.
func TestSchemaRegistrySecured(t *testing.T) {
	certs := securetest.New(t)
	const user, pass = "sr-key", "sr-secret-Hx7"
	fake := srfake.NewRegistry(srfake.WithAuth("Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))))
	srv := httptest.NewUnstartedServer(fake.Handler())
	srv.TLS = tlsFiles(t, certs.CA, certs.ServerCert, certs.ServerKey)
	srv.TLS.ClientAuth = tls.RequireAndVerifyClientCert
	srv.StartTLS()
	t.Cleanup(srv.Close)
	url := "https://" + srv.Listener.Addr().String()

	addr := testserver.Serve(t, db, "sinkcmd")
	brokers := sinktest.Kafka(t, 1)
	execOK(t, "DROP TABLE IF EXISTS sr_tls", "CREATE TABLE sr_tls (id INT PRIMARY KEY, v VARCHAR(10))", "INSERT INTO sr_tls VALUES (1, 'one')")
	const topic = "cdc.srv.sinkcmd.sr_tls"
	dir := t.TempDir()
	pwFile, badFile := filepath.Join(dir, "pw"), filepath.Join(dir, "bad")
	if err := os.WriteFile(pwFile, []byte(pass), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(badFile, []byte("bad-"+pass), 0o600); err != nil {
		t.Fatal(err)
	}
	args := func(name, passFile string) []string {
		return []string{"--server", addr, "--sink", "kafka", "--kafka-brokers", strings.Join(brokers, ","), "--name", name,
			"--format", "avro", "--format-options", "topic.prefix=srv", "--tables", "sr_tls", "--topic-prefix", "cdc.",
			"--position", "copy", "--heartbeat", "200ms", "--checkpoint-interval", "200ms",
			"--schema-registry-url", url, "--schema-registry-tls-ca", certs.CA, "--schema-registry-tls-cert", certs.ClientCert,
			"--schema-registry-tls-key", certs.ClientKey, "--schema-registry-user", user, "--schema-registry-password-file", passFile}
	}
	sigterm := func(code chan int, stderr *syncBuffer) {
		t.Helper()
		if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case c := <-code:
			if c != 0 {
				t.Fatalf("exit %d:\n%s", c, stderr.String())
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("no stop after SIGTERM:\n%s", stderr.String())
		}
	}

	t.Run("wrong password", func(t *testing.T) {
		code, stderr := startSink(args("sr-tls-bad", badFile))
		deadline := time.Now().Add(time.Minute)
		for strings.Count(stderr.String(), "sink attempt failed") < 2 {
			select {
			case c := <-code:
				t.Fatalf("exit %d; want retries:\n%s", c, stderr.String())
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("no retry in a minute:\n%s", stderr.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
		sigterm(code, stderr)
		out := stderr.String()
		if !strings.Contains(out, "schema registry") || strings.Contains(out, pass) {
			t.Fatalf("want the registry named and the password absent:\n%s", out)
		}
		if got := sinktest.ReadKafka(t, brokers, strings.ReplaceAll(topic, ".", `\.`), 1, 300*time.Millisecond); len(got) != 0 {
			t.Fatalf("%d records reached Kafka without a registered schema", len(got))
		}
	})
	t.Run("right", func(t *testing.T) {
		code, stderr := startSink(args("sr-tls", pwFile))
		got := readTopic(t, brokers, topic, 1, code, stderr)
		sigterm(code, stderr)
		v1, ok := fake.GetSchema(topic+"-value", 1)
		if !ok || frameID(t, got[0].Value) != v1.ID {
			t.Fatalf("value version 1 %v; the record is framed with %d", ok, frameID(t, got[0].Value))
		}
	})
}
