package kafka_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/vstream-cdc/vstream/client"
	"github.com/vstream-cdc/vstream/internal/sinktest"
	"github.com/vstream-cdc/vstream/internal/testdb"
	"github.com/vstream-cdc/vstream/internal/testkit"
	"github.com/vstream-cdc/vstream/internal/testserver"
	"github.com/vstream-cdc/vstream/sink"
	"github.com/vstream-cdc/vstream/sink/kafka"
)

var db *testdb.Server

func TestMain(m *testing.M) {
	os.Exit(testdb.RunTests(m, testdb.Options{Database: "sinkkafka"}, &db))
}

func broker(brokers []string) sinktest.Broker { return brokerWith(brokers, false) }

// brokerWith makes publishers that partition by partition keys (kafka.Options.PartitionKeys).
func brokerWith(brokers []string, partitionKeys bool) sinktest.Broker {
	return sinktest.Broker{
		New: func(t testing.TB, name string) sink.Publisher {
			p, err := kafka.New(kafka.Options{Brokers: brokers, Name: name, OffsetsTopic: "offsets", PartitionKeys: partitionKeys})
			if err != nil {
				t.Fatal(err)
			}
			return p
		},
		Read: func(t testing.TB, want int, quiet time.Duration) []sinktest.Got {
			return sinktest.ReadKafka(t, brokers, `^cdc\.`, want, quiet)
		},
	}
}

// Every change once, in order per key, in each format; with commits that fail (before and
// after they reach the broker) the sink resumes from the position it committed.
func TestKafkaExactlyOnce(t *testing.T) {
	for _, tc := range []struct {
		format    string
		failEvery int
	}{
		{"debezium-json", 0},
		{"debezium-json", 3},
		{"canal-json", 3},
		{"avro", 4},
	} {
		t.Run(fmt.Sprintf("%s/fail-every-%d", tc.format, tc.failEvery), func(t *testing.T) {
			sinktest.ExactlyOnce(t, db, "sinkkafka", broker(sinktest.Kafka(t, 3)), tc.format, nil, tc.failEvery)
		})
	}
}

// Routed by table (a topic route, with and without a partition rule by table) into a topic
// of three partitions, every change still arrives once, in order per key, in the route's
// topic, with commits that fail; by table, all of them in one partition (Check: one key's
// records in one partition).
func TestKafkaRoutedExactlyOnce(t *testing.T) {
	for _, tc := range []struct {
		format, partition string
		failEvery         int
	}{
		{"debezium-json", "", 3},
		{"debezium-json", "sinkkafka.t=table", 3},
		{"canal-json", "*.*=table", 4},
		{"avro", "*.t=key", 4},
	} {
		t.Run(tc.format+"/"+tc.partition, func(t *testing.T) {
			routes, err := sink.ParseRoutes("other.t=wrong;sinkkafka.t=routed.{schema}.{table}")
			if err != nil {
				t.Fatal(err)
			}
			parts, err := sink.ParsePartitions(tc.partition)
			if err != nil {
				t.Fatal(err)
			}
			brokers := sinktest.Kafka(t, 3)
			sinktest.RoutedExactlyOnce(t, db, "sinkkafka", brokerWith(brokers, len(parts) > 0), tc.format, tc.failEvery, sinktest.Routing{
				Topics: sink.TopicMap{Prefix: "cdc.", Default: "changes", Routes: routes, Partitions: parts},
				Topic:  "cdc.routed.sinkkafka.t"})
			got := sinktest.ReadKafka(t, brokers, `^cdc\.`, 10000, time.Second)
			orders := map[string]bool{}
			for _, g := range got {
				orders[g.Order] = true
			}
			// By key, twelve keys spread over the three partitions; by table, one holds all.
			if byTable := strings.HasSuffix(tc.partition, "=table"); byTable != (len(orders) == 1) {
				t.Errorf("partition rule %q: the records are in %d partitions: %v", tc.partition, len(orders), orders)
			}
		})
	}
}

// A sink that starts with a snapshot (position copy) of a 3,000-row table under a writer,
// committed chunk by chunk, with commits that fail: the topics hold every row once (each
// key's state at its chunk's snapshot), then every change after it, once and in order.
func TestKafkaSnapshotExactlyOnce(t *testing.T) {
	for _, tc := range []struct {
		format    string
		failEvery int
	}{
		{"debezium-json", 0},
		{"debezium-json", 3},
		{"canal-json", 4},
	} {
		t.Run(fmt.Sprintf("%s/fail-every-%d", tc.format, tc.failEvery), func(t *testing.T) {
			sinktest.SnapshotExactlyOnce(t, db, "sinkkafka", broker(sinktest.Kafka(t, 3)), tc.format, nil, tc.failEvery, 3000)
		})
	}
}

// A commit the broker refuses (its transaction left open) is retried: the next producer
// fences the open transaction and the sink resumes from its last committed position, so
// every change still arrives once.
func TestKafkaCommitRefused(t *testing.T) {
	cluster := sinktest.KafkaCluster(t, 3, nil)
	var commits, refused atomic.Int64
	cluster.ControlKey(int16(kmsg.EndTxn), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		cluster.KeepControl()
		req := kreq.(*kmsg.EndTxnRequest)
		if !req.Commit || refused.Load() >= 2 || commits.Add(1)%4 != 0 {
			return nil, nil, false
		}
		refused.Add(1)
		resp := req.ResponseKind().(*kmsg.EndTxnResponse)
		resp.Version = req.GetVersion()
		resp.ErrorCode = kerr.InvalidTxnState.Code
		return resp, nil, true
	})
	b := broker(cluster.ListenAddrs())
	b.Faulty = true
	sinktest.ExactlyOnce(t, db, "sinkkafka", b, "debezium-json", nil, 0)
	if refused.Load() == 0 {
		t.Fatal("the broker refused no commit: the test did not test retrying")
	}
}

// A record larger than the broker takes stops the sink with an error naming it: caught by
// the sink's own limit, or refused by a broker whose message.max.bytes is lower.
func TestKafkaRecordTooLarge(t *testing.T) {
	for _, tc := range []struct {
		name     string
		maxBytes int
		broker   map[string]string
		err      string
	}{
		{"sink limit", 4096, nil, "more than the 4096 a broker takes"},
		// The row is hex text: compressed, the batch is still larger than the broker takes.
		{"broker limit", 0, map[string]string{"message.max.bytes": "4096"}, "MESSAGE_TOO_LARGE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recordTooLarge(t, tc.maxBytes, tc.broker, tc.err)
		})
	}
}

func recordTooLarge(t *testing.T, maxBytes int, broker map[string]string, want string) {
	addr := testserver.Serve(t, db, "sinkkafka")
	brokers := sinktest.KafkaWith(t, 1, broker)
	if err := db.Exec("DROP TABLE IF EXISTS big", "CREATE TABLE big (id INT PRIMARY KEY, b TEXT)"); err != nil {
		t.Fatal(err)
	}
	pos, err := client.ParsePosition(sinktest.Position(t, db, "sinkkafka"), "", "")
	if err != nil {
		t.Fatal(err)
	}
	pub, err := kafka.New(kafka.Options{Brokers: brokers, Name: "big", OffsetsTopic: "offsets", MaxRecordBytes: maxBytes})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.Dial(addr, client.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- sink.Run(ctx, sink.Config{Name: "big", Client: cl, Publisher: pub, Logger: sinktest.Logger(t),
			Request: client.Request{Position: pos, Format: "debezium-json", Filter: client.ParseTables("big")},
			Topics:  sink.TopicMap{Prefix: "cdc."}})
	}()
	if err := db.Exec("INSERT INTO big VALUES (1, 'small')"); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 20*time.Second, "the small record", func() bool {
		return len(sinktest.ReadKafka(t, brokers, `^cdc\.`, 1, 300*time.Millisecond)) == 1
	})
	// 19,200 bytes of hex digits. MySQL cuts GROUP_CONCAT at 1024 bytes by default (MariaDB
	// at 1 MiB), and MySQL 9 has no MD5.
	if err := db.Exec("SET SESSION group_concat_max_len = 1048576",
		"INSERT INTO big SELECT 2, GROUP_CONCAT(SHA2(seq, 256) SEPARATOR '') FROM "+db.Seq(300)); err != nil {
		t.Fatal(err)
	}
	err = <-done
	if !sink.IsPermanent(err) || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want the record-too-large error", err)
	}
	// The sink stopped instead of skipping the large record: nothing after the small one.
	got := sinktest.ReadKafka(t, brokers, `^cdc\.`, 2, time.Second)
	if len(got) != 1 || !strings.Contains(string(got[0].Value), "small") {
		t.Fatalf("records after the error: %d, want the small one alone", len(got))
	}
}

// Records carry the message's topic (renamed by the topic map), key, value and headers; a
// delete's tombstone is a record with a null value; the offsets topic holds the position.
func TestKafkaRecordShape(t *testing.T) {
	addr := testserver.Serve(t, db, "sinkkafka")
	brokers := sinktest.Kafka(t, 1)
	if err := db.Exec("DROP TABLE IF EXISTS shape", "CREATE TABLE shape (id INT PRIMARY KEY, v VARCHAR(10))"); err != nil {
		t.Fatal(err)
	}
	pos, err := client.ParsePosition(sinktest.Position(t, db, "sinkkafka"), "", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Exec("INSERT INTO shape VALUES (1, 'a')", "DELETE FROM shape WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		format string
		want   []string
	}{
		// Debezium: the row's key; a delete, then its tombstone.
		{"debezium-json", []string{"key=true tombstone=false header=", "key=true tombstone=false header=", "key=true tombstone=true header="}},
		// StreamSets: the operation in a header.
		{"streamsets", []string{"key=false tombstone=false header=1", "key=false tombstone=false header=2"}},
	} {
		t.Run(tc.format, func(t *testing.T) {
			pub, err := kafka.New(kafka.Options{Brokers: brokers, Name: tc.format, OffsetsTopic: "offsets"})
			if err != nil {
				t.Fatal(err)
			}
			cl, err := client.Dial(addr, client.Options{Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cl.Close() }()
			stop := make(chan struct{})
			done := make(chan error, 1)
			go func() {
				done <- sink.Run(context.Background(), sink.Config{Name: tc.format, Client: cl, Publisher: pub, Logger: sinktest.Logger(t), Stop: stop,
					Request: client.Request{Position: pos, Format: tc.format, Filter: client.ParseTables("shape"), HeartbeatInterval: 100 * time.Millisecond},
					Topics:  sink.TopicMap{Names: map[string]string{"sinkkafka.sinkkafka.shape": "shape-" + tc.format}, Default: "shape-" + tc.format}})
			}()
			topic := "^shape-" + tc.format + "$"
			testkit.WaitFor(t, 20*time.Second, "the records", func() bool {
				return len(sinktest.ReadKafka(t, brokers, topic, len(tc.want), 300*time.Millisecond)) >= len(tc.want)
			})
			close(stop)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			var shape []string
			for _, g := range sinktest.ReadKafka(t, brokers, topic, len(tc.want)+1, time.Second) {
				shape = append(shape, fmt.Sprintf("key=%v tombstone=%v header=%s", strings.Contains(g.Key, `"id":1`), g.Tombstone, g.Headers["sdc.operation.type"]))
			}
			if strings.Join(shape, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("records:\n%s\nwant:\n%s", strings.Join(shape, "\n"), strings.Join(tc.want, "\n"))
			}
			var last sinktest.Got
			for _, g := range sinktest.ReadKafka(t, brokers, `^offsets$`, 1000, time.Second) {
				if g.Key == tc.format {
					last = g
				}
			}
			saved, err := sink.UnmarshalPosition(last.Value)
			if err != nil {
				t.Fatalf("offsets record %q=%q: %v", last.Key, last.Value, err)
			}
			if want := sinktest.Position(t, db, "sinkkafka"); saved.GetShardGtids()[0].GetGtid() != want {
				t.Errorf("committed position %s, want %s", sink.PositionText(saved), want)
			}
		})
	}
}

// A request the server refuses (an unknown format option) stops the sink with the server's
// error instead of retrying it.
func TestKafkaRefusedRequest(t *testing.T) {
	addr := testserver.Serve(t, db, "sinkkafka")
	pub, err := kafka.New(kafka.Options{Brokers: sinktest.Kafka(t, 1), Name: "refused", OffsetsTopic: "offsets"})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.Dial(addr, client.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cl.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = sink.Run(ctx, sink.Config{Name: "refused", Client: cl, Publisher: pub, Logger: sinktest.Logger(t),
		Request: client.Request{Format: "debezium-json", FormatOptions: map[string]string{"no.such.option": "1"}}})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "no.such.option") {
		t.Fatalf("got %v, want the server's InvalidArgument", err)
	}
}

// gate blocks the first Publish until its context ends, as a broker that stopped answering.
type gate struct {
	sink.Publisher
	entered chan struct{}
	once    sync.Once
}

func (g *gate) Publish(ctx context.Context, r *sink.Record) error {
	g.once.Do(func() { close(g.entered) })
	<-ctx.Done()
	return ctx.Err()
}

// A stop that finds a transaction open and no boundary within the drain timeout ends the
// sink without committing any of it; the next start delivers the whole transaction once.
func TestKafkaDrainTimeout(t *testing.T) {
	addr := testserver.Serve(t, db, "sinkkafka")
	brokers := sinktest.Kafka(t, 1)
	if err := db.Exec("DROP TABLE IF EXISTS drain", "CREATE TABLE drain (id INT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	pos, err := client.ParsePosition(sinktest.Position(t, db, "sinkkafka"), "", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Exec("INSERT INTO drain SELECT seq FROM " + db.Seq(300)); err != nil {
		t.Fatal(err)
	}
	run := func(pub sink.Publisher, stop chan struct{}) chan error {
		cl, err := client.Dial(addr, client.Options{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cl.Close() })
		done := make(chan error, 1)
		go func() {
			done <- sink.Run(context.Background(), sink.Config{Name: "drain", Client: cl, Publisher: pub, Logger: sinktest.Logger(t),
				Stop: stop, DrainTimeout: 300 * time.Millisecond,
				Request: client.Request{Position: pos, Format: "debezium-json", Filter: client.ParseTables("drain"),
					HeartbeatInterval: 100 * time.Millisecond, MaxBatchBytes: 4096},
				Topics: sink.TopicMap{Prefix: "cdc."}})
		}()
		return done
	}
	newPub := func() sink.Publisher {
		p, err := kafka.New(kafka.Options{Brokers: brokers, Name: "drain", OffsetsTopic: "offsets"})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	g := &gate{Publisher: newPub(), entered: make(chan struct{})}
	stop := make(chan struct{})
	done := run(g, stop)
	<-g.entered
	close(stop)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("stop after the drain timeout: %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the sink did not stop after its drain timeout")
	}
	if got := sinktest.ReadKafka(t, brokers, `^cdc\.`, 1, time.Second); len(got) != 0 {
		t.Fatalf("%d records of the dropped transaction are visible", len(got))
	}
	stop = make(chan struct{})
	done = run(newPub(), stop)
	var got []sinktest.Got
	testkit.WaitFor(t, 20*time.Second, "the transaction", func() bool {
		got = sinktest.ReadKafka(t, brokers, `^cdc\.`, 300, 300*time.Millisecond)
		return len(got) >= 300
	})
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got = sinktest.ReadKafka(t, brokers, `^cdc\.`, 301, time.Second)
	keys := map[string]bool{}
	for _, g := range got {
		keys[g.Key] = true
	}
	if len(got) != 300 || len(keys) != 300 {
		t.Fatalf("%d records with %d keys, want 300 once each", len(got), len(keys))
	}
}

// slow takes a millisecond over each Publish and says when the first came, so that a stop
// finds a transaction open.
type slow struct {
	sink.Publisher
	entered chan struct{}
	once    sync.Once
}

func (s *slow) Publish(ctx context.Context, r *sink.Record) error {
	s.once.Do(func() { close(s.entered) })
	time.Sleep(time.Millisecond)
	return s.Publisher.Publish(ctx, r)
}

// A stop (SIGTERM) that finds a transaction open waits for its end, commits it and returns
// nil: the broker holds the whole transaction and the position after it, with no restart.
func TestKafkaStopCommitsOpenTransaction(t *testing.T) {
	addr := testserver.Serve(t, db, "sinkkafka")
	brokers := sinktest.Kafka(t, 1)
	if err := db.Exec("DROP TABLE IF EXISTS graceful", "CREATE TABLE graceful (id INT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	pos, err := client.ParsePosition(sinktest.Position(t, db, "sinkkafka"), "", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Exec("INSERT INTO graceful SELECT seq FROM " + db.Seq(300)); err != nil {
		t.Fatal(err)
	}
	end := sinktest.Position(t, db, "sinkkafka")
	pub, err := kafka.New(kafka.Options{Brokers: brokers, Name: "graceful", OffsetsTopic: "offsets"})
	if err != nil {
		t.Fatal(err)
	}
	s := &slow{Publisher: pub, entered: make(chan struct{})}
	cl, err := client.Dial(addr, client.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cl.Close() }()
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- sink.Run(context.Background(), sink.Config{Name: "graceful", Client: cl, Publisher: s, Logger: sinktest.Logger(t),
			Stop: stop, DrainTimeout: 20 * time.Second,
			Request: client.Request{Position: pos, Format: "debezium-json", Filter: client.ParseTables("graceful"),
				HeartbeatInterval: 100 * time.Millisecond, MaxBatchBytes: 4096},
			Topics: sink.TopicMap{Prefix: "cdc."}})
	}()
	<-s.entered
	close(stop)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("stop: %v, want nil", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the sink did not stop")
	}
	got := sinktest.ReadKafka(t, brokers, `^cdc\.`, 301, time.Second)
	keys := map[string]bool{}
	for _, g := range got {
		keys[g.Key] = true
	}
	if len(got) != 300 || len(keys) != 300 {
		t.Fatalf("%d records with %d keys after the stop, want the transaction's 300 once each", len(got), len(keys))
	}
	var last sinktest.Got
	for _, g := range sinktest.ReadKafka(t, brokers, `^offsets$`, 1000, time.Second) {
		last = g
	}
	saved, err := sink.UnmarshalPosition(last.Value)
	if err != nil || saved.GetShardGtids()[0].GetGtid() != end {
		t.Fatalf("committed position %q (%v), want %s", last.Value, err, end)
	}
}

// A sink started from "current" saves the first real position it reaches at once, even with
// no record before it, so that a restart comes back to it rather than to a later "current".
func TestKafkaCurrentStartSavedAtOnce(t *testing.T) {
	addr := testserver.Serve(t, db, "sinkkafka")
	brokers := sinktest.Kafka(t, 1)
	if err := db.Exec("DROP TABLE IF EXISTS quiet", "CREATE TABLE quiet (id INT PRIMARY KEY)", "DROP TABLE IF EXISTS busy", "CREATE TABLE busy (id INT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	pub, err := kafka.New(kafka.Options{Brokers: brokers, Name: "current", OffsetsTopic: "offsets"})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.Dial(addr, client.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cl.Close() }()
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- sink.Run(context.Background(), sink.Config{Name: "current", Client: cl, Publisher: pub, Logger: sinktest.Logger(t), Stop: stop,
			CheckpointInterval: time.Hour,
			Request:            client.Request{Format: "debezium-json", Filter: client.ParseTables("quiet"), HeartbeatInterval: 100 * time.Millisecond},
			Topics:             sink.TopicMap{Prefix: "cdc."}})
	}()
	var saved []sinktest.Got
	testkit.WaitFor(t, 20*time.Second, "a saved position", func() bool {
		// Transactions of a table the sink does not take still move its position.
		if err := db.Exec("INSERT INTO busy VALUES (1) ON DUPLICATE KEY UPDATE id = id + 1"); err != nil {
			t.Fatal(err)
		}
		saved = sinktest.ReadKafka(t, brokers, `^offsets$`, 1, 200*time.Millisecond)
		return len(saved) > 0
	})
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	pos, err := sink.UnmarshalPosition(saved[0].Value)
	if err != nil || !strings.HasPrefix(pos.GetShardGtids()[0].GetGtid(), sinktest.GTIDPrefix(t, db)) {
		t.Fatalf("saved %q: %v, want a GTID position", saved[0].Value, err)
	}
	if got := sinktest.ReadKafka(t, brokers, `^cdc\.`, 1, 500*time.Millisecond); len(got) != 0 {
		t.Fatalf("%d records of a table the sink does not take", len(got))
	}
}

// A snapshot asked of the running sink (POST /snapshot in vstream-sink) copies the table
// again while a writer changes it: every row reaches the broker, and the records replay to
// the table, each key's changes in order.
func TestKafkaOnDemandSnapshot(t *testing.T) {
	sinktest.OnDemandSnapshot(t, db, "sinkkafka", broker(sinktest.Kafka(t, 3)), "debezium-json")
}

// A sink whose saved position the server purged stops with an error naming the purge, or,
// with on-purged when_needed, copies the table again and goes on.
func TestKafkaPurgedWhenNeeded(t *testing.T) {
	sinktest.PurgedWhenNeeded(t, db, "sinkkafka", broker(sinktest.Kafka(t, 3)), "debezium-json")
}
