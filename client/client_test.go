package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v5"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/proto"

	"github.com/vstream-cdc/vstream/client"
	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

type serverStream = grpc.BidiStreamingServer[vstreamv1.StreamRequest, vstreamv1.StreamResponse]

// script is what the fake server does on one stream; attempt counts from 0.
type script func(attempt int, st serverStream) error

// fakeServer is a VStreamService that records what clients send and plays a script.
type fakeServer struct {
	vstreamv1.UnimplementedVStreamServiceServer
	play script

	mu     sync.Mutex
	starts []*vstreamv1.Start
	md     []metadata.MD
	acks   chan *binlogdata.VGtid
}

func (s *fakeServer) Stream(st serverStream) error {
	req, err := st.Recv()
	if err != nil {
		return err
	}
	if req.GetStart() == nil {
		return status.Error(codes.InvalidArgument, "first message must be a start")
	}
	md, _ := metadata.FromIncomingContext(st.Context())
	s.mu.Lock()
	attempt := len(s.starts)
	s.starts = append(s.starts, req.GetStart())
	s.md = append(s.md, md)
	s.mu.Unlock()

	// Ends with the stream: Recv fails once the handler has returned.
	go func() {
		for {
			req, err := st.Recv()
			if err != nil {
				return
			}
			if a := req.GetAck(); a != nil {
				select {
				case s.acks <- a.GetVgtid():
				default:
				}
			}
		}
	}()
	return s.play(attempt, st)
}

func (s *fakeServer) Starts() []*vstreamv1.Start {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*vstreamv1.Start(nil), s.starts...)
}

// serve runs a fake server on an in-memory listener and returns a client for it.
func serve(t *testing.T, play script, opts client.Options) (*fakeServer, *client.Client) {
	t.Helper()
	fs := &fakeServer{play: play, acks: make(chan *binlogdata.VGtid, 100)}
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer()
	vstreamv1.RegisterVStreamServiceServer(srv, fs)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(lis)
	}()
	t.Cleanup(func() {
		srv.Stop()
		<-done
	})

	opts.DialOptions = append(opts.DialOptions, grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
		return lis.DialContext(ctx)
	}))
	if opts.Backoff == nil {
		opts.Backoff = func() backoff.BackOff { return backoff.NewConstantBackOff(time.Millisecond) }
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	c, err := client.Dial("passthrough:///bufnet", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return fs, c
}

func vgtid(gtid string) *binlogdata.VGtid {
	return &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Keyspace: "demo", Shard: "0", Gtid: gtid}}}
}

func ev(t binlogdata.VEventType) *binlogdata.VEvent {
	return &binlogdata.VEvent{Type: t, Keyspace: "demo", Shard: "0"}
}

func vgtidEvent(v *binlogdata.VGtid) *binlogdata.VEvent {
	e := ev(binlogdata.VEventType_VGTID)
	e.Vgtid = v
	return e
}

func rowEvent(id string) *binlogdata.VEvent {
	e := ev(binlogdata.VEventType_ROW)
	e.RowEvent = &binlogdata.RowEvent{TableName: "t1", RowChanges: []*binlogdata.RowChange{{
		After: &query.Row{Lengths: []int64{int64(len(id))}, Values: []byte(id)},
	}}}
	return e
}

// txn is one transaction as the server sends it.
func txn(id string, pos *binlogdata.VGtid) []*binlogdata.VEvent {
	field := ev(binlogdata.VEventType_FIELD)
	field.FieldEvent = &binlogdata.FieldEvent{TableName: "t1", Fields: []*query.Field{{Name: "id", Type: query.Type_INT64}}}
	gtid := ev(binlogdata.VEventType_GTID)
	gtid.Gtid = pos.GetShardGtids()[0].GetGtid()
	return []*binlogdata.VEvent{
		ev(binlogdata.VEventType_BEGIN), field, rowEvent(id), gtid,
		ev(binlogdata.VEventType_COMMIT), vgtidEvent(pos),
	}
}

func ddl(pos *binlogdata.VGtid) []*binlogdata.VEvent {
	gtid := ev(binlogdata.VEventType_GTID)
	gtid.Gtid = pos.GetShardGtids()[0].GetGtid()
	d := ev(binlogdata.VEventType_DDL)
	d.Statement = "alter table t1 add column c int"
	return []*binlogdata.VEvent{gtid, d, vgtidEvent(pos)}
}

func send(st serverStream, events ...*binlogdata.VEvent) error {
	return st.Send(&vstreamv1.StreamResponse{Events: events})
}

// idle keeps a stream open until the client goes away.
func idle(st serverStream) error {
	<-st.Context().Done()
	return st.Context().Err()
}

// recorder is a Handler that keeps every event and cancels once it has seen stopAfter.
type recorder struct {
	mu        sync.Mutex
	events    []*binlogdata.VEvent
	stopAfter func(*binlogdata.VEvent) bool
	cancel    context.CancelFunc
}

func (r *recorder) handle(_ context.Context, events []*binlogdata.VEvent) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range events {
		r.events = append(r.events, proto.CloneOf(e))
		if r.stopAfter != nil && r.stopAfter(e) {
			r.cancel()
		}
	}
	return nil
}

// summary renders events compactly: types, with row ids and VGTID gtids.
func summary(events []*binlogdata.VEvent) string {
	var parts []string
	for _, e := range events {
		s := e.GetType().String()
		switch e.GetType() {
		case binlogdata.VEventType_ROW:
			s += "(" + string(e.GetRowEvent().GetRowChanges()[0].GetAfter().GetValues()) + ")"
		case binlogdata.VEventType_VGTID:
			s += "(" + e.GetVgtid().GetShardGtids()[0].GetGtid() + ")"
		case binlogdata.VEventType_ROLLBACK:
			s += "(" + e.GetKeyspace() + "/" + e.GetShard() + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

func isVGTID(gtid string) func(*binlogdata.VEvent) bool {
	return func(e *binlogdata.VEvent) bool {
		return e.GetType() == binlogdata.VEventType_VGTID && e.GetVgtid().GetShardGtids()[0].GetGtid() == gtid
	}
}

func TestResume(t *testing.T) {
	p1 := vgtid("MariaDB/0-1-1")
	// The server may attach table positions; they must go back untouched.
	p1.ShardGtids[0].TablePKs = []*binlogdata.TableLastPK{{TableName: "t1", Lastpk: &query.QueryResult{
		Fields: []*query.Field{{Name: "id", Type: query.Type_INT64}},
		Rows:   []*query.Row{{Lengths: []int64{1}, Values: []byte("7")}},
	}}}
	p2 := vgtid("MariaDB/0-1-2")
	p3 := vgtid("MariaDB/0-1-3")
	unavailable := status.Error(codes.Unavailable, "binlog reader restarting")

	tests := []struct {
		name string
		// first attempt's events after the committed transaction p1, in batches
		broken [][]*binlogdata.VEvent
		// second attempt's events
		resumed []*binlogdata.VEvent
		want    string
	}{
		{
			name:    "mid transaction",
			broken:  [][]*binlogdata.VEvent{{ev(binlogdata.VEventType_BEGIN)}, {ev(binlogdata.VEventType_FIELD), rowEvent("2")}},
			resumed: txn("2", p2),
			want: "BEGIN FIELD ROW(1) GTID COMMIT VGTID(MariaDB/0-1-1) BEGIN FIELD ROW(2) ROLLBACK(demo/0) " +
				"BEGIN FIELD ROW(2) GTID COMMIT VGTID(MariaDB/0-1-2)",
		},
		{
			name:    "before commit's vgtid",
			broken:  [][]*binlogdata.VEvent{txn("2", p2)[:5]},
			resumed: txn("2", p2),
			want: "BEGIN FIELD ROW(1) GTID COMMIT VGTID(MariaDB/0-1-1) BEGIN FIELD ROW(2) GTID COMMIT ROLLBACK(demo/0) " +
				"BEGIN FIELD ROW(2) GTID COMMIT VGTID(MariaDB/0-1-2)",
		},
		{
			name:    "between gtid and ddl",
			broken:  [][]*binlogdata.VEvent{ddl(p2)[:1]},
			resumed: ddl(p2),
			want:    "BEGIN FIELD ROW(1) GTID COMMIT VGTID(MariaDB/0-1-1) GTID ROLLBACK(demo/0) GTID DDL VGTID(MariaDB/0-1-2)",
		},
		{
			name:    "at a boundary",
			broken:  [][]*binlogdata.VEvent{{ev(binlogdata.VEventType_HEARTBEAT)}},
			resumed: txn("2", p2),
			want:    "BEGIN FIELD ROW(1) GTID COMMIT VGTID(MariaDB/0-1-1) HEARTBEAT BEGIN FIELD ROW(2) GTID COMMIT VGTID(MariaDB/0-1-2)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs, c := serve(t, func(attempt int, st serverStream) error {
				switch attempt {
				case 0:
					if err := send(st, txn("1", p1)...); err != nil {
						return err
					}
					for _, b := range tt.broken {
						if err := send(st, b...); err != nil {
							return err
						}
					}
					return unavailable
				case 1:
					if err := send(st, tt.resumed...); err != nil {
						return err
					}
					// Stray events after the stop point must not matter.
					if err := send(st, txn("3", p3)...); err != nil {
						return err
					}
					return idle(st)
				}
				return status.Error(codes.Internal, "unexpected attempt")
			}, client.Options{})

			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			rec := &recorder{stopAfter: isVGTID("MariaDB/0-1-2"), cancel: cancel}
			err := c.Stream(ctx, client.Request{Position: vgtid("MariaDB/0-1-0")}, rec.handle)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Stream() = %v, want context.Canceled", err)
			}
			if got := summary(rec.events[:min(len(rec.events), strings.Count(tt.want, " ")+1)]); got != tt.want {
				t.Errorf("events:\n got %s\nwant %s", got, tt.want)
			}
			starts := fs.Starts()
			if len(starts) != 2 {
				t.Fatalf("server saw %d starts, want 2", len(starts))
			}
			if !proto.Equal(starts[0].GetVgtid(), vgtid("MariaDB/0-1-0")) {
				t.Errorf("first start position = %v", starts[0].GetVgtid())
			}
			if !proto.Equal(starts[1].GetVgtid(), p1) {
				t.Errorf("second start position = %v, want %v", starts[1].GetVgtid(), p1)
			}
			if got := c.LastPosition(); !proto.Equal(got, p2) && !proto.Equal(got, p3) {
				t.Errorf("LastPosition() = %v, want %v (or %v)", got, p2, p3)
			}
		})
	}
}

// A "current" start must be pinned to the first real position the server
// reports, or a reconnect would silently skip what happened in between.
func TestResumeFromCurrent(t *testing.T) {
	p1 := vgtid("MySQL56/3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5")
	fs, c := serve(t, func(attempt int, st serverStream) error {
		if attempt == 0 {
			if err := send(st, vgtidEvent(p1), ev(binlogdata.VEventType_BEGIN)); err != nil {
				return err
			}
			return status.Error(codes.Unavailable, "gone")
		}
		if err := send(st, ev(binlogdata.VEventType_HEARTBEAT)); err != nil {
			return err
		}
		return idle(st)
	}, client.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rec := &recorder{stopAfter: func(e *binlogdata.VEvent) bool { return e.GetType() == binlogdata.VEventType_HEARTBEAT }, cancel: cancel}
	pos, err := client.ParsePosition("current", "", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Stream(ctx, client.Request{Position: pos}, rec.handle); !errors.Is(err, context.Canceled) {
		t.Fatalf("Stream() = %v", err)
	}
	if got, want := summary(rec.events), "VGTID(MySQL56/3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5) BEGIN ROLLBACK(demo/0) HEARTBEAT"; got != want {
		t.Errorf("events:\n got %s\nwant %s", got, want)
	}
	starts := fs.Starts()
	if len(starts) != 2 || starts[0].GetVgtid().GetShardGtids()[0].GetGtid() != "current" || !proto.Equal(starts[1].GetVgtid(), p1) {
		t.Errorf("starts = %v", starts)
	}
}

func TestStartRequest(t *testing.T) {
	fs, c := serve(t, func(_ int, _ serverStream) error {
		return status.Error(codes.FailedPrecondition, "binlog_format is not ROW")
	}, client.Options{})
	filter := client.ParseTables("t1,/^t2")
	err := c.Stream(context.Background(), client.Request{
		Filter:            filter,
		HeartbeatInterval: 1500 * time.Millisecond,
		Format:            "vevent",
		MaxBatchBytes:     4096,
		EventTypes:        []binlogdata.VEventType{binlogdata.VEventType_ROW},
	}, func(context.Context, []*binlogdata.VEvent) error { return nil })
	if status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("Stream() = %v, want FailedPrecondition", err)
	}
	starts := fs.Starts()
	if len(starts) != 1 {
		t.Fatalf("server saw %d starts, want 1", len(starts))
	}
	s := starts[0]
	if got := s.GetVgtid().GetShardGtids(); len(got) != 1 || got[0].GetGtid() != "current" {
		t.Errorf("default position = %v, want current", s.GetVgtid())
	}
	if !proto.Equal(s.GetFilter(), filter) {
		t.Errorf("filter = %v, want %v", s.GetFilter(), filter)
	}
	if d := s.GetFlags().GetHeartbeatInterval().AsDuration(); d != 1500*time.Millisecond {
		t.Errorf("heartbeat = %v", d)
	}
	if s.GetFlags().GetMaxBatchBytes() != 4096 || s.GetFormat() != "vevent" ||
		len(s.GetFlags().GetEventTypes()) != 1 || s.GetFlags().GetEventTypes()[0] != binlogdata.VEventType_ROW {
		t.Errorf("start = %v", s)
	}
}

func TestPermanentErrors(t *testing.T) {
	for _, code := range []codes.Code{codes.InvalidArgument, codes.FailedPrecondition, codes.Unauthenticated, codes.Unimplemented, codes.PermissionDenied} {
		t.Run(code.String(), func(t *testing.T) {
			fs, c := serve(t, func(int, serverStream) error {
				return status.Error(code, "no")
			}, client.Options{})
			err := c.Stream(context.Background(), client.Request{}, func(context.Context, []*binlogdata.VEvent) error { return nil })
			if status.Code(err) != code {
				t.Fatalf("Stream() = %v, want code %v", err, code)
			}
			if n := len(fs.Starts()); n != 1 {
				t.Errorf("server saw %d attempts, want 1", n)
			}
		})
	}
}

func TestMaxRetries(t *testing.T) {
	tests := []struct {
		maxRetries int
		want       int
	}{
		{maxRetries: 3, want: 4},
		{maxRetries: 1, want: 2},
		{maxRetries: -1, want: 1},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.maxRetries), func(t *testing.T) {
			fs, c := serve(t, func(int, serverStream) error {
				return status.Error(codes.Unavailable, "down")
			}, client.Options{MaxRetries: tt.maxRetries})
			err := c.Stream(context.Background(), client.Request{}, func(context.Context, []*binlogdata.VEvent) error { return nil })
			if status.Code(err) != codes.Unavailable {
				t.Fatalf("Stream() = %v, want Unavailable", err)
			}
			if n := len(fs.Starts()); n != tt.want {
				t.Errorf("server saw %d attempts, want %d", n, tt.want)
			}
		})
	}
}

// Only failures in a row count: an attempt that delivers a batch resets the budget.
func TestMaxRetriesResetByProgress(t *testing.T) {
	fs, c := serve(t, func(attempt int, st serverStream) error {
		if attempt == 6 {
			return status.Error(codes.InvalidArgument, "done")
		}
		if attempt%2 == 0 {
			if err := send(st, ev(binlogdata.VEventType_HEARTBEAT)); err != nil {
				return err
			}
		}
		return status.Error(codes.Unavailable, "flaky")
	}, client.Options{MaxRetries: 2})
	err := c.Stream(context.Background(), client.Request{}, func(context.Context, []*binlogdata.VEvent) error { return nil })
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("Stream() = %v, want InvalidArgument", err)
	}
	if n := len(fs.Starts()); n != 7 {
		t.Errorf("server saw %d attempts, want 7", n)
	}
}

func TestServerEndsStream(t *testing.T) {
	fs, c := serve(t, func(attempt int, st serverStream) error {
		if attempt == 0 {
			return nil
		}
		return status.Error(codes.InvalidArgument, "stop")
	}, client.Options{})
	err := c.Stream(context.Background(), client.Request{}, func(context.Context, []*binlogdata.VEvent) error { return nil })
	if status.Code(err) != codes.InvalidArgument || len(fs.Starts()) != 2 {
		t.Fatalf("Stream() = %v after %d attempts, want a reconnect after the clean end", err, len(fs.Starts()))
	}
}

func TestAcks(t *testing.T) {
	p1, p2 := vgtid("MariaDB/0-1-1"), vgtid("MariaDB/0-1-2")
	release := make(chan struct{})
	fs, c := serve(t, func(_ int, st serverStream) error {
		if err := send(st, txn("1", p1)...); err != nil {
			return err
		}
		if err := send(st, txn("2", p2)...); err != nil {
			return err
		}
		return idle(st)
	}, client.Options{AckInterval: 5 * time.Millisecond})

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		batches := 0
		errc <- c.Stream(ctx, client.Request{}, func(ctx context.Context, _ []*binlogdata.VEvent) error {
			batches++
			if batches == 2 {
				// Holding the second batch: its VGtid is not processed yet.
				select {
				case <-release:
				case <-ctx.Done():
				}
			}
			return nil
		})
	}()

	next := func() *binlogdata.VGtid {
		select {
		case a := <-fs.acks:
			return a
		case <-ctx.Done():
			t.Fatal("no ack")
			return nil
		}
	}
	if a := next(); !proto.Equal(a, p1) {
		t.Fatalf("first ack = %v, want %v", a, p1)
	}
	select {
	case a := <-fs.acks:
		t.Fatalf("ack %v while the handler still held the batch", a)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if a := next(); !proto.Equal(a, p2) {
		t.Fatalf("second ack = %v, want %v", a, p2)
	}
	// Unchanged positions are not acknowledged again.
	select {
	case a := <-fs.acks:
		t.Fatalf("repeated ack %v", a)
	case <-time.After(50 * time.Millisecond):
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Stream() = %v", err)
	}
}

func TestAcksDisabled(t *testing.T) {
	p1 := vgtid("MariaDB/0-1-1")
	fs, c := serve(t, func(_ int, st serverStream) error {
		if err := send(st, txn("1", p1)...); err != nil {
			return err
		}
		return idle(st)
	}, client.Options{AckInterval: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go func() {
		time.Sleep(100 * time.Millisecond)
		cancel()
	}()
	_ = c.Stream(ctx, client.Request{}, func(context.Context, []*binlogdata.VEvent) error { return nil })
	select {
	case a := <-fs.acks:
		t.Fatalf("ack %v with acks disabled", a)
	default:
	}
}

func TestToken(t *testing.T) {
	for _, token := range []string{"s3cret", ""} {
		t.Run(token, func(t *testing.T) {
			fs, c := serve(t, func(int, serverStream) error {
				return status.Error(codes.Unauthenticated, "checked by the test")
			}, client.Options{Token: token})
			_ = c.Stream(context.Background(), client.Request{}, func(context.Context, []*binlogdata.VEvent) error { return nil })
			fs.mu.Lock()
			defer fs.mu.Unlock()
			got := fs.md[0].Get("authorization")
			switch {
			case token == "" && len(got) != 0:
				t.Errorf("authorization = %q, want none", got)
			case token != "" && (len(got) != 1 || got[0] != "Bearer "+token):
				t.Errorf("authorization = %q, want [Bearer %s]", got, token)
			}
		})
	}
}

func TestHandlerErrorStops(t *testing.T) {
	fs, c := serve(t, func(_ int, st serverStream) error {
		if err := send(st, txn("1", vgtid("MariaDB/0-1-1"))...); err != nil {
			return err
		}
		return idle(st)
	}, client.Options{})
	boom := errors.New("boom")
	err := c.Stream(context.Background(), client.Request{}, func(context.Context, []*binlogdata.VEvent) error { return boom })
	if err != boom {
		t.Fatalf("Stream() = %v, want the handler's error as is", err)
	}
	if n := len(fs.Starts()); n != 1 {
		t.Errorf("server saw %d attempts, want 1", n)
	}
	if c.LastPosition() != nil {
		t.Errorf("LastPosition() = %v, want nil: the batch was not processed", c.LastPosition())
	}
}

func TestCancelStopsCleanly(t *testing.T) {
	// Registered first so that it runs after the servers and clients are shut down.
	t.Cleanup(func() { goleak.VerifyNone(t) })
	fs, c := serve(t, func(_ int, st serverStream) error {
		for {
			if err := send(st, ev(binlogdata.VEventType_HEARTBEAT)); err != nil {
				return err
			}
			select {
			case <-st.Context().Done():
				return st.Context().Err()
			case <-time.After(time.Millisecond):
			}
		}
	}, client.Options{AckInterval: time.Millisecond})

	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	err := c.Stream(ctx, client.Request{}, func(context.Context, []*binlogdata.VEvent) error {
		if n++; n == 5 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) || errors.Is(err, client.ErrStreamDown) {
		t.Fatalf("Stream() = %v, want context.Canceled of a stream that was up", err)
	}
	if len(fs.Starts()) != 1 {
		t.Errorf("server saw %d attempts, want 1", len(fs.Starts()))
	}
	// Cancelling during the reconnect delay must not wait it out either.
	_, c2 := serve(t, func(int, serverStream) error {
		return status.Error(codes.Unavailable, "down")
	}, client.Options{Backoff: func() backoff.BackOff { return backoff.NewConstantBackOff(time.Hour) }})
	ctx2, cancel2 := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel2()
	start := time.Now()
	err = c2.Stream(ctx2, client.Request{}, func(context.Context, []*binlogdata.VEvent) error { return nil })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Stream() = %v, want context.DeadlineExceeded", err)
	}
	// The stream was down when the deadline came: the error says so, and why.
	if !errors.Is(err, client.ErrStreamDown) || status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "down") {
		t.Errorf("Stream() = %v, want ErrStreamDown with the server's Unavailable", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Stream took %v to notice the deadline", d)
	}
}

func TestIsRetryable(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{status.Error(codes.Unavailable, "x"), true},
		{fmt.Errorf("wrapped: %w", status.Error(codes.Unavailable, "x")), true},
		{status.Error(codes.ResourceExhausted, "x"), true},
		{status.Error(codes.Aborted, "x"), true},
		{status.Error(codes.Internal, "x"), true},
		{status.Error(codes.Unknown, "x"), true},
		{io.EOF, true},
		{status.Error(codes.InvalidArgument, "x"), false},
		{status.Error(codes.FailedPrecondition, "x"), false},
		{status.Error(codes.Unauthenticated, "x"), false},
		{status.Error(codes.PermissionDenied, "x"), false},
		{status.Error(codes.Unimplemented, "x"), false},
		{status.Error(codes.Canceled, "x"), false},
		{context.Canceled, false},
		{context.DeadlineExceeded, false},
		{errors.New("plain"), false},
	}
	for _, tt := range tests {
		if got := client.IsRetryable(tt.err); got != tt.want {
			t.Errorf("IsRetryable(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

// OnPosition hears each resume point of an encoded stream after OnMessages had the messages
// before it, and not the batches that end inside a transaction; a reconnect resumes from
// the last one it accepted, after a ROLLBACK for the messages delivered since.
func TestOnPosition(t *testing.T) {
	msg := func(v string) *vstreamv1.EncodedMessage {
		return &vstreamv1.EncodedMessage{Format: "canal-json", Value: []byte(v)}
	}
	fs, c := serve(t, func(attempt int, st serverStream) error {
		if attempt == 0 {
			if err := st.Send(&vstreamv1.StreamResponse{Messages: []*vstreamv1.EncodedMessage{msg("a1"), msg("a2")}, Position: vgtid("MariaDB/0-1-1")}); err != nil {
				return err
			}
			// A batch that ends inside a transaction carries no position.
			if err := st.Send(&vstreamv1.StreamResponse{Messages: []*vstreamv1.EncodedMessage{msg("b1")}}); err != nil {
				return err
			}
			return status.Error(codes.Unavailable, "gone")
		}
		if err := st.Send(&vstreamv1.StreamResponse{Messages: []*vstreamv1.EncodedMessage{msg("b1"), msg("b2")}, Position: vgtid("MariaDB/0-1-2")}); err != nil {
			return err
		}
		return idle(st)
	}, client.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var log []string
	err := c.Stream(ctx, client.Request{Format: "canal-json",
		OnMessages: func(_ context.Context, msgs []*vstreamv1.EncodedMessage) error {
			for _, m := range msgs {
				log = append(log, string(m.GetValue()))
			}
			return nil
		},
		OnPosition: func(_ context.Context, pos *binlogdata.VGtid) error {
			log = append(log, "@"+pos.GetShardGtids()[0].GetGtid())
			if len(log) > 6 {
				cancel()
			}
			return nil
		},
	}, func(_ context.Context, events []*binlogdata.VEvent) error {
		for _, e := range events {
			log = append(log, e.GetType().String())
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	want := "a1 a2 @MariaDB/0-1-1 b1 ROLLBACK b1 b2 @MariaDB/0-1-2"
	if got := strings.Join(log, " "); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if starts := fs.Starts(); len(starts) != 2 || starts[1].GetVgtid().GetShardGtids()[0].GetGtid() != "MariaDB/0-1-1" {
		t.Errorf("resumed from %v, want MariaDB/0-1-1", starts)
	}
}
