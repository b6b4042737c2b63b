package server

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/queryservice"
	"github.com/vstream-cdc/vstream/gen/vtgate"
	"github.com/vstream-cdc/vstream/gen/vtgateservice"
	"github.com/vstream-cdc/vstream/internal/testkit"
	"github.com/vstream-cdc/vstream/internal/testkit/evtext"
)

// shortEv is testkit.Short with what tells the APIs apart: the keyspace/shard of a VGTID and
// of a COPY_COMPLETED, and "pks" on a VGTID that carries copy state.
func shortEv(ev *binlogdata.VEvent) string {
	switch ev.Type {
	case binlogdata.VEventType_VGTID:
		sg := ev.Vgtid.ShardGtids[0]
		s := fmt.Sprintf("VGTID %s/%s", sg.Keyspace, sg.Shard)
		if len(sg.TablePKs) > 0 {
			s += " pks"
		}
		return s
	case binlogdata.VEventType_COPY_COMPLETED:
		return fmt.Sprintf("COPY_COMPLETED %s/%s", ev.Keyspace, ev.Shard)
	}
	return evtext.Short(ev)
}

type recvFn func() ([]*binlogdata.VEvent, error)

func collect(t *testing.T, recv recvFn, n int) []string {
	t.Helper()
	var got []string
	for len(got) < n {
		evs, err := recv()
		if err != nil {
			t.Fatalf("after %v: %v", got, err)
		}
		for _, ev := range evs {
			if ev.Type != binlogdata.VEventType_HEARTBEAT {
				got = append(got, shortEv(ev))
			}
		}
	}
	return got
}

// step is SQL run on the source and the lines (shortEv) of the events a stream then sends.
type step struct {
	name string
	sql  []string
	want []string
}

// walk runs each step's SQL and reads as many events as the step wants lines, heartbeats
// left out, and fails at the first step whose lines differ: SQL in, events out.
func walk(t *testing.T, recv recvFn, steps []step) {
	t.Helper()
	for _, s := range steps {
		testkit.MustExec(t, db, s.sql...)
		testkit.SameLines(t, s.name, collect(t, recv, len(s.want)), s.want)
	}
}

func TestVtgateVStream(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE vt1 (id INT PRIMARY KEY, v VARCHAR(10))", "INSERT INTO vt1 VALUES (1, 'a'), (2, 'b')")
	cc := dial(t, serve(t, dbConfig(), Options{}))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := vtgateservice.NewVitessClient(cc).VStream(ctx, &vtgate.VStreamRequest{
		Vgtid:  &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Keyspace: "test", Shard: "0", Gtid: ""}}},
		Filter: &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "vt1"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	recv := func() ([]*binlogdata.VEvent, error) {
		r, err := st.Recv()
		return r.GetEvents(), err
	}
	walk(t, recv, []step{
		{"copy", nil, []string{
			"BEGIN",
			"FIELD test.vt1 id:INT32 v:VARCHAR",
			"VGTID test/0 pks",
			"ROW test.vt1 +[1 a]",
			"ROW test.vt1 +[2 b]",
			"VGTID test/0 pks",
			"COMMIT",
			"BEGIN",
			"VGTID test/0",
			"COMMIT",
			"COPY_COMPLETED test/0",
			"COPY_COMPLETED /",
		}},
		// After the copy, as after Vitess's, a table is described again before its first row.
		{"binlog", []string{"UPDATE vt1 SET v = 'c' WHERE id = 1"}, []string{
			"BEGIN",
			"FIELD test.vt1 id:INT32 v:VARCHAR",
			"ROW test.vt1 [1 a]>[1 c]",
			"VGTID test/0",
			"COMMIT",
		}},
	})
}

func TestVtgateOptions(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE vt2 (id INT PRIMARY KEY)")
	cc := dial(t, serve(t, dbConfig(), Options{}))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// Snappy compression, no keyspace prefix, heartbeats without keyspace or shard.
	st, err := vtgateservice.NewVitessClient(cc).VStream(ctx, &vtgate.VStreamRequest{
		Vgtid:  &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Keyspace: "test", Gtid: "current"}}},
		Filter: &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "vt2"}}},
		Flags:  &vtgate.VStreamFlags{HeartbeatInterval: 1, ExcludeKeyspaceFromTableName: true},
	}, grpc.UseCompressor("snappy"))
	if err != nil {
		t.Fatal(err)
	}
	recv := func() ([]*binlogdata.VEvent, error) {
		r, err := st.Recv()
		return r.GetEvents(), err
	}
	walk(t, recv, []step{
		{"start at current", nil, []string{"VGTID test/0", "OTHER"}},
		{"row", []string{"INSERT INTO vt2 VALUES (1)"}, []string{"BEGIN", "FIELD vt2 id:INT32", "ROW vt2 +[1]", "VGTID test/0", "COMMIT"}},
	})
	evs, err := recv()
	if err != nil || len(evs) != 1 || evs[0].Type != binlogdata.VEventType_HEARTBEAT || evs[0].Keyspace != "" || evs[0].Shard != "" {
		t.Fatalf("want a heartbeat without keyspace and shard, got %v %v", evs, err)
	}
}

func TestVtgateErrors(t *testing.T) {
	cc := dial(t, serve(t, dbConfig(), Options{}))
	cases := []struct {
		req  *vtgate.VStreamRequest
		code codes.Code
		msg  string
	}{
		{&vtgate.VStreamRequest{}, codes.InvalidArgument, "names no shard"},
		{&vtgate.VStreamRequest{Vgtid: &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Keyspace: "other", Gtid: "current"}}}}, codes.InvalidArgument, "not served here"},
		{&vtgate.VStreamRequest{Vgtid: &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Keyspace: "test", Shard: "-80", Gtid: "current"}}}}, codes.InvalidArgument, "shard \"-80\""},
		{&vtgate.VStreamRequest{Vgtid: &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Keyspace: "test", Gtid: "0-1-1"}}}}, codes.InvalidArgument, "prefix"},
		{&vtgate.VStreamRequest{Vgtid: &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Keyspace: "test", Gtid: "current"}}},
			Filter: &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "/(("}}}}, codes.InvalidArgument, "regular expression"},
	}
	for _, c := range cases {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		st, err := vtgateservice.NewVitessClient(cc).VStream(ctx, c.req)
		if err == nil {
			_, err = st.Recv()
		}
		cancel()
		if s := status.Convert(err); s.Code() != c.code || !strings.Contains(s.Message(), c.msg) {
			t.Errorf("%v: got %v %q, want %v %q", c.req, s.Code(), s.Message(), c.code, c.msg)
		}
	}
}

func TestTabletVStream(t *testing.T) {
	testkit.MustExec(t, db, "DROP TABLE IF EXISTS qt1, qt2", "CREATE TABLE qt1 (id INT PRIMARY KEY)", "CREATE TABLE qt2 (id INT PRIMARY KEY)", "INSERT INTO qt1 VALUES (1)")
	cc := dial(t, serve(t, dbConfig(), Options{}))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := queryservice.NewQueryClient(cc).VStream(ctx, &binlogdata.VStreamRequest{
		Filter: &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "qt1"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	recv := func() ([]*binlogdata.VEvent, error) {
		r, err := st.Recv()
		return r.GetEvents(), err
	}
	walk(t, recv, []step{
		{"copy", nil, []string{
			"BEGIN",
			"FIELD qt1 id:INT32",
			"GTID",
			"ROW qt1 +[1]",
			"LASTPK",
			"COMMIT",
			"BEGIN",
			"LASTPK",
			"COMMIT",
			"COPY_COMPLETED test/0",
		}},
		// A transaction the filter leaves empty is sent as a tablet sends it (the native API
		// skips it).
		{"binlog", []string{"INSERT INTO qt2 VALUES (1)", "INSERT INTO qt1 VALUES (2)"}, []string{
			"BEGIN", "GTID", "COMMIT",
			"BEGIN", "FIELD qt1 id:INT32", "ROW qt1 +[2]", "GTID", "COMMIT",
		}},
	})
}

// TestTabletOptionErrors: bad config_overrides and event_types fail the request before it
// starts, and a packet size above the server's batch limit is refused like max_batch_bytes.
func TestTabletOptionErrors(t *testing.T) {
	cc := dial(t, serve(t, dbConfig(), Options{Limits: Limits{MaxBatchBytes: 1000}}))
	cases := []struct {
		opts *binlogdata.VStreamOptions
		code codes.Code
		msg  string
	}{
		{&binlogdata.VStreamOptions{ConfigOverrides: map[string]string{"vstream-packet-size": "2000"}}, codes.ResourceExhausted, "vstream-packet-size 2000 is over the server's limit of 1000 bytes"},
		{&binlogdata.VStreamOptions{ConfigOverrides: map[string]string{"nope": "1"}}, codes.InvalidArgument, "unknown vreplication config flag: nope"},
		{&binlogdata.VStreamOptions{EventTypes: []binlogdata.VEventType{-1}}, codes.InvalidArgument, "-1 is not a VEventType"},
	}
	for _, c := range cases {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		st, err := queryservice.NewQueryClient(cc).VStream(ctx, &binlogdata.VStreamRequest{Position: "current", Options: c.opts})
		if err == nil {
			_, err = st.Recv()
		}
		cancel()
		if s := status.Convert(err); s.Code() != c.code || !strings.Contains(s.Message(), c.msg) {
			t.Errorf("%v: got %v %q, want %v with %q", c.opts, s.Code(), s.Message(), c.code, c.msg)
		}
	}
}
