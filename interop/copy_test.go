package interop

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	binlogdatapb "vitess.io/vitess/go/vt/proto/binlogdata"
	querypb "vitess.io/vitess/go/vt/proto/query"
	queryservicepb "vitess.io/vitess/go/vt/proto/queryservice"
	topodatapb "vitess.io/vitess/go/vt/proto/topodata"
	vtgatepb "vitess.io/vitess/go/vt/proto/vtgate"
	"vitess.io/vitess/go/vt/vtgate/vtgateconn"

	"github.com/vstream-cdc/vstream/internal/testkit"
)

// The copy cases of Vitess's uvstreamer_flaky_test.go and rowstreamer_test.go, run with
// Vitess's own client code against vstreamd: SQL in, the events Vitess's tests expect out.
// The adaptations MariaDB or a separate process forces are listed in README.md.

// tabletStream starts /queryservice.Query/VStream with Vitess's generated client.
func tabletStream(t *testing.T, ctx context.Context, req *binlogdatapb.VStreamRequest) queryservicepb.Query_VStreamClient {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	req.Target = &querypb.Target{Keyspace: "ks", Shard: "0", TabletType: topodatapb.TabletType_PRIMARY}
	st, err := queryservicepb.NewQueryClient(cc).VStream(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// vitessText renders an event as Vitess's tests write them: the event's text with the parts
// that vary (times, positions, keyspace and shard, row flags) cleared (Vitess's tests match
// by prefix, which leaves out the same trailing parts). A GTID is "type:GTID"
// as Vitess's tests match it. FIELD keeps each column's name and type only (the column
// metadata is checked elsewhere) and enum_set_string_values where it is set.
func vitessText(ev *binlogdatapb.VEvent) string {
	ev = proto.Clone(ev).(*binlogdatapb.VEvent)
	ev.Timestamp, ev.CurrentTime, ev.Keyspace, ev.Shard, ev.EventGtid = 0, 0, "", "", ""
	switch ev.Type {
	case binlogdatapb.VEventType_GTID:
		ev.Gtid = ""
	case binlogdatapb.VEventType_ROW:
		ev.RowEvent.Keyspace, ev.RowEvent.Shard, ev.RowEvent.Flags = "", "", 0
	case binlogdatapb.VEventType_FIELD:
		ev.FieldEvent.Keyspace, ev.FieldEvent.Shard = "", ""
		for i, f := range ev.FieldEvent.Fields {
			ev.FieldEvent.Fields[i] = &querypb.Field{Name: f.Name, Type: f.Type}
		}
	}
	return strings.Join(strings.Fields(strings.ReplaceAll(prototext.MarshalOptions{}.Format(ev), ": ", ":")), " ")
}

// events reads tablet responses until n events (heartbeats left out) have arrived, and
// returns them in vitessText form with the events themselves.
func tabletEvents(t *testing.T, st queryservicepb.Query_VStreamClient, n int) ([]string, []*binlogdatapb.VEvent) {
	t.Helper()
	var got []string
	var evs []*binlogdatapb.VEvent
	for len(got) < n {
		resp, err := st.Recv()
		if err != nil {
			t.Fatalf("after %d events (%s): %v", len(got), strings.Join(got, "\n"), err)
		}
		for _, ev := range resp.Events {
			if ev.Type == binlogdatapb.VEventType_HEARTBEAT {
				continue
			}
			got = append(got, vitessText(ev))
			evs = append(evs, ev)
		}
	}
	return got, evs
}

// checkFields compares every FIELD of table in evs with Vitess's whole description of the
// table's columns (column flags cleared, as Vitess's tests clear them; vitessText keeps names
// and types only).
func checkFields(t *testing.T, evs []*binlogdatapb.VEvent, table string, cols ...vbCol) {
	t.Helper()
	want := &binlogdatapb.FieldEvent{}
	if err := prototext.Unmarshal([]byte(fmt.Sprintf("table_name:%q %s", table, vbFields(table, cols...))), want); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ev := range evs {
		if ev.Type != binlogdatapb.VEventType_FIELD || ev.FieldEvent.TableName != table {
			continue
		}
		n++
		got := proto.Clone(ev.FieldEvent).(*binlogdatapb.FieldEvent)
		got.Keyspace, got.Shard, got.EnumSetStringValues = "", "", false
		for _, f := range got.Fields {
			f.Flags = 0
		}
		if !proto.Equal(got, want) {
			t.Errorf("FIELD of %s:\n got %s\nwant %s", table, prototext.Format(got), prototext.Format(want))
		}
	}
	if n == 0 {
		t.Errorf("no FIELD of %s", table)
	}
}

func compareEvents(t *testing.T, got, want []string) {
	t.Helper()
	for i := range max(len(got), len(want)) {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			t.Fatalf("event %d:\n got %s\nwant %s\nall events:\n  %s", i, g, w, strings.Join(got, "\n  "))
		}
	}
}

const (
	cfCreate = "CREATE TABLE %s (id%d1 INT, id%d2 INT, PRIMARY KEY (id%d1))"
	cfInsert = "INSERT INTO %s (id%d1, id%d2) VALUES (%d, %d)"
)

// cfTables creates tables like uvstreamer_flaky_test.go's initTables: table idx has columns
// id<idx>1 (the key) and id<idx>2, and rows (i, i*idx*10) for i in 1..10.
func cfTables(t *testing.T, names ...string) {
	t.Helper()
	for i, name := range names {
		idx := i + 1
		testkit.MustExec(t, db, fmt.Sprintf(cfCreate, name, idx, idx, idx))
		var vals []string
		for r := 1; r <= 10; r++ {
			vals = append(vals, fmt.Sprintf("(%d, %d)", r, r*idx*10))
		}
		testkit.MustExec(t, db, fmt.Sprintf("INSERT INTO %s (id%d1, id%d2) VALUES %s", name, idx, idx, strings.Join(vals, ", ")))
	}
}

// keyFlags returns the flags LASTPK must give the INT primary key col of table. On MySQL they
// are Vitess's, 53251 (NOT_NULL, PRI_KEY, NO_DEFAULT_VALUE, PART_KEY, NUM: MySQL 8's result
// metadata for the column). On MariaDB they are the flags the FIELD of table gives col:
// LASTPK carries a key column's name, type, character set and flags as the FIELD has them,
// as Vitess's pkfields do, and the flag values themselves are FIELD metadata.
func keyFlags(t *testing.T, evs []*binlogdatapb.VEvent, table, col string) uint32 {
	t.Helper()
	if onMySQL() {
		return 53251
	}
	for _, ev := range evs {
		if ev.Type == binlogdatapb.VEventType_FIELD && ev.FieldEvent.TableName == table {
			for _, f := range ev.FieldEvent.Fields {
				if f.Name == col {
					return f.Flags
				}
			}
		}
	}
	t.Fatalf("no FIELD of %s with column %s", table, col)
	return 0
}

// cfCopyEvents are the events of one table's copy in uvstreamer_flaky_test.go's
// expectedEvents (without its test-mode "Copy Start" events).
func cfCopyEvents(name string, idx int, withGTID bool, pkFlags uint32, ids ...int) []string {
	out := []string{"type:BEGIN", fmt.Sprintf(`type:FIELD field_event:{table_name:"%s" fields:{name:"id%d1" type:INT32} fields:{name:"id%d2" type:INT32} enum_set_string_values:true}`, name, idx, idx)}
	if withGTID {
		out = append(out, "type:GTID")
	}
	for _, id := range ids {
		v := fmt.Sprint(id * idx * 10)
		out = append(out, fmt.Sprintf(`type:ROW row_event:{table_name:"%s" row_changes:{after:{lengths:%d lengths:%d values:"%d%s"}}}`, name, len(fmt.Sprint(id)), len(v), id, v))
	}
	last := fmt.Sprint(ids[len(ids)-1])
	return append(out,
		fmt.Sprintf(`type:LASTPK last_p_k_event:{table_last_p_k:{table_name:"%s" lastpk:{fields:{name:"id%d1" type:INT32 charset:63 flags:%d} rows:{lengths:%d values:"%s"}}}}`, name, idx, pkFlags, len(last), last),
		"type:COMMIT",
		"type:BEGIN",
		fmt.Sprintf(`type:LASTPK last_p_k_event:{table_last_p_k:{table_name:"%s"} completed:true}`, name),
		"type:COMMIT")
}

// cfCheckFields checks the FIELDs of cfTables' tables, named in order, with checkFields.
func cfCheckFields(t *testing.T, evs []*binlogdatapb.VEvent, names ...string) {
	t.Helper()
	for i, name := range names {
		checkFields(t, evs, name, vbInt(fmt.Sprintf("id%d1", i+1)), vbInt(fmt.Sprintf("id%d2", i+1)))
	}
}

// cfBinlogEvents is one replicated transaction of rows (id, id*idx*10) after the copy.
func cfBinlogEvents(name string, idx int, ids ...int) []string {
	out := []string{"type:BEGIN", fmt.Sprintf(`type:FIELD field_event:{table_name:"%s" fields:{name:"id%d1" type:INT32} fields:{name:"id%d2" type:INT32}}`, name, idx, idx)}
	for _, id := range ids {
		v := fmt.Sprint(id * idx * 10)
		out = append(out, fmt.Sprintf(`type:ROW row_event:{table_name:"%s" row_changes:{after:{lengths:%d lengths:%d values:"%d%s"}}}`, name, len(fmt.Sprint(id)), len(v), id, v))
	}
	return append(out, "type:GTID", "type:COMMIT")
}

func rangeInts(from, to int) []int {
	var out []int
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

// TestTabletCopyCompleteFlow is TestVStreamCopyCompleteFlow's copy of three tables and the
// replication after it, started as Vitess's test starts it: no position, table_p_ks giving
// tables 1 and 3 a last key of 0 and none for table 2. The changes Vitess's test makes while
// the copy runs are TestTabletCopyCatchUp's.
func TestTabletCopyCompleteFlow(t *testing.T) {
	cfTables(t, "cf_t1", "cf_t2", "cf_t3")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var rules []*binlogdatapb.Rule
	var pks []*binlogdatapb.TableLastPK
	for i, name := range []string{"cf_t1", "cf_t2", "cf_t3"} {
		rules = append(rules, &binlogdatapb.Rule{Match: name, Filter: "select * from " + name})
		if name == "cf_t2" {
			continue
		}
		pks = append(pks, &binlogdatapb.TableLastPK{TableName: name, Lastpk: &querypb.QueryResult{
			Fields: []*querypb.Field{{Name: fmt.Sprintf("id%d1", i+1), Type: querypb.Type_INT32, Charset: 63,
				Flags: uint32(querypb.MySqlFlag_BINARY_FLAG | querypb.MySqlFlag_NUM_FLAG)}},
			Rows: []*querypb.Row{{Lengths: []int64{1}, Values: []byte("0")}},
		}})
	}
	st := tabletStream(t, ctx, &binlogdatapb.VStreamRequest{Filter: &binlogdatapb.Filter{Rules: rules}, TableLastPKs: pks})
	copyEvents := func(flags func(table, col string) uint32) []string {
		var want []string
		want = append(want, cfCopyEvents("cf_t1", 1, true, flags("cf_t1", "id11"), rangeInts(1, 10)...)...)
		want = append(want, cfCopyEvents("cf_t2", 2, false, flags("cf_t2", "id21"), rangeInts(1, 10)...)...)
		want = append(want, cfCopyEvents("cf_t3", 3, false, flags("cf_t3", "id31"), rangeInts(1, 10)...)...)
		return append(want, "type:COPY_COMPLETED")
	}
	got, evs := tabletEvents(t, st, len(copyEvents(func(string, string) uint32 { return 0 })))
	compareEvents(t, got, copyEvents(func(table, col string) uint32 { return keyFlags(t, evs, table, col) }))
	cfCheckFields(t, evs, "cf_t1", "cf_t2", "cf_t3")
	var want []string

	testkit.MustExec(t, db, fmt.Sprintf(cfInsert, "cf_t1", 1, 1, 14, 140), fmt.Sprintf(cfInsert, "cf_t2", 2, 2, 13, 260))
	// Savepoints are not streamed; the rows rolled back to one are not either.
	testkit.MustExec(t, db, "BEGIN",
		"INSERT INTO cf_t3 (id31, id32) VALUES (12, 360)",
		"SAVEPOINT a",
		"INSERT INTO cf_t3 (id31, id32) VALUES (13, 390)",
		"ROLLBACK WORK TO SAVEPOINT a",
		"SAVEPOINT b",
		"INSERT INTO cf_t3 (id31, id32) VALUES (13, 390)",
		"RELEASE SAVEPOINT b",
		"COMMIT")
	want = append(want, cfBinlogEvents("cf_t1", 1, 14)...)
	want = append(want, cfBinlogEvents("cf_t2", 2, 13)...)
	want = append(want, cfBinlogEvents("cf_t3", 3, 12, 13)...)
	got, evs = tabletEvents(t, st, len(want))
	compareEvents(t, got, want)
	cfCheckFields(t, evs, "cf_t1", "cf_t2", "cf_t3")
}

// TestTabletCopyCatchUp is the catch-up of TestVStreamCopyCompleteFlow: a transaction writes
// to a copied table and to one not copied yet; the catch-up before the next table streams
// the first change only, and the next table's copy holds the second. Vitess's test makes the
// write from its send callback, which blocks its tablet; a client of a separate process
// cannot block vstreamd, so the write is made while the client is away, and the client
// resumes at the position the copy gave it, naming the tables still to copy.
func TestTabletCopyCatchUp(t *testing.T) {
	cfTables(t, "cu_t1", "cu_t2")
	flt := &binlogdatapb.Filter{Rules: []*binlogdatapb.Rule{{Match: "cu_t1"}, {Match: "cu_t2"}}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	first := tabletStream(t, ctx, &binlogdatapb.VStreamRequest{Filter: flt})
	got, evs := tabletEvents(t, first, len(cfCopyEvents("cu_t1", 1, true, 0, rangeInts(1, 10)...)))
	compareEvents(t, got, cfCopyEvents("cu_t1", 1, true, keyFlags(t, evs, "cu_t1", "id11"), rangeInts(1, 10)...))
	cfCheckFields(t, evs, "cu_t1")
	pos := evs[2].Gtid
	cancel()

	testkit.MustExec(t, db, "BEGIN", fmt.Sprintf(cfInsert, "cu_t1", 1, 1, 11, 110), fmt.Sprintf(cfInsert, "cu_t2", 2, 2, 11, 220), "COMMIT")
	ctx2, cancel2 := context.WithTimeout(context.Background(), time.Minute)
	defer cancel2()
	st := tabletStream(t, ctx2, &binlogdatapb.VStreamRequest{Position: pos, Filter: flt,
		TableLastPKs: []*binlogdatapb.TableLastPK{{TableName: "cu_t2"}}})
	want := func(flags uint32) []string {
		w := append(cfBinlogEvents("cu_t1", 1, 11), cfCopyEvents("cu_t2", 2, false, flags, rangeInts(1, 11)...)...)
		return append(w, "type:COPY_COMPLETED")
	}
	got, evs = tabletEvents(t, st, len(want(0)))
	compareEvents(t, got, want(keyFlags(t, evs, "cu_t2", "id21")))
	cfCheckFields(t, evs, "cu_t1", "cu_t2")
}

// TestTabletNoCopyWithGTID is TestUVStreamerNoCopyWithGTID: tables_to_copy with a position
// and no table_p_ks copies nothing; the stream starts at the position.
func TestTabletNoCopyWithGTID(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE nc_t1 (id INT, val VARCHAR(128), PRIMARY KEY (id))", "INSERT INTO nc_t1 VALUES (1, 'val1')")
	pos := serverPosition(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st := tabletStream(t, ctx, &binlogdatapb.VStreamRequest{Position: pos,
		Filter:  &binlogdatapb.Filter{Rules: []*binlogdatapb.Rule{{Match: "nc_t1", Filter: "select * from nc_t1"}}},
		Options: &binlogdatapb.VStreamOptions{TablesToCopy: []string{"nc_t1"}}})
	testkit.MustExec(t, db, "INSERT INTO nc_t1 VALUES (2, 'val2')")
	got, evs := tabletEvents(t, st, 5)
	checkFields(t, evs, "nc_t1", vbInt("id"), vbCol{"val", "VARCHAR", "varchar(128)", 512, int(utf8mb4Default())})
	compareEvents(t, got, []string{
		"type:BEGIN",
		`type:FIELD field_event:{table_name:"nc_t1" fields:{name:"id" type:INT32} fields:{name:"val" type:VARCHAR}}`,
		`type:ROW row_event:{table_name:"nc_t1" row_changes:{after:{lengths:1 lengths:4 values:"2val2"}}}`,
		"type:GTID",
		"type:COMMIT",
	})
}

// TestTabletCopyWithoutKey is rowstreamer_test.go's t3 of TestStreamRowsScan: a table
// without a key is copied ordered by all its columns, and its LASTPK is over all of them.
func TestTabletCopyWithoutKey(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE nk_t3 (id INT, val VARBINARY(128))", "INSERT INTO nk_t3 VALUES (2, 'bbb'), (1, 'aaa')")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st := tabletStream(t, ctx, &binlogdatapb.VStreamRequest{
		Filter: &binlogdatapb.Filter{Rules: []*binlogdatapb.Rule{{Match: "nk_t3", Filter: "select * from nk_t3"}}}})
	got, evs := tabletEvents(t, st, 11)
	checkFields(t, evs, "nk_t3", vbInt("id"), vbVarbinary("val", 128))
	// The key fields' flags are the table's own (here: none but NUM and BINARY).
	lp := evs[5].GetLastPKEvent().GetTableLastPK().GetLastpk()
	compareEvents(t, got, []string{
		"type:BEGIN",
		`type:FIELD field_event:{table_name:"nk_t3" fields:{name:"id" type:INT32} fields:{name:"val" type:VARBINARY} enum_set_string_values:true}`,
		"type:GTID",
		`type:ROW row_event:{table_name:"nk_t3" row_changes:{after:{lengths:1 lengths:3 values:"1aaa"}}}`,
		`type:ROW row_event:{table_name:"nk_t3" row_changes:{after:{lengths:1 lengths:3 values:"2bbb"}}}`,
		fmt.Sprintf(`type:LASTPK last_p_k_event:{table_last_p_k:{table_name:"nk_t3" lastpk:{fields:{name:"id" type:INT32 charset:63 flags:%d} fields:{name:"val" type:VARBINARY charset:63 flags:%d} rows:{lengths:1 lengths:3 values:"2bbb"}}}}`,
			lp.GetFields()[0].GetFlags(), lp.GetFields()[1].GetFlags()),
		"type:COMMIT",
		"type:BEGIN",
		`type:LASTPK last_p_k_event:{table_last_p_k:{table_name:"nk_t3"} completed:true}`,
		"type:COMMIT",
		"type:COPY_COMPLETED",
	})
	if f := lp.GetFields()[0].GetFlags(); f&uint32(querypb.MySqlFlag_NUM_FLAG) == 0 || f&uint32(querypb.MySqlFlag_PRI_KEY_FLAG) != 0 {
		t.Errorf("flags of id: %d, want NUM and no PRI_KEY", f)
	}
}

// TestTabletCopyPackets is TestStreamRowsMultiPacket at Vitess's default packet size of
// 250,000 bytes (vstreamd's tablet service takes no per-stream override here): rows of
// 100,000 bytes go three to a packet, each packet its own transaction ending in LASTPK, and
// each tablet packet its own response.
func TestTabletCopyPackets(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE mp_t1 (id INT, val LONGBLOB, PRIMARY KEY (id))",
		"INSERT INTO mp_t1 SELECT seq, REPEAT('x', 100000) FROM "+db.Seq(5))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st := tabletStream(t, ctx, &binlogdatapb.VStreamRequest{
		Filter: &binlogdatapb.Filter{Rules: []*binlogdatapb.Rule{{Match: "mp_t1"}}}})
	var got []string
	for len(got) < 6 {
		resp, err := st.Recv()
		if err != nil {
			t.Fatal(err)
		}
		var parts []string
		for _, ev := range resp.Events {
			if ev.Type == binlogdatapb.VEventType_HEARTBEAT {
				continue
			}
			p := ev.Type.String()
			if ev.Type == binlogdatapb.VEventType_LASTPK {
				if ev.LastPKEvent.Completed {
					p = "LASTPK completed"
				} else {
					p += " " + string(ev.LastPKEvent.GetTableLastPK().GetLastpk().GetRows()[0].GetValues())
				}
			}
			parts = append(parts, p)
		}
		if len(parts) > 0 {
			got = append(got, strings.Join(parts, " "))
		}
	}
	want := []string{"BEGIN FIELD", "GTID", "ROW ROW ROW LASTPK 3 COMMIT", "BEGIN ROW ROW LASTPK 5 COMMIT",
		"BEGIN LASTPK completed COMMIT", "COPY_COMPLETED"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("responses:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// vtgateRead reads vtgate responses, each as a line of event types (VGTID with the tables of
// its table_p_ks), until the line that holds until; it returns the lines, the copied row
// keys per table and the last VGtid received after a COMMIT, as protojson with Vitess's
// protos (as Debezium's Vitess connector keeps it).
func vtgateRead(t *testing.T, r vtgateconn.VStreamReader, until string) (lines []string, rows map[string][]string, saved string) {
	t.Helper()
	rows = map[string][]string{}
	var vg *binlogdatapb.VGtid
	for {
		evs, err := r.Recv()
		if err != nil {
			t.Fatalf("after %v: %v", lines, err)
		}
		var parts []string
		for _, ev := range evs {
			p := ev.Type.String()
			switch ev.Type {
			case binlogdatapb.VEventType_HEARTBEAT:
				continue
			case binlogdatapb.VEventType_VGTID:
				vg = ev.Vgtid
				var tables []string
				for _, tp := range vg.ShardGtids[0].TablePKs {
					// Fields Vitess's protos do not know (vstream's completed flag) would be
					// kept here, and lost by protojson.
					if u := tp.ProtoReflect().GetUnknown(); len(u) > 0 {
						t.Errorf("table_p_ks entry of %s carries fields unknown to Vitess: %x", tp.TableName, u)
					}
					s := tp.TableName
					if rs := tp.GetLastpk().GetRows(); len(rs) > 0 {
						s += ":" + string(rs[0].Values)
					}
					tables = append(tables, s)
				}
				p += "{" + strings.Join(tables, " ") + "}"
			case binlogdatapb.VEventType_FIELD:
				p += " " + ev.FieldEvent.TableName
			case binlogdatapb.VEventType_ROW:
				p += " " + ev.RowEvent.TableName
				rows[ev.RowEvent.TableName] = append(rows[ev.RowEvent.TableName], rowValues(ev.RowEvent.RowChanges[0].After)[0])
			case binlogdatapb.VEventType_COMMIT:
				b, err := protojson.Marshal(vg)
				if err != nil {
					t.Fatal(err)
				}
				saved = string(b)
			}
			parts = append(parts, p)
		}
		if len(parts) == 0 {
			continue
		}
		line := strings.Join(parts, " ")
		lines = append(lines, line)
		if line == until {
			return lines, rows, saved
		}
	}
}

// TestVtgateCopyResumeThroughProtojson: a client keeps the VGtid as protojson with Vitess's
// protos and resumes from it between tables and within one: no table completed is copied
// again, no row arrives twice. vtgate's copy: [BEGIN, FIELD, VGTID], [ROW..., VGTID, COMMIT],
// [BEGIN, VGTID, COMMIT] for a table's completion, then COPY_COMPLETED for the shard and the
// final one.
func TestVtgateCopyResumeThroughProtojson(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE pj_a (id INT PRIMARY KEY)", "INSERT INTO pj_a VALUES (1), (2), (3)",
		"CREATE TABLE pj_b (id INT PRIMARY KEY, pad LONGBLOB)", "INSERT INTO pj_b SELECT seq, REPEAT('x', 100000) FROM "+db.Seq(5),
		"CREATE TABLE pj_c (id INT PRIMARY KEY)", "INSERT INTO pj_c VALUES (7)")
	conn := vtgate(t)
	flt := &binlogdatapb.Filter{Rules: []*binlogdatapb.Rule{{Match: "/^pj_"}}}
	all := map[string][]string{}
	stream := func(vg *binlogdatapb.VGtid, until string) ([]string, string) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		r, err := conn.VStream(ctx, topodatapb.TabletType_PRIMARY, vg, flt, &vtgatepb.VStreamFlags{})
		if err != nil {
			t.Fatal(err)
		}
		lines, rows, saved := vtgateRead(t, r, until)
		for k, v := range rows {
			all[k] = append(all[k], v...)
		}
		return lines, saved
	}
	resume := func(saved string) *binlogdatapb.VGtid {
		if strings.Contains(saved, "completed") {
			t.Errorf("a VGtid of the Vitess API carries vstream's completed flag: %s", saved)
		}
		vg := &binlogdatapb.VGtid{}
		if err := protojson.Unmarshal([]byte(saved), vg); err != nil {
			t.Fatal(err)
		}
		return vg
	}

	lines, saved := stream(&binlogdatapb.VGtid{ShardGtids: []*binlogdatapb.ShardGtid{{Keyspace: "ks", Shard: "0"}}},
		"BEGIN VGTID{pj_b pj_c} COMMIT")
	want := []string{
		"BEGIN FIELD ks.pj_a",
		"VGTID{pj_a pj_b pj_c}",
		"ROW ks.pj_a ROW ks.pj_a ROW ks.pj_a VGTID{pj_a:3 pj_b pj_c} COMMIT",
		"BEGIN VGTID{pj_b pj_c} COMMIT",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("first stream:\n  %s\nwant:\n  %s", strings.Join(lines, "\n  "), strings.Join(want, "\n  "))
	}

	// Between tables: pj_a is done and not copied again.
	lines, saved = stream(resume(saved), "ROW ks.pj_b ROW ks.pj_b ROW ks.pj_b VGTID{pj_b:3 pj_c} COMMIT")
	want = []string{"BEGIN FIELD ks.pj_b", "ROW ks.pj_b ROW ks.pj_b ROW ks.pj_b VGTID{pj_b:3 pj_c} COMMIT"}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("resumed between tables:\n  %s\nwant:\n  %s", strings.Join(lines, "\n  "), strings.Join(want, "\n  "))
	}

	// Within pj_b: it goes on after its last key.
	lines, _ = stream(resume(saved), "COPY_COMPLETED COPY_COMPLETED")
	want = []string{
		"BEGIN FIELD ks.pj_b",
		"ROW ks.pj_b ROW ks.pj_b VGTID{pj_b:5 pj_c} COMMIT",
		"BEGIN VGTID{pj_c} COMMIT",
		"BEGIN FIELD ks.pj_c",
		"ROW ks.pj_c VGTID{pj_c:7} COMMIT",
		"BEGIN VGTID{} COMMIT",
		"COPY_COMPLETED COPY_COMPLETED",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("resumed within pj_b:\n  %s\nwant:\n  %s", strings.Join(lines, "\n  "), strings.Join(want, "\n  "))
	}
	if got := fmt.Sprint(all); got != "map[ks.pj_a:[1 2 3] ks.pj_b:[1 2 3 4 5] ks.pj_c:[7]]" {
		t.Errorf("rows copied: %s, want each once", got)
	}
}

// TestTabletBestEffortFieldNames is TestBestEffortNameInFieldEvent: a row written before its
// table was renamed is described, in BEST_EFFORT mode, by what the binlog says of it. Vitess's
// test runs on MySQL's default binlog_row_metadata=MINIMAL, whose binlog has no column names,
// so they are named by position (@1, @2). MariaDB behaves the same with MINIMAL; with FULL
// (what vstreamd asks for) the binlog carries the names, and they are used. It is not a copy
// case (a copy reads the table as it is and never falls back); it is here for the FIELD shape.
func TestTabletBestEffortFieldNames(t *testing.T) {
	for _, metadata := range []string{"MINIMAL", "FULL"} {
		t.Run(metadata, func(t *testing.T) {
			table := "be_" + strings.ToLower(metadata)
			testkit.MustExec(t, db, "CREATE TABLE "+table+" (id INT, val VARBINARY(128), PRIMARY KEY (id)) ENGINE=InnoDB CHARSET=utf8mb4")
			pos := serverPosition(t)
			testkit.MustExec(t, db, "SET GLOBAL binlog_row_metadata = "+metadata)
			testkit.MustExec(t, db, "INSERT INTO "+table+" VALUES (1, 'abc')")
			testkit.MustExec(t, db, "SET GLOBAL binlog_row_metadata = FULL", "RENAME TABLE "+table+" TO "+table+"_new")
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			st := tabletStream(t, ctx, &binlogdatapb.VStreamRequest{Position: pos, Filter: &binlogdatapb.Filter{
				FieldEventMode: binlogdatapb.Filter_BEST_EFFORT, Rules: []*binlogdatapb.Rule{{Match: "/^" + table}}}})
			testkit.MustExec(t, db, "INSERT INTO "+table+"_new VALUES (2, 'abc')")
			got, _ := tabletEvents(t, st, 12)
			id, val := "@1", "@2"
			if metadata == "FULL" {
				id, val = "id", "val"
			}
			compareEvents(t, got, []string{
				"type:BEGIN",
				fmt.Sprintf(`type:FIELD field_event:{table_name:"%s" fields:{name:"%s" type:INT32} fields:{name:"%s" type:VARBINARY}}`, table, id, val),
				fmt.Sprintf(`type:ROW row_event:{table_name:"%s" row_changes:{after:{lengths:1 lengths:3 values:"1abc"}}}`, table),
				"type:GTID",
				"type:COMMIT",
				"type:GTID",
				fmt.Sprintf(`type:DDL statement:"RENAME TABLE %s TO %s_new"`, table, table),
				"type:BEGIN",
				fmt.Sprintf(`type:FIELD field_event:{table_name:"%s_new" fields:{name:"id" type:INT32} fields:{name:"val" type:VARBINARY}}`, table),
				fmt.Sprintf(`type:ROW row_event:{table_name:"%s_new" row_changes:{after:{lengths:1 lengths:3 values:"2abc"}}}`, table),
				"type:GTID",
				"type:COMMIT",
			})
		})
	}
}

// TestVtgateCopyTransactions is vtgate's TestVStreamCopyTransactions: a copy large enough to
// cross the packet size arrives in transactions, each BEGIN closed by a COMMIT before the
// next BEGIN.
func TestVtgateCopyTransactions(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE ct_basic (id1 INT PRIMARY KEY, id2 INT)", "INSERT INTO ct_basic SELECT seq, seq FROM "+db.Seq(100000))
	conn := vtgate(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := conn.VStream(ctx, topodatapb.TabletType_PRIMARY,
		&binlogdatapb.VGtid{ShardGtids: []*binlogdatapb.ShardGtid{{Keyspace: "ks", Shard: "0"}}},
		&binlogdatapb.Filter{Rules: []*binlogdatapb.Rule{{Match: "ct_basic", Filter: "select * from ct_basic"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	inTxn := false
	commits, rows := 0, 0
	for done := false; !done; {
		evs, err := r.Recv()
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			switch ev.Type {
			case binlogdatapb.VEventType_BEGIN:
				if inTxn {
					t.Fatalf("a second BEGIN within a transaction, after %d commits", commits)
				}
				inTxn = true
			case binlogdatapb.VEventType_COMMIT:
				if !inTxn {
					t.Fatalf("COMMIT without BEGIN, after %d commits", commits)
				}
				inTxn = false
				commits++
			case binlogdatapb.VEventType_ROW:
				if !inTxn {
					t.Fatal("ROW outside a transaction")
				}
				rows++
			case binlogdatapb.VEventType_COPY_COMPLETED:
				done = true
			}
		}
	}
	// 100,000 rows of about 11 bytes: five packets of 250,000 bytes, and the completion.
	if rows != 100000 || commits < 5 {
		t.Errorf("%d rows in %d transactions", rows, commits)
	}
}

// TestVtgateCopyResume is vtgate's TestVStreamCopyResume on one shard: a copy resumed at a
// position with a last key of 4 catches up on the table's changes, then copies the rows after
// 4. Vitess also sends the catch-up's changes to rows after the last key (the insert and the
// update of id1 9), which the copy then sends again; vstreamd leaves them to the copy, so
// each row arrives once, as the copy reads it.
func TestVtgateCopyResume(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE cr_resume (id1 BIGINT PRIMARY KEY, id2 BIGINT)", "CREATE TABLE cr_other (id1 BIGINT PRIMARY KEY, id2 BIGINT)",
		"INSERT INTO cr_resume (id1, id2) VALUES (1,1), (2,2), (3,3), (4,4), (5,5), (6,6), (7,7), (8,8)")
	pos := serverPosition(t)
	testkit.MustExec(t, db,
		"INSERT INTO cr_resume (id1, id2) VALUES (9, 9)",
		"UPDATE cr_resume SET id2 = 10 WHERE id1 = 1",
		"INSERT INTO cr_other (id1, id2) VALUES (100, 100)",
		"DELETE FROM cr_resume WHERE id1 = 1",
		"UPDATE cr_resume SET id2 = 90 WHERE id1 = 9")
	lastPK := []*binlogdatapb.TableLastPK{{TableName: "cr_resume", Lastpk: &querypb.QueryResult{
		Fields: []*querypb.Field{{Name: "id1", Type: querypb.Type_INT64, Charset: 63, Flags: uint32(querypb.MySqlFlag_NUM_FLAG | querypb.MySqlFlag_BINARY_FLAG)}},
		Rows:   []*querypb.Row{{Lengths: []int64{1}, Values: []byte("4")}},
	}}}
	conn := vtgate(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := conn.VStream(ctx, topodatapb.TabletType_PRIMARY,
		&binlogdatapb.VGtid{ShardGtids: []*binlogdatapb.ShardGtid{{Keyspace: "ks", Shard: "0", Gtid: pos, TablePKs: lastPK}}},
		&binlogdatapb.Filter{Rules: []*binlogdatapb.Rule{{Match: "cr_resume", Filter: "select * from cr_resume"}}}, &vtgatepb.VStreamFlags{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for done := false; !done; {
		evs, err := r.Recv()
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			switch ev.Type {
			case binlogdatapb.VEventType_ROW:
				got = append(got, vitessText(ev))
			case binlogdatapb.VEventType_VGTID:
				// Every VGTID of the copy holds a complete TableLastPK, fields included, so
				// that the client can resume from it.
				for _, tp := range ev.Vgtid.ShardGtids[0].TablePKs {
					if lp := tp.GetLastpk(); lp == nil || len(lp.Fields) != 1 || len(lp.Rows) != 1 {
						t.Errorf("VGTID with an incomplete TableLastPK: %v", tp)
					}
				}
			case binlogdatapb.VEventType_COPY_COMPLETED:
				done = true
			}
		}
	}
	compareEvents(t, got, []string{
		`type:ROW row_event:{table_name:"ks.cr_resume" row_changes:{before:{lengths:1 lengths:1 values:"11"} after:{lengths:1 lengths:2 values:"110"}}}`,
		`type:ROW row_event:{table_name:"ks.cr_resume" row_changes:{before:{lengths:1 lengths:2 values:"110"}}}`,
		`type:ROW row_event:{table_name:"ks.cr_resume" row_changes:{after:{lengths:1 lengths:1 values:"55"}}}`,
		`type:ROW row_event:{table_name:"ks.cr_resume" row_changes:{after:{lengths:1 lengths:1 values:"66"}}}`,
		`type:ROW row_event:{table_name:"ks.cr_resume" row_changes:{after:{lengths:1 lengths:1 values:"77"}}}`,
		`type:ROW row_event:{table_name:"ks.cr_resume" row_changes:{after:{lengths:1 lengths:1 values:"88"}}}`,
		`type:ROW row_event:{table_name:"ks.cr_resume" row_changes:{after:{lengths:1 lengths:2 values:"990"}}}`,
	})
}

// TestTabletCopyFilterValidations is TestVStreamCopyFilterValidations: which tables a copy
// takes for a filter (in name order), a last key honoured, and the two errors. Vitess's test
// reads the uvstreamer's plans; here they are the tables whose copy the stream sends. Table
// names have a prefix, and regexes match it, for the database is shared.
func TestTabletCopyFilterValidations(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE fv_t1 (id11 INT, id12 INT, PRIMARY KEY (id11))",
		"CREATE TABLE fv_t2a (id21 INT, id22 INT, PRIMARY KEY (id21))",
		"CREATE TABLE fv_t2b (id21 INT, id22 INT, PRIMARY KEY (id21))",
		"INSERT INTO fv_t1 VALUES (9, 90), (10, 100), (11, 110)")
	// copied reads a copy to its end and returns the tables copied and the fv_t1 keys copied.
	copied := func(rules []*binlogdatapb.Rule, pks []*binlogdatapb.TableLastPK) (tables, keys []string) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		st := tabletStream(t, ctx, &binlogdatapb.VStreamRequest{Filter: &binlogdatapb.Filter{Rules: rules}, TableLastPKs: pks})
		for {
			resp, err := st.Recv()
			if err != nil {
				t.Fatal(err)
			}
			for _, ev := range resp.Events {
				switch ev.Type {
				case binlogdatapb.VEventType_FIELD:
					tables = append(tables, ev.FieldEvent.TableName)
				case binlogdatapb.VEventType_ROW:
					keys = append(keys, rowValues(ev.RowEvent.RowChanges[0].After)[0])
				case binlogdatapb.VEventType_COPY_COMPLETED:
					return tables, keys
				}
			}
		}
	}
	lastPK := []*binlogdatapb.TableLastPK{{TableName: "fv_t1", Lastpk: &querypb.QueryResult{
		Fields: []*querypb.Field{{Name: "id11", Type: querypb.Type_INT32, Charset: 63, Flags: uint32(querypb.MySqlFlag_BINARY_FLAG | querypb.MySqlFlag_NUM_FLAG)}},
		Rows:   []*querypb.Row{{Lengths: []int64{2}, Values: []byte("10")}},
	}}}
	for _, c := range []struct {
		rules  []*binlogdatapb.Rule
		pks    []*binlogdatapb.TableLastPK
		tables string
		keys   string
	}{
		{[]*binlogdatapb.Rule{{Match: "fv_t1"}}, nil, "fv_t1", "9 10 11"},
		{[]*binlogdatapb.Rule{{Match: "fv_t2a"}, {Match: "fv_t1"}}, nil, "fv_t1 fv_t2a", "9 10 11"},
		{[]*binlogdatapb.Rule{{Match: "/^fv_.*"}}, nil, "fv_t1 fv_t2a fv_t2b", "9 10 11"},
		{[]*binlogdatapb.Rule{{Match: "/^fv_t2.*"}}, nil, "fv_t2a fv_t2b", ""},
		{[]*binlogdatapb.Rule{{Match: "fv_t1"}}, lastPK, "fv_t1", "11"},
	} {
		tables, keys := copied(c.rules, c.pks)
		if strings.Join(tables, " ") != c.tables || strings.Join(keys, " ") != c.keys {
			t.Errorf("rules %v, table_p_ks %v: copied %v with keys %v, want %s with keys %s", c.rules, c.pks, tables, keys, c.tables, c.keys)
		}
	}
	for _, c := range []struct {
		rules []*binlogdatapb.Rule
		msg   string
	}{
		{[]*binlogdatapb.Rule{{Match: "/^fv_.*"}, {Match: "fv_xyz"}}, "table fv_xyz is not present in the database"},
		{[]*binlogdatapb.Rule{{Match: "/^fv_x.*"}}, "nothing to copy"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		_, err := tabletStream(t, ctx, &binlogdatapb.VStreamRequest{Filter: &binlogdatapb.Filter{Rules: c.rules}}).Recv()
		cancel()
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("rules %v: got %v, want InvalidArgument saying %q", c.rules, err, c.msg)
		}
	}
}

// fieldOf returns the description LASTPK must give a key column (name, type, character set,
// flags): on MySQL Vitess's, given as vitess; on MariaDB the FIELD's (see keyFlags).
func fieldOf(t *testing.T, evs []*binlogdatapb.VEvent, table, col, vitess string) string {
	t.Helper()
	if onMySQL() {
		return vitess
	}
	for _, ev := range evs {
		if ev.Type == binlogdatapb.VEventType_FIELD && ev.FieldEvent.TableName == table {
			for _, f := range ev.FieldEvent.Fields {
				if f.Name == col {
					return fmt.Sprintf(`name:"%s" type:%s charset:%d flags:%d`, f.Name, f.Type, f.Charset, f.Flags)
				}
			}
		}
	}
	t.Fatalf("no FIELD of %s with column %s", table, col)
	return ""
}

// TestTabletCopyWithDifferentFilters is TestVStreamCopyWithDifferentFilters: a rule with a
// projection and a regex rule, copied in name order, a VARCHAR key ordered by its collation.
// LASTPK's key fields are Vitess's on MySQL (flags 53251 and 20483, the VARCHAR's collation
// 255) and the FIELD's columns on MariaDB.
func TestTabletCopyWithDifferentFilters(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE df_t1 (id1 INT, id2 INT, id3 INT, PRIMARY KEY (id1)) CHARSET=utf8mb4",
		"CREATE TABLE df_t2a (id1 INT, id2 INT, PRIMARY KEY (id1)) CHARSET=utf8mb4",
		"CREATE TABLE df_t2b (id1 VARCHAR(20), id2 INT, PRIMARY KEY (id1)) CHARSET=utf8mb4",
		"INSERT INTO df_t1 (id1, id2, id3) VALUES (1, 2, 3)",
		"INSERT INTO df_t2a (id1, id2) VALUES (1, 4)",
		"INSERT INTO df_t2b (id1, id2) VALUES ('b', 6)",
		"INSERT INTO df_t2b (id1, id2) VALUES ('a', 5)")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st := tabletStream(t, ctx, &binlogdatapb.VStreamRequest{Filter: &binlogdatapb.Filter{Rules: []*binlogdatapb.Rule{
		{Match: "/^df_t2.*"}, {Match: "df_t1", Filter: "select id1, id2 from df_t1"}}}})
	got, evs := tabletEvents(t, st, 27)
	checkFields(t, evs, "df_t1", vbInt("id1"), vbInt("id2"))
	checkFields(t, evs, "df_t2a", vbInt("id1"), vbInt("id2"))
	checkFields(t, evs, "df_t2b", vbCol{"id1", "VARCHAR", "varchar(20)", 80, int(utf8mb4Default())}, vbInt("id2"))
	lastPK := func(table, col, vitess, lengths, values string) string {
		return fmt.Sprintf(`type:LASTPK last_p_k_event:{table_last_p_k:{table_name:"%s" lastpk:{fields:{%s} rows:{%s values:"%s"}}}}`,
			table, fieldOf(t, evs, table, col, vitess), lengths, values)
	}
	const vitessInt, vitessVarchar = `name:"id1" type:INT32 charset:63 flags:53251`, `name:"id1" type:VARCHAR charset:255 flags:20483`
	compareEvents(t, got, []string{
		"type:BEGIN",
		`type:FIELD field_event:{table_name:"df_t1" fields:{name:"id1" type:INT32} fields:{name:"id2" type:INT32} enum_set_string_values:true}`,
		"type:GTID",
		`type:ROW row_event:{table_name:"df_t1" row_changes:{after:{lengths:1 lengths:1 values:"12"}}}`,
		lastPK("df_t1", "id1", vitessInt, "lengths:1", "1"),
		"type:COMMIT",
		"type:BEGIN",
		`type:LASTPK last_p_k_event:{table_last_p_k:{table_name:"df_t1"} completed:true}`,
		"type:COMMIT",
		"type:BEGIN",
		`type:FIELD field_event:{table_name:"df_t2a" fields:{name:"id1" type:INT32} fields:{name:"id2" type:INT32} enum_set_string_values:true}`,
		`type:ROW row_event:{table_name:"df_t2a" row_changes:{after:{lengths:1 lengths:1 values:"14"}}}`,
		lastPK("df_t2a", "id1", vitessInt, "lengths:1", "1"),
		"type:COMMIT",
		"type:BEGIN",
		`type:LASTPK last_p_k_event:{table_last_p_k:{table_name:"df_t2a"} completed:true}`,
		"type:COMMIT",
		"type:BEGIN",
		`type:FIELD field_event:{table_name:"df_t2b" fields:{name:"id1" type:VARCHAR} fields:{name:"id2" type:INT32} enum_set_string_values:true}`,
		`type:ROW row_event:{table_name:"df_t2b" row_changes:{after:{lengths:1 lengths:1 values:"a5"}}}`,
		`type:ROW row_event:{table_name:"df_t2b" row_changes:{after:{lengths:1 lengths:1 values:"b6"}}}`,
		lastPK("df_t2b", "id1", vitessVarchar, "lengths:1", "b"),
		"type:COMMIT",
		"type:BEGIN",
		`type:LASTPK last_p_k_event:{table_last_p_k:{table_name:"df_t2b"} completed:true}`,
		"type:COMMIT",
		"type:COPY_COMPLETED",
	})
}
