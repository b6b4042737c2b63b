package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vstream-cdc/vstream/internal/cliconfig"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestConfig(t *testing.T) {
	dir := t.TempDir()
	yml := filepath.Join(dir, "sink.yaml")
	if err := os.WriteFile(yml, []byte("sink: nats\nnats-url: nats://127.0.0.1:4222\nformat: avro\ntopic-prefix: cdc.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("sink: kafka\nkafka-broker: x:1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	kafka := []string{"--sink", "kafka", "--kafka-brokers", "k1:9092, k2:9092", "--format", "debezium-json"}
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		err  string
		ok   func(*config) bool
	}{
		{name: "kafka", args: kafka, ok: func(c *config) bool {
			return len(c.parsed.brokers) == 2 && c.parsed.maxRecord == 1048588 && c.parsed.request.Position.GetShardGtids()[0].GetGtid() == "current"
		}},
		{name: "yaml, then env, then flags", args: []string{"--config", yml, "--format", "debezium-json"},
			env: map[string]string{"VSTREAM_SINK_FORMAT": "canal-json", "VSTREAM_SINK_NAME": "from-env"},
			ok: func(c *config) bool {
				return c.Sink == "nats" && c.Format == "debezium-json" && c.Name == "from-env" && c.parsed.duplicates.String() == "2m0s"
			}},
		{name: "config file from env", env: map[string]string{"VSTREAM_SINK_CONFIG": yml}, ok: func(c *config) bool { return c.Format == "avro" }},
		{name: "unknown yaml key", args: []string{"--config", bad}, err: "field kafka-broker not found"},
		{name: "no sink", args: []string{"--format", "avro"}, err: `sink "": want kafka or nats`},
		{name: "no format", args: []string{"--sink", "kafka", "--kafka-brokers", "k:1"}, err: "format is required"},
		{name: "vevent", args: append(kafka, "--format", "vevent"), err: "format is required"},
		{name: "no brokers", args: []string{"--sink", "kafka", "--format", "avro"}, err: "kafka-brokers is required"},
		{name: "bad broker", args: []string{"--sink", "kafka", "--format", "avro", "--kafka-brokers", "nohost"}, err: "kafka-brokers \"nohost\""},
		{name: "nats needs a prefix", args: []string{"--sink", "nats", "--format", "avro", "--nats-url", "nats://x:1"}, err: "subject prefix ending in a dot"},
		{name: "copy", args: append(kafka, "--position", "copy", "--copy-chunk-rows", "500"), ok: func(c *config) bool {
			sg := c.parsed.request.Position.GetShardGtids()[0]
			return sg.GetGtid() == "" && c.parsed.request.CopyChunkRows == 500
		}},
		{name: "when needed", args: append(kafka, "--on-purged", "when_needed"), ok: func(c *config) bool {
			return c.parsed.request.WhenPurged == "when_needed"
		}},
		{name: "bad on-purged", args: append(kafka, "--on-purged", "resnapshot"), err: `on-purged "resnapshot": want fail or when_needed`},
		{name: "bad copy chunk", args: append(kafka, "--position", "copy", "--copy-chunk-rows", "0"), err: "copy-chunk-rows"},
		{name: "gtid position", args: append(kafka, "--position", "MariaDB/0-1-5", "--keyspace", "ks"), ok: func(c *config) bool {
			sg := c.parsed.request.Position.GetShardGtids()[0]
			return sg.GetGtid() == "MariaDB/0-1-5" && sg.GetKeyspace() == "ks"
		}},
		{name: "format options", args: append(kafka, "--format-options", "topic.prefix=app, tombstones.on.delete=false"), ok: func(c *config) bool {
			o := c.parsed.request.FormatOptions
			return o["topic.prefix"] == "app" && o["tombstones.on.delete"] == "false"
		}},
		{name: "bad format options", args: append(kafka, "--format-options", "novalue"), err: "want name=value"},
		{name: "topic map", args: append(kafka, "--topic-map", "a=b,c=d", "--topic-prefix", "p."), ok: func(c *config) bool {
			to, _ := c.parsed.topics.Map("a")
			other, _ := c.parsed.topics.Map("x")
			return to == "b" && other == "p.x"
		}},
		{name: "bad topic map", args: append(kafka, "--topic-map", "a"), err: "want from=to"},
		// Routes: the first that matches a table wins, after the prefix; a record of no route
		// or no table goes by the topic map and prefix.
		{name: "topic routes", args: append(kafka, "--topic-prefix", "p.", "--topic-routes", "shop.orders=orders; shop.*={schema}_{table} ;*.*=all.{topic}",
			"--partition-by", "shop.orders=table;*.*=key"), ok: func(c *config) bool {
			tm := c.parsed.topics
			a, _ := tm.Route("srv.shop.orders", "shop", "orders")
			b, _ := tm.Route("srv.shop.items", "shop", "items")
			d, _ := tm.Route("srv.crm.users", "crm", "users")
			e, _ := tm.Route("srv", "", "")
			return a == "p.orders" && b == "p.shop_items" && d == "p.all.srv.crm.users" && e == "p.srv" &&
				string(tm.PartitionKey("shop", "orders")) == "shop.orders" && tm.PartitionKey("shop", "items") == nil
		}},
		{name: "route without topic", args: append(kafka, "--topic-routes", "shop.orders"), err: `route "shop.orders": want SCHEMA.TABLE=TOPIC`},
		{name: "route empty topic", args: append(kafka, "--topic-routes", "shop.orders="), err: "the topic is empty"},
		{name: "route no table", args: append(kafka, "--topic-routes", "orders=x"), err: `matcher "orders": want SCHEMA.TABLE`},
		{name: "route bad glob", args: append(kafka, "--topic-routes", "shop.[x=x"), err: "syntax error in pattern"},
		{name: "route placeholder", args: append(kafka, "--topic-routes", "shop.*={db}.{table}"), err: "unknown placeholder; want {schema}, {table} or {topic}"},
		{name: "route topic of canal", args: []string{"--sink", "kafka", "--kafka-brokers", "k:1", "--format", "canal-json", "--topic-routes", "*.*={topic}"},
			err: "format canal-json names no topic: use {schema} and {table}"},
		{name: "partition by column", args: append(kafka, "--partition-by", "shop.orders=id"), err: `partition by "id": want key (the record's key) or table`},
		{name: "partition on nats", args: []string{"--config", yml, "--partition-by", "*.*=table"}, err: "NATS has no partitions"},
		{name: "routes on nats", args: []string{"--config", yml, "--topic-routes", "*.*=t.{table}"}, ok: func(c *config) bool {
			to, _ := c.parsed.topics.Route("", "shop", "orders")
			return to == "cdc.t.orders"
		}},
		{name: "tables and filter", args: append(kafka, "--tables", "t", "--filter", `{"rules":[{"match":"t"}]}`), err: "give one of them"},
		{name: "filter", args: append(kafka, "--filter", `{"rules":[{"match":"t","filter":"select id from t"}]}`), ok: func(c *config) bool {
			return c.parsed.request.Filter.GetRules()[0].GetFilter() == "select id from t"
		}},
		{name: "bad duration", args: append(kafka, "--drain-timeout", "0s"), err: "drain-timeout"},
		{name: "bad number", args: append(kafka, "--kafka-max-record-bytes", "-1"), err: "kafka-max-record-bytes"},
		{name: "stray argument", args: append(kafka, "extra"), err: `unexpected argument "extra"`},
		{name: "check", args: append(kafka, "--check-config"), ok: func(c *config) bool { return c.checkOnly }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := loadConfig(tc.args, env(tc.env))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %v, want an error with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tc.ok(c) {
				t.Fatalf("loaded %+v", c)
			}
		})
	}
}

func TestRunCheckAndHelp(t *testing.T) {
	var stderr bytes.Buffer
	if code := run([]string{"--sink", "kafka", "--kafka-brokers", "k:9092", "--format", "avro", "--check-config"}, env(nil), &stderr); code != 0 ||
		!strings.Contains(stderr.String(), "configuration is valid") {
		t.Fatalf("check: exit %d, %s", code, stderr.String())
	}
	stderr.Reset()
	if code := run([]string{"--sink", "kafka", "--kafka-brokers", "k:9092", "--format", "avro", "--kafka-max-buffered-bytes", "1000", "--check-config"}, env(nil), &stderr); code != 2 ||
		!strings.Contains(stderr.String(), "the buffer must hold the largest record") {
		t.Fatalf("check with a buffer smaller than a record: exit %d, %s", code, stderr.String())
	}
	stderr.Reset()
	if code := run([]string{"-h"}, env(nil), &stderr); code != 0 || !strings.Contains(stderr.String(), "-kafka-brokers") {
		t.Fatalf("help: exit %d, %s", code, stderr.String())
	}
	stderr.Reset()
	if code := run([]string{"--sink", "nope", "--format", "avro"}, env(nil), &stderr); code != 2 || !strings.Contains(stderr.String(), "want kafka or nats") {
		t.Fatalf("bad config: exit %d, %s", code, stderr.String())
	}
}

// TestDeployExampleConfig: deploy/vstream-sink.yaml loads and checks, and names every key
// vstream-sink accepts, set or commented out.
func TestDeployExampleConfig(t *testing.T) {
	file := filepath.Join("..", "..", "deploy", "vstream-sink.yaml")
	if _, err := loadConfig([]string{"--config", file}, env(nil)); err != nil {
		t.Fatalf("load %s: %v", file, err)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := cliconfig.ExampleKeys(data, &config{})
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	for _, d := range flagDefs {
		if !keys[d.Name] {
			t.Errorf("%s does not show the key %s (%s)", file, d.Name, d.Usage)
		}
	}
	if len(keys) != len(flagDefs) {
		t.Errorf("%s has %d keys, vstream-sink accepts %d", file, len(keys), len(flagDefs))
	}
	// The commented example of pipelines loads too, uncommented, over the keys above it.
	var lines []string
	in := false
	for l := range strings.Lines(string(data)) {
		if strings.HasPrefix(l, "# pipelines:") {
			in = true
		} else if in && !strings.HasPrefix(l, "#   ") {
			in = false
		}
		if in {
			l = strings.TrimPrefix(l, "# ")
		}
		lines = append(lines, l)
	}
	uncommented := filepath.Join(t.TempDir(), "pipelines.yaml")
	if err := os.WriteFile(uncommented, []byte(strings.Join(lines, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := loadConfig([]string{"--config", uncommented}, env(nil))
	if err != nil {
		t.Fatalf("%s with its pipelines uncommented: %v", file, err)
	}
	if names := pipelineNames(c.pipelines); len(names) != 2 || c.pipelines[1].Format != "canal-json" {
		t.Fatalf("%s: pipelines %q, want two, the second canal-json", file, names)
	}
}
