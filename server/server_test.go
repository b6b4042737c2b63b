package server

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/internal/testdb"
	"github.com/vstream-cdc/vstream/internal/testkit"
	"github.com/vstream-cdc/vstream/vstreamer"
)

var db *testdb.Server

func TestMain(m *testing.M) {
	os.Exit(testdb.RunTests(m, testdb.Options{Database: "test"}, &db))
}

// serve starts a server on a loopback port for the engine config and returns its address.
func serve(t testing.TB, cfg vstreamer.Config, opts Options) string {
	t.Helper()
	e, err := vstreamer.NewEngine(cfg)
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	opts.HealthInterval = 100 * time.Millisecond
	s := New(e, opts)
	ctx, cancel := context.WithCancel(context.Background())
	go s.WatchHealth(ctx)
	go s.GRPC().Serve(lis)
	t.Cleanup(func() {
		cancel()
		s.GRPC().Stop()
	})
	return lis.Addr().String()
}

func dbConfig() vstreamer.Config {
	return vstreamer.Config{Addr: db.Addr(), User: db.User(), Password: db.Password(), Database: "test"}
}

func dial(t testing.TB, addr string) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

func startMsg(gtid string, f *binlogdata.Filter) *vstreamv1.StreamRequest {
	return &vstreamv1.StreamRequest{Kind: &vstreamv1.StreamRequest_Start{Start: &vstreamv1.Start{
		Vgtid:  &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Gtid: gtid}}},
		Filter: f,
	}}}
}

// firstError opens a stream, sends msgs and returns the status of the first receive error.
func firstError(t *testing.T, cc *grpc.ClientConn, ctx context.Context, msgs ...*vstreamv1.StreamRequest) *status.Status {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	st, err := vstreamv1.NewVStreamServiceClient(cc).Stream(ctx)
	if err != nil {
		return status.Convert(err)
	}
	for _, m := range msgs {
		if err := st.Send(m); err != nil {
			break
		}
	}
	for {
		if _, err := st.Recv(); err != nil {
			return status.Convert(err)
		}
	}
}

func TestErrorCodes(t *testing.T) {
	addr := serve(t, dbConfig(), Options{})
	cc := dial(t, addr)
	testkit.MustExec(t, db, "CREATE TABLE IF NOT EXISTS codes (id INT PRIMARY KEY)")
	cases := []struct {
		name string
		msgs []*vstreamv1.StreamRequest
		code codes.Code
		msg  string
	}{
		{"malformed position", []*vstreamv1.StreamRequest{startMsg("MariaDB/zz", nil)}, codes.InvalidArgument, "zz"},
		{"position without flavor", []*vstreamv1.StreamRequest{startMsg("0-1-1", nil)}, codes.InvalidArgument, "prefix"},
		{"position ahead", []*vstreamv1.StreamRequest{startMsg(aheadPosition(t), nil)}, codes.InvalidArgument, "not executed"},
		{"position of the other flavor", []*vstreamv1.StreamRequest{startMsg(otherFlavorPosition(), nil)}, codes.InvalidArgument, "does not match the server"},
		{"bad regex", []*vstreamv1.StreamRequest{startMsg("current", &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "/(("}}})}, codes.InvalidArgument, "regular expression"},
		{"empty match", []*vstreamv1.StreamRequest{startMsg("current", &binlogdata.Filter{Rules: []*binlogdata.Rule{{}}})}, codes.InvalidArgument, "match is empty"},
		{"unknown format", []*vstreamv1.StreamRequest{{Kind: &vstreamv1.StreamRequest_Start{Start: &vstreamv1.Start{Format: "xml"}}}}, codes.InvalidArgument, "valid formats are vevent"},
		{"ack first", []*vstreamv1.StreamRequest{{Kind: &vstreamv1.StreamRequest_Ack{Ack: &vstreamv1.Ack{Vgtid: &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Gtid: "x"}}}}}}}, codes.InvalidArgument, "first message must be a start"},
		{"empty message", []*vstreamv1.StreamRequest{{}}, codes.InvalidArgument, "request is empty"},
		{"negative heartbeat", []*vstreamv1.StreamRequest{{Kind: &vstreamv1.StreamRequest_Start{Start: &vstreamv1.Start{Flags: &vstreamv1.Flags{HeartbeatInterval: durationpb.New(-time.Second)}}}}}, codes.InvalidArgument, "negative"},
		{"wrong keyspace", []*vstreamv1.StreamRequest{{Kind: &vstreamv1.StreamRequest_Start{Start: &vstreamv1.Start{Vgtid: &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Keyspace: "other", Gtid: "current"}}}}}}}, codes.InvalidArgument, "not served here"},
		{"copy of nothing", []*vstreamv1.StreamRequest{startMsg("", &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "/^no_such_prefix_"}}})}, codes.InvalidArgument, "nothing to copy"},
		{"unknown event type", []*vstreamv1.StreamRequest{{Kind: &vstreamv1.StreamRequest_Start{Start: &vstreamv1.Start{
			Vgtid: &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Gtid: "current"}}},
			Flags: &vstreamv1.Flags{EventTypes: []binlogdata.VEventType{77}}}}}}, codes.InvalidArgument, "77 is not a VEventType"},
		{"event types with an encoded format", []*vstreamv1.StreamRequest{{Kind: &vstreamv1.StreamRequest_Start{Start: &vstreamv1.Start{
			Vgtid: &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Gtid: "current"}}}, Format: "canal-json",
			Flags: &vstreamv1.Flags{EventTypes: []binlogdata.VEventType{binlogdata.VEventType_ROW}}}}}}, codes.InvalidArgument, "vevent format only"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := firstError(t, cc, context.Background(), c.msgs...)
			if st.Code() != c.code || !strings.Contains(st.Message(), c.msg) {
				t.Fatalf("got %v %q, want %v containing %q", st.Code(), st.Message(), c.code, c.msg)
			}
		})
	}
}

// aheadPosition is a position of the server's flavor and its own server that the server
// has not reached.
func aheadPosition(t *testing.T) string {
	t.Helper()
	if db.Flavor() == testdb.MySQL {
		id, _, _ := strings.Cut(lastGTID(t), ":")
		return "MySQL56/" + id + ":1-99999999"
	}
	return "MariaDB/0-1-99999999"
}

// otherFlavorPosition is a well-formed position of the flavor the server is not.
func otherFlavorPosition() string {
	if db.Flavor() == testdb.MySQL {
		return "MariaDB/0-1-1"
	}
	return "MySQL56/3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5"
}

func TestDatabaseUnreachable(t *testing.T) {
	lis, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := lis.Addr().String()
	lis.Close()
	cfg := dbConfig()
	cfg.Addr = dead
	cfg.DialTimeout = time.Second
	reg := prometheus.NewRegistry()
	addr := serve(t, cfg, Options{Registerer: reg})
	cc := dial(t, addr)
	st := firstError(t, cc, context.Background(), startMsg("current", nil))
	if st.Code() != codes.Unavailable {
		t.Fatalf("got %v %q, want Unavailable", st.Code(), st.Message())
	}
	// The server still answers health checks, and says the database is not serving.
	hc := healthpb.NewHealthClient(cc)
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, err := hc.Check(context.Background(), &healthpb.HealthCheckRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if resp.Status == healthpb.HealthCheckResponse_NOT_SERVING {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("health = %v, want NOT_SERVING", resp.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// So does the metric the unreachable-database alert is on.
	if v := sample(t, reg, "vstream_database_up", nil); v != 0 {
		t.Fatalf("vstream_database_up = %v, want 0", v)
	}
}

func TestAuth(t *testing.T) {
	addr := serve(t, dbConfig(), Options{AuthToken: "s3cret"})
	cc := dial(t, addr)
	if st := firstError(t, cc, context.Background(), startMsg("current", nil)); st.Code() != codes.Unauthenticated {
		t.Fatalf("no token: got %v, want Unauthenticated", st.Code())
	}
	bad := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer nope")
	if st := firstError(t, cc, bad, startMsg("current", nil)); st.Code() != codes.Unauthenticated {
		t.Fatalf("bad token: got %v, want Unauthenticated", st.Code())
	}
	good := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer s3cret")
	ctx, cancel := context.WithTimeout(good, 10*time.Second)
	defer cancel()
	st := openStream(t, ctx, cc, startMsg("current", nil))
	resp, err := st.Recv()
	if err != nil {
		t.Fatalf("good token: %v", err)
	}
	if got := resp.Events[len(resp.Events)-1].GetType(); got != binlogdata.VEventType_VGTID {
		t.Fatalf("first batch ends with %v, want VGTID", got)
	}
}

// recvAll collects responses from a stream in the background.
type recvAll struct {
	mu      sync.Mutex
	batches [][]*binlogdata.VEvent
	err     error
}

func (r *recvAll) run(st vstreamv1.VStreamService_StreamClient) {
	for {
		resp, err := st.Recv()
		r.mu.Lock()
		if err != nil {
			r.err = err
			r.mu.Unlock()
			return
		}
		r.batches = append(r.batches, resp.Events)
		r.mu.Unlock()
	}
}

func (r *recvAll) count(typ binlogdata.VEventType) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, b := range r.batches {
		for _, ev := range b {
			if ev.Type == typ {
				n++
			}
		}
	}
	return n
}

func TestHeartbeatWhenIdle(t *testing.T) {
	addr := serve(t, dbConfig(), Options{})
	cc := dial(t, addr)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := openStream(t, ctx, cc, &vstreamv1.StreamRequest{Kind: &vstreamv1.StreamRequest_Start{Start: &vstreamv1.Start{
		Vgtid: &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Gtid: "current"}}},
		Flags: &vstreamv1.Flags{HeartbeatInterval: durationpb.New(200 * time.Millisecond)},
	}}})
	r := &recvAll{}
	go r.run(st)
	testkit.WaitFor(t, 20*time.Second, "two heartbeats", func() bool { return r.count(binlogdata.VEventType_HEARTBEAT) >= 2 })
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, b := range r.batches {
		for _, ev := range b {
			if ev.Type == binlogdata.VEventType_HEARTBEAT && (ev.Keyspace != "test" || ev.Shard != "0" || ev.CurrentTime == 0 || ev.Timestamp == 0) {
				t.Errorf("heartbeat lacks keyspace, shard or times: %v", ev)
			}
		}
	}
}

// TestLargeTransactionInBoundedBatches checks a transaction bigger than the batch bound is
// sent as it is read, in several responses, each near the bound.
func TestLargeTransactionInBoundedBatches(t *testing.T) {
	for _, compressed := range []bool{false, true} {
		name := "plain"
		if compressed {
			name = "compressed"
		}
		t.Run(name, func(t *testing.T) {
			if compressed && db.Flavor() != testdb.MySQL {
				t.Skip("MariaDB has no compressed transactions (binlog_transaction_compression)")
			}
			largeTransaction(t, "big_"+name, compressed)
		})
	}
}

// largeTransaction streams a 20,000-row transaction into table, with MySQL's transaction
// compression when compressed (the whole transaction is then one TRANSACTION_PAYLOAD event),
// and checks it goes out in batches of about the bound.
func largeTransaction(t *testing.T, table string, compressed bool) {
	testkit.MustExec(t, db, "CREATE TABLE "+table+" (id INT PRIMARY KEY, pad VARCHAR(200))")
	addr := serve(t, dbConfig(), Options{})
	cc := dial(t, addr)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := vstreamv1.NewVStreamServiceClient(cc).Stream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const maxBatch = 64 << 10
	st.Send(&vstreamv1.StreamRequest{Kind: &vstreamv1.StreamRequest_Start{Start: &vstreamv1.Start{
		Vgtid:  &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Gtid: "current"}}},
		Filter: &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: table}}},
		Flags:  &vstreamv1.Flags{MaxBatchBytes: maxBatch},
	}}})
	r := &recvAll{}
	go r.run(st)
	testkit.WaitFor(t, 20*time.Second, "start", func() bool { return r.count(binlogdata.VEventType_VGTID) >= 1 })
	if compressed {
		testkit.MustExec(t, db, "SET SESSION binlog_transaction_compression = ON")
		defer testkit.MustExec(t, db, "SET SESSION binlog_transaction_compression = OFF")
	}
	testkit.MustExec(t, db, "BEGIN")
	for i := 0; i < 40; i++ {
		testkit.MustExec(t, db, fmt.Sprintf("INSERT INTO %s SELECT seq + %d, REPEAT('x', 200) FROM %s", table, i*500, db.Seq(500)))
	}
	testkit.MustExec(t, db, "COMMIT")
	testkit.WaitFor(t, 20*time.Second, "commit", func() bool {
		r.mu.Lock()
		failed := r.err
		r.mu.Unlock()
		if failed != nil {
			t.Fatalf("stream ended: %v", failed)
		}
		return r.count(binlogdata.VEventType_COMMIT) >= 1
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	rows, txnBatches := 0, 0
	for _, b := range r.batches {
		size := 0
		for _, ev := range b {
			if ev.Type == binlogdata.VEventType_ROW {
				rows += len(ev.RowEvent.RowChanges)
				size += len(ev.RowEvent.RowChanges) * 210
			}
		}
		if size > 0 {
			txnBatches++
		}
		if size > 2*maxBatch {
			t.Errorf("a batch carries about %d bytes of rows, bound is %d", size, maxBatch)
		}
	}
	if rows != 20000 {
		t.Errorf("got %d rows, want 20000", rows)
	}
	if txnBatches < 20 {
		t.Errorf("transaction went out in %d batches, want it split by size", txnBatches)
	}
}

// TestStalledClientDoesNotSlowOthers keeps one stream unread while another stream on the
// same server receives every change.
func TestStalledClientDoesNotSlowOthers(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE stall (id INT PRIMARY KEY, pad MEDIUMTEXT)")
	addr := serve(t, dbConfig(), Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	openStream(t, ctx, dial(t, addr), startMsg("current", &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "stall"}}}))
	live := openStream(t, ctx, dial(t, addr), startMsg("current", &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "stall"}}}))
	r := &recvAll{}
	go r.run(live)
	testkit.WaitFor(t, 20*time.Second, "start", func() bool { return r.count(binlogdata.VEventType_VGTID) >= 1 })
	// Far more than gRPC's flow-control windows hold, so the stalled stream blocks.
	for i := 0; i < 200; i++ {
		testkit.MustExec(t, db, fmt.Sprintf("INSERT INTO stall VALUES (%d, REPEAT('y', 100000))", i))
	}
	testkit.WaitFor(t, 20*time.Second, "every commit on the live stream", func() bool { return r.count(binlogdata.VEventType_COMMIT) >= 200 })
}

// TestAckLagMetric checks an ack from the client shows up as that stream's lag in the
// Prometheus metrics, and the stream's series goes away when it ends.
func TestAckLagMetric(t *testing.T) {
	reg := prometheus.NewRegistry()
	addr := serve(t, dbConfig(), Options{Registerer: reg})
	cc := dial(t, addr)
	ctx, cancel := context.WithCancel(context.Background())
	st := openStream(t, ctx, cc, startMsg("current", nil))
	resp, err := st.Recv()
	if err != nil {
		t.Fatal(err)
	}
	vgtid := resp.Events[len(resp.Events)-1].GetVgtid()
	time.Sleep(50 * time.Millisecond)
	if err := st.Send(&vstreamv1.StreamRequest{Kind: &vstreamv1.StreamRequest_Ack{Ack: &vstreamv1.Ack{Vgtid: vgtid}}}); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 20*time.Second, "ack lag gauge", func() bool {
		return gaugeValue(t, reg, "vstream_client_ack_lag_seconds") >= 0.05 && gaugeValue(t, reg, "vstream_streams_open") == 1
	})
	cancel()
	testkit.WaitFor(t, 20*time.Second, "stream gone from metrics", func() bool {
		return gaugeValue(t, reg, "vstream_client_ack_lag_seconds") == -1 && gaugeValue(t, reg, "vstream_streams_open") == 0
	})
}

// gaugeValue returns the first sample of a gauge family, or -1 when it has none.
func gaugeValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) > 0 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return -1
}

// TestStalledClientMemoryBounded writes far more than any buffer holds while a client reads
// nothing: the server blocks that stream instead of queueing its events. What it may hold is
// a batch, the binlog events queued between decoder and stream loop (80 at most, here 1 MiB
// each) and gRPC's flow-control windows.
func TestStalledClientMemoryBounded(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE stallmem (id INT PRIMARY KEY, pad LONGBLOB)")
	addr := serve(t, dbConfig(), Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	openStream(t, ctx, dial(t, addr), startMsg("current", &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "stallmem"}}}))
	// A second stream reads and drops everything, to know when the binlog has been written.
	live := openStream(t, ctx, dial(t, addr), startMsg("current", &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "stallmem"}}}))
	commits := make(chan int, 1)
	go func() {
		n := 0
		for {
			resp, err := live.Recv()
			if err != nil {
				return
			}
			for _, ev := range resp.Events {
				if ev.Type == binlogdata.VEventType_COMMIT {
					n++
				}
			}
			select {
			case <-commits:
			default:
			}
			commits <- n
		}
	}()
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapInuse
	}
	before := heap()
	const rows, rowBytes = 300, 1 << 20
	for i := 0; i < rows; i++ {
		testkit.MustExec(t, db, fmt.Sprintf("INSERT INTO stallmem VALUES (%d, REPEAT(CHAR(65 + %d %% 26), %d))", i, i, rowBytes))
	}
	deadline := time.After(60 * time.Second)
	for n := 0; n < rows; {
		select {
		case n = <-commits:
		case <-deadline:
			t.Fatalf("live stream got %d of %d commits", n, rows)
		}
	}
	after := heap()
	growth := int64(after) - int64(before)
	t.Logf("heap in use grew by %d MiB while %d MiB went past a stalled stream", growth>>20, rows*rowBytes>>20)
	if growth > 128<<20 {
		t.Errorf("heap grew by %d MiB: the stalled stream is being buffered", growth>>20)
	}
}

// TestReflection lists services the way grpcurl does.
func TestReflection(t *testing.T) {
	cc := dial(t, serve(t, dbConfig(), Options{}))
	st, err := reflectionpb.NewServerReflectionClient(cc).ServerReflectionInfo(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	resp, err := st.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	for _, want := range []string{"vstream.v1.VStreamService", "grpc.health.v1.Health"} {
		if !strings.Contains(strings.Join(names, ","), want) {
			t.Errorf("reflection lists %v, missing %s", names, want)
		}
	}
	st.CloseSend()
}

func netListen() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }

// openStream opens a native stream and sends its start message.
func openStream(t *testing.T, ctx context.Context, cc *grpc.ClientConn, start *vstreamv1.StreamRequest) vstreamv1.VStreamService_StreamClient {
	t.Helper()
	st, err := vstreamv1.NewVStreamServiceClient(cc).Stream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(start); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestNativeEventTypes: Flags.event_types on the native API sends only the listed types, and
// VGTID, the position to ack, always.
func TestNativeEventTypes(t *testing.T) {
	addr := serve(t, dbConfig(), Options{})
	cc := dial(t, addr)
	testkit.MustExec(t, db, "CREATE TABLE IF NOT EXISTS native_types (id INT PRIMARY KEY)")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := vstreamv1.NewVStreamServiceClient(cc).Stream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	start := startMsg("current", &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "native_types"}}})
	start.GetStart().Flags = &vstreamv1.Flags{EventTypes: []binlogdata.VEventType{binlogdata.VEventType_ROW, binlogdata.VEventType_COMMIT}}
	if err := st.Send(start); err != nil {
		t.Fatal(err)
	}
	var got []string
	// The stream starts "current" with a VGTID; insert once it has.
	for len(got) == 0 {
		resp, err := st.Recv()
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range resp.Events {
			got = append(got, ev.Type.String())
		}
	}
	testkit.MustExec(t, db, "INSERT INTO native_types VALUES (1)")
	for len(got) < 4 {
		resp, err := st.Recv()
		if err != nil {
			t.Fatalf("after %v: %v", got, err)
		}
		for _, ev := range resp.Events {
			got = append(got, ev.Type.String())
		}
	}
	// The start's VGTID, then the insert: ROW, COMMIT, VGTID.
	if strings.Join(got, " ") != "VGTID ROW COMMIT VGTID" {
		t.Errorf("events = %v", got)
	}
}
