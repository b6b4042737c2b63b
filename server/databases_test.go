package server

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	"github.com/vstream-cdc/vstream/gen/queryservice"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/gen/vtgate"
	"github.com/vstream-cdc/vstream/gen/vtgateservice"
	"github.com/vstream-cdc/vstream/internal/testkit"
	"github.com/vstream-cdc/vstream/vstreamer"
)

// setupTwoDatabases makes table kd in the configured database (test) and in srv_two, each
// with a row of its own, and serves both.
func setupTwoDatabases(t *testing.T, databases ...string) *grpc.ClientConn {
	t.Helper()
	testkit.MustExec(t, db, "DROP DATABASE IF EXISTS srv_two", "CREATE DATABASE srv_two",
		"DROP TABLE IF EXISTS test.kd",
		"CREATE TABLE test.kd (id INT PRIMARY KEY, v VARCHAR(10))",
		"CREATE TABLE srv_two.kd (id INT PRIMARY KEY, v VARCHAR(10))",
		"INSERT INTO test.kd VALUES (1, 'one')", "INSERT INTO srv_two.kd VALUES (2, 'two')")
	t.Cleanup(func() { _ = db.Exec("DROP DATABASE IF EXISTS srv_two", "DROP TABLE IF EXISTS test.kd") })
	cfg := dbConfig()
	cfg.Databases = databases
	return dial(t, serve(t, cfg, Options{}))
}

var kdFilter = &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "kd"}}}

// labelled renders events as shortEv does, with the keyspace of events that carry one, and
// the database of FIELD columns.
func labelled(evs []*binlogdata.VEvent) []string {
	var out []string
	for _, ev := range evs {
		s := shortEv(ev)
		switch ev.Type {
		case binlogdata.VEventType_HEARTBEAT:
			continue
		case binlogdata.VEventType_FIELD:
			s += " @" + ev.FieldEvent.Keyspace + " db=" + ev.FieldEvent.Fields[0].Database
		case binlogdata.VEventType_ROW:
			s += " @" + ev.RowEvent.Keyspace
		}
		out = append(out, s)
	}
	return out
}

// collectLabelled receives until n labelled events came.
func collectLabelled(t *testing.T, recv recvFn, n int) string {
	t.Helper()
	var got []string
	for len(got) < n {
		evs, err := recv()
		if err != nil {
			t.Fatalf("after %v: %v", got, err)
		}
		got = append(got, labelled(evs)...)
	}
	return strings.Join(got, " ")
}

// The native API streams the database its VGtid's keyspace names, beside a stream of the
// configured database; a format names the stream's database.
func TestDatabasesNative(t *testing.T) {
	cc := setupTwoDatabases(t, "srv_two")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := func(keyspace, format string) vstreamv1.VStreamService_StreamClient {
		st := openStream(t, ctx, cc, &vstreamv1.StreamRequest{Kind: &vstreamv1.StreamRequest_Start{Start: &vstreamv1.Start{
			Vgtid:  &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Keyspace: keyspace, Gtid: "current"}}},
			Filter: kdFilter, Format: format,
		}}})
		if _, err := st.Recv(); err != nil { // the start position
			t.Fatal(err)
		}
		return st
	}
	recvOf := func(st vstreamv1.VStreamService_StreamClient) recvFn {
		return func() ([]*binlogdata.VEvent, error) {
			r, err := st.Recv()
			return r.GetEvents(), err
		}
	}
	def, two := start("", ""), start("srv_two", "")
	canal := start("srv_two", "canal-json")
	dbz := start("srv_two", "debezium-json")
	testkit.MustExec(t, db, "INSERT INTO test.kd VALUES (10, 'one-j')", "INSERT INTO srv_two.kd VALUES (20, 'two-t')")
	// The native API sends nothing for the other database's transaction: a lone VGTID carries
	// its position when nothing else does (on the second stream it may come before the row,
	// if a second passed since the start's VGTID).
	if got, want := collectLabelled(t, recvOf(def), 7), "BEGIN FIELD kd id:INT32 v:VARCHAR @test db=test ROW kd +[10 one-j] @test GTID COMMIT VGTID test/0 VGTID test/0"; got != want {
		t.Errorf("configured database:\n got %s\nwant %s", got, want)
	}
	got := strings.TrimPrefix(collectLabelled(t, recvOf(two), 6), "VGTID srv_two/0 ")
	if got == "BEGIN FIELD kd id:INT32 v:VARCHAR @srv_two db=srv_two ROW kd +[20 two-t] @srv_two GTID COMMIT" {
		got += " " + collectLabelled(t, recvOf(two), 1)
	}
	if want := "BEGIN FIELD kd id:INT32 v:VARCHAR @srv_two db=srv_two ROW kd +[20 two-t] @srv_two GTID COMMIT VGTID srv_two/0"; got != want {
		t.Errorf("second database:\n got %s\nwant %s", got, want)
	}
	var msg map[string]any
	for msg == nil {
		resp, err := canal.Recv()
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range resp.Messages {
			if err := json.Unmarshal(m.Value, &msg); err != nil {
				t.Fatal(err)
			}
			if got := m.Position.GetShardGtids()[0].GetKeyspace(); got != "srv_two" {
				t.Errorf("message position of keyspace %q", got)
			}
			break
		}
	}
	data := msg["data"].([]any)[0].(map[string]any)
	if msg["database"] != "srv_two" || msg["table"] != "kd" || data["id"] != "20" {
		t.Errorf("canal-json message: %v", msg)
	}
	// Debezium's topic is <topic.prefix>.<database>.<table>; the prefix defaults to the keyspace.
	var rec *vstreamv1.EncodedMessage
	for rec == nil {
		resp, err := dbz.Recv()
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range resp.Messages {
			if m.Topic == "srv_two.srv_two.kd" && len(m.Value) > 0 {
				rec = m
				break
			}
		}
	}
	var env struct {
		Payload struct {
			Source struct{ DB, Table string }
			After  map[string]any
		}
	}
	if err := json.Unmarshal(rec.Value, &env); err != nil {
		t.Fatal(err)
	}
	if env.Payload.Source.DB != "srv_two" || env.Payload.Source.Table != "kd" || env.Payload.After["id"] != float64(20) {
		t.Errorf("debezium-json record: %s", rec.Value)
	}
}

// The vtgate and tablet APIs copy and stream the database of their keyspace.
func TestDatabasesVitess(t *testing.T) {
	cc := setupTwoDatabases(t, vstreamer.AllDatabases)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	vst, err := vtgateservice.NewVitessClient(cc).VStream(ctx, &vtgate.VStreamRequest{
		Vgtid:  &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Keyspace: "srv_two", Gtid: ""}}},
		Filter: kdFilter,
	})
	if err != nil {
		t.Fatal(err)
	}
	vrecv := func() ([]*binlogdata.VEvent, error) {
		r, err := vst.Recv()
		return r.GetEvents(), err
	}
	want := "BEGIN FIELD srv_two.kd id:INT32 v:VARCHAR @srv_two db=srv_two VGTID srv_two/0 pks ROW srv_two.kd +[2 two] @srv_two VGTID srv_two/0 pks COMMIT " +
		"BEGIN VGTID srv_two/0 COMMIT COPY_COMPLETED srv_two/0 COPY_COMPLETED /"
	if got := collectLabelled(t, vrecv, 11); got != want {
		t.Fatalf("vtgate copy:\n got %s\nwant %s", got, want)
	}

	qc := queryservice.NewQueryClient(cc)
	tst, err := qc.VStream(ctx, &binlogdata.VStreamRequest{Target: &query.Target{Keyspace: "srv_two"}, Filter: kdFilter})
	if err != nil {
		t.Fatal(err)
	}
	trecv := func() ([]*binlogdata.VEvent, error) {
		r, err := tst.Recv()
		return r.GetEvents(), err
	}
	want = "BEGIN FIELD kd id:INT32 v:VARCHAR @srv_two db=srv_two GTID ROW kd +[2 two] @srv_two LASTPK COMMIT BEGIN LASTPK COMMIT COPY_COMPLETED srv_two/0"
	if got := collectLabelled(t, trecv, 10); got != want {
		t.Fatalf("tablet copy:\n got %s\nwant %s", got, want)
	}
	testkit.MustExec(t, db, "INSERT INTO test.kd VALUES (3, 'one-c')", "INSERT INTO srv_two.kd VALUES (3, 'two-c')")
	if got, want := collectLabelled(t, vrecv, 8), "BEGIN VGTID srv_two/0 COMMIT BEGIN FIELD srv_two.kd id:INT32 v:VARCHAR @srv_two db=srv_two ROW srv_two.kd +[3 two-c] @srv_two VGTID srv_two/0 COMMIT"; got != want {
		t.Errorf("vtgate binlog:\n got %s\nwant %s", got, want)
	}
	if got, want := collectLabelled(t, trecv, 8), "BEGIN GTID COMMIT BEGIN FIELD kd id:INT32 v:VARCHAR @srv_two db=srv_two ROW kd +[3 two-c] @srv_two GTID COMMIT"; got != want {
		t.Errorf("tablet binlog:\n got %s\nwant %s", got, want)
	}

	rst, err := qc.VStreamRows(ctx, &binlogdata.VStreamRowsRequest{Target: &query.Target{Keyspace: "srv_two"}, Query: "select id, v from kd"})
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for {
		r, err := rst.Recv()
		if err != nil {
			break
		}
		for _, row := range r.Rows {
			rows = append(rows, string(row.Values))
		}
	}
	if got := strings.Join(rows, " "); got != "2two 3two-c" {
		t.Errorf("VStreamRows of srv_two: %s", got)
	}
	res, err := qc.VStreamResults(ctx, &binlogdata.VStreamResultsRequest{Target: &query.Target{Keyspace: "srv_two"}, Query: "select v from kd where id = 2"})
	if err != nil {
		t.Fatal(err)
	}
	rows = nil
	for {
		r, err := res.Recv()
		if err != nil {
			break
		}
		for _, row := range r.Rows {
			rows = append(rows, string(row.Values))
		}
	}
	if got := strings.Join(rows, " "); got != "two" {
		t.Errorf("VStreamResults of srv_two: %s", got)
	}
}

// Keyspaces not allowed, system schemas, databases the server lacks and VGtids whose
// keyspaces stand at different positions are refused with InvalidArgument saying what is
// served or what to give.
func TestDatabasesRefused(t *testing.T) {
	listed := setupTwoDatabases(t, "srv_two")
	cfg := dbConfig()
	cfg.Databases = []string{vstreamer.AllDatabases}
	all := dial(t, serve(t, cfg, Options{}))
	native := func(cc *grpc.ClientConn, sgs ...*binlogdata.ShardGtid) func(context.Context) error {
		return func(ctx context.Context) error {
			return firstError(t, cc, ctx, &vstreamv1.StreamRequest{Kind: &vstreamv1.StreamRequest_Start{Start: &vstreamv1.Start{
				Vgtid: &binlogdata.VGtid{ShardGtids: sgs}}}}).Err()
		}
	}
	vtgateOf := func(cc *grpc.ClientConn, sgs ...*binlogdata.ShardGtid) func(context.Context) error {
		return func(ctx context.Context) error {
			st, err := vtgateservice.NewVitessClient(cc).VStream(ctx, &vtgate.VStreamRequest{Vgtid: &binlogdata.VGtid{ShardGtids: sgs}})
			if err == nil {
				_, err = st.Recv()
			}
			return err
		}
	}
	tablet := func(cc *grpc.ClientConn, keyspace string) func(context.Context) error {
		return func(ctx context.Context) error {
			st, err := queryservice.NewQueryClient(cc).VStream(ctx, &binlogdata.VStreamRequest{Target: &query.Target{Keyspace: keyspace}, Position: "current"})
			if err == nil {
				_, err = st.Recv()
			}
			return err
		}
	}
	sg := func(ks string) *binlogdata.ShardGtid { return &binlogdata.ShardGtid{Keyspace: ks, Gtid: "current"} }
	at := func(ks, gtid string) *binlogdata.ShardGtid { return &binlogdata.ShardGtid{Keyspace: ks, Gtid: gtid} }
	pos := serverPosition(t)
	for _, c := range []struct {
		name string
		call func(context.Context) error
		msg  string
	}{
		{"native not listed", native(listed, sg("srv_three")), `keyspace "srv_three" is not served here; this server streams keyspaces "test", "srv_two"`},
		{"native keyspaces at different positions", native(listed, sg("test"), at("srv_two", pos)), `keyspaces "test" and "srv_two" are at different positions`},
		{"vtgate keyspaces at different positions", vtgateOf(listed, at("test", pos), sg("srv_two")), `keyspaces "test" and "srv_two" are at different positions`},
		{"native one of several not listed", native(listed, sg("test"), sg("srv_three")), `keyspace "srv_three" is not served here`},
		{"vtgate one of several not listed", vtgateOf(listed, sg("srv_two"), sg("srv_three")), `keyspace "srv_three" is not served here`},
		{"vtgate keyspace twice", vtgateOf(listed, sg("srv_two"), sg("srv_two")), "names shard srv_two/0 twice"},
		{"vtgate not listed", vtgateOf(listed, sg("srv_three")), `keyspace "srv_three" is not served here`},
		{"tablet not listed", tablet(listed, "srv_three"), `keyspace "srv_three" is not served here`},
		{"native system schema", native(all, sg("mysql")), "system schema"},
		{"vtgate system schema", vtgateOf(all, sg("information_schema")), "system schema"},
		{"tablet system schema", tablet(all, "sys"), "system schema"},
		{"native missing database", native(all, sg("srv_missing")), `the server has no database "srv_missing"`},
		{"vtgate missing database", vtgateOf(all, sg("srv_missing")), `the server has no database "srv_missing"`},
		{"tablet missing database", tablet(all, "srv_missing"), `the server has no database "srv_missing"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if s := status.Convert(c.call(ctx)); s.Code() != codes.InvalidArgument || !strings.Contains(s.Message(), c.msg) {
				t.Errorf("got %v %q, want InvalidArgument with %q", s.Code(), s.Message(), c.msg)
			}
		})
	}
}

// vgtidKeyspaces renders the keyspaces of a VGtid, checking they all stand at one position.
func vgtidKeyspaces(t *testing.T, v *binlogdata.VGtid) string {
	t.Helper()
	var ks []string
	for _, sg := range v.GetShardGtids() {
		ks = append(ks, sg.GetKeyspace()+"/"+sg.GetShard())
		if sg.GetGtid() != v.GetShardGtids()[0].GetGtid() {
			t.Errorf("vgtid %v: keyspaces at different positions", v)
		}
	}
	return strings.Join(ks, ",")
}

// One vtgate stream of a VGtid naming two keyspaces copies both, one after the other, ends
// the copy with one COPY_COMPLETED per keyspace and one for the whole, then streams both;
// tables are named keyspace.table by their own event's keyspace, and every VGTID names both
// keyspaces at one position.
func TestDatabasesSeveralKeyspacesVitess(t *testing.T) {
	cc := setupTwoDatabases(t, "srv_two")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	vst, err := vtgateservice.NewVitessClient(cc).VStream(ctx, &vtgate.VStreamRequest{
		Vgtid:  &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Keyspace: "test", Gtid: ""}, {Keyspace: "srv_two", Gtid: ""}}},
		Filter: kdFilter,
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	recv := func() {
		r, err := vst.Recv()
		if err != nil {
			t.Fatalf("after %v: %v", got, err)
		}
		for _, ev := range r.Events {
			switch ev.Type {
			case binlogdata.VEventType_VGTID:
				if ks := vgtidKeyspaces(t, ev.Vgtid); ks != "test/0,srv_two/0" {
					t.Fatalf("VGTID of %s, want both keyspaces", ks)
				}
			case binlogdata.VEventType_ROW, binlogdata.VEventType_FIELD, binlogdata.VEventType_COPY_COMPLETED:
				got = append(got, labelled([]*binlogdata.VEvent{ev})...)
			}
		}
	}
	for len(got) == 0 || got[len(got)-1] != "COPY_COMPLETED /" {
		recv()
	}
	testkit.MustExec(t, db, "INSERT INTO srv_two.kd VALUES (3, 'two-c')", "INSERT INTO test.kd VALUES (3, 'one-c')")
	for len(got) < 10 {
		recv()
	}
	testkit.SameLines(t, "vtgate stream of two keyspaces", got, []string{
		"FIELD test.kd id:INT32 v:VARCHAR @test db=test",
		"ROW test.kd +[1 one] @test",
		"COPY_COMPLETED test/0",
		"FIELD srv_two.kd id:INT32 v:VARCHAR @srv_two db=srv_two",
		"ROW srv_two.kd +[2 two] @srv_two",
		"COPY_COMPLETED srv_two/0",
		"COPY_COMPLETED /",
		"FIELD srv_two.kd id:INT32 v:VARCHAR @srv_two db=srv_two",
		"ROW srv_two.kd +[3 two-c] @srv_two",
		"FIELD test.kd id:INT32 v:VARCHAR @test db=test",
		"ROW test.kd +[3 one-c] @test",
	})
	// A keyspace regex names every keyspace it matches.
	rst, err := vtgateservice.NewVitessClient(cc).VStream(ctx, &vtgate.VStreamRequest{
		Vgtid:  &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Keyspace: "/.*", Gtid: "current"}}},
		Filter: kdFilter,
	})
	if err != nil {
		t.Fatal(err)
	}
	for {
		r, err := rst.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if i := slices.IndexFunc(r.Events, func(ev *binlogdata.VEvent) bool { return ev.Type == binlogdata.VEventType_VGTID }); i >= 0 {
			if ks := vgtidKeyspaces(t, r.Events[i].Vgtid); ks != "test/0,srv_two/0" {
				t.Errorf("regex /.*: VGTID of %s, want every keyspace served", ks)
			}
			break
		}
	}
}

// One native stream of a VGtid naming two keyspaces streams both: VEvents labelled with
// their keyspace and VGTIDs naming both, and formats whose messages name the database of
// their own event (Debezium's topics and sources, Canal's database).
func TestDatabasesSeveralKeyspacesNative(t *testing.T) {
	cc := setupTwoDatabases(t, "srv_two")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := func(format string) vstreamv1.VStreamService_StreamClient {
		st := openStream(t, ctx, cc, &vstreamv1.StreamRequest{Kind: &vstreamv1.StreamRequest_Start{Start: &vstreamv1.Start{
			Vgtid:  &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Keyspace: "srv_two", Gtid: "current"}, {Keyspace: "test", Gtid: "current"}}},
			Filter: kdFilter, Format: format,
		}}})
		if _, err := st.Recv(); err != nil { // the start position
			t.Fatal(err)
		}
		return st
	}
	native, dbz, canal := start(""), start("debezium-json"), start("canal-json")
	testkit.MustExec(t, db, "INSERT INTO test.kd VALUES (10, 'one-j')", "INSERT INTO srv_two.kd VALUES (20, 'two-t')")
	var got []string
	for len(got) < 4 {
		r, err := native.Recv()
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range r.Events {
			switch ev.Type {
			case binlogdata.VEventType_VGTID:
				if ks := vgtidKeyspaces(t, ev.Vgtid); ks != "srv_two/0,test/0" {
					t.Fatalf("VGTID of %s, want both keyspaces in the request's order", ks)
				}
			case binlogdata.VEventType_ROW, binlogdata.VEventType_FIELD:
				got = append(got, labelled([]*binlogdata.VEvent{ev})...)
			}
		}
	}
	testkit.SameLines(t, "native stream of two keyspaces", got, []string{
		"FIELD kd id:INT32 v:VARCHAR @test db=test",
		"ROW kd +[10 one-j] @test",
		"FIELD kd id:INT32 v:VARCHAR @srv_two db=srv_two",
		"ROW kd +[20 two-t] @srv_two",
	})
	// Debezium's topic is <topic.prefix>.<database>.<table>, the prefix the keyspace's name.
	sources := map[string]string{}
	for len(sources) < 2 {
		resp, err := dbz.Recv()
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range resp.Messages {
			if !strings.HasSuffix(m.Topic, ".kd") || len(m.Value) == 0 {
				continue
			}
			var env struct {
				Payload struct {
					Source struct{ DB string }
					After  map[string]any
				}
			}
			if err := json.Unmarshal(m.Value, &env); err != nil {
				t.Fatal(err)
			}
			sources[m.Topic] = fmt.Sprintf("%s %v", env.Payload.Source.DB, env.Payload.After["id"])
		}
	}
	if g, want := fmt.Sprint(sources), "map[srv_two.srv_two.kd:srv_two 20 test.test.kd:test 10]"; g != want {
		t.Errorf("debezium-json records: %s, want %s", g, want)
	}
	// A transaction changing both keyspaces: each change named by its own database.
	testkit.MustExec(t, db, "BEGIN", "INSERT INTO srv_two.kd VALUES (21, 'two-u')", "INSERT INTO test.kd VALUES (11, 'one-k')", "COMMIT")
	var dbs []string
	for len(dbs) < 4 {
		resp, err := canal.Recv()
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range resp.Messages {
			var msg map[string]any
			if err := json.Unmarshal(m.Value, &msg); err != nil {
				t.Fatal(err)
			}
			if msg["type"] == "INSERT" {
				dbs = append(dbs, fmt.Sprintf("%v.%v %v", msg["database"], msg["table"], msg["data"].([]any)[0].(map[string]any)["id"]))
			}
		}
	}
	if g, want := strings.Join(dbs, "|"), "test.kd 10|srv_two.kd 20|srv_two.kd 21|test.kd 11"; g != want {
		t.Errorf("canal-json messages: %s, want %s", g, want)
	}
}
