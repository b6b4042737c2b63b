package kafka_test

import (
	"context"
	"encoding/binary"
	"slices"
	"testing"
	"time"

	hamba "github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/vstream-cdc/vstream/internal/sinktest"
	"github.com/vstream-cdc/vstream/server/encoder/avro"
	"github.com/vstream-cdc/vstream/sink"
	"github.com/vstream-cdc/vstream/sink/registry"
)

// TestKafkaRegistryExactlyOnce: avro through a schema registry (srfake) with every fourth
// commit failing, so that the sink resumes on new streams whose schema ids start again at 1:
// every change once and in order per key, no schema message in Kafka, and every key and value
// decodes (hamba/avro) with the schema the registry holds under the id in its frame.
func TestKafkaRegistryExactlyOnce(t *testing.T) {
	fake := srfake.New()
	t.Cleanup(fake.Close)
	brokers := sinktest.Kafka(t, 3)
	b := broker(brokers)
	b.Schemas = func(t testing.TB) sink.Schemas {
		r, err := registry.New(registry.Options{URLs: []string{fake.URL()}, Logger: sinktest.Logger(t)})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	sinktest.ExactlyOnce(t, db, "sinkkafka", b, "avro", nil, 4)

	cl, err := sr.NewClient(sr.URLs(fake.URL()))
	if err != nil {
		t.Fatal(err)
	}
	schemas := map[int]hamba.Schema{}
	decode := func(topic string, b []byte) map[string]any {
		t.Helper()
		if len(b) < 5 || b[0] != 0 {
			t.Fatalf("%s: not a Confluent frame: %x", topic, b)
		}
		id := int(binary.BigEndian.Uint32(b[1:5]))
		s := schemas[id]
		if s == nil {
			rs, err := cl.SchemaByID(context.Background(), id)
			if err != nil {
				t.Fatalf("%s: schema id %d: %v", topic, id, err)
			}
			if s, err = hamba.ParseWithCache(rs.Schema, "", &hamba.SchemaCache{}); err != nil {
				t.Fatal(err)
			}
			schemas[id] = s
		}
		var v map[string]any
		if err := hamba.Unmarshal(s, b[5:], &v); err != nil {
			t.Fatalf("%s: decode with schema %d: %v", topic, id, err)
		}
		return v
	}
	got := sinktest.ReadKafka(t, brokers, `^cdc\.`, 1<<20, time.Second)
	values := 0
	for _, g := range got {
		if g.Headers[avro.HeaderMessage] != "" {
			t.Fatalf("a schema message reached Kafka: %v", g.Headers)
		}
		if g.Key != "" {
			decode(g.Topic, []byte(g.Key))
		}
		if g.Tombstone {
			continue
		}
		v := decode(g.Topic, g.Value)
		if _, ok := v["source"]; ok {
			values++
		}
	}
	if values == 0 || len(schemas) == 0 {
		t.Fatalf("%d records, %d change values, %d schemas", len(got), values, len(schemas))
	}
}

// TestKafkaRegistryRouted: avro through a schema registry with the table routed to a topic of
// its own: the subjects follow the topic the records go to (TopicNameStrategy), so the
// registry holds <route's topic>-key and -value and nothing under the format's own topic, and
// every change still arrives once and in order per key with commits that fail.
func TestKafkaRegistryRouted(t *testing.T) {
	fake := srfake.New()
	t.Cleanup(fake.Close)
	b := brokerWith(sinktest.Kafka(t, 3), true)
	b.Schemas = func(t testing.TB) sink.Schemas {
		r, err := registry.New(registry.Options{URLs: []string{fake.URL()}, Logger: sinktest.Logger(t)})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	routes, err := sink.ParseRoutes("*.t=routed-{table}")
	if err != nil {
		t.Fatal(err)
	}
	parts, err := sink.ParsePartitions("*.*=table")
	if err != nil {
		t.Fatal(err)
	}
	sinktest.RoutedExactlyOnce(t, db, "sinkkafka", b, "avro", 4, sinktest.Routing{
		Topics: sink.TopicMap{Prefix: "cdc.", Default: "changes", Routes: routes, Partitions: parts}, Topic: "cdc.routed-t"})
	cl, err := sr.NewClient(sr.URLs(fake.URL()))
	if err != nil {
		t.Fatal(err)
	}
	subjects, err := cl.Subjects(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(subjects)
	if !slices.Equal(subjects, []string{"cdc.routed-t-key", "cdc.routed-t-value"}) {
		t.Errorf("subjects %v, want the routed topic's key and value", subjects)
	}
}
