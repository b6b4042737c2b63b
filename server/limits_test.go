package server

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/internal/testkit"
	"github.com/vstream-cdc/vstream/vstreamer"
)

func TestMaxStreams(t *testing.T) {
	cc := dial(t, serve(t, dbConfig(), Options{Limits: Limits{MaxStreams: 1}}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := openStream(t, ctx, cc, startMsg("current", nil))
	if _, err := st.Recv(); err != nil {
		t.Fatal(err)
	}
	s := firstError(t, cc, context.Background(), startMsg("current", nil))
	if s.Code() != codes.ResourceExhausted || !strings.Contains(s.Message(), "1 concurrent streams") {
		t.Fatalf("second stream: %v %q", s.Code(), s.Message())
	}
	cancel()
	// The slot comes back when the first stream ends.
	testkit.WaitFor(t, 20*time.Second, "a free slot", func() bool {
		ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel2()
		st, err := vstreamv1.NewVStreamServiceClient(cc).Stream(ctx2)
		if err != nil {
			return false
		}
		st.Send(startMsg("current", nil))
		_, err = st.Recv()
		return err == nil
	})
}

// TestOnStreams: the count of open streams is told as streams open and end, a refused
// stream not counted.
func TestOnStreams(t *testing.T) {
	var mu sync.Mutex
	var counts []int
	last := func() int {
		mu.Lock()
		defer mu.Unlock()
		if len(counts) == 0 {
			return -1
		}
		return counts[len(counts)-1]
	}
	cc := dial(t, serve(t, dbConfig(), Options{Limits: Limits{MaxStreams: 1}, OnStreams: func(n int) {
		mu.Lock()
		defer mu.Unlock()
		counts = append(counts, n)
	}}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := openStream(t, ctx, cc, startMsg("current", nil))
	if _, err := st.Recv(); err != nil {
		t.Fatal(err)
	}
	if n := last(); n != 1 {
		t.Fatalf("open streams told %d with one stream open", n)
	}
	if s := firstError(t, cc, context.Background(), startMsg("current", nil)); s.Code() != codes.ResourceExhausted {
		t.Fatalf("second stream: %v", s)
	}
	cancel()
	testkit.WaitFor(t, 20*time.Second, "the stream's end told", func() bool { return last() == 0 })
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(counts, []int{1, 0}) {
		t.Errorf("open streams told %v, want [1 0]", counts)
	}
}

func TestStartRateAndBatchLimits(t *testing.T) {
	cc := dial(t, serve(t, dbConfig(), Options{Limits: Limits{StartsPerSecond: 0.01, StartsBurst: 2, MaxBatchBytes: 1 << 20}}))
	big := &vstreamv1.StreamRequest{Kind: &vstreamv1.StreamRequest_Start{Start: &vstreamv1.Start{
		Vgtid: &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Gtid: "current"}}},
		Flags: &vstreamv1.Flags{MaxBatchBytes: 2 << 20}}}}
	if s := firstError(t, cc, context.Background(), big); s.Code() != codes.ResourceExhausted || !strings.Contains(s.Message(), "max_batch_bytes") {
		t.Fatalf("batch limit: %v %q", s.Code(), s.Message())
	}
	// That was start 1 of a burst of 2; the next passes the rate limit, the third does not.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if s := firstError(t, cc, ctx, startMsg("current", nil)); s.Code() != codes.DeadlineExceeded {
		t.Fatalf("second start: %v %q", s.Code(), s.Message())
	}
	if s := firstError(t, cc, context.Background(), startMsg("current", nil)); s.Code() != codes.ResourceExhausted || !strings.Contains(s.Message(), "stream starts per second") {
		t.Fatalf("third start: %v %q", s.Code(), s.Message())
	}
}

// TestDrainEndsAtTransactionBoundary shuts a server down while a large transaction streams:
// the stream ends after its COMMIT with Unavailable, and a new server resumes it.
func TestDrainEndsAtTransactionBoundary(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE drain (id INT PRIMARY KEY, pad VARCHAR(200))")
	e, err := vstreamer.NewEngine(dbConfig())
	if err != nil {
		t.Fatal(err)
	}
	addr, srv := serveEngine(t, e, Options{})
	cc := dial(t, addr)
	st, err := vstreamv1.NewVStreamServiceClient(cc).Stream(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	st.Send(&vstreamv1.StreamRequest{Kind: &vstreamv1.StreamRequest_Start{Start: &vstreamv1.Start{
		Vgtid:  &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Gtid: "current"}}},
		Filter: &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "drain"}}},
		Flags:  &vstreamv1.Flags{MaxBatchBytes: 16 << 10}}}})
	if _, err := st.Recv(); err != nil {
		t.Fatal(err)
	}
	testkit.MustExec(t, db, "INSERT INTO drain SELECT seq, REPEAT('d', 200) FROM "+db.Seq(20000), "INSERT INTO drain VALUES (30000, 'after')")
	// Shut down once the big transaction has started arriving.
	var events []*binlogdata.VEvent
	for len(events) < 3 {
		resp, err := st.Recv()
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, resp.Events...)
	}
	go srv.Shutdown(context.Background())
	var end error
	for {
		resp, err := st.Recv()
		if err != nil {
			end = err
			break
		}
		events = append(events, resp.Events...)
	}
	if s := status.Convert(end); s.Code() != codes.Unavailable || !strings.Contains(s.Message(), "shutting down") {
		t.Fatalf("stream ended with %v %q, want Unavailable", s.Code(), s.Message())
	}
	n := len(events)
	if events[n-1].Type != binlogdata.VEventType_VGTID || events[n-2].Type != binlogdata.VEventType_COMMIT {
		t.Fatalf("stream did not end at a transaction boundary: last events %v %v", events[n-2].Type, events[n-1].Type)
	}
	first := map[string]bool{}
	for _, ev := range events {
		if ev.Type == binlogdata.VEventType_ROW {
			for _, rc := range ev.RowEvent.RowChanges {
				first[string(rc.After.Values[:rc.After.Lengths[0]])] = true
			}
		}
	}
	if len(first) < 20000 {
		t.Fatalf("the transaction in progress was cut: %d of 20000 rows", len(first))
	}
	// A new server resumes from the last VGTID with the rest, and nothing twice.
	testkit.MustExec(t, db, "INSERT INTO drain VALUES (30001, 'last')")
	cc2 := dial(t, serve(t, dbConfig(), Options{}))
	st2, err := vstreamv1.NewVStreamServiceClient(cc2).Stream(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	st2.Send(&vstreamv1.StreamRequest{Kind: &vstreamv1.StreamRequest_Start{Start: &vstreamv1.Start{
		Vgtid: events[n-1].Vgtid, Filter: &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "drain"}}}}}})
	for got := false; !got; {
		resp, err := st2.Recv()
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range resp.Events {
			if ev.Type != binlogdata.VEventType_ROW {
				continue
			}
			for _, rc := range ev.RowEvent.RowChanges {
				id := string(rc.After.Values[:rc.After.Lengths[0]])
				if first[id] {
					t.Fatalf("row %s arrived again after resuming", id)
				}
				got = got || id == "30001"
			}
		}
	}
}

func serveEngine(t *testing.T, e *vstreamer.Engine, opts Options) (string, *Server) {
	t.Helper()
	lis, err := netListen()
	if err != nil {
		t.Fatal(err)
	}
	s := New(e, opts)
	go s.GRPC().Serve(lis)
	t.Cleanup(s.GRPC().Stop)
	return lis.Addr().String(), s
}

// TestShutdownHealth: a draining server reports NOT_SERVING before it stops.
func TestShutdownHealth(t *testing.T) {
	e, err := vstreamer.NewEngine(dbConfig())
	if err != nil {
		t.Fatal(err)
	}
	_, srv := serveEngine(t, e, Options{})
	srv.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	srv.Shutdown(context.Background())
	resp, err := srv.health.Check(context.Background(), &healthpb.HealthCheckRequest{})
	if err != nil || resp.Status != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("health after shutdown: %v %v", resp, err)
	}
	// New streams are refused while draining.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.Stream(ctx, vstreamer.Request{Position: "current"}, func([]*binlogdata.VEvent) error { return nil }); !errors.Is(err, vstreamer.ErrShuttingDown) {
		t.Fatalf("stream after drain: %v", err)
	}
}
