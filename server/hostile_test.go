package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/internal/testkit"
	"github.com/vstream-cdc/vstream/vstreamer"
)

// rawMessage is sent as it is, not marshalled: a client may send any bytes.
type rawMessage []byte

// rawCodec sends rawMessages untouched and decodes responses as protobuf.
type rawCodec struct{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	if b, ok := v.(rawMessage); ok {
		return mem.BufferSlice{mem.SliceBuffer(b)}, nil
	}
	b, err := proto.Marshal(v.(proto.Message))
	return mem.BufferSlice{mem.SliceBuffer(b)}, err
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	return proto.Unmarshal(data.Materialize(), v.(proto.Message))
}

func (rawCodec) Name() string { return "proto" }

// sendRaw opens a stream, sends data as its first message and returns the first response's
// error: nil when the server started streaming, else the status it answered with.
func sendRaw(ctx context.Context, cc *grpc.ClientConn, data []byte) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	desc := &vstreamv1.VStreamService_ServiceDesc.Streams[0]
	st, err := cc.NewStream(ctx, desc, "/"+vstreamv1.VStreamService_ServiceDesc.ServiceName+"/"+desc.StreamName, grpc.ForceCodecV2(rawCodec{}))
	if err != nil {
		return err
	}
	// io.EOF means the server has already answered: RecvMsg has its status.
	if err := st.SendMsg(rawMessage(data)); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return st.RecvMsg(&vstreamv1.StreamResponse{})
}

func marshal(t testing.TB, m proto.Message) []byte {
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func start(s *vstreamv1.Start) *vstreamv1.StreamRequest {
	return &vstreamv1.StreamRequest{Kind: &vstreamv1.StreamRequest_Start{Start: s}}
}

// FuzzStart sends arbitrary bytes as the first message of a stream to a live server backed by
// MariaDB: every input gets a status or a running stream, never a crash of the process (the
// server runs in it), never Unknown or Internal (a panic or an unclassified error).
func FuzzStart(f *testing.F) {
	testkit.MustExec(f, db, "CREATE TABLE IF NOT EXISTS fuzz_t (id INT PRIMARY KEY, v VARCHAR(20))", "INSERT IGNORE INTO fuzz_t VALUES (1, 'a'), (2, 'b')")
	vg := func(gtid string) *binlogdata.VGtid {
		return &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Gtid: gtid}}}
	}
	rules := func(match, sel string) *binlogdata.Filter {
		return &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: match, Filter: sel}}}
	}
	for _, s := range []*vstreamv1.Start{
		{Vgtid: vg("current")},
		{Vgtid: vg(""), Filter: rules("fuzz_t", "")},
		{Vgtid: vg("MariaDB/0-1-1"), Filter: rules("/fuzz", "select id from fuzz_t where id in (1, 2)")},
		{Vgtid: vg("MySQL56/3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5")},
		{Vgtid: vg("current"), Filter: rules("fuzz_t", "select v, keyspace_id() from fuzz_t where v between 'a' and 'z'"), Format: "debezium-json",
			FormatOptions: map[string]string{"decimal.handling.mode": "string"}},
		{Vgtid: vg("current"), Format: "avro", Flags: &vstreamv1.Flags{HeartbeatInterval: durationpb.New(time.Millisecond), MaxBatchBytes: 1}},
		{Vgtid: vg(""), Filter: rules("fuzz_t", "-80"), Flags: &vstreamv1.Flags{CopyChunkRows: 1, TablesToCopy: []string{"fuzz_t", "nope"},
			EventProcessingFailureHandlingMode: "skip"}},
		{Vgtid: &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Gtid: "MariaDB/0-1-1", TablePKs: []*binlogdata.TableLastPK{{TableName: "fuzz_t",
			Lastpk: &query.QueryResult{Fields: []*query.Field{{Name: "id", Type: query.Type_INT32}}, Rows: []*query.Row{{Lengths: []int64{5}, Values: []byte("1")}}}}}}}}},
		{Vgtid: vg("current"), Filter: rules("fuzz_t", "select * from fuzz_t where id = 'x' and v is not null"), Format: "canal-json",
			FormatOptions: map[string]string{"profile": "dts", "render_zone": "+99:00"}},
	} {
		f.Add(marshal(f, start(s)))
	}
	f.Add(marshal(f, &vstreamv1.StreamRequest{Kind: &vstreamv1.StreamRequest_Ack{Ack: &vstreamv1.Ack{Vgtid: vg("current")}}}))
	f.Add([]byte{})
	f.Add([]byte{0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f})
	addr := serve(f, dbConfig(), Options{})
	cc := dial(f, addr)
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		err := sendRaw(ctx, cc, data)
		// gRPC itself answers bytes that are not a StreamRequest with Internal before the
		// handler sees them; any other Internal or Unknown comes from the server.
		if code := status.Code(err); code == codes.Unknown ||
			code == codes.Internal && !strings.Contains(err.Error(), "grpc: failed to unmarshal the received message") {
			t.Fatalf("start %x: %v", data, err)
		}
	})
}

// TestStartFlood: one client starts hundreds of streams at once against a server with limits.
// Each gets an answer, a stream running before goes on receiving every row, memory and
// goroutines come back, and the open-stream count returns to that one stream.
func TestStartFlood(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE flood (id INT PRIMARY KEY)")
	reg := prometheus.NewRegistry()
	addr := serve(t, dbConfig(), Options{Registerer: reg, Limits: Limits{MaxStreams: 20, StartsPerSecond: 50}})
	cc := dial(t, addr)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	bystander := receive(openStream(t, ctx, cc, startOf("current", oneTable("flood", ""), "", nil)))
	testkit.WaitFor(t, 20*time.Second, "the running stream", bystander.started)
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapInuse
	}
	baseHeap, baseG := heap(), runtime.NumGoroutine()

	const starts, clients = 600, 60
	var (
		mu      sync.Mutex
		answers = map[codes.Code]int{}
		peak    atomic.Int64
		next    atomic.Int64
		wg      sync.WaitGroup
	)
	req := marshal(t, startOf("current", oneTable("flood", ""), "", nil))
	began := time.Now()
	writes := make(chan struct{})
	go func() {
		defer close(writes)
		for i := 1; i <= 100; i++ {
			testkit.MustExec(t, db, fmt.Sprintf("INSERT INTO flood VALUES (%d)", i))
		}
	}()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= starts {
				sctx, scancel := context.WithTimeout(ctx, 10*time.Second)
				err := sendRaw(sctx, cc, req)
				scancel()
				if n := int64(sample(t, reg, "vstream_streams_open", nil)); n > peak.Load() {
					peak.Store(n)
				}
				mu.Lock()
				answers[status.Code(err)]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(began)
	<-writes
	testkit.WaitFor(t, 20*time.Second, "the running stream's 100 rows", func() bool { return len(bystander.ids("flood")) == 100 })
	testkit.WaitFor(t, 20*time.Second, "the flood's streams to close", func() bool { return sample(t, reg, "vstream_streams_open", nil) == 1 })
	testkit.WaitFor(t, 20*time.Second, "the flood's goroutines to end", func() bool { return runtime.NumGoroutine() <= baseG+10 })
	growth := int64(heap()) - int64(baseHeap)
	t.Logf("%d starts from %d connections in %v: %v; peak open streams %d; heap %+d KiB after",
		starts, clients, elapsed.Round(time.Millisecond), answers, peak.Load(), growth>>10)
	if answers[codes.OK]+answers[codes.ResourceExhausted] != starts {
		t.Errorf("answers %v: want only OK (streamed) and ResourceExhausted", answers)
	}
	if answers[codes.ResourceExhausted] == 0 {
		t.Errorf("no start was refused: the limits did not apply")
	}
	if peak.Load() > 20 {
		t.Errorf("%d streams were open at once, over the limit of 20", peak.Load())
	}
	if growth > 32<<20 {
		t.Errorf("heap grew by %d MiB and stayed", growth>>20)
	}
	if got := strings.Join(bystander.ids("flood")[:3], ","); got != "1,2,3" {
		t.Errorf("running stream's first rows %s, want 1,2,3", got)
	}
}

// TestOversizedStart: a start larger than the server accepts is refused with
// ResourceExhausted before the server holds it; one just under, with hundreds of thousands of
// regex rules, is refused without compiling them, with InvalidArgument naming the limit; the server
// goes on serving.
func TestOversizedStart(t *testing.T) {
	addr := serve(t, dbConfig(), Options{})
	cc := dial(t, addr)
	ctx := context.Background()

	huge := marshal(t, start(&vstreamv1.Start{Vgtid: &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Gtid: "current"}}},
		Filter: &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "t", Filter: strings.Repeat("x", 17<<20)}}}}))
	if err := sendRaw(ctx, cc, huge); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("17 MiB start: %v, want ResourceExhausted", err)
	}

	// Just under the size limit, as many regex rules as fit: compiling them all would take
	// the server minutes.
	var many []*binlogdata.Rule
	for i := 0; len(many)*40 < 15<<20; i++ {
		many = append(many, &binlogdata.Rule{Match: fmt.Sprintf("/^no_such_table_%d$", i), Filter: "-80"})
	}
	big := marshal(t, start(&vstreamv1.Start{Vgtid: &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Gtid: "current"}}},
		Filter: &binlogdata.Filter{Rules: many}}))
	began := time.Now()
	err := sendRaw(ctx, cc, big)
	took := time.Since(began)
	t.Logf("%.1f MiB start with %d rules answered in %v: %v", float64(len(big))/(1<<20), len(many), took.Round(time.Millisecond), err)
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "at most 10000") {
		t.Fatalf("start with %d rules: %v, want InvalidArgument naming the limit", len(many), err)
	}
	// Compiling the rules before counting them would take minutes; a minute allows for a
	// loaded machine.
	if took > time.Minute {
		t.Errorf("refusing it took %v", took)
	}

	// The largest filter accepted is compiled and checked in reasonable time (a copy, which
	// needs the tables its named rules select, so that the last rule is refused).
	many = many[:vstreamer.MaxRequestTables-1]
	many = append(many, &binlogdata.Rule{Match: "missing_table_at_the_end"})
	began = time.Now()
	err = sendRaw(ctx, cc, marshal(t, start(&vstreamv1.Start{Vgtid: &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Gtid: ""}}},
		Filter: &binlogdata.Filter{Rules: many}})))
	t.Logf("%d rules answered in %v: %v", len(many), time.Since(began).Round(time.Millisecond), err)
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "missing_table_at_the_end") {
		t.Fatalf("start with %d rules: %v, want InvalidArgument naming the last rule", len(many), err)
	}

	// The server still streams.
	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := sendRaw(sctx, cc, marshal(t, startMsg("current", nil))); err != nil {
		t.Fatalf("a start after the oversized ones: %v", err)
	}
}
