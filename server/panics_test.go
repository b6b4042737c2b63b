package server

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/vstream-cdc/vstream/client"
	"github.com/vstream-cdc/vstream/gen/binlogdata"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/internal/faults"
	"github.com/vstream-cdc/vstream/internal/testkit"
	"github.com/vstream-cdc/vstream/vstreamer"
)

// logBuffer collects the server's log lines from every goroutine.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// faultServer serves the test database with its logs and metrics kept for the test.
func faultServer(t *testing.T) (addr string, srv *Server, reg *prometheus.Registry, logs *logBuffer) {
	t.Helper()
	logs = &logBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg := dbConfig()
	cfg.Logger = log
	e, err := vstreamer.NewEngine(cfg)
	if err != nil {
		t.Fatal(err)
	}
	reg = prometheus.NewRegistry()
	addr, srv = serveEngine(t, e, Options{Logger: log, Registerer: reg})
	return addr, srv, reg, logs
}

func oneTable(table, sel string) *binlogdata.Filter {
	return &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: table, Filter: sel}}}
}

func startOf(gtid string, f *binlogdata.Filter, format string, flags *vstreamv1.Flags) *vstreamv1.StreamRequest {
	return &vstreamv1.StreamRequest{Kind: &vstreamv1.StreamRequest_Start{Start: &vstreamv1.Start{
		Vgtid: &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Gtid: gtid}}}, Filter: f, Format: format, Flags: flags,
	}}}
}

// receiver reads a stream in the background and keeps what a consumer would: the rows of each
// table (native ROW events or encoded messages) and the error the stream ended with.
type receiver struct {
	mu        sync.Mutex
	responses int
	rows      map[string][]string // table -> ids (first cell) in arrival order
	messages  int
	done      chan struct{}
	err       error
}

func receive(st vstreamv1.VStreamService_StreamClient) *receiver {
	r := &receiver{rows: map[string][]string{}, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for {
			resp, err := st.Recv()
			r.mu.Lock()
			if err != nil {
				r.err = err
				r.mu.Unlock()
				return
			}
			r.responses++
			r.messages += len(resp.GetMessages())
			for _, ev := range resp.GetEvents() {
				if ev.GetType() != binlogdata.VEventType_ROW {
					continue
				}
				for _, rc := range ev.GetRowEvent().GetRowChanges() {
					r.rows[ev.GetRowEvent().GetTableName()] = append(r.rows[ev.GetRowEvent().GetTableName()], string(cells(rc.GetAfter())[0]))
				}
			}
			r.mu.Unlock()
		}
	}()
	return r
}

func (r *receiver) started() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.responses > 0
}

func (r *receiver) ids(table string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.rows[table]...)
}

func (r *receiver) messageCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.messages
}

// ended waits for the stream's end and returns its status.
func (r *receiver) ended(t *testing.T) *status.Status {
	t.Helper()
	select {
	case <-r.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the stream did not end")
	}
	return status.Convert(r.err)
}

// cells splits a row into its values.
func cells(row interface {
	GetLengths() []int64
	GetValues() []byte
}) [][]byte {
	var out [][]byte
	off := int64(0)
	for _, l := range row.GetLengths() {
		if l < 0 {
			out = append(out, nil)
			continue
		}
		out = append(out, row.GetValues()[off:off+l])
		off += l
	}
	return out
}

// TestPanicEndsOnlyItsStream makes one stream panic at each stage of the engine and the
// server while two other streams (native and encoded) run on the same server: the one stream
// ends with Internal naming the stage, table and position, its stack is logged and counted,
// and the others receive every row written before and after.
func TestPanicEndsOnlyItsStream(t *testing.T) {
	cases := []struct {
		point faults.Point
		stage string
		// start builds the failing stream's start for its table; copy streams copy it.
		gtid   string
		sel    func(table string) string
		format string
		flags  *vstreamv1.Flags
	}{
		{point: faults.Read, stage: vstreamer.StageRead, gtid: "current"},
		{point: faults.Decode, stage: vstreamer.StageStream, gtid: "current"},
		{point: faults.Filter, stage: vstreamer.StageStream, gtid: "current",
			sel: func(table string) string { return "select * from " + table + " where id > 0" }},
		{point: faults.Copy, stage: vstreamer.StageCopy, gtid: ""},
		{point: faults.Heartbeat, stage: vstreamer.StageHeartbeat, gtid: "",
			flags: &vstreamv1.Flags{HeartbeatInterval: durationpb.New(100 * time.Millisecond)}},
		{point: faults.Encode, stage: vstreamer.StageEncode, gtid: "current", format: "canal-json"},
	}
	for i, c := range cases {
		t.Run(string(c.point), func(t *testing.T) {
			victim, other := fmt.Sprintf("panic_v%d", i), fmt.Sprintf("panic_o%d", i)
			testkit.MustExec(t, db,
				"CREATE TABLE "+victim+" (id INT PRIMARY KEY, v VARCHAR(20))",
				"CREATE TABLE "+other+" (id INT PRIMARY KEY, v VARCHAR(20))",
				"INSERT INTO "+victim+" VALUES (1, 'a'), (2, 'b')")
			addr, _, reg, logs := faultServer(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			cc := dial(t, addr)
			native := receive(openStream(t, ctx, cc, startOf("current", oneTable(other, ""), "", nil)))
			encoded := receive(openStream(t, ctx, cc, startOf("current", oneTable(other, ""), "canal-json", nil)))
			testkit.WaitFor(t, 20*time.Second, "the other streams to start", func() bool { return native.started() && encoded.started() })

			restore := faults.Set(func(p faults.Point, table string, _ any) {
				if table != victim {
					return
				}
				if c.point == faults.Heartbeat && p == faults.Copy {
					// A slow read, so that a heartbeat goes out while it lasts.
					time.Sleep(400 * time.Millisecond)
				}
				if p == c.point {
					panic("injected fault at " + string(p))
				}
			})
			defer restore()
			sel := ""
			if c.sel != nil {
				sel = c.sel(victim)
			}
			failing := receive(openStream(t, ctx, cc, startOf(c.gtid, oneTable(victim, sel), c.format, c.flags)))
			testkit.MustExec(t, db, "INSERT INTO "+other+" VALUES (1, 'x')")
			if c.gtid != "" {
				testkit.WaitFor(t, 20*time.Second, "the failing stream to start", failing.started)
				testkit.MustExec(t, db, "INSERT INTO "+victim+" VALUES (3, 'c')")
			}
			st := failing.ended(t)
			if st.Code() != codes.Internal {
				t.Fatalf("failing stream ended with %v %q, want Internal", st.Code(), st.Message())
			}
			for _, want := range []string{"panic in " + c.stage, "table " + victim, afterPosition(), "injected fault"} {
				if !strings.Contains(st.Message(), want) {
					t.Errorf("message %q does not contain %q", st.Message(), want)
				}
			}

			// The others carry on: every row, before and after the panic.
			testkit.MustExec(t, db, "INSERT INTO "+other+" VALUES (2, 'y')", "INSERT INTO "+other+" VALUES (3, 'z')")
			testkit.WaitFor(t, 20*time.Second, "the native stream's rows", func() bool { return len(native.ids(other)) == 3 })
			testkit.WaitFor(t, 20*time.Second, "the encoded stream's rows", func() bool { return encoded.messageCount() == 3 })
			if got := native.ids(other); strings.Join(got, ",") != "1,2,3" {
				t.Errorf("native stream got rows %v, want 1,2,3", got)
			}

			if n := sample(t, reg, "vstream_stream_panics_total", map[string]string{"stage": c.stage}); n != 1 {
				t.Errorf("vstream_stream_panics_total{stage=%q} = %v, want 1", c.stage, n)
			}
			log := logs.String()
			stage := "stage=" + c.stage
			if strings.Contains(c.stage, " ") {
				stage = "stage=" + strconv.Quote(c.stage)
			}
			for _, want := range []string{"stream panicked", stage, "table=" + victim, "goroutine ", "panic=\"injected fault"} {
				if !strings.Contains(log, want) {
					t.Errorf("log lacks %q:\n%s", want, log)
				}
			}
		})
	}
}

// poisonCase makes one value of one row fail for real: the hook hands the decoder or encoder
// a value it cannot read, and the error takes the path a genuine one would.
type poisonCase struct {
	name   string
	point  faults.Point
	ddl    string
	gtid   string
	format string
	// spoil makes the row with id 2 undecodable or unencodable.
	spoil func(data any)
	// want is in the error message, besides the table.
	want []string
}

var poisonCases = []poisonCase{
	{
		name: "binlog row", point: faults.Decode, gtid: "current", ddl: "(id INT PRIMARY KEY, v VARCHAR(20))",
		spoil: func(data any) {
			// The rows' bytes of one insert: the null bitmap, id (INT) and v (VARCHAR), whose
			// length is made to run past the event. The event is shared: a copy is spoiled.
			body := data.(*[]byte)
			if b := *body; len(b) > 5 && binary.LittleEndian.Uint32(b[1:]) == 2 {
				spoiled := slices.Clone(b)
				spoiled[5] = 0xff
				*body = spoiled
			}
		},
		want: []string{"column v", "rows event ends inside a value", "(binlog "},
	},
	{
		name: "copied row", point: faults.Copy, gtid: "", ddl: "(id INT PRIMARY KEY, v DOUBLE)",
		spoil: func(data any) {
			row := data.([]mysql.FieldValue)
			if fmt.Sprint(row[0].Value()) == "2" {
				row[1] = mysql.NewFieldValue(mysql.FieldValueTypeString, 0, []byte("not a number"))
			}
		},
		want: []string{"column v", `copied row with key ("2")`, "not a number"},
	},
	{
		name: "encoded row", point: faults.Encode, gtid: "current", format: "canal-json", ddl: "(id INT PRIMARY KEY, v VARCHAR(20))",
		spoil: func(data any) {
			for _, rc := range data.(*binlogdata.VEvent).GetRowEvent().GetRowChanges() {
				if r := rc.GetAfter(); r != nil && string(cells(r)[0]) == "2" {
					r.Lengths[1] = 1000 // the value runs past the row
				}
			}
		},
		want: []string{"column v", "(binlog "},
	},
}

// runPoison writes rows 1, 2, 3 (2 spoiled) through a stream of mode and returns what the
// stream received and how it ended.
func runPoison(t *testing.T, c poisonCase, table, mode string) (*receiver, *prometheus.Registry) {
	t.Helper()
	testkit.MustExec(t, db, "CREATE TABLE "+table+" "+c.ddl)
	if c.gtid == "" {
		testkit.MustExec(t, db, "INSERT INTO "+table+" VALUES (1, 1), (2, 2), (3, 3)")
	}
	addr, _, reg, _ := faultServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	restore := faults.Set(func(p faults.Point, tbl string, data any) {
		if p == c.point && tbl == table {
			c.spoil(data)
		}
	})
	t.Cleanup(restore)
	r := receive(openStream(t, ctx, dial(t, addr), startOf(c.gtid, oneTable(table, ""), c.format,
		&vstreamv1.Flags{EventProcessingFailureHandlingMode: mode})))
	if c.gtid != "" {
		testkit.WaitFor(t, 20*time.Second, "the stream to start", r.started)
		for i := 1; i <= 3; i++ {
			testkit.MustExec(t, db, fmt.Sprintf("INSERT INTO %s VALUES (%d, %d)", table, i, i))
		}
	}
	return r, reg
}

// afterPosition is how a stream's error names where it was: a position of the server's flavor.
func afterPosition() string { return "after position " + db.PositionFlavor() + "/" }

// TestPoisonEventFails: a row that cannot be decoded or encoded ends the stream with
// FailedPrecondition naming its position, table and column; it is counted.
func TestPoisonEventFails(t *testing.T) {
	for i, c := range poisonCases {
		t.Run(c.name, func(t *testing.T) {
			table := fmt.Sprintf("poison_f%d", i)
			r, reg := runPoison(t, c, table, "")
			st := r.ended(t)
			if st.Code() != codes.FailedPrecondition {
				t.Fatalf("stream ended with %v %q, want FailedPrecondition", st.Code(), st.Message())
			}
			for _, want := range append([]string{"table " + table, "event_processing_failure_handling_mode", afterPosition()}, c.want...) {
				if !strings.Contains(st.Message(), want) {
					t.Errorf("message %q does not contain %q", st.Message(), want)
				}
			}
			t.Log(st.Message())
			if n := sample(t, reg, "vstream_poison_events_total", map[string]string{"action": "failed"}); n != 1 {
				t.Errorf("vstream_poison_events_total{action=failed} = %v, want 1", n)
			}
		})
	}
}

// TestPoisonEventSkipped: with warn or skip, the stream goes past the row: the rows before and
// after it arrive, and the skip is counted.
func TestPoisonEventSkipped(t *testing.T) {
	for i, c := range poisonCases {
		for _, mode := range []string{vstreamer.FailWarn, vstreamer.FailSkip} {
			t.Run(c.name+"/"+mode, func(t *testing.T) {
				table := fmt.Sprintf("poison_s%d_%s", i, mode)
				r, reg := runPoison(t, c, table, mode)
				if c.format != "" {
					testkit.WaitFor(t, 20*time.Second, "two messages", func() bool { return r.messageCount() >= 2 })
				} else {
					testkit.WaitFor(t, 20*time.Second, "two rows", func() bool { return len(r.ids(table)) >= 2 })
					if got := strings.Join(r.ids(table), ","); got != "1,3" {
						t.Errorf("rows %s, want 1,3", got)
					}
				}
				testkit.WaitFor(t, 20*time.Second, "the skip to be counted", func() bool {
					return sample(t, reg, "vstream_poison_events_total", map[string]string{"action": "skipped"}) == 1
				})
				// The stream is still running.
				r.mu.Lock()
				err := r.err
				r.mu.Unlock()
				if err != nil {
					t.Fatalf("stream ended: %v", err)
				}
			})
		}
	}
}

// TestPoisonStopsClient: the Go client returns the poison error at once instead of
// reconnecting to meet it again.
func TestPoisonStopsClient(t *testing.T) {
	c := poisonCases[0]
	table := "poison_client"
	testkit.MustExec(t, db, "CREATE TABLE "+table+" "+c.ddl)
	addr, srv, _, _ := faultServer(t)
	restore := faults.Set(func(p faults.Point, tbl string, data any) {
		if p == c.point && tbl == table {
			c.spoil(data)
		}
	})
	defer restore()
	cl, err := client.Dial(addr, client.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	started := make(chan struct{})
	var once sync.Once
	errc := make(chan error, 1)
	go func() {
		errc <- cl.Stream(ctx, client.Request{Filter: oneTable(table, "")}, func(context.Context, []*binlogdata.VEvent) error {
			once.Do(func() { close(started) })
			return nil
		})
	}()
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("stream did not start")
	}
	testkit.MustExec(t, db, "INSERT INTO "+table+" VALUES (1, 'a')", "INSERT INTO "+table+" VALUES (2, 'b')")
	select {
	case err = <-errc:
	case <-time.After(30 * time.Second):
		t.Fatal("the client is still streaming: it retried the poison event")
	}
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "column v") {
		t.Fatalf("client returned %v, want FailedPrecondition naming column v", err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatal(err)
	}
	t.Log(err)
	if n := srv.streamIDs.Load(); n != 1 {
		t.Errorf("the client started %d streams, want 1 (no retry)", n)
	}
}

// TestFailureModeInvalid: an unknown mode is refused up front.
func TestFailureModeInvalid(t *testing.T) {
	addr, _, _, _ := faultServer(t)
	st := firstError(t, dial(t, addr), context.Background(),
		startOf("current", nil, "", &vstreamv1.Flags{EventProcessingFailureHandlingMode: "ignore"}))
	if st.Code() != codes.InvalidArgument || !strings.Contains(st.Message(), "want fail, warn or skip") {
		t.Fatalf("got %v %q", st.Code(), st.Message())
	}
}

// TestUndecodableBinlogEvent: a rows event go-mysql cannot decode (its bytes spoiled before
// decoding, in the live reader) ends the stream with FailedPrecondition naming the event and
// where it starts, even when the stream asked to skip poison events: the reader cannot
// go past it.
func TestUndecodableBinlogEvent(t *testing.T) {
	for _, mode := range []string{"", vstreamer.FailSkip} {
		t.Run("mode="+mode, func(t *testing.T) {
			table := "undecodable_" + mode
			if mode == "" {
				table += "fail"
			}
			testkit.MustExec(t, db, "CREATE TABLE "+table+" (id INT PRIMARY KEY, v VARCHAR(20))")
			addr, _, reg, _ := faultServer(t)
			restore := faults.Set(func(p faults.Point, tbl string, data any) {
				if p == faults.Parse && tbl == table {
					// A table id no table map gave. (Cutting the rows short fails too, but
					// go-mysql then formats its event state while the stream reads it.)
					body := append([]byte(nil), *data.(*[]byte)...)
					copy(body, []byte{0xfe, 0xff, 0xff, 0xff, 0xff, 0x00})
					*data.(*[]byte) = body
				}
			})
			defer restore()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			r := receive(openStream(t, ctx, dial(t, addr), startOf("current", oneTable(table, ""), "",
				&vstreamv1.Flags{EventProcessingFailureHandlingMode: mode})))
			testkit.WaitFor(t, 20*time.Second, "the stream to start", r.started)
			testkit.MustExec(t, db, "INSERT INTO "+table+" VALUES (1, 'abcdef')")
			st := r.ended(t)
			t.Log(st.Message())
			if st.Code() != codes.FailedPrecondition {
				t.Fatalf("stream ended with %v %q, want FailedPrecondition", st.Code(), st.Message())
			}
			// The table is named when the reader has its table map, which go-mysql may
			// hand out after the error.
			for _, want := range []string{"binlog event cannot be decoded", "invalid table id 1099511627774", "RowsEvent", "(binlog binlog.", "cannot be skipped"} {
				if !strings.Contains(st.Message(), want) {
					t.Errorf("message %q does not contain %q", st.Message(), want)
				}
			}
			if len(st.Message()) > 2000 {
				t.Errorf("message is %d bytes: the event's bytes are in it", len(st.Message()))
			}
			if n := sample(t, reg, "vstream_poison_events_total", map[string]string{"action": "failed"}); n != 1 {
				t.Errorf("vstream_poison_events_total{action=failed} = %v, want 1", n)
			}
		})
	}
}

// TestAckReaderPanic: a panic while reading a stream's acks ends that stream with Internal
// (not OK, though the engine only sees its context cancelled), logged and counted.
func TestAckReaderPanic(t *testing.T) {
	addr, _, reg, logs := faultServer(t)
	restore := faults.Set(func(p faults.Point, _ string, _ any) {
		if p == faults.Ack {
			panic("injected fault at ack")
		}
	})
	defer restore()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := openStream(t, ctx, dial(t, addr), startOf("current", nil, "", nil))
	resp, err := st.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var pos *binlogdata.VGtid
	for _, ev := range resp.GetEvents() {
		if ev.GetType() == binlogdata.VEventType_VGTID {
			pos = ev.GetVgtid()
		}
	}
	if err := st.Send(&vstreamv1.StreamRequest{Kind: &vstreamv1.StreamRequest_Ack{Ack: &vstreamv1.Ack{Vgtid: pos}}}); err != nil {
		t.Fatal(err)
	}
	r := receive(st)
	s := r.ended(t)
	if s.Code() != codes.Internal || !strings.Contains(s.Message(), "panic in ack reader") {
		t.Fatalf("stream ended with %v %q, want Internal naming the ack reader", s.Code(), s.Message())
	}
	if n := sample(t, reg, "vstream_stream_panics_total", map[string]string{"stage": "ack reader"}); n != 1 {
		t.Errorf("vstream_stream_panics_total{stage=ack reader} = %v, want 1", n)
	}
	if !strings.Contains(logs.String(), "goroutine ") {
		t.Errorf("no stack in the log:\n%s", logs.String())
	}
}

// TestHandlerPanic: the recovery interceptor's answer to a panic on a call's own goroutine is
// Internal, with the stack logged and the panic counted.
func TestHandlerPanic(t *testing.T) {
	logs := &logBuffer{}
	reg := prometheus.NewRegistry()
	e, err := vstreamer.NewEngine(dbConfig())
	if err != nil {
		t.Fatal(err)
	}
	s := New(e, Options{Logger: slog.New(slog.NewTextHandler(logs, nil)), Registerer: reg})
	err = s.handlerPanic(context.Background(), "injected")
	if status.Code(err) != codes.Internal || !strings.Contains(err.Error(), "panic in handler: injected") {
		t.Fatalf("got %v", err)
	}
	if n := sample(t, reg, "vstream_stream_panics_total", map[string]string{"stage": "handler"}); n != 1 {
		t.Errorf("vstream_stream_panics_total{stage=handler} = %v, want 1", n)
	}
	if !strings.Contains(logs.String(), "TestHandlerPanic") {
		t.Errorf("no stack in the log:\n%s", logs.String())
	}
}
