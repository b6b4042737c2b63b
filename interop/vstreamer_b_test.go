package interop

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"vitess.io/vitess/go/sqltypes"
	binlogdatapb "vitess.io/vitess/go/vt/proto/binlogdata"
	querypb "vitess.io/vitess/go/vt/proto/query"
	queryservicepb "vitess.io/vitess/go/vt/proto/queryservice"

	"github.com/vstream-cdc/vstream/internal/testkit"
)

// Cases of Vitess's vstreamer_test.go and rowstreamer_test.go, SQL in and the events Vitess's
// tests expect out, through /queryservice.Query/VStream and VStreamRows with Vitess's own
// clients. An event is compared as Vitess's tests compare it: the whole message, FIELD
// metadata included, with the parts Vitess's tests clear (times, keyspace and shard, column
// flags, row flags, the GTID's value) cleared. Tables are prefixed vb_ as the tests share one
// database; MariaDB's adaptations are listed in README.md.

// vbCol is a column of a FIELD event as Vitess's TestColumn describes it.
type vbCol struct {
	name, typ, colType string
	length, charset    int
}

// vbInt and vbVarbinary are the columns Vitess's cases use most.
func vbInt(name string) vbCol { return vbCol{name, "INT32", widths("int(11)"), 11, 63} }
func vbVarbinary(name string, n int) vbCol {
	return vbCol{name, "VARBINARY", fmt.Sprintf("varbinary(%d)", n), n, 63}
}

// vbFields renders columns as Vitess's expected fields, with the test database "ks".
func vbFields(table string, cols ...vbCol) string {
	var b strings.Builder
	for i, c := range cols {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, `fields:{name:%q type:%s table:%q org_table:%q database:"ks" org_name:%q column_length:%d charset:%d column_type:%q}`,
			c.name, c.typ, table, table, c.name, c.length, c.charset, c.colType)
	}
	return b.String()
}

// vbField is a FIELD event in Vitess's text.
func vbField(table string, cols ...vbCol) string {
	return fmt.Sprintf(`type:FIELD field_event:{table_name:%q %s}`, table, vbFields(table, cols...))
}

// vbRow is a ROW event inserting one row, in Vitess's text ("NULL" is a null value).
func vbRow(table string, vals ...string) string {
	return fmt.Sprintf(`type:ROW row_event:{table_name:%q row_changes:{after:{%s}}}`, table, vbRowValues(vals))
}

func vbRowValues(vals []string) string {
	var b strings.Builder
	var all string
	for _, v := range vals {
		if v == "NULL" {
			b.WriteString("lengths:-1 ")
			continue
		}
		fmt.Fprintf(&b, "lengths:%d ", len(v))
		all += v
	}
	return fmt.Sprintf("%svalues:%s", b.String(), strconv.Quote(all))
}

// vbClean clears what Vitess's expectLog clears before it compares an event.
func vbClean(ev *binlogdatapb.VEvent) *binlogdatapb.VEvent {
	ev = proto.Clone(ev).(*binlogdatapb.VEvent)
	ev.Timestamp, ev.CurrentTime, ev.Keyspace, ev.Shard, ev.EventGtid = 0, 0, "", "", ""
	ev.SequenceNumber, ev.CommitParent = 0, 0
	switch ev.Type {
	case binlogdatapb.VEventType_FIELD:
		ev.FieldEvent.Keyspace, ev.FieldEvent.Shard = "", ""
		for _, f := range ev.FieldEvent.Fields {
			f.Flags = 0
		}
	case binlogdatapb.VEventType_ROW:
		ev.RowEvent.Keyspace, ev.RowEvent.Shard, ev.RowEvent.Flags = "", "", 0
	}
	return ev
}

// vbMatch compares an event with one of Vitess's expected lines: "begin", "gtid", "commit",
// "lastpk" and "copy_completed" match the type (as in Vitess's expectLog); anything else is
// the event's text, parsed and compared as a message.
func vbMatch(t *testing.T, ev *binlogdatapb.VEvent, want string) bool {
	t.Helper()
	words := map[string]binlogdatapb.VEventType{
		"begin": binlogdatapb.VEventType_BEGIN, "gtid": binlogdatapb.VEventType_GTID,
		"commit": binlogdatapb.VEventType_COMMIT, "lastpk": binlogdatapb.VEventType_LASTPK,
		"copy_completed": binlogdatapb.VEventType_COPY_COMPLETED,
	}
	if typ, ok := words[want]; ok {
		return ev.Type == typ
	}
	w := &binlogdatapb.VEvent{}
	if err := prototext.Unmarshal([]byte(want), w); err != nil {
		t.Fatalf("expected event %s: %v", want, err)
	}
	return proto.Equal(vbClean(ev), w)
}

func vbText(ev *binlogdatapb.VEvent) string {
	return prototext.MarshalOptions{}.Format(vbClean(ev))
}

// vbStream is a tablet stream read event by event, heartbeats left out.
type vbStream struct {
	st      queryservicepb.Query_VStreamClient
	pending []*binlogdatapb.VEvent
}

func vbStart(t *testing.T, ctx context.Context, req *binlogdatapb.VStreamRequest) *vbStream {
	t.Helper()
	return &vbStream{st: tabletStream(t, ctx, req)}
}

func (s *vbStream) next(t *testing.T) *binlogdatapb.VEvent {
	t.Helper()
	for len(s.pending) == 0 {
		resp, err := s.st.Recv()
		if err != nil {
			t.Fatalf("stream ended: %v", err)
		}
		for _, ev := range resp.Events {
			if ev.Type != binlogdatapb.VEventType_HEARTBEAT {
				s.pending = append(s.pending, ev)
			}
		}
	}
	ev := s.pending[0]
	s.pending = s.pending[1:]
	return ev
}

// expect reads len(want) events and compares each with Vitess's expected line.
func (s *vbStream) expect(t *testing.T, want ...string) {
	t.Helper()
	var got []string
	for i, w := range want {
		ev := s.next(t)
		got = append(got, vbText(ev))
		if !vbMatch(t, ev, w) {
			t.Fatalf("event %d:\n got %s\nwant %s\nevents so far:\n  %s", i, vbText(ev), w, strings.Join(got, "\n  "))
		}
	}
}

// vbCase streams the binlog from the current position with filter, runs sqls and expects
// Vitess's events.
func vbCase(t *testing.T, filter *binlogdatapb.Filter, sqls []string, want ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := vbStart(t, ctx, &binlogdatapb.VStreamRequest{Position: serverPosition(t), Filter: filter})
	testkit.MustExec(t, db, sqls...)
	s.expect(t, want...)
}

func vbFilter(table, query string) *binlogdatapb.Filter {
	return &binlogdatapb.Filter{Rules: []*binlogdatapb.Rule{{Match: table, Filter: query}}}
}

// vbJSON is a JSON column. MariaDB's JSON is a LONGTEXT alias with a JSON_VALID check:
// vstreamd types it JSON (charset 63) as Vitess does, but the server's column type is
// "longtext" where MySQL's is "json".
func vbJSON(name string) vbCol {
	return vbCol{name, "JSON", byFlavor("longtext", "json"), 4294967295, 63}
}

// TestVitessJSON is TestJSON: JSON values inserted in one transaction. On MySQL a value is
// MySQL's binary JSON printed as Vitess prints it; on MariaDB it is the text as written; for
// these values both are the text of the insert.
func TestVitessJSON(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE vb_json (id INT DEFAULT 1, val JSON, PRIMARY KEY (id))")
	vals := []string{"{}", "123456", `"vtTablet"`, `{"foo": "bar"}`, `["abc", 3.14, true]`}
	sqls := []string{"BEGIN"}
	want := []string{"begin", vbField("vb_json", vbInt("id"), vbJSON("val"))}
	for i, v := range vals {
		sqls = append(sqls, fmt.Sprintf("INSERT INTO vb_json VALUES (%d, %s)", i+1, sqlQuote(v)))
		want = append(want, vbRow("vb_json", strconv.Itoa(i+1), v))
	}
	vbCase(t, vbFilter("vb_json", "select * from vb_json"), append(sqls, "COMMIT"), append(want, "gtid", "commit")...)
}

// TestVitessJSONNestedOpaque is TestJSONNestedOpaque. MySQL keeps a binary string inside a
// JSON document as an opaque value, which Vitess renders "base64:type15:..." (Vitess's
// expectation, on MySQL); MariaDB's JSON is text, so JSON_OBJECT and JSON_ARRAY write the
// binary values' characters, JSON-escaped (b'1010' is a newline, written \n).
func TestVitessJSONNestedOpaque(t *testing.T) {
	row1, row2 := `{"k": "foo"}`, `["a", "\n"]`
	if onMySQL() {
		row1, row2 = `{"k": "base64:type15:Zm9v"}`, `["a", "base64:type15:Cg=="]`
	}
	testkit.MustExec(t, db, "CREATE TABLE vb_json_opaque (id INT, val JSON, PRIMARY KEY (id))")
	vbCase(t, vbFilter("vb_json_opaque", "select * from vb_json_opaque"), []string{
		"BEGIN",
		"INSERT INTO vb_json_opaque VALUES (1, JSON_OBJECT('k', CAST('foo' AS BINARY)))",
		"INSERT INTO vb_json_opaque VALUES (2, JSON_ARRAY('a', b'1010'))",
		"COMMIT",
	},
		"begin",
		vbField("vb_json_opaque", vbInt("id"), vbJSON("val")),
		vbRow("vb_json_opaque", "1", row1),
		vbRow("vb_json_opaque", "2", row2),
		"gtid",
		"commit")
}

func sqlQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// TestVitessHeartbeat is TestHeartbeat: an idle stream's first response is one HEARTBEAT.
func TestVitessHeartbeat(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st := tabletStream(t, ctx, &binlogdatapb.VStreamRequest{Position: serverPosition(t), Filter: vbFilter("/.*/", "")})
	resp, err := st.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Events) != 1 || resp.Events[0].Type != binlogdatapb.VEventType_HEARTBEAT {
		t.Fatalf("first response %v, want one HEARTBEAT", resp.Events)
	}
}

// TestVitessFilteredMultipleWhere is TestFilteredMultipleWhere: in_keyrange with equalities
// and IN, all in one WHERE. (1, 2, 129): of 2 and 129 only 2 is in -80 with hash.
func TestVitessFilteredMultipleWhere(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE vb_mw (id1 INT, id2 INT, id3 INT, val VARBINARY(128), PRIMARY KEY (id1))")
	vbCase(t, vbFilter("vb_mw", "select id1, val from vb_mw where in_keyrange('-80') and id2 = 200 and id3 = 1000 and val = 'newton' and id1 in (1, 2, 129)"),
		[]string{
			"BEGIN",
			"INSERT INTO vb_mw VALUES (1, 100, 1000, 'kepler')",
			"INSERT INTO vb_mw VALUES (2, 200, 1000, 'newton')",
			"INSERT INTO vb_mw VALUES (3, 100, 2000, 'kepler')",
			"INSERT INTO vb_mw VALUES (128, 200, 1000, 'newton')",
			"INSERT INTO vb_mw VALUES (5, 200, 2000, 'kepler')",
			"INSERT INTO vb_mw VALUES (129, 200, 1000, 'kepler')",
			"COMMIT",
		},
		"begin", vbField("vb_mw", vbInt("id1"), vbVarbinary("val", 128)), vbRow("vb_mw", "2", "newton"), "gtid", "commit")
}

// TestVitessGeneratedColumns is TestGeneratedColumns: virtual columns are streamed with their
// values. MariaDB writes a virtual column's value to the row image (binlog_row_image=FULL).
func TestVitessGeneratedColumns(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE vb_gen (id INT, val VARBINARY(6), val2 VARBINARY(6) AS (CONCAT(id, val)), val3 VARBINARY(6) AS (CONCAT(val, id)), id2 INT, PRIMARY KEY (id))")
	vbCase(t, vbFilter("vb_gen", "select * from vb_gen"), []string{
		"BEGIN",
		"INSERT INTO vb_gen (id, val, id2) VALUES (1, 'aaa', 10)",
		"INSERT INTO vb_gen (id, val, id2) VALUES (2, 'bbb', 20)",
		"COMMIT",
	},
		"begin",
		vbField("vb_gen", vbInt("id"), vbVarbinary("val", 6), vbVarbinary("val2", 6), vbVarbinary("val3", 6), vbInt("id2")),
		vbRow("vb_gen", "1", "aaa", "1aaa", "aaa1", "10"),
		vbRow("vb_gen", "2", "bbb", "2bbb", "bbb2", "20"),
		"gtid", "commit")
}

// vbFilterCase is one of Vitess's filtered cases on t1(id1 int, id2 int, val varbinary(128)):
// inserts (id1, id2, val) and the id1s whose rows the filter passes as (id1, val).
type vbFilterCase struct {
	name, filter string
	rows         [][3]string
	pass         []string
}

func runVBFilterCases(t *testing.T, table string, cases []vbFilterCase) {
	testkit.MustExec(t, db, fmt.Sprintf("CREATE TABLE %s (id1 INT, id2 INT, val VARBINARY(128), PRIMARY KEY (id1))", table))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			testkit.MustExec(t, db, "DELETE FROM "+table)
			sqls := []string{"BEGIN"}
			want := []string{"begin", vbField(table, vbInt("id1"), vbVarbinary("val", 128))}
			for _, r := range tc.rows {
				val := "NULL"
				if r[2] != "NULL" {
					val = sqlQuote(r[2])
				}
				sqls = append(sqls, fmt.Sprintf("INSERT INTO %s VALUES (%s, %s, %s)", table, r[0], r[1], val))
				for _, p := range tc.pass {
					if p == r[0] {
						want = append(want, vbRow(table, r[0], r[2]))
					}
				}
			}
			vbCase(t, vbFilter(table, strings.ReplaceAll(tc.filter, " t1", " "+table)), append(sqls, "COMMIT"), append(want, "gtid", "commit")...)
		})
	}
}

// vbRows are inserts (id1, id2, val) with ids 1.. and id2 alternating 100, 200.
func vbRows(vals ...string) [][3]string {
	var out [][3]string
	for i, v := range vals {
		out = append(out, [3]string{strconv.Itoa(i + 1), strconv.Itoa(100 + 100*(i%2)), v})
	}
	return out
}

// TestVitessFilteredInOperator is TestFilteredInOperator.
func TestVitessFilteredInOperator(t *testing.T) {
	runVBFilterCases(t, "vb_in", []vbFilterCase{{
		name: "in", filter: "select id1, val from t1 where val in ('eee', 'bbb', 'ddd') and id1 in (4, 5)",
		rows: vbRows("aaa", "bbb", "ccc", "ddd", "eee"), pass: []string{"4", "5"},
	}})
}

// TestVitessFilteredBetweenOperator is TestFilteredBetweenOperator.
func TestVitessFilteredBetweenOperator(t *testing.T) {
	runVBFilterCases(t, "vb_between", []vbFilterCase{
		{name: "between-int", filter: "select id1, val from t1 where id1 between 2 and 5",
			rows: vbRows("aaa", "bbb", "ccc", "ddd", "eee", "fff"), pass: []string{"2", "3", "4", "5"}},
		{name: "between-varchar", filter: "select id1, val from t1 where val between 'c' and 'e'",
			rows: vbRows("a", "b", "c", "d", "e", "f"), pass: []string{"3", "4", "5"}},
		{name: "not-between-int", filter: "select id1, val from t1 where id1 not between 3 and 5",
			rows: vbRows("aaa", "bbb", "ccc", "ddd", "eee", "fff"), pass: []string{"1", "2", "6"}},
		{name: "not-between-varchar", filter: "select id1, val from t1 where val not between 'b' and 'e'",
			rows: vbRows("a", "b", "c", "d", "e", "f", "g"), pass: []string{"1", "6", "7"}},
		{name: "between-and-not-between", filter: "select id1, val from t1 where id1 between 2 and 6 and val not between 'd' and 'f'",
			rows: vbRows("a", "b", "c", "d", "e", "f", "g"), pass: []string{"2", "3"}},
		{name: "between-and-not-between-and-additional-compare",
			filter: "select id1, val from t1 where id1 between 2 and 10 and id1 != 9 and val not between 'd' and 'f' and val in ('a','e')",
			rows:   vbRows("a", "b", "c", "d", "e", "f", "g", "a", "a"), pass: []string{"8"}},
	})
}

// TestVitessFilteredIsNullOperator is TestFilteredIsNullOperator.
func TestVitessFilteredIsNullOperator(t *testing.T) {
	runVBFilterCases(t, "vb_isnull", []vbFilterCase{
		{name: "is-null", filter: "select id1, val from t1 where val is null",
			rows: [][3]string{{"1", "100", "aaa"}, {"2", "200", "bbb"}, {"3", "100", "ccc"}, {"4", "200", "NULL"}, {"5", "200", "NULL"}},
			pass: []string{"4", "5"}},
		{name: "is-null-and-is-not-null", filter: "select id1, val from t1 where val is null and id2 is not null",
			rows: [][3]string{{"1", "100", "aaa"}, {"2", "200", "bbb"}, {"3", "100", "NULL"}, {"4", "NULL", "NULL"}, {"5", "200", "NULL"}},
			pass: []string{"3", "5"}},
		{name: "is-null-and-other-op", filter: "select id1, val from t1 where val is null and id1 != 4 and id2 not between 100 and 150",
			rows: [][3]string{{"1", "100", "d"}, {"2", "200", "e"}, {"3", "100", "NULL"}, {"4", "200", "NULL"}, {"5", "200", "NULL"}},
			pass: []string{"5"}},
	})
}

// TestVitessSetValue64thMember is TestBuildSetStringValue64thMember through the binlog: a
// SET of 64 members whose value has members 1 and 64 streams as "v1,v64".
func TestVitessSetValue64thMember(t *testing.T) {
	var members []string
	for i := 1; i <= 64; i++ {
		members = append(members, fmt.Sprintf("'v%d'", i))
	}
	def := "set(" + strings.Join(members, ",") + ")"
	// A SET's length is all its labels joined by commas, in bytes of utf8mb4 (4 a character).
	labels := 0
	for _, m := range members {
		labels += len(m) - 2
	}
	length := (labels + len(members) - 1) * 4
	testkit.MustExec(t, db, fmt.Sprintf("CREATE TABLE vb_set64 (id INT PRIMARY KEY, s SET(%s))", strings.Join(members, ",")))
	vbCase(t, vbFilter("vb_set64", "select * from vb_set64"), []string{"INSERT INTO vb_set64 VALUES (1, 'v1,v64')"},
		"begin",
		fmt.Sprintf(`type:FIELD field_event:{table_name:"vb_set64" %s enum_set_string_values:true}`,
			vbFields("vb_set64", vbInt("id"), vbCol{"s", "SET", def, length, int(utf8mb4Default())})),
		vbRow("vb_set64", "1", "v1,v64"),
		"gtid", "commit")
}

// TestVitessMissingFieldsInLastPK is TestVStreamMissingFieldsInLastPK: a table's last key
// without fields is refused with Vitess's words.
func TestVitessMissingFieldsInLastPK(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE vb_nofields (id11 INT, id12 INT, PRIMARY KEY (id11))")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st := tabletStream(t, ctx, &binlogdatapb.VStreamRequest{
		Filter: vbFilter("vb_nofields", "select * from vb_nofields"),
		TableLastPKs: []*binlogdatapb.TableLastPK{{TableName: "vb_nofields", Lastpk: &querypb.QueryResult{
			Rows: []*querypb.Row{{Lengths: []int64{1}, Values: []byte("1")}}}}},
	})
	for {
		_, err := st.Recv()
		if err == nil {
			continue
		}
		if !strings.Contains(err.Error(), "lastpk for table vb_nofields has no fields defined") {
			t.Fatalf("err = %v, want Vitess's \"lastpk for table vb_nofields has no fields defined\"", err)
		}
		return
	}
}

// TestVitessCopySimpleFlow is TestVStreamCopySimpleFlow: two tables copied from last keys of
// 0 (id11 and id21 start at 1), then an insert into each replicated.
func TestVitessCopySimpleFlow(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE vb_cs1 (id11 INT, id12 INT, PRIMARY KEY (id11))",
		"CREATE TABLE vb_cs2 (id21 INT, id22 INT, PRIMARY KEY (id21))")
	for i := 1; i <= 10; i++ {
		testkit.MustExec(t, db, fmt.Sprintf("INSERT INTO vb_cs1 VALUES (%d, %d)", i, i*10), fmt.Sprintf("INSERT INTO vb_cs2 VALUES (%d, %d)", i, i*20))
	}
	lastPK := func(table, col string) *binlogdatapb.TableLastPK {
		return &binlogdatapb.TableLastPK{TableName: table, Lastpk: sqltypes.ResultToProto3(&sqltypes.Result{
			Fields: []*querypb.Field{{Name: col, Type: querypb.Type_INT32}},
			Rows:   [][]sqltypes.Value{{sqltypes.NewInt32(0)}},
		})}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := vbStart(t, ctx, &binlogdatapb.VStreamRequest{
		Filter: &binlogdatapb.Filter{Rules: []*binlogdatapb.Rule{
			{Match: "vb_cs1", Filter: "select * from vb_cs1"}, {Match: "vb_cs2", Filter: "select * from vb_cs2"}}},
		TableLastPKs: []*binlogdatapb.TableLastPK{lastPK("vb_cs1", "id11"), lastPK("vb_cs2", "id21")},
	})
	copyField := func(table string, cols ...vbCol) string {
		return fmt.Sprintf(`type:FIELD field_event:{table_name:%q %s enum_set_string_values:true}`, table, vbFields(table, cols...))
	}
	var want []string
	want = append(want, "begin", copyField("vb_cs1", vbInt("id11"), vbInt("id12")), "gtid")
	for i := 1; i <= 10; i++ {
		want = append(want, vbRow("vb_cs1", strconv.Itoa(i), strconv.Itoa(i*10)))
	}
	want = append(want, "lastpk", "commit", "begin", "lastpk", "commit", "begin", copyField("vb_cs2", vbInt("id21"), vbInt("id22")))
	for i := 1; i <= 10; i++ {
		want = append(want, vbRow("vb_cs2", strconv.Itoa(i), strconv.Itoa(i*20)))
	}
	want = append(want, "lastpk", "commit", "begin", "lastpk", "commit", "copy_completed")
	s.expect(t, want...)

	testkit.MustExec(t, db, "INSERT INTO vb_cs1 VALUES (101, 1010)")
	s.expect(t, "begin", vbField("vb_cs1", vbInt("id11"), vbInt("id12")), vbRow("vb_cs1", "101", "1010"), "gtid", "commit")
	testkit.MustExec(t, db, "INSERT INTO vb_cs2 VALUES (202, 2020)")
	s.expect(t, "begin", vbField("vb_cs2", vbInt("id21"), vbInt("id22")), vbRow("vb_cs2", "202", "2020"), "gtid", "commit")
}

// vbRowsCase calls VStreamRows with Vitess's tablet client and compares each response with
// Vitess's expected text, as rowstreamer_test.go's checkStream does: the snapshot's GTID must
// be set and is then cleared, and column flags are left out.
func vbRowsCase(t *testing.T, query string, lastpk []sqltypes.Value, options *binlogdatapb.VStreamOptions, want ...string) {
	t.Helper()
	req := &binlogdatapb.VStreamRowsRequest{Target: target, Query: query, Options: options}
	if lastpk != nil {
		req.Lastpk = sqltypes.ResultToProto3(&sqltypes.Result{Rows: [][]sqltypes.Value{lastpk}})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var got []*binlogdatapb.VStreamRowsResponse
	err := tablet(t).VStreamRows(ctx, req, func(r *binlogdatapb.VStreamRowsResponse) error {
		if r.Heartbeat {
			return nil
		}
		got = append(got, r.CloneVT())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, r := range got {
		texts = append(texts, prototext.MarshalOptions{}.Format(r))
	}
	if len(got) != len(want) {
		t.Fatalf("%d responses, want %d:\n  %s", len(got), len(want), strings.Join(texts, "\n  "))
	}
	for i, r := range got {
		if i == 0 && r.Gtid == "" {
			t.Error("the first response has no gtid")
		}
		r.Gtid = ""
		for _, f := range append(r.Fields, r.Pkfields...) {
			f.Flags = 0
		}
		w := &binlogdatapb.VStreamRowsResponse{}
		if err := prototext.Unmarshal([]byte(want[i]), w); err != nil {
			t.Fatalf("expected response %s: %v", want[i], err)
		}
		if !proto.Equal(r, w) {
			t.Errorf("response %d:\n got %s\nwant %s", i, prototext.MarshalOptions{}.Format(r), want[i])
		}
	}
}

// vbRowsFields is the first response of a VStreamRows on a table of columns with key pk.
func vbRowsFields(table string, cols []vbCol, pk ...vbCol) string {
	s := vbFields(table, cols...)
	for _, c := range pk {
		s += fmt.Sprintf(` pkfields:{name:%q type:%s charset:%d}`, c.name, c.typ, c.charset)
	}
	return s
}

// vbRowsBatch is a response of rows and the last key, each row given by its values.
func vbRowsBatch(lastpk []string, rows ...[]string) string {
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "rows:{%s} ", vbRowValues(r))
	}
	fmt.Fprintf(&b, "lastpk:{%s}", vbRowValues(lastpk))
	return b.String()
}

// TestVitessStreamRowsKeyRange is TestStreamRowsKeyRange and TestStreamRowsWithNoTimeouts:
// of ids 1 and 6 only 1 is in -80 (hash), and the last key is 6, the last row read. With
// no_timeouts the stream is the same (the query's MAX_EXECUTION_TIME hint, which the option
// leaves out, is not visible to a client).
func TestVitessStreamRowsKeyRange(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE vb_rkr (id1 INT, val VARBINARY(128), PRIMARY KEY (id1))", "INSERT INTO vb_rkr VALUES (1, 'aaa'), (6, 'bbb')")
	cols := []vbCol{vbInt("id1"), vbVarbinary("val", 128)}
	for _, opts := range []*binlogdatapb.VStreamOptions{nil, {NoTimeouts: true}} {
		vbRowsCase(t, "select * from vb_rkr where in_keyrange('-80')", nil, opts,
			vbRowsFields("vb_rkr", cols, vbInt("id1")),
			vbRowsBatch([]string{"6"}, []string{"1", "aaa"}))
	}
}

// TestVitessStreamRowsFilterIn is TestStreamRowsFilterIn: the IN is pushed to the query, so
// the last key is 3, the last row the query returns.
func TestVitessStreamRowsFilterIn(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE vb_rin (id1 INT, id2 INT, val VARBINARY(128), PRIMARY KEY (id1))",
		"INSERT INTO vb_rin VALUES (1, 100, 'aaa'), (2, 200, 'bbb'), (3, 200, 'ccc'), (4, 100, 'ddd'), (5, 200, 'eee')")
	vbRowsCase(t, "select id1, val from vb_rin where id1 in (1, 2, 3)", nil, nil,
		vbRowsFields("vb_rin", []vbCol{vbInt("id1"), vbVarbinary("val", 128)}, vbInt("id1")),
		vbRowsBatch([]string{"3"}, []string{"1", "aaa"}, []string{"2", "bbb"}, []string{"3", "ccc"}))
}

// TestVitessStreamRowsFilterWithLastPK is TestStreamRowsFilterWithLastPK: after (1, 1) on a
// two-column key, (2, 1) fails the filter though it is after the last key.
func TestVitessStreamRowsFilterWithLastPK(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE vb_rlpk (id1 INT, id2 INT, val VARBINARY(128), PRIMARY KEY (id1, id2))",
		"INSERT INTO vb_rlpk VALUES (1, 1, 'include'), (1, 2, 'include'), (1, 3, 'exclude'), (2, 1, 'exclude'), (2, 2, 'include')")
	vbRowsCase(t, "select id1, id2, val from vb_rlpk where (val = 'include')", []sqltypes.Value{sqltypes.NewInt64(1), sqltypes.NewInt64(1)}, nil,
		vbRowsFields("vb_rlpk", []vbCol{vbInt("id1"), vbInt("id2"), vbVarbinary("val", 128)}, vbInt("id1"), vbInt("id2")),
		vbRowsBatch([]string{"2", "2"}, []string{"1", "2", "include"}, []string{"2", "2", "include"}))
}

// TestVitessStreamRowsFilterVarBinary is TestStreamRowsFilterVarBinary.
func TestVitessStreamRowsFilterVarBinary(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE vb_rvb (id1 INT, val VARBINARY(128), PRIMARY KEY (id1))",
		"INSERT INTO vb_rvb VALUES (1, 'kepler'), (2, 'newton'), (3, 'newton'), (4, 'kepler'), (5, 'newton'), (6, 'kepler')")
	vbRowsCase(t, "select id1, val from vb_rvb where (val = 'newton')", nil, nil,
		vbRowsFields("vb_rvb", []vbCol{vbInt("id1"), vbVarbinary("val", 128)}, vbInt("id1")),
		vbRowsBatch([]string{"5"}, []string{"2", "newton"}, []string{"3", "newton"}, []string{"5", "newton"}))
}

// TestVitessStreamRowsUnicode is TestStreamRowsUnicode: a 4-byte character written through a
// latin1 session into a utf8 column is stored as four latin1 characters ("mojibake"), and
// is streamed as stored.
func TestVitessStreamRowsUnicode(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE vb_runi (id INT, val VARCHAR(128) COLLATE utf8_unicode_ci, PRIMARY KEY (id))")
	c, err := db.Conn("ks")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, q := range []string{"SET NAMES latin1", "INSERT INTO vb_runi VALUES (1, '👍')"} {
		if _, err := c.Execute(q); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var got []string
	err = tablet(t).VStreamRows(ctx, &binlogdatapb.VStreamRowsRequest{Target: target, Query: "select * from vb_runi"}, func(r *binlogdatapb.VStreamRowsResponse) error {
		if len(r.Rows) > 0 {
			got = append(got, fmt.Sprintf("%q", r.Rows[0].Values))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := `"1ðŸ‘\u008d"`; len(got) != 1 || got[0] != want {
		t.Fatalf("rows %v, want %s", got, want)
	}
}

// TestVitessRowStreamerQuery is the case of TestRowStreamerQuery without directives: a table
// with a primary key and a unique key is read in primary key order, and the last key is the
// primary key's (Vitess's "force index (`PRIMARY`) order by id").
func TestVitessRowStreamerQuery(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE vb_rq (id INT, uk1 INT, val VARBINARY(128), PRIMARY KEY (id), UNIQUE KEY uk2 (uk1))",
		"INSERT INTO vb_rq VALUES (1, 30, 'a'), (2, 20, 'b'), (3, 10, 'c')")
	vbRowsCase(t, "select id, uk1, val from vb_rq", nil, nil,
		vbRowsFields("vb_rq", []vbCol{vbInt("id"), vbInt("uk1"), vbVarbinary("val", 128)}, vbInt("id")),
		vbRowsBatch([]string{"3"}, []string{"1", "30", "a"}, []string{"2", "20", "b"}, []string{"3", "10", "c"}))
}

// TestVitessExternalTable is TestExternalTable: a change to a table of another database is
// not streamed; its transaction is, empty.
func TestVitessExternalTable(t *testing.T) {
	testkit.MustExec(t, db, "CREATE DATABASE vb_external", "CREATE TABLE vb_external.ext (id INT, val VARBINARY(128), PRIMARY KEY (id))")
	vbCase(t, nil, []string{"BEGIN", "INSERT INTO vb_external.ext VALUES (1, 'aaa')", "COMMIT"}, "begin", "gtid", "commit")
}
