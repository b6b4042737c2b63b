package nats_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/vstream-cdc/vstream/client"
	"github.com/vstream-cdc/vstream/internal/sinktest"
	"github.com/vstream-cdc/vstream/internal/testdb"
	"github.com/vstream-cdc/vstream/internal/testkit"
	"github.com/vstream-cdc/vstream/internal/testserver"
	"github.com/vstream-cdc/vstream/server/encoder/avro"
	"github.com/vstream-cdc/vstream/sink"
	"github.com/vstream-cdc/vstream/sink/nats"
)

var db *testdb.Server

func TestMain(m *testing.M) {
	os.Exit(testdb.RunTests(m, testdb.Options{Database: "sinknats"}, &db))
}

func broker(url, stream string) sinktest.Broker {
	return sinktest.Broker{
		New: func(t testing.TB, name string) sink.Publisher {
			p, err := nats.New(nats.Options{URL: url, Name: name, Stream: stream, SubjectPrefix: "cdc.", Bucket: "checkpoints"})
			if err != nil {
				t.Fatal(err)
			}
			return p
		},
		Read: func(t testing.TB, want int, quiet time.Duration) []sinktest.Got {
			return sinktest.ReadNATS(t, url, stream, want, quiet)
		},
	}
}

// Routed by table into a subject of its own (after the prefix, as the stream's subjects
// want), every change still arrives once and in order per key, in that subject only.
func TestNATSRoutedExactlyOnce(t *testing.T) {
	for _, tc := range []struct {
		format    string
		failEvery int
	}{
		{"debezium-json", 3},
		{"canal-json", 3},
		{"avro", 4},
	} {
		t.Run(tc.format, func(t *testing.T) {
			routes, err := sink.ParseRoutes("other.*=wrong;sinknats.t=routed.{table}")
			if err != nil {
				t.Fatal(err)
			}
			srv := sinktest.StartNATS(t)
			sinktest.RoutedExactlyOnce(t, db, "sinknats", broker(srv.URL(), "CDC"), tc.format, tc.failEvery, sinktest.Routing{
				Topics: sink.TopicMap{Prefix: "cdc.", Default: "changes", Routes: routes}, Topic: "cdc.routed.t"})
		})
	}
}

// Every change once, in order per key, in each format; with commits that fail (before and
// after the checkpoint is written) the sink publishes again from its checkpoint and the
// stream's duplicate window drops what it already holds.
func TestNATSExactlyOnce(t *testing.T) {
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
			srv := sinktest.StartNATS(t)
			sinktest.ExactlyOnce(t, db, "sinknats", broker(srv.URL(), "CDC"), tc.format, nil, tc.failEvery)
			// Avro's schema announcements come again after every resume; their IDs (the
			// subject and schema id) let the duplicate window keep one of each.
			schemas := map[string]int{}
			for _, g := range sinktest.ReadNATS(t, srv.URL(), "CDC", 100000, time.Second) {
				if g.Headers[avro.HeaderMessage] == avro.MessageSchema {
					schemas[g.Headers[avro.HeaderSubject]+" "+g.Headers[avro.HeaderSchemaID]]++
				}
			}
			for schema, n := range schemas {
				if n != 1 {
					t.Errorf("schema %s stored %d times, want once", schema, n)
				}
			}
			if (tc.format == "avro") != (len(schemas) > 0) {
				t.Errorf("%d schemas stored in %s", len(schemas), tc.format)
			}
		})
	}
}

// A sink that starts with a snapshot (position copy) of a 3,000-row table under a writer,
// committed chunk by chunk, with commits that fail before and after the checkpoint: the
// stream holds every row once, then every change after it, once and in order. A chunk's
// records are read again at a later snapshot after a failure, so without the write-ahead
// log they would reach the stream twice or be dropped as repeats of other rows.
func TestNATSSnapshotExactlyOnce(t *testing.T) {
	for _, tc := range []struct {
		format    string
		failEvery int
	}{
		{"debezium-json", 0},
		{"debezium-json", 3},
		{"avro", 4},
	} {
		t.Run(fmt.Sprintf("%s/fail-every-%d", tc.format, tc.failEvery), func(t *testing.T) {
			srv := sinktest.StartNATS(t)
			sinktest.SnapshotExactlyOnce(t, db, "sinknats", broker(srv.URL(), "CDC"), tc.format, nil, tc.failEvery, 3000)
		})
	}
}

// Subjects come from topics; a record's key, headers and tombstone travel as headers.
func TestNATSMessageShape(t *testing.T) {
	srv := sinktest.StartNATS(t)
	addr := testserver.Serve(t, db, "sinknats")
	if err := db.Exec("DROP TABLE IF EXISTS shape", "CREATE TABLE shape (id INT PRIMARY KEY, v VARCHAR(10))"); err != nil {
		t.Fatal(err)
	}
	pos, err := client.ParsePosition(sinktest.Position(t, db, "sinknats"), "", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Exec("INSERT INTO shape VALUES (1, 'a')", "DELETE FROM shape WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	pub, err := nats.New(nats.Options{URL: srv.URL(), Name: "shape", Stream: "SHAPE", SubjectPrefix: "cdc.", Bucket: "checkpoints"})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.Dial(addr, client.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- sink.Run(context.Background(), sink.Config{Name: "shape", Client: cl, Publisher: pub, Logger: sinktest.Logger(t), Stop: stop,
			Request: client.Request{Position: pos, Format: "debezium-json", Filter: client.ParseTables("shape"), HeartbeatInterval: 100 * time.Millisecond},
			Topics:  sink.TopicMap{Prefix: "cdc."}})
	}()
	// insert, delete, tombstone
	var got []sinktest.Got
	testkit.WaitFor(t, 20*time.Second, "three messages", func() bool {
		got = sinktest.ReadNATS(t, srv.URL(), "SHAPE", 3, 300*time.Millisecond)
		return len(got) == 3
	})
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for i, g := range got {
		if g.Topic != "cdc.sinknats.sinknats.shape" {
			t.Errorf("message %d: subject %q", i, g.Topic)
		}
		if !strings.Contains(g.Key, `"id":1`) {
			t.Errorf("message %d: key header %q, want the row's key", i, g.Key)
		}
		if id := g.Headers[jetstream.MsgIDHeader]; !strings.HasPrefix(id, "shape/") || !strings.Contains(id, "/"+sinktest.GTIDPrefix(t, db)) {
			t.Errorf("message %d: Nats-Msg-Id %q, want the sink's name, the position and an index", i, id)
		}
	}
	if got[0].Tombstone || got[1].Tombstone || !got[2].Tombstone || len(got[2].Value) != 0 {
		t.Errorf("tombstones %v %v %v: want only the last, with no data", got[0].Tombstone, got[1].Tombstone, got[2].Tombstone)
	}
	// The checkpoint is where the stream is.
	js := sinktest.JetStream(t, srv.URL())
	kv, err := js.KeyValue(context.Background(), "checkpoints")
	if err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(context.Background(), "shape")
	if err != nil {
		t.Fatal(err)
	}
	saved, err := sink.UnmarshalPosition(e.Value())
	if err != nil {
		t.Fatal(err)
	}
	if want := sinktest.Position(t, db, "sinknats"); saved.GetShardGtids()[0].GetGtid() != want {
		t.Errorf("checkpoint %s, want %s", sink.PositionText(saved), want)
	}
}

// A record larger than the broker takes stops the sink with an error naming it, and the
// sink does not go past it: larger than the server's max_payload (1 MiB by default, caught
// before it is sent), or than the max_msg_size of a stream made by the user (refused by
// JetStream).
func TestNATSRecordTooLarge(t *testing.T) {
	for _, tc := range []struct {
		name       string
		maxMsgSize int32
		size       int
		err        string
	}{
		{"max_payload", 0, 1200000, "more than the server's max_payload"},
		{"stream max_msg_size", 8192, 20000, "more than the stream BIG's max_msg_size"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recordTooLarge(t, tc.maxMsgSize, tc.size, tc.err)
		})
	}
}

func recordTooLarge(t *testing.T, maxMsgSize int32, size int, want string) {
	srv := sinktest.StartNATS(t)
	addr := testserver.Serve(t, db, "sinknats")
	if maxMsgSize > 0 {
		js := sinktest.JetStream(t, srv.URL())
		if _, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: "BIG", Subjects: []string{"cdc.>"}, MaxMsgSize: maxMsgSize}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Exec("DROP TABLE IF EXISTS big", "CREATE TABLE big (id INT PRIMARY KEY, b LONGTEXT)"); err != nil {
		t.Fatal(err)
	}
	pos, err := client.ParsePosition(sinktest.Position(t, db, "sinknats"), "", "")
	if err != nil {
		t.Fatal(err)
	}
	pub, err := nats.New(nats.Options{URL: srv.URL(), Name: "big", Stream: "BIG", SubjectPrefix: "cdc.", Bucket: "checkpoints"})
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
		return len(sinktest.ReadNATS(t, srv.URL(), "BIG", 1, 300*time.Millisecond)) == 1
	})
	// One transaction: the row after the large one is published at once unless the large
	// one stops the sink before it is sent.
	if err := db.Exec("BEGIN", fmt.Sprintf("INSERT INTO big VALUES (2, REPEAT('x', %d))", size), "INSERT INTO big VALUES (3, 'after')", "COMMIT"); err != nil {
		t.Fatal(err)
	}
	err = <-done
	if !sink.IsPermanent(err) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "record big/") {
		t.Fatalf("got %v, want the record-too-large error naming the record", err)
	}
	got := sinktest.ReadNATS(t, srv.URL(), "BIG", 3, time.Second)
	if len(got) != 1 || !strings.Contains(string(got[0].Value), "small") {
		t.Fatalf("messages after the error: %d, want the small one alone", len(got))
	}
}

// A snapshot asked of the running sink (POST /snapshot in vstream-sink) copies the table
// again while a writer changes it: every row reaches the broker, and the records replay to
// the table, each key's changes in order.
func TestNATSOnDemandSnapshot(t *testing.T) {
	sinktest.OnDemandSnapshot(t, db, "sinknats", broker(sinktest.StartNATS(t).URL(), "CDC"), "debezium-json")
}

// A sink whose saved position the server purged stops with an error naming the purge, or,
// with on-purged when_needed, copies the table again and goes on.
func TestNATSPurgedWhenNeeded(t *testing.T) {
	sinktest.PurgedWhenNeeded(t, db, "sinknats", broker(sinktest.StartNATS(t).URL(), "CDC"), "debezium-json")
}
