package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/vstream-cdc/vstream/client"
	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/internal/render"
	"github.com/vstream-cdc/vstream/server"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestParseArgs(t *testing.T) {
	current := &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Gtid: "current"}}}
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		want    *config
		wantErr string // "" for success; "usage" for a reported flag error
	}{
		{
			name: "defaults",
			want: &config{server: defaultServer, request: client.Request{Position: current}},
		},
		{
			name: "environment",
			env:  map[string]string{"VSTREAM_SERVER": "db1:15991", "VSTREAM_TOKEN": "t0k"},
			want: &config{server: "db1:15991", token: "t0k", request: client.Request{Position: current}},
		},
		{
			name: "flags beat environment",
			args: []string{"--server", "db2:1", "--token", "flag"},
			env:  map[string]string{"VSTREAM_SERVER": "db1:15991", "VSTREAM_TOKEN": "t0k"},
			want: &config{server: "db2:1", token: "flag", request: client.Request{Position: current}},
		},
		{
			name: "everything",
			args: []string{
				"--position", "MariaDB/0-1-100", "--keyspace", "demo", "--tables", "t1,/^t2",
				"--format", "vevent", "--max-events", "10", "--timeout", "5s", "--heartbeat", "1s",
			},
			want: &config{
				server:    defaultServer,
				maxEvents: 10,
				timeout:   5 * time.Second,
				request: client.Request{
					Position: &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Keyspace: "demo", Gtid: "MariaDB/0-1-100"}}},
					Filter: &binlogdata.Filter{Rules: []*binlogdata.Rule{
						{Match: "t1"}, {Match: "/^t2"},
					}},
					HeartbeatInterval: time.Second,
					Format:            "vevent",
				},
			},
		},
		{
			name: "skip poison events",
			args: []string{"--event-processing-failure-handling-mode", "skip"},
			want: &config{server: defaultServer, request: client.Request{Position: current, FailureMode: "skip"}},
		},
		{
			name: "copy again when purged",
			args: []string{"--on-purged", "when_needed"},
			want: &config{server: defaultServer, request: client.Request{Position: current, WhenPurged: client.PurgedWhenNeeded}},
		},
		{
			name: "fail when purged",
			args: []string{"--on-purged", "fail"},
			want: &config{server: defaultServer, request: client.Request{Position: current}},
		},
		{name: "unknown purge choice", args: []string{"--on-purged", "always"}, wantErr: "want fail or when_needed"},
		{
			name:    "unknown failure mode",
			args:    []string{"--event-processing-failure-handling-mode", "ignore"},
			wantErr: "want fail, warn or skip",
		},
		{
			name: "filter json",
			args: []string{"-filter", `{"rules":[{"match":"t1","filter":"select id from t1"}]}`},
			want: &config{server: defaultServer, request: client.Request{
				Position: current,
				Filter:   &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "t1", Filter: "select id from t1"}}},
			}},
		},
		{
			name: "vgtid json position",
			args: []string{"--position", `{"type":"VGTID","vgtid":{"shardGtids":[{"keyspace":"demo","shard":"0","gtid":"MySQL56/3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5"}]}}`},
			want: &config{server: defaultServer, request: client.Request{
				Position: &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Keyspace: "demo", Shard: "0", Gtid: "MySQL56/3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5"}}},
			}},
		},
		{
			name: "file position",
			args: []string{"--position", "FilePos/mysql-bin.000003:1234", "--keyspace", "demo"},
			want: &config{server: defaultServer, request: client.Request{
				Position: &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Keyspace: "demo", Gtid: "FilePos/mysql-bin.000003:1234"}}},
			}},
		},
		{name: "bad file position", args: []string{"--position", "FilePos/mysql-bin.000003"}, wantErr: "want FilePos/<binlog file>:<offset>"},
		{name: "tables and filter", args: []string{"--tables", "t1", "--filter", `{"rules":[{"match":"t1"}]}`}, wantErr: "cannot be used together"},
		{name: "bad filter json", args: []string{"--filter", `{"rules":`}, wantErr: "--filter"},
		{name: "filter without rules", args: []string{"--filter", `{}`}, wantErr: "no rules"},
		{name: "filter rule without match", args: []string{"--filter", `{"rules":[{"filter":"exclude"}]}`}, wantErr: "no match"},
		{
			name: "output",
			args: []string{"--output", "text"},
			want: &config{server: defaultServer, output: render.Text, request: client.Request{Position: current}},
		},
		{name: "unknown output", args: []string{"--output", "yaml"}, wantErr: "want text, json or protojson"},
		{name: "bad position", args: []string{"--position", "0-1-100"}, wantErr: "--position"},
		{name: "negative max events", args: []string{"--max-events", "-1"}, wantErr: "--max-events"},
		{name: "negative timeout", args: []string{"--timeout", "-1s"}, wantErr: "--timeout"},
		{name: "empty server", args: []string{"--server", ""}, wantErr: "--server"},
		{name: "positional argument", args: []string{"extra"}, wantErr: "unexpected argument"},
		{name: "unknown flag", args: []string{"--nope"}, wantErr: "usage"},
		{name: "bad duration", args: []string{"--timeout", "soon"}, wantErr: "usage"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			got, err := parseArgs(tt.args, env(tt.env), &stderr)
			switch {
			case tt.wantErr == "usage":
				if !errors.Is(err, errReported) || stderr.Len() == 0 {
					t.Fatalf("parseArgs() = %v (stderr %q), want a reported usage error", err, stderr.String())
				}
				return
			case tt.wantErr != "":
				var ue *usageError
				if !errors.As(err, &ue) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parseArgs() = %v, want usage error containing %q", err, tt.wantErr)
				}
				return
			case err != nil:
				t.Fatalf("parseArgs(): %v", err)
			}
			if got.server != tt.want.server || got.token != tt.want.token || got.maxEvents != tt.want.maxEvents || got.timeout != tt.want.timeout ||
				got.output != tt.want.output {
				t.Errorf("config = %+v, want %+v", got, tt.want)
			}
			g, w := got.request, tt.want.request
			if !proto.Equal(g.Position, w.Position) || !proto.Equal(g.Filter, w.Filter) ||
				g.HeartbeatInterval != w.HeartbeatInterval || g.Format != w.Format || g.MaxBatchBytes != w.MaxBatchBytes ||
				g.FailureMode != w.FailureMode {
				t.Errorf("request = %+v, want %+v", g, w)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"-h"}, &stdout, &stderr); code != 0 {
		t.Errorf("exit %d, want 0", code)
	}
	// The usage names the subcommands, the outputs and an example of each common task.
	for _, want := range []string{"--tables RULES", "vstream tables", "vstream position", "--output text|json|protojson",
		"# tail a table", "# copy the tables first", "--position copy", "# save where you are, and resume", "# another format", "--format debezium-json"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("usage text lacks %q", want)
		}
	}
	// The --format help names every format the server offers.
	for _, f := range server.Formats {
		if !strings.Contains(stderr.String(), f) {
			t.Errorf("usage text does not name format %s", f)
		}
	}
}

// TestIsTerminal: a buffer, a pipe and a regular file are not terminals, so piped output is
// json and uncoloured.
func TestIsTerminal(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	f, err := os.Create(t.TempDir() + "/out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for name, out := range map[string]io.Writer{"buffer": &bytes.Buffer{}, "pipe": w, "file": f} {
		if isTerminal(out) {
			t.Errorf("%s is a terminal", name)
		}
	}
}

func TestUsageExitCode(t *testing.T) {
	for _, args := range [][]string{{"--nope"}, {"--tables", "a", "--filter", "{}"}} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), args, &stdout, &stderr); code != 2 {
			t.Errorf("run(%q) exit %d, want 2 (stderr %q)", args, code, stderr.String())
		}
	}
}

// TestUnreachableServerFails: with no server to reach, --timeout ends the stream with exit
// status 1 and the reason, not 0 as for a stream that ran until its deadline.
func TestUnreachableServerFails(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close() // nothing listens there now
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"--server", addr, "--timeout", "1s"}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "not connected") || !strings.Contains(stderr.String(), "connection refused") {
		t.Fatalf("exit %d, stderr %q; want 1 and the reason", code, stderr.String())
	}
}

// streamStarts are the starts of the stream itself, without those of the check of --tables
// (a copy in one-row chunks; see warnUnmatched).
func (s *fakeServer) streamStarts() []*vstreamv1.Start {
	var out []*vstreamv1.Start
	for _, st := range s.starts {
		if st.GetFlags().GetCopyChunkRows() != 1 {
			out = append(out, st)
		}
	}
	return out
}

type serverStream = grpc.BidiStreamingServer[vstreamv1.StreamRequest, vstreamv1.StreamResponse]

// fakeServer plays batches to every stream and then waits or fails.
type fakeServer struct {
	vstreamv1.UnimplementedVStreamServiceServer
	batches [][]*binlogdata.VEvent
	// responses are played before batches, for what batches cannot say (copy progress).
	responses []*vstreamv1.StreamResponse
	end       error

	mu     sync.Mutex
	starts []*vstreamv1.Start
	auth   []string
}

func (s *fakeServer) Stream(st serverStream) error {
	req, err := st.Recv()
	if err != nil {
		return err
	}
	md, _ := metadata.FromIncomingContext(st.Context())
	s.mu.Lock()
	s.starts = append(s.starts, req.GetStart())
	s.auth = append(s.auth, md.Get("authorization")...)
	s.mu.Unlock()
	for _, r := range s.responses {
		if err := st.Send(r); err != nil {
			return err
		}
	}
	for _, b := range s.batches {
		if err := st.Send(&vstreamv1.StreamResponse{Events: b}); err != nil {
			return err
		}
	}
	if s.end != nil {
		return s.end
	}
	<-st.Context().Done()
	return nil
}

func serve(t *testing.T, fs *fakeServer) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
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
	return lis.Addr().String()
}

func transaction() [][]*binlogdata.VEvent {
	e := func(typ binlogdata.VEventType) *binlogdata.VEvent {
		return &binlogdata.VEvent{Type: typ, Timestamp: 1700000000, Keyspace: "demo", Shard: "0"}
	}
	field := e(binlogdata.VEventType_FIELD)
	field.FieldEvent = &binlogdata.FieldEvent{TableName: "t1", Keyspace: "demo", Shard: "0", Fields: []*query.Field{{Name: "id", Type: query.Type_INT64}}}
	row := e(binlogdata.VEventType_ROW)
	row.RowEvent = &binlogdata.RowEvent{TableName: "t1", Keyspace: "demo", Shard: "0", RowChanges: []*binlogdata.RowChange{{
		After: &query.Row{Lengths: []int64{1}, Values: []byte("7")},
	}}}
	gtid := e(binlogdata.VEventType_GTID)
	gtid.Gtid = "MariaDB/0-1-5"
	vgtid := &binlogdata.VEvent{Type: binlogdata.VEventType_VGTID, Keyspace: "demo", Shard: "0", Vgtid: &binlogdata.VGtid{
		ShardGtids: []*binlogdata.ShardGtid{{Keyspace: "demo", Shard: "0", Gtid: "MariaDB/0-1-5"}},
	}}
	return [][]*binlogdata.VEvent{
		{e(binlogdata.VEventType_BEGIN), field, row},
		{gtid, e(binlogdata.VEventType_COMMIT), vgtid},
		{{Type: binlogdata.VEventType_HEARTBEAT, Timestamp: 1700000001}},
	}
}

var wantLines = []string{
	`{"type":"BEGIN","timestamp":"1700000000","keyspace":"demo","shard":"0"}`,
	`{"type":"FIELD","timestamp":"1700000000","fieldEvent":{"tableName":"t1","fields":[{"name":"id","type":"INT64"}],"keyspace":"demo","shard":"0"},"keyspace":"demo","shard":"0"}`,
	`{"type":"ROW","timestamp":"1700000000","rowEvent":{"tableName":"t1","rowChanges":[{"after":{"lengths":["1"],"values":"Nw=="}}],"keyspace":"demo","shard":"0"},"keyspace":"demo","shard":"0"}`,
	`{"type":"GTID","timestamp":"1700000000","gtid":"MariaDB/0-1-5","keyspace":"demo","shard":"0"}`,
	`{"type":"COMMIT","timestamp":"1700000000","keyspace":"demo","shard":"0"}`,
	`{"type":"VGTID","vgtid":{"shardGtids":[{"keyspace":"demo","shard":"0","gtid":"MariaDB/0-1-5"}]},"keyspace":"demo","shard":"0"}`,
	`{"type":"HEARTBEAT","timestamp":"1700000001"}`,
}

func TestRunMaxEvents(t *testing.T) {
	fs := &fakeServer{batches: transaction()}
	addr := serve(t, fs)
	t.Setenv("VSTREAM_SERVER", addr)
	t.Setenv("VSTREAM_TOKEN", "s3cret")

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := run(ctx, []string{"--output", "protojson", "--max-events", "5", "--tables", "t1", "--position", "MariaDB/0-1-4", "--keyspace", "demo"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr.String())
	}
	got := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
	if want := wantLines[:5]; strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("stdout:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, l := range got {
		if !json.Valid([]byte(l)) {
			t.Errorf("not JSON: %s", l)
		}
	}

	fs.mu.Lock()
	defer fs.mu.Unlock()
	starts := fs.streamStarts()
	if len(starts) != 1 {
		t.Fatalf("server saw %d starts, want 1", len(starts))
	}
	s := starts[0]
	if g := s.GetVgtid().GetShardGtids(); len(g) != 1 || g[0].GetGtid() != "MariaDB/0-1-4" || g[0].GetKeyspace() != "demo" {
		t.Errorf("start position = %v", s.GetVgtid())
	}
	if r := s.GetFilter().GetRules(); len(r) != 1 || r[0].GetMatch() != "t1" {
		t.Errorf("start filter = %v", s.GetFilter())
	}
	// The stream and the check of --tables each send the token.
	if len(fs.auth) != 2 || fs.auth[0] != "Bearer s3cret" || fs.auth[1] != "Bearer s3cret" {
		t.Errorf("authorization = %q", fs.auth)
	}
}

// The printed VGTID line is a position the command accepts back.
func TestRunResumeFromPrintedVGTID(t *testing.T) {
	fs := &fakeServer{batches: transaction()}
	addr := serve(t, fs)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := run(ctx, []string{"--server", addr, "--max-events", "1", "--position", wantLines[5]}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr.String())
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if g := fs.starts[0].GetVgtid().GetShardGtids(); len(g) != 1 || g[0].GetGtid() != "MariaDB/0-1-5" || g[0].GetShard() != "0" {
		t.Errorf("start position = %v", fs.starts[0].GetVgtid())
	}
}

func TestRunTimeout(t *testing.T) {
	addr := serve(t, &fakeServer{batches: transaction()})
	var stdout, stderr bytes.Buffer
	start := time.Now()
	code := run(context.Background(), []string{"--output", "protojson", "--server", addr, "--timeout", "300ms"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr.String())
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
	if got := strings.Count(stdout.String(), "\n"); got != len(wantLines) {
		t.Errorf("printed %d lines, want %d:\n%s", got, len(wantLines), stdout.String())
	}
}

func TestRunCancel(t *testing.T) {
	addr := serve(t, &fakeServer{batches: transaction()})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	var stdout, stderr bytes.Buffer
	if code := run(ctx, []string{"--server", addr}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr.String())
	}
}

func TestRunPermanentError(t *testing.T) {
	addr := serve(t, &fakeServer{end: status.Error(codes.InvalidArgument, "unknown table t9")})
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"--server", addr, "--tables", "t9", "--timeout", "10s"}, &stdout, &stderr)
	if code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	if !strings.Contains(stderr.String(), "unknown table t9") {
		t.Errorf("stderr = %q", stderr.String())
	}
}

// TestRunPoisonEvent: a stream the server ended on an event it cannot process exits with the
// server's message (which names the table and column) after one attempt, and the failure mode
// asked for on the command line reaches the server.
func TestRunPoisonEvent(t *testing.T) {
	msg := "event cannot be processed: table t1, column v, after position MariaDB/0-1-5: column v: unsupported binlog value"
	fs := &fakeServer{batches: transaction(), end: status.Error(codes.FailedPrecondition, msg)}
	addr := serve(t, fs)
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"--server", addr, "--tables", "t1", "--timeout", "20s",
		"--event-processing-failure-handling-mode", "fail"}, &stdout, &stderr)
	if code != 1 {
		t.Fatalf("exit %d, want 1; stderr:\n%s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "table t1, column v") {
		t.Errorf("stderr = %q", stderr.String())
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	starts := fs.streamStarts()
	if len(starts) != 1 {
		t.Fatalf("%d starts, want 1: the CLI retried a poison event", len(starts))
	}
	if m := starts[0].GetFlags().GetEventProcessingFailureHandlingMode(); m != "fail" {
		t.Errorf("failure mode sent = %q, want fail", m)
	}
}
