package kafka_test

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vstream-cdc/vstream/client"
	"github.com/vstream-cdc/vstream/internal/sinktest"
	"github.com/vstream-cdc/vstream/internal/testkit"
	"github.com/vstream-cdc/vstream/internal/testserver"
	"github.com/vstream-cdc/vstream/sink"
	"github.com/vstream-cdc/vstream/sink/kafka"
)

// counting counts the bytes of the records Publish has taken (as the producer's buffer
// counts them: key, value, headers) and whether a Publish is waiting.
type counting struct {
	sink.Publisher
	bytes, records atomic.Int64
	waiting        atomic.Bool
}

func (c *counting) Publish(ctx context.Context, r *sink.Record) error {
	c.waiting.Store(true)
	defer c.waiting.Store(false)
	if err := c.Publisher.Publish(ctx, r); err != nil {
		return err
	}
	n := len(r.Key) + len(r.Value)
	for k, v := range r.Headers {
		n += len(k) + len(v)
	}
	c.bytes.Add(int64(n))
	c.records.Add(1)
	return nil
}

// While the broker answers no produce request, the sink holds no more record bytes than
// --kafka-max-buffered-bytes: Publish waits for room. Once the broker answers, every
// record arrives once.
func TestKafkaBufferBound(t *testing.T) {
	const bound, rows = 16 << 10, 120
	addr := testserver.Serve(t, db, "sinkkafka")
	cluster := sinktest.KafkaCluster(t, 1, nil)
	brokers := cluster.ListenAddrs()
	if err := db.Exec("DROP TABLE IF EXISTS buffered", "CREATE TABLE buffered (id INT PRIMARY KEY, v VARCHAR(1000))"); err != nil {
		t.Fatal(err)
	}
	pos, err := client.ParsePosition(sinktest.Position(t, db, "sinkkafka"), "", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Exec("INSERT INTO buffered SELECT seq, REPEAT('x', 1000) FROM " + db.Seq(120)); err != nil {
		t.Fatal(err)
	}
	// The broker holds every produce request until release is closed.
	release := make(chan struct{})
	var releaseOnce sync.Once
	open := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(open)
	var held atomic.Int64
	cluster.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		cluster.KeepControl()
		select {
		case <-release:
		default:
			held.Add(1)
			cluster.SleepControl(func() { <-release })
		}
		return nil, nil, false
	})
	pub, err := kafka.New(kafka.Options{Brokers: brokers, Name: "buffered", OffsetsTopic: "offsets", MaxBufferedBytes: bound, MaxRecordBytes: bound / 2})
	if err != nil {
		t.Fatal(err)
	}
	c := &counting{Publisher: pub}
	cl, err := client.Dial(addr, client.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cl.Close() }()
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- sink.Run(context.Background(), sink.Config{Name: "buffered", Client: cl, Publisher: c, Logger: sinktest.Logger(t), Stop: stop,
			Request: client.Request{Position: pos, Format: "debezium-json", Filter: client.ParseTables("buffered"), HeartbeatInterval: 100 * time.Millisecond},
			Topics:  sink.TopicMap{Prefix: "cdc."}})
	}()
	// The sink takes records until it can take no more, and then stays still.
	last, still := int64(-1), time.Now()
	testkit.WaitFor(t, 20*time.Second, "the sink to stop taking records", func() bool {
		if n := c.bytes.Load(); n != last {
			last, still = n, time.Now()
		}
		// Waiting in Publish that long is waiting for room; without a bound the sink takes
		// every record and then waits in its commit.
		return last > 0 && (c.waiting.Load() && time.Since(still) > 500*time.Millisecond || time.Since(still) > 3*time.Second)
	})
	if held.Load() == 0 {
		t.Fatal("no produce request reached the broker: the records were never sent")
	}
	n := c.bytes.Load()
	t.Logf("held %d record bytes in %d records, bound %d", n, c.records.Load(), bound)
	if n > bound || n < bound/2 || !c.waiting.Load() {
		t.Fatalf("the sink holds %d record bytes (%d records) that the broker has not acknowledged, Publish waiting %v; want at most %d, the buffer filled and Publish waiting for room",
			n, c.records.Load(), c.waiting.Load(), bound)
	}
	open()
	var got []sinktest.Got
	testkit.WaitFor(t, 30*time.Second, "every record", func() bool {
		got = sinktest.ReadKafka(t, brokers, `^cdc\.`, rows, 300*time.Millisecond)
		return len(got) >= rows
	})
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got = sinktest.ReadKafka(t, brokers, `^cdc\.`, rows+1, time.Second)
	keys := map[string]bool{}
	for _, g := range got {
		keys[g.Key] = true
	}
	if len(got) != rows || len(keys) != rows {
		t.Fatalf("%d records with %d keys, want %d once each", len(got), len(keys), rows)
	}
}
