package server

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/queryservice"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/gen/vtgate"
	"github.com/vstream-cdc/vstream/gen/vtgateservice"
	"github.com/vstream-cdc/vstream/internal/testdb"
	"github.com/vstream-cdc/vstream/internal/testkit"
)

// statementInsert runs an INSERT logged as a statement and returns its transaction's GTID.
func statementInsert(t *testing.T, sql string) string {
	t.Helper()
	t.Cleanup(func() { testkit.MustExec(t, db, "SET SESSION binlog_format = 'ROW'") })
	testkit.MustExec(t, db, "SET SESSION binlog_format = 'STATEMENT'", sql, "SET SESSION binlog_format = 'ROW'")
	return lastGTID(t)
}

// lastGTID returns the GTID of the server's latest transaction, as the stream names a
// transaction: MariaDB's domain-server-sequence (the test server logs one domain, so its
// position is that GTID) or MySQL's uuid:number (the end of the one server's interval).
func lastGTID(t *testing.T) string {
	t.Helper()
	pos, err := db.Position()
	if err != nil {
		t.Fatal(err)
	}
	set := strings.TrimPrefix(pos, db.PositionFlavor()+"/")
	if db.Flavor() == testdb.MySQL {
		// uuid:1-N, or uuid:N after the first transaction.
		id, interval, ok := strings.Cut(set, ":")
		if !ok || strings.ContainsAny(interval, ",:") {
			t.Fatalf("position %s is not one server's interval", pos)
		}
		_, end, _ := strings.Cut(interval, "-")
		if end == "" {
			end = interval
		}
		return id + ":" + end
	}
	if strings.Contains(set, ",") {
		t.Fatalf("position %s holds more than one domain", pos)
	}
	return set
}

// A statement-based change reaches every Vitess-shaped API as an INSERT event with the
// statement in dml: the native stream, vtgate's VStream and the tablet's VStream.
func TestStatementDMLEveryAPI(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE sd1 (id INT PRIMARY KEY, v VARCHAR(20))")
	cc := dial(t, serve(t, dbConfig(), Options{}))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	filter := &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "sd1"}}}

	native := openStream(t, ctx, cc, startMsg("current", filter))
	vtg, err := vtgateservice.NewVitessClient(cc).VStream(ctx, &vtgate.VStreamRequest{
		Vgtid:  &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Keyspace: "test", Shard: "0", Gtid: "current"}}},
		Filter: filter,
	})
	if err != nil {
		t.Fatal(err)
	}
	tablet, err := queryservice.NewQueryClient(cc).VStream(ctx, &binlogdata.VStreamRequest{Position: "current", Filter: filter})
	if err != nil {
		t.Fatal(err)
	}
	const sql = "INSERT INTO sd1 VALUES (1, 'by statement')"
	apis := []struct {
		name string
		recv recvFn
		want []string
	}{
		{"native", func() ([]*binlogdata.VEvent, error) { r, err := native.Recv(); return r.GetEvents(), err },
			[]string{"BEGIN", "INSERT " + sql, "GTID", "COMMIT", "VGTID test/0"}},
		{"vtgate", func() ([]*binlogdata.VEvent, error) { r, err := vtg.Recv(); return r.GetEvents(), err },
			[]string{"BEGIN", "INSERT " + sql, "VGTID test/0", "COMMIT"}},
		{"tablet", func() ([]*binlogdata.VEvent, error) { r, err := tablet.Recv(); return r.GetEvents(), err },
			[]string{"BEGIN", "INSERT " + sql, "GTID", "COMMIT"}},
	}
	// Each stream starts with its resume point.
	for _, a := range apis {
		for _, got := range collect(t, a.recv, 2) {
			if strings.HasPrefix(got, "INSERT") {
				t.Fatalf("%s: an INSERT before any statement ran", a.name)
			}
		}
	}
	statementInsert(t, sql)
	for _, a := range apis {
		var got []string
		for len(got) < len(a.want) {
			evs, err := a.recv()
			if err != nil {
				t.Fatalf("%s: %v", a.name, err)
			}
			for _, ev := range evs {
				if ev.Type == binlogdata.VEventType_HEARTBEAT || len(got) == 0 && ev.Type != binlogdata.VEventType_BEGIN {
					continue // the tail of the start, a heartbeat
				}
				got = append(got, shortEv(ev))
			}
		}
		testkit.SameLines(t, a.name, got, a.want)
	}
}

// Every output format ends the stream with FailedPrecondition naming the transaction and
// the table when a statement-based change reaches it: it has no rows to describe it by.
func TestStatementDMLFailsEncodedFormats(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE sd2 (id INT PRIMARY KEY)")
	cc := dial(t, serve(t, dbConfig(), Options{}))
	for _, format := range Formats[1:] {
		t.Run(format, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			st := openStream(t, ctx, cc, &vstreamv1.StreamRequest{Kind: &vstreamv1.StreamRequest_Start{Start: &vstreamv1.Start{
				Vgtid:  &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Gtid: "current"}}},
				Filter: &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "sd2"}}},
				Format: format,
			}}})
			if _, err := st.Recv(); err != nil {
				t.Fatal(err)
			}
			gtid := statementInsert(t, "INSERT INTO sd2 VALUES (1), (2)")
			testkit.MustExec(t, db, "DELETE FROM sd2")
			var err error
			for err == nil {
				var resp *vstreamv1.StreamResponse
				resp, err = st.Recv()
				if len(resp.GetMessages()) > 0 {
					t.Fatalf("a message for a statement-based change: %s", resp.Messages[0].Value)
				}
			}
			s := status.Convert(err)
			if s.Code() != codes.FailedPrecondition || !strings.Contains(s.Message(), "transaction "+gtid+" ") ||
				!strings.Contains(s.Message(), "table test.sd2") || !strings.Contains(s.Message(), "statement_dml=skip") {
				t.Fatalf("got %v %q, want FailedPrecondition naming %s, test.sd2 and the option", s.Code(), s.Message(), gtid)
			}
		})
	}
}

// syncBuffer is a log destination written by the server's goroutines and read by the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// With statement_dml=skip the stream goes on past a statement-based change, logging it with
// its GTID and table and counting it.
func TestStatementDMLSkip(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE sd3 (id INT PRIMARY KEY)")
	var logs syncBuffer
	reg := prometheus.NewRegistry()
	cc := dial(t, serve(t, dbConfig(), Options{Registerer: reg, Logger: slog.New(slog.NewJSONHandler(&logs, nil))}))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st := openStream(t, ctx, cc, &vstreamv1.StreamRequest{Kind: &vstreamv1.StreamRequest_Start{Start: &vstreamv1.Start{
		Vgtid:         &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Gtid: "current"}}},
		Filter:        &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "sd3"}}},
		Format:        "canal-json",
		FormatOptions: map[string]string{"statement_dml": "skip"},
	}}})
	if _, err := st.Recv(); err != nil {
		t.Fatal(err)
	}
	gtid := statementInsert(t, "INSERT INTO sd3 VALUES (1)")
	testkit.MustExec(t, db, "INSERT INTO sd3 VALUES (2)")
	var msg *vstreamv1.EncodedMessage
	for msg == nil {
		resp, err := st.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Messages) > 0 {
			msg = resp.Messages[0]
		}
	}
	if !strings.Contains(string(msg.Value), `"data":[{"id":"2"}]`) {
		t.Fatalf("first message %s, want the row-based insert of id 2", msg.Value)
	}
	if n := sample(t, reg, "vstream_statement_dml_skipped_total", map[string]string{"format": "canal-json"}); n != 1 {
		t.Errorf("skipped counter = %v, want 1", n)
	}
	var found bool
	for _, line := range strings.Split(logs.String(), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) != nil || rec["msg"] != "statement-based change skipped" {
			continue
		}
		found = true
		if !strings.HasSuffix(gtid, rec["gtid"].(string)) || rec["table"] != "test.sd3" || rec["level"] != "WARN" {
			t.Errorf("log record %s, want gtid %s and table test.sd3 at WARN", line, gtid)
		}
	}
	if !found {
		t.Errorf("no log record of the skip in:\n%s", logs.String())
	}
}

// The option takes fail or skip; vevent carries statements and takes no option.
func TestStatementDMLOption(t *testing.T) {
	cc := dial(t, serve(t, dbConfig(), Options{}))
	for format, opts := range map[string]map[string]string{
		"debezium-json": {"statement_dml": "ignore"},
		"vevent":        {"statement_dml": "skip"},
	} {
		s := firstError(t, cc, context.Background(), &vstreamv1.StreamRequest{Kind: &vstreamv1.StreamRequest_Start{Start: &vstreamv1.Start{
			Vgtid: &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Gtid: "current"}}}, Format: format, FormatOptions: opts}}})
		if s.Code() != codes.InvalidArgument {
			t.Errorf("%s %v: got %v %q, want InvalidArgument", format, opts, s.Code(), s.Message())
		}
	}
}
