package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vstream-cdc/vstream/internal/sinktest"
	"github.com/vstream-cdc/vstream/internal/testserver"
)

// twoPipelines is the top of a pipelines file: a Kafka cluster both pipelines inherit.
const twoPipelines = `server: vstreamd:15991
sink: kafka
kafka-brokers: k1:9092
topic-prefix: cdc.
pipelines:
  - name: orders
    tables: orders,customers
    format: debezium-json
  - name: audit
    tables: audit_log
    format: canal-json
    default-topic: audit
    topic-prefix: audit.
    copy-chunk-rows: 500
`

// TestPipelinesConfig: a pipelines list makes one configuration per entry, each the top
// level's keys (file, environment, flags) with its entry's over them; names are unique and
// required, a pipeline takes no key of the process's, and each entry is validated as a
// single sink's configuration is, its errors naming it.
func TestPipelinesConfig(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		args       []string
		env        map[string]string
		err        string
		ok         func(ps []*config) bool
	}{
		{name: "two pipelines", yaml: twoPipelines, ok: func(ps []*config) bool {
			o, a := ps[0], ps[1]
			oTopic, _ := o.parsed.topics.Map("app.orders")
			aTopic, _ := a.parsed.topics.Map("")
			return len(ps) == 2 && o.Name == "orders" && a.Name == "audit" &&
				o.Format == "debezium-json" && a.Format == "canal-json" &&
				o.parsed.request.Filter.GetRules()[0].GetMatch() == "orders" && a.parsed.request.Filter.GetRules()[0].GetMatch() == "audit_log" &&
				// Inherited: the server and the brokers; set apart: the topics and the chunk.
				o.Server == "vstreamd:15991" && a.Server == "vstreamd:15991" && a.parsed.brokers[0] == "k1:9092" &&
				oTopic == "cdc.app.orders" && aTopic == "audit.audit" &&
				o.parsed.request.CopyChunkRows == 10000 && a.parsed.request.CopyChunkRows == 500
		}},
		// The environment and flags set the top level, which the entries inherit; an entry's
		// own key wins over a flag.
		{name: "env and flags under the entries", yaml: twoPipelines, args: []string{"--format", "avro", "--heartbeat", "3s"},
			env: map[string]string{"VSTREAM_SINK_KAFKA_BROKERS": "k9:9092"}, ok: func(ps []*config) bool {
				return ps[0].Format == "debezium-json" && ps[1].parsed.brokers[0] == "k9:9092" && ps[1].parsed.request.HeartbeatInterval.String() == "3s"
			}},
		{name: "a pipeline into nats", yaml: twoPipelines + "  - name: to-nats\n    sink: nats\n    nats-url: nats://n:4222\n    format: avro\n    tables: t\n", ok: func(ps []*config) bool {
			return len(ps) == 3 && ps[2].Sink == "nats" && ps[2].NATSURL == "nats://n:4222" && ps[0].Sink == "kafka"
		}},
		{name: "nats pipelines in two streams", yaml: "sink: nats\nnats-url: nats://n:4222\nformat: avro\npipelines:\n  - name: a\n    topic-prefix: a.\n    nats-stream: A\n  - name: b\n    topic-prefix: b.\n    nats-stream: B\n",
			ok: func(ps []*config) bool { return ps[0].NATSStream == "A" && ps[1].NATSStream == "B" }},
		// A key with no value clears what the top level set: no tables is every table.
		{name: "an empty value", yaml: "sink: kafka\nkafka-brokers: k:1\nformat: avro\ntables: t\npipelines:\n  - name: all\n    tables:\n", ok: func(ps []*config) bool {
			return ps[0].Tables == "" && ps[0].parsed.request.Filter == nil
		}},
		{name: "names of one checkpoint key", yaml: "sink: nats\nnats-url: nats://n:4222\ntopic-prefix: cdc.\nformat: avro\npipelines:\n  - name: a.b\n  - name: a_b\n",
			err: `pipelines "a.b" and "a_b" would keep their positions under one key, "a_b", of the NATS bucket`},
		{name: "names of one checkpoint key, two buckets", yaml: "sink: nats\nnats-url: nats://n:4222\ntopic-prefix: cdc.\nformat: avro\npipelines:\n  - name: a.b\n  - name: a_b\n    nats-bucket: other\n",
			ok: func(ps []*config) bool { return ps[1].NATSBucket == "other" }},
		{name: "duplicate names", yaml: twoPipelines + "  - name: orders\n    format: avro\n",
			err: `pipelines entries 1 and 3 are both named "orders": each pipeline needs a name of its own`},
		{name: "no name", yaml: twoPipelines + "  - format: avro\n", err: "pipelines entry 3 (line 15): name is required"},
		{name: "empty name", yaml: twoPipelines + "  - name: \"\"\n", err: "pipelines entry 3 (line 15): name is required"},
		{name: "unknown key", yaml: twoPipelines + "  - name: x\n    format: avro\n    tabels: t\n",
			err: `pipelines entry 3 (line 15): unknown key "tabels" (line 17)`},
		{name: "a process key", yaml: twoPipelines + "  - name: x\n    metrics-listen: 127.0.0.1:1\n",
			err: "metrics-listen is the process's, not a pipeline's: set it at the top level"},
		{name: "nested pipelines", yaml: twoPipelines + "  - name: x\n    pipelines: []\n", err: `unknown key "pipelines"`},
		{name: "a list value", yaml: twoPipelines + "  - name: x\n    tables: [a, b]\n", err: "tables (line 16): want a single value"},
		{name: "not a mapping", yaml: twoPipelines + "  - orders\n", err: "pipelines entry 3 (line 15): want a mapping"},
		{name: "an entry invalid", yaml: "sink: kafka\nkafka-brokers: k:1\npipelines:\n  - name: a\n    format: avro\n  - name: b\n",
			err: `pipeline "b": format is required`},
		{name: "registry keys on the wrong pipeline", yaml: twoPipelines + "schema-registry-url: http://r:8081\n",
			err: `pipeline "orders": schema-registry-url goes with format avro, not debezium-json`},
		{name: "one nats stream, two prefixes", yaml: "sink: nats\nnats-url: nats://n:4222\nformat: avro\npipelines:\n  - name: a\n    topic-prefix: a.\n  - name: b\n    topic-prefix: b.\n",
			err: `pipelines "a" and "b" write into the NATS stream VSTREAM with topic-prefix "a." and "b."`},
		{name: "bad log level", yaml: twoPipelines + "log-level: loud\n", err: `log-level "loud"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "sink.yaml")
			if err := os.WriteFile(file, []byte(tc.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			c, err := loadConfig(append([]string{"--config", file}, tc.args...), env(tc.env))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %v, want an error with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tc.ok(c.pipelines) {
				for _, p := range c.pipelines {
					t.Logf("%+v", *p)
				}
				t.Fatal("pipelines not as wanted")
			}
		})
	}
}

// TestPipelinesCheckConfig: --check-config names the pipelines of a valid file, and a file
// with two pipelines of one name exits 2 saying so.
func TestPipelinesCheckConfig(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	dup := filepath.Join(dir, "dup.yaml")
	if err := os.WriteFile(good, []byte(twoPipelines), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dup, []byte(strings.Replace(twoPipelines, "name: audit", "name: orders", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		file string
		code int
		want string
	}{
		{good, 0, "configuration is valid: 2 pipelines (orders, audit)"},
		{dup, 2, `pipelines entries 1 and 2 are both named "orders"`},
	} {
		var stderr bytes.Buffer
		if code := run([]string{"--config", tc.file, "--check-config"}, env(nil), &stderr); code != tc.code || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%s: exit %d, %s; want %d with %q", tc.file, code, stderr.String(), tc.code, tc.want)
		}
	}
}

// TestPipelineFailureStopsAll: one process, two pipelines into Kafka: "good" (table pf_good,
// debezium-json) and "bad" (table pf_big, whose records may not pass 8,192 bytes). Both
// deliver; then a row too big for "bad" stops it, which stops "good" at its next
// transaction boundary, and the process exits 1 with an error naming the pipeline and the
// record. What "good" delivered is in its topic exactly once, and /metrics counted each
// pipeline under its own label.
func TestPipelineFailureStopsAll(t *testing.T) {
	addr := testserver.Serve(t, db, "sinkcmd")
	brokers := sinktest.Kafka(t, 1)
	w := sinktest.NewTableWriter(t, db, "pf_good", 12, uint64(time.Now().UnixNano()))
	if err := db.Exec("DROP TABLE IF EXISTS pf_big", "CREATE TABLE pf_big (id INT PRIMARY KEY, b LONGTEXT)"); err != nil {
		t.Fatal(err)
	}
	metrics := freeAddr(t)
	file := filepath.Join(t.TempDir(), "sink.yaml")
	yml := fmt.Sprintf(`server: %s
sink: kafka
kafka-brokers: %s
position: %s
heartbeat: 200ms
checkpoint-interval: 200ms
max-batch-bytes: "2048"
metrics-listen: %s
pipelines:
  - name: good
    tables: pf_good
    format: debezium-json
    topic-prefix: good.
  - name: bad
    tables: pf_big
    format: debezium-json
    topic-prefix: bad.
    kafka-max-record-bytes: "8192"
`, addr, strings.Join(brokers, ","), sinktest.Position(t, db, "sinkcmd"), metrics)
	if err := os.WriteFile(file, []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stderr := startSink([]string{"--config", file})
	if err := w.Run(context.Background(), 30, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := db.Exec("INSERT INTO pf_big VALUES (1, 'small')"); err != nil {
		t.Fatal(err)
	}
	readTopic(t, brokers, "bad.", 1, code, stderr)
	got := readTopic(t, brokers, "good.", w.Changes(), code, stderr)
	m := scrape(t, metrics)
	for _, want := range []string{`vstream_sink_commits_total{pipeline="good",sink="kafka"}`, `vstream_sink_commits_total{pipeline="bad",sink="kafka"}`} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if err := db.Exec(fmt.Sprintf("INSERT INTO pf_big VALUES (2, '%s')", bigText)); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-code:
		out := stderr.String()
		if c != 1 || !strings.Contains(out, `pipeline \"bad\": `) || !strings.Contains(out, "record bad/") {
			t.Fatalf("exit %d, want 1 with an error naming the pipeline and the record:\n%s", c, out)
		}
		// The other pipeline stopped as on SIGTERM, without an error of its own. (The log
		// quotes the error's quotes.)
		if !strings.Contains(out, `msg="pipeline stopped" pipeline=good`) || strings.Contains(out, `pipeline \"good\"`) {
			t.Fatalf("the good pipeline did not stop cleanly:\n%s", out)
		}
	case <-time.After(time.Minute):
		t.Fatalf("still running a minute after the big row:\n%s", stderr.String())
	}
	w.Check(t, got)
	if n := sinktest.Count(got); n != w.Changes() {
		t.Errorf("%d changes in good's topic, want %d", n, w.Changes())
	}
}

// TestDocsPipelinesExample: the pipelines file docs/sinks.md shows loads (its SASL password
// from the environment, as the page advises), each pipeline with the top level's connection
// and its own keys.
func TestDocsPipelinesExample(t *testing.T) {
	data, err := os.ReadFile("../../docs/sinks.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	sec := doc[strings.Index(doc, "## Many pipelines, one process"):]
	start := strings.Index(sec, "```yaml\n") + len("```yaml\n")
	end := start + strings.Index(sec[start:], "```")
	file := filepath.Join(t.TempDir(), "pipelines.yaml")
	if err := os.WriteFile(file, []byte(sec[start:end]), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := loadConfig([]string{"--config", file}, env(map[string]string{"VSTREAM_SINK_KAFKA_SASL_PASSWORD": "secret"}))
	if err != nil {
		t.Fatalf("docs/sinks.md's pipelines example: %v", err)
	}
	o, a := c.pipelines[0], c.pipelines[1]
	if len(c.pipelines) != 2 || o.KafkaSASLUser != "vstream-sink" || a.KafkaSASLUser != "vstream-sink" ||
		o.parsed.registry != nil || a.parsed.registry == nil || a.TopicPrefix != "audit." || o.TopicPrefix != "cdc." {
		t.Fatalf("docs/sinks.md's pipelines example loads to %+v and %+v", *o, *a)
	}
}
