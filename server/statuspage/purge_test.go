package statuspage_test

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/internal/testkit"
	"github.com/vstream-cdc/vstream/server"
	"github.com/vstream-cdc/vstream/server/statuspage"
)

// TestPurgeWarning: a stream that lags in the oldest of the server's binlog files is warned
// about (status JSON, page, metrics) by the file rule or, with the server's binlog expiry
// near, by the age rule, and not when both are off; once it catches up to the file the
// server is writing, the warning goes.
func TestPurgeWarning(t *testing.T) {
	cases := []struct {
		name   string
		warn   server.PurgeWarn
		expire int // binlog_expire_logs_seconds while the case runs; 0 leaves it
		// want is in the warning; empty: no warning.
		want string
	}{
		{name: "within one file", warn: server.PurgeWarn{Files: 1}, want: "file(s) before it on the server (warned at 1)"},
		{name: "expiry within two hours", warn: server.PurgeWarn{Files: -1, Age: 2 * time.Hour}, expire: 3600, want: "binlog expiry (1h0m0s) purges in about"},
		{name: "expiry far", warn: server.PurgeWarn{Files: -1, Age: 2 * time.Hour}, expire: 86400},
		{name: "rules off", warn: server.PurgeWarn{Files: -1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.expire > 0 {
				old := queryOne(t, "SELECT @@GLOBAL.binlog_expire_logs_seconds")
				testkit.MustExec(t, db, fmt.Sprintf("SET GLOBAL binlog_expire_logs_seconds = %d", c.expire))
				t.Cleanup(func() { testkit.MustExec(t, db, "SET GLOBAL binlog_expire_logs_seconds = "+old) })
			}
			c.warn.Interval = 50 * time.Millisecond
			f := newFixtureWith(t, server.Options{PurgeWarn: c.warn})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go f.srv.WatchBinlogs(ctx)

			// The stream starts in the only binlog file, more rows are written there than
			// the stream's windows hold, and the server moves on two files.
			testkit.MustExec(t, db, "DROP TABLE IF EXISTS pw", "CREATE TABLE pw (id INT PRIMARY KEY, pad VARCHAR(4000))")
			if err := db.PurgeBinaryLogs(10 * time.Second); err != nil {
				t.Fatal(err)
			}
			start, err := db.Position()
			if err != nil {
				t.Fatal(err)
			}
			inserts := make([]string, 600)
			for i := range inserts {
				inserts[i] = fmt.Sprintf("INSERT INTO pw VALUES (%d, REPEAT('x', 4000))", i)
			}
			testkit.MustExec(t, db, inserts...)
			testkit.MustExec(t, db, "FLUSH BINARY LOGS", "FLUSH BINARY LOGS")

			st := stalledStream(t, ctx, f, start)
			var h *statuspage.Headroom
			testkit.WaitFor(t, 30*time.Second, "the stream's headroom", func() bool {
				s := f.status(t)
				if len(s.Streams) != 1 || s.Streams[0].Headroom == nil {
					return false
				}
				h = s.Streams[0].Headroom
				return !h.Current
			})
			if h.FilesBefore != 0 || h.Purged || h.File == "" {
				t.Fatalf("headroom of a stream in the oldest file: %+v", h)
			}
			if got := metric(t, f.reg, "vstream_stream_binlog_headroom_files"); got != 0 {
				t.Errorf("vstream_stream_binlog_headroom_files = %v, want 0", got)
			}
			if got := metric(t, f.reg, "vstream_binlog_files"); got != 3 {
				t.Errorf("vstream_binlog_files = %v, want 3", got)
			}
			page, _ := get(t, f.page+"/")
			warned := 0.0
			if c.want != "" {
				warned = 1
				if !strings.Contains(h.PurgeWarning, c.want) || !strings.Contains(h.PurgeWarning, h.File) {
					t.Errorf("warning %q does not say %q and name %s", h.PurgeWarning, c.want, h.File)
				}
				if !strings.Contains(page, `id="purge-warnings"`) || !strings.Contains(page, `<div class="purge-warning">`) {
					t.Errorf("the page shows no purge warning:\n%s", page)
				}
				if s := f.status(t); s.PurgeWarnings != 1 {
					t.Errorf("status purge_warnings = %d, want 1", s.PurgeWarnings)
				}
			} else if h.PurgeWarning != "" || strings.Contains(page, `class="purge-warning"`) {
				t.Errorf("warned with the rules off or far: %q", h.PurgeWarning)
			}
			if got := metric(t, f.reg, "vstream_stream_purge_warning"); got != warned {
				t.Errorf("vstream_stream_purge_warning = %v, want %v", got, warned)
			}

			// Reading on, the stream reaches the file the server writes: no purge takes it.
			go func() {
				for {
					if _, err := st.Recv(); err != nil {
						return
					}
				}
			}()
			testkit.WaitFor(t, 30*time.Second, "the stream to catch up", func() bool {
				s := f.status(t)
				return len(s.Streams) == 1 && s.Streams[0].Headroom != nil && s.Streams[0].Headroom.Current
			})
			if s := f.status(t); s.Streams[0].Headroom.PurgeWarning != "" || s.PurgeWarnings != 0 ||
				s.Streams[0].Headroom.FilesBefore != 2 || s.Streams[0].Headroom.AgeSeconds != 0 {
				t.Errorf("caught up: %+v", s.Streams[0].Headroom)
			}
			testkit.WaitFor(t, 30*time.Second, "the warning metric to clear", func() bool { return metric(t, f.reg, "vstream_stream_purge_warning") == 0 })
		})
	}
}

// stalledStream opens a stream of table pw from start on a connection whose flow-control
// windows are fixed at their minimum, and reads nothing: the server blocks once they are
// full, and the stream's position stays where it got to.
func stalledStream(t *testing.T, ctx context.Context, f *fixture, start string) vstreamv1.VStreamService_StreamClient {
	t.Helper()
	const window = 64 << 10
	cc, err := grpc.NewClient(f.addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(window), grpc.WithInitialConnWindowSize(window))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cc.Close() })
	st, err := vstreamv1.NewVStreamServiceClient(cc).Stream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	err = st.Send(&vstreamv1.StreamRequest{Kind: &vstreamv1.StreamRequest_Start{Start: &vstreamv1.Start{
		Vgtid:  &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Gtid: start}}},
		Filter: &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "pw"}}},
	}}})
	if err != nil && err != io.EOF {
		t.Fatal(err)
	}
	return st
}

func queryOne(t *testing.T, q string) string {
	t.Helper()
	c, err := db.Conn("")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := c.Execute(q)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	v, _ := r.GetString(0, 0)
	return strings.Clone(v)
}
