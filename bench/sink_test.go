package bench

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vstream-cdc/vstream/client"
	"github.com/vstream-cdc/vstream/gen/binlogdata"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/internal/sinktest"
	"github.com/vstream-cdc/vstream/internal/testdb"
	"github.com/vstream-cdc/vstream/internal/testserver"
	"github.com/vstream-cdc/vstream/sink"
	"github.com/vstream-cdc/vstream/sink/kafka"
	"github.com/vstream-cdc/vstream/sink/nats"
)

// The sink benchmark's binlog: sinkRows rows of the orders table's shape, 100 per transaction,
// in a MariaDB of its own.
const sinkRows = 20000

var (
	sinkOnce     sync.Once
	sinkDB       *testdb.Server
	sinkStart    string
	sinkSetupErr error
)

func setupSink(b *testing.B) {
	sinkOnce.Do(func() {
		if sinkDB, sinkSetupErr = testdb.Start(testdb.Options{Database: "sinkbench"}); sinkSetupErr != nil {
			return
		}
		if sinkSetupErr = sinkDB.Exec(`CREATE TABLE orders (
			id BIGINT PRIMARY KEY, customer VARCHAR(64), amount DECIMAL(12,2), qty INT, price DOUBLE,
			status ENUM('new','paid','shipped'), created DATETIME(3), note VARCHAR(255))`); sinkSetupErr != nil {
			return
		}
		sinkStart = sinktest.Position(b, sinkDB, "sinkbench")
		for i := 0; i < sinkRows && sinkSetupErr == nil; i += txnRows {
			sinkSetupErr = sinkDB.Exec(fmt.Sprintf(`INSERT INTO orders SELECT seq, CONCAT('customer-', seq), seq * 1.25, seq %% 17,
				seq / 3.0, ELT(1 + seq %% 3, 'new', 'paid', 'shipped'), '2024-01-02 03:04:05.678',
				'a note of modest length for each order' FROM %s`, seqRange(sinkDB, i+1, i+txnRows)))
		}
	})
	if sinkSetupErr != nil {
		b.Fatal(sinkSetupErr)
	}
}

func closeSink() {
	if sinkDB != nil {
		sinkDB.Close()
	}
}

// counting counts the records of committed transactions and stops the sink once all rows are
// in.
type counting struct {
	sink.Publisher
	open      int
	committed atomic.Int64
	stop      chan struct{}
}

func (c *counting) Publish(ctx context.Context, r *sink.Record) error {
	c.open++
	return c.Publisher.Publish(ctx, r)
}

func (c *counting) Commit(ctx context.Context, pos *binlogdata.VGtid) error {
	if err := c.Publisher.Commit(ctx, pos); err != nil {
		return err
	}
	if c.committed.Add(int64(c.open)) >= sinkRows {
		select {
		case <-c.stop:
		default:
			close(c.stop)
		}
	}
	c.open = 0
	return nil
}

// BenchmarkSink streams the same binlog (20,000 rows, debezium-json) in each iteration three
// ways: to a client that only counts the messages (the anchor: the stream's own rate), and
// through vstream-sink's Run into Kafka (franz-go's in-process kfake cluster, transactions on)
// and into NATS JetStream (a nats-server process, skipped when it is not installed). It
// reports records/s of each and their ratio to the anchor. With -bench.cpuprofile each of the
// three profiles the benchmark process (server, sink and, for Kafka, the broker).
func BenchmarkSink(b *testing.B) {
	setupSink(b)
	addr := testserver.Serve(b, sinkDB, "sinkbench")
	pos, err := client.ParsePosition(sinkStart, "", "")
	if err != nil {
		b.Fatal(err)
	}
	req := client.Request{Position: pos, Format: "debezium-json", Filter: client.ParseTables("orders"), HeartbeatInterval: time.Second}
	// One untimed pass: the first stream of a server pays for loading the schema and the
	// binlog into caches.
	streamOnly(b, addr, req)
	rates := map[string]float64{}
	b.Run("stream", func(b *testing.B) {
		defer profilePhase(b, "sink-stream")()
		var elapsed time.Duration
		for range b.N {
			elapsed += streamOnly(b, addr, req)
		}
		rates["stream"] = float64(sinkRows*b.N) / elapsed.Seconds()
		b.ReportMetric(rates["stream"], "records/s")
	})
	brokers := sinktest.Kafka(b, 3)
	b.Run("kafka", func(b *testing.B) {
		defer profilePhase(b, "sink-kafka")()
		var elapsed time.Duration
		for i := range b.N {
			pub, err := kafka.New(kafka.Options{Brokers: brokers, Name: fmt.Sprintf("bench-%d-%d", b.N, i), OffsetsTopic: "offsets"})
			if err != nil {
				b.Fatal(err)
			}
			elapsed += throughSink(b, addr, req, pub, fmt.Sprintf("k%d-%d.", b.N, i))
		}
		rates["kafka"] = float64(sinkRows*b.N) / elapsed.Seconds()
		b.ReportMetric(rates["kafka"], "records/s")
	})
	b.Run("nats", func(b *testing.B) {
		srv := sinktest.StartNATS(b)
		defer profilePhase(b, "sink-nats")()
		var elapsed time.Duration
		for i := range b.N {
			prefix := fmt.Sprintf("n%d-%d.", b.N, i)
			pub, err := nats.New(nats.Options{URL: srv.URL(), Name: prefix, Stream: fmt.Sprintf("N%d-%d", b.N, i), SubjectPrefix: prefix, Bucket: "bench"})
			if err != nil {
				b.Fatal(err)
			}
			elapsed += throughSink(b, addr, req, pub, prefix)
		}
		rates["nats"] = float64(sinkRows*b.N) / elapsed.Seconds()
		b.ReportMetric(rates["nats"], "records/s")
	})
	if s := rates["stream"]; s > 0 {
		fmt.Printf("sink: stream %.0f records/s, kafka %.0f (%.2f), nats %.0f (%.2f)\n",
			s, rates["kafka"], rates["kafka"]/s, rates["nats"], rates["nats"]/s)
	}
}

// streamOnly counts the messages of the stream until every row came.
func streamOnly(b *testing.B, addr string, req client.Request) time.Duration {
	cl, err := client.Dial(addr, client.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cl.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	n := 0
	req.OnMessages = func(_ context.Context, msgs []*vstreamv1.EncodedMessage) error {
		if n += len(msgs); n >= sinkRows {
			cancel()
		}
		return nil
	}
	start := time.Now()
	err = cl.Stream(ctx, req, func(context.Context, []*binlogdata.VEvent) error { return nil })
	d := time.Since(start)
	if n < sinkRows {
		b.Fatalf("stream ended after %d of %d rows: %v", n, sinkRows, err)
	}
	return d
}

// throughSink runs the sink until every row is committed in the broker.
func throughSink(b *testing.B, addr string, req client.Request, pub sink.Publisher, prefix string) time.Duration {
	cl, err := client.Dial(addr, client.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cl.Close() }()
	c := &counting{Publisher: pub, stop: make(chan struct{})}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	err = sink.Run(ctx, sink.Config{Name: prefix, Client: cl, Publisher: c, Request: req, Stop: c.stop,
		Topics: sink.TopicMap{Prefix: prefix}, Logger: slog.New(slog.DiscardHandler)})
	d := time.Since(start)
	if err != nil || c.committed.Load() < sinkRows {
		b.Fatalf("sink: %v after %d of %d records", err, c.committed.Load(), sinkRows)
	}
	return d
}
