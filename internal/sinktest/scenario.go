package sinktest

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/vstream-cdc/vstream/client"
	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/internal/testdb"
	"github.com/vstream-cdc/vstream/internal/testkit"
	"github.com/vstream-cdc/vstream/internal/testserver"
	"github.com/vstream-cdc/vstream/sink"
)

// Broker is what a scenario needs of a sink's broker.
type Broker struct {
	// New makes a Publisher for the sink named name.
	New func(t testing.TB, name string) sink.Publisher
	// Read reads what the broker holds, until want records or quiet time without one.
	Read func(t testing.TB, want int, quiet time.Duration) []Got
	// Faulty says the broker itself fails some requests, so the sink must retry.
	Faulty bool
	// Schemas, when set, makes the sink's schema registry (sink.Config.Schemas).
	Schemas func(t testing.TB) sink.Schemas
}

// Flaky wraps a Publisher so that every Every-th commit fails: odd failures before the
// commit reaches the broker, even ones after (the commit is in; the sink does not know).
type Flaky struct {
	sink.Publisher
	Every   int
	commits atomic.Int64
	Failed  atomic.Int64
}

var errInjected = errors.New("injected broker error")

// Commit fails as described on Flaky.
func (f *Flaky) Commit(ctx context.Context, pos *binlogdata.VGtid) error {
	n := f.commits.Add(1)
	if f.Every <= 0 || n%int64(f.Every) != 0 {
		return f.Publisher.Commit(ctx, pos)
	}
	if f.Failed.Add(1)%2 == 1 {
		return errInjected
	}
	if err := f.Publisher.Commit(ctx, pos); err != nil {
		return err
	}
	return errInjected
}

// Fit passes the wrapped Publisher's sink.Limiter on, so that a sink's oversize choice
// applies through Flaky; a Publisher that cannot tell fits every record.
func (f *Flaky) Fit(r *sink.Record) (size, limit int, what string) {
	if l, ok := f.Publisher.(sink.Limiter); ok {
		return l.Fit(r)
	}
	return 0, 1, ""
}

// ExactlyOnce runs a sink in format over a writer's transactions, with a commit failing
// every failEvery commits when failEvery > 0, stops it through its Stop channel, and checks
// that the broker holds every change exactly once, in order per key.
func ExactlyOnce(t *testing.T, db *testdb.Server, database string, b Broker, format string, options map[string]string, failEvery int) {
	run(t, db, database, b, format, options, failEvery, 0, nil)
}

// Routing is what RoutedExactlyOnce routes by: the sink's topic map and the topic every
// record of table t must land in.
type Routing struct {
	Topics sink.TopicMap
	Topic  string
}

// RoutedExactlyOnce is ExactlyOnce with the sink's topics (routes, partition rules) from r:
// the broker must hold every change once, in order per key, each in r.Topic.
func RoutedExactlyOnce(t *testing.T, db *testdb.Server, database string, b Broker, format string, failEvery int, r Routing) {
	run(t, db, database, b, format, nil, failEvery, 0, &r)
}

// SnapshotExactlyOnce is ExactlyOnce for a sink that starts with a snapshot: the table holds
// rows rows first, the sink starts from a copy of it in small chunks while the writer goes
// on, and the broker must hold a snapshot of every row, then every change after it, once
// and in order per key.
func SnapshotExactlyOnce(t *testing.T, db *testdb.Server, database string, b Broker, format string, options map[string]string, failEvery, rows int) {
	run(t, db, database, b, format, options, failEvery, rows, nil)
}

func run(t *testing.T, db *testdb.Server, database string, b Broker, format string, options map[string]string, failEvery, snapshot int, routing *Routing) {
	addr := testserver.Serve(t, db, database)
	w := NewWriter(t, db, max(12, snapshot), uint64(time.Now().UnixNano()))
	start := Position(t, db, database)
	chunk := int64(0)
	if snapshot > 0 {
		if err := w.Fill(snapshot); err != nil {
			t.Fatal(err)
		}
		start, chunk = "copy", int64(max(10, snapshot/20))
	}
	pos, err := client.ParsePosition(start, "", "")
	if err != nil {
		t.Fatal(err)
	}
	sk := startScenarioSink(t, addr, b, format, options, pos, chunk, failEvery, routing)
	defer func() { _ = sk.client.Close() }()
	if err = w.Run(context.Background(), 60, 2*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	want := w.Changes()
	if snapshot > 0 {
		want = w.SnapshotCount()
	}
	defer func() {
		if t.Failed() && testing.Verbose() {
			for _, g := range b.Read(t, want+100, time.Second) {
				t.Logf("%s %s %q", g.Headers["Nats-Msg-Id"], g.Topic, marker.FindAll(g.Value, -1))
			}
		}
	}()
	testkit.WaitFor(t, 60*time.Second, "every change in the broker", func() bool {
		select {
		case rerr := <-sk.done:
			t.Fatalf("sink ended early: %v", rerr)
		default:
		}
		// A few more than the changes: schema announcements (avro) are records too.
		if snapshot > 0 {
			// Every key's last change: the snapshot and the writer's changes after it.
			return w.LastChanges(b.Read(t, w.Changes()+100, 300*time.Millisecond)) >= want
		}
		return Count(b.Read(t, want+8, 300*time.Millisecond)) >= want
	})
	close(sk.stop)
	select {
	case rerr := <-sk.done:
		if rerr != nil {
			t.Fatalf("sink stopped with %v", rerr)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("sink did not stop")
	}
	if failEvery > 0 && sk.flaky.Failed.Load() == 0 {
		t.Fatal("no commit failed: the scenario did not test resuming")
	}
	checkMetrics(t, sk.reg, want, failEvery > 0 || b.Faulty)
	got := readWhole(t, b, w, want, snapshot > 0)
	if snapshot > 0 {
		w.CheckSnapshot(t, got)
		return
	}
	if routing != nil {
		for _, g := range got {
			if g.Topic != routing.Topic {
				t.Errorf("a record in topic %s, want every one in %s: %q", g.Topic, routing.Topic, marker.FindAll(g.Value, -1))
				break
			}
		}
	}
	w.Check(t, got)
}

// runningSink is a sink a scenario started: stop it by closing stop; done has what Run
// returned.
type runningSink struct {
	client *client.Client
	flaky  *Flaky
	reg    *prometheus.Registry
	stop   chan struct{}
	done   <-chan error
}

// startScenarioSink runs a sink named "s-"+format from pos into b, with small batches and its
// commits failing every failEvery (when > 0), on a goroutine of its own.
func startScenarioSink(t *testing.T, addr string, b Broker, format string, options map[string]string, pos *binlogdata.VGtid, chunk int64, failEvery int, routing *Routing) *runningSink {
	t.Helper()
	pub := b.New(t, "s-"+format)
	flaky := &Flaky{Publisher: pub, Every: failEvery}
	if failEvery > 0 {
		pub = flaky
	}
	cl, err := client.Dial(addr, client.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	sk := &runningSink{client: cl, flaky: flaky, reg: prometheus.NewRegistry(), stop: make(chan struct{})}
	metrics := sink.NewMetrics(sk.reg, "test", "s-"+format)
	var schemas sink.Schemas
	if b.Schemas != nil {
		schemas = b.Schemas(t)
	}
	topics := sink.TopicMap{Prefix: "cdc.", Default: "changes"}
	if routing != nil {
		topics = routing.Topics
	}
	sk.done = runSink(context.Background(), sink.Config{
		Name: "s-" + format, Client: cl, Publisher: pub, Stop: sk.stop, Metrics: metrics, Schemas: schemas,
		Request: client.Request{Position: pos, Format: format, FormatOptions: options,
			Filter: client.ParseTables("t"), HeartbeatInterval: 200 * time.Millisecond,
			// Small batches: many commits, and batches that end inside a transaction.
			MaxBatchBytes: 2048, CopyChunkRows: chunk},
		Topics: topics,
	}, t)
	return sk
}

// checkMetrics checks that the sink's metrics count what was published and committed, how
// long the commits took and when the last one was, and the resumes (retried: some commit
// failed).
func checkMetrics(t *testing.T, reg *prometheus.Registry, want int, retried bool) {
	t.Helper()
	counts := map[string]float64{}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			counts[mf.GetName()] += m.GetCounter().GetValue() + m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
		}
	}
	commits := counts["vstream_sink_commits_total"]
	if counts["vstream_sink_records_total"] < float64(want) || commits < 1 || counts["vstream_sink_commit_seconds"] != commits ||
		counts["vstream_sink_record_bytes_total"] < counts["vstream_sink_records_total"] ||
		time.Since(time.Unix(int64(counts["vstream_sink_last_commit_timestamp_seconds"]), 0)) > time.Minute ||
		retried != (counts["vstream_sink_retries_total"] > 0) {
		t.Errorf("metrics %v after %d changes", counts, want)
	}
}

// readWhole reads the broker's records for the final check: more than written, so that a
// duplicate is read rather than waited for. A read ends at its first quiet second, and a
// loaded broker can leave one partition quiet that long: it reads again (for a while) until
// the records are whole (with a snapshot, every key's last change).
func readWhole(t *testing.T, b Broker, w *Writer, want int, snapshot bool) []Got {
	t.Helper()
	var got []Got
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		if snapshot {
			if got = b.Read(t, w.Changes()+100, time.Second); w.LastChanges(got) >= want {
				break
			}
		} else if got = b.Read(t, want+100, time.Second); Count(got) >= want {
			break
		}
	}
	return got
}

// Logger logs to the test's output with -v, and nowhere otherwise.
func Logger(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// startSink runs a sink over the test database until stop closes or ctx ends; its error
// comes on the returned channel.
func startSink(ctx context.Context, t *testing.T, addr string, pub sink.Publisher, name string, req client.Request, stop <-chan struct{}) <-chan error {
	cl, err := client.Dial(addr, client.Options{Logger: Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Close() })
	return runSink(ctx, sink.Config{
		Name: name, Client: cl, Publisher: pub, Stop: stop, Request: req,
		Topics: sink.TopicMap{Prefix: "cdc.", Default: "changes"},
	}, t)
}

// runSink runs the sink of cfg, logging to t and retrying quickly, on a goroutine of its
// own; what Run returns comes on the channel.
func runSink(ctx context.Context, cfg sink.Config, t *testing.T) <-chan error {
	cfg.Logger = Logger(t)
	cfg.Backoff = func() backoff.BackOff { return backoff.NewConstantBackOff(20 * time.Millisecond) }
	done := make(chan error, 1)
	go func() { done <- sink.Run(ctx, cfg) }()
	return done
}

// stopSink closes stop and waits for the sink to end without an error.
func stopSink(t *testing.T, stop chan struct{}, done <-chan error) {
	t.Helper()
	close(stop)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("sink stopped with %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("sink did not stop")
	}
}

// OnDemandSnapshot runs a sink over a 500-row table from the current position and asks the
// running stream for a snapshot of the table while a writer changes it: every row reaches
// the broker (most only through the snapshot), and replaying the records per key gives the
// table, each key's changes in order.
func OnDemandSnapshot(t *testing.T, db *testdb.Server, database string, b Broker, format string) {
	addr := testserver.Serve(t, db, database)
	w := NewWriter(t, db, 500, uint64(time.Now().UnixNano()))
	if err := w.Fill(500); err != nil {
		t.Fatal(err)
	}
	pos, err := client.ParsePosition(Position(t, db, database), "", "")
	if err != nil {
		t.Fatal(err)
	}
	snaps := make(chan client.Snapshot)
	stop := make(chan struct{})
	done := startSink(context.Background(), t, addr, b.New(t, "ondemand-"+format), "ondemand-"+format, client.Request{
		Position: pos, Format: format, Filter: client.ParseTables("t"), HeartbeatInterval: 200 * time.Millisecond,
		MaxBatchBytes: 4096, CopyChunkRows: 50, Snapshots: snaps}, stop)
	if err = w.Run(context.Background(), 40, 2*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	select {
	case snaps <- client.Snapshot{Tables: []string{"t"}}:
	case err = <-done:
		t.Fatalf("sink ended early: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the sink's stream took no snapshot request")
	}
	if err = w.Run(context.Background(), 60, 2*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 60*time.Second, "every row's last change in the broker", func() bool {
		return w.LastChanges(b.Read(t, w.Changes()+600, 300*time.Millisecond)) >= w.SnapshotCount()
	})
	stopSink(t, stop, done)
	w.CheckReplay(t, b.Read(t, w.Changes()+1200, time.Second))
}

// PurgedWhenNeeded stops a sink, writes on, and purges the server's binlogs past the sink's
// position: started again, the sink with on-purged fail stops with an error naming the
// purge; with when_needed it copies the table again and goes on, and replaying the broker's
// records per key gives the table.
func PurgedWhenNeeded(t *testing.T, db *testdb.Server, database string, b Broker, format string) {
	addr := testserver.Serve(t, db, database)
	w := NewWriter(t, db, 40, uint64(time.Now().UnixNano()))
	if err := w.Run(context.Background(), 20, 0); err != nil {
		t.Fatal(err)
	}
	pos, err := client.ParsePosition(Position(t, db, database), "", "")
	if err != nil {
		t.Fatal(err)
	}
	before := w.Changes()
	name := "purged-" + format
	req := client.Request{Position: pos, Format: format, Filter: client.ParseTables("t"), HeartbeatInterval: 200 * time.Millisecond}
	stop := make(chan struct{})
	done := startSink(context.Background(), t, addr, b.New(t, name), name, req, stop)
	if err = w.Run(context.Background(), 20, 2*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 60*time.Second, "the first run's changes in the broker", func() bool {
		return Count(b.Read(t, w.Changes()+100, 300*time.Millisecond)) >= w.Changes()-before
	})
	stopSink(t, stop, done)
	if err = w.Run(context.Background(), 30, 0); err != nil {
		t.Fatal(err)
	}
	if err = db.Exec("FLUSH BINARY LOGS", "FLUSH BINARY LOGS"); err != nil {
		t.Fatal(err)
	}
	if err = db.PurgeBinaryLogs(30 * time.Second); err != nil {
		t.Fatal(err)
	}

	err = <-startSink(context.Background(), t, addr, b.New(t, name), name, req, make(chan struct{}))
	if !sink.IsPermanent(err) || !strings.Contains(err.Error(), "purged") {
		t.Fatalf("on-purged fail: the sink ended with %v, want a permanent error naming the purge", err)
	}

	req.WhenPurged = client.PurgedWhenNeeded
	stop = make(chan struct{})
	done = startSink(context.Background(), t, addr, b.New(t, name), name, req, stop)
	if err = w.Run(context.Background(), 10, 2*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 60*time.Second, "every row's last change in the broker", func() bool {
		return w.LastChanges(b.Read(t, w.Changes()+200, 300*time.Millisecond)) >= w.SnapshotCount()
	})
	stopSink(t, stop, done)
	w.CheckReplay(t, b.Read(t, w.Changes()+300, time.Second))
}
