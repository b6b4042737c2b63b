package interop

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"vitess.io/vitess/go/sqltypes"
	"vitess.io/vitess/go/vt/vterrors"

	binlogdatapb "vitess.io/vitess/go/vt/proto/binlogdata"
	querypb "vitess.io/vitess/go/vt/proto/query"
	vtrpcpb "vitess.io/vitess/go/vt/proto/vtrpc"

	"github.com/vstream-cdc/vstream/internal/testkit"
)

// Cases of Vitess's rowstreamer_test.go, tablestreamer_test.go and resultstreamer_test.go
// that vstreamer_b_test.go does not hold, through VStreamRows, VStreamTables and
// VStreamResults with Vitess's own tablet client. Adaptations are listed in README.md.

// vbRowsRefused runs a VStreamRows that must fail with code, saying want.
func vbRowsRefused(t *testing.T, query string, code vtrpcpb.Code, want string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := tablet(t).VStreamRows(ctx, &binlogdatapb.VStreamRowsRequest{Target: target, Query: query},
		func(*binlogdatapb.VStreamRowsResponse) error { return nil })
	if vterrors.Code(err) != code || !strings.Contains(err.Error(), want) {
		t.Errorf("%s: got %v, want %s saying %q", query, err, code, want)
	}
}

// TestVitessRowStreamerQueryDirectives is TestRowStreamerQuery with its directives: the rows
// are read by the unique key uk2 on uk1, which keys pkfields and lastpk, where without
// directives (TestVitessRowStreamerQuery) they come by the primary key. Vitess's test shows
// the SELECT it sends; a client sees its order and its last key.
func TestVitessRowStreamerQueryDirectives(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE vb_rqd (id INT, uk1 INT, val VARBINARY(128), PRIMARY KEY (id), UNIQUE KEY uk2 (uk1))",
		"INSERT INTO vb_rqd VALUES (1, 30, 'a'), (2, 20, 'b'), (3, 10, 'c')")
	cols := []vbCol{vbInt("id"), vbInt("uk1"), vbVarbinary("val", 128)}
	byUK := vbRowsBatch([]string{"30"}, []string{"3", "10", "c"}, []string{"2", "20", "b"}, []string{"1", "30", "a"})
	for _, d := range []string{`/*vt+ ukColumns="uk1" ukForce="uk2" */`, `/*vt+ ukForce="uk2" */`, `/*vt+ ukColumns="uk1" */`} {
		t.Run(d, func(t *testing.T) {
			vbRowsCase(t, "select "+d+" id, uk1, val from vb_rqd", nil, nil, vbRowsFields("vb_rqd", cols, vbInt("uk1")), byUK)
		})
	}
	// Resuming after a last key over uk1, as vreplication's copy does.
	vbRowsCase(t, `select /*vt+ ukColumns="uk1" ukForce="uk2" */ id, uk1, val from vb_rqd`, []sqltypes.Value{sqltypes.NewInt64(20)}, nil,
		vbRowsFields("vb_rqd", cols, vbInt("uk1")), vbRowsBatch([]string{"30"}, []string{"1", "30", "a"}))
	// Directives naming what the table has not are the client's to fix.
	vbRowsRefused(t, `select /*vt+ ukColumns="nosuch" */ * from vb_rqd`, vtrpcpb.Code_INVALID_ARGUMENT,
		"directive ukColumns names column nosuch, which table vb_rqd has not; name the columns of one of its unique keys: PRIMARY (id), uk2 (uk1)")
	vbRowsRefused(t, `select /*vt+ ukForce="nosuch" */ * from vb_rqd`, vtrpcpb.Code_INVALID_ARGUMENT,
		"directive ukForce names index nosuch, which table vb_rqd has not")
	vbRowsRefused(t, `select /*vt+ ukColumns="val" */ * from vb_rqd`, vtrpcpb.Code_INVALID_ARGUMENT,
		"directive ukColumns (val) are not the columns of a unique key of vb_rqd")
}

// TestVitessStreamRowsScan is TestStreamRowsScan: single, composite, missing (all columns),
// three-column and unique-not-null ("PK equivalent") keys; projections with the literal 1;
// resuming after a last key; and the two refused literals.
func TestVitessStreamRowsScan(t *testing.T) {
	testkit.MustExec(t, db,
		"CREATE TABLE vb_rs1 (id INT, val VARBINARY(128), PRIMARY KEY (id))",
		"INSERT INTO vb_rs1 VALUES (1, 'aaa'), (2, 'bbb')",
		"CREATE TABLE vb_rs2 (id1 INT, id2 INT, val VARBINARY(128), PRIMARY KEY (id1, id2))",
		"INSERT INTO vb_rs2 VALUES (1, 2, 'aaa'), (1, 3, 'bbb')",
		"CREATE TABLE vb_rs3 (id INT, val VARBINARY(128))",
		"INSERT INTO vb_rs3 VALUES (1, 'aaa'), (2, 'bbb')",
		"CREATE TABLE vb_rs4 (id1 INT, id2 INT, id3 INT, val VARBINARY(128), PRIMARY KEY (id1, id2, id3))",
		"INSERT INTO vb_rs4 VALUES (1, 2, 3, 'aaa'), (2, 3, 4, 'bbb')",
		"CREATE TABLE vb_rs5 (id1 INT NOT NULL, id2 INT NOT NULL, id3 INT NOT NULL, val VARBINARY(128), UNIQUE KEY id1_id2_id3 (id1, id2, id3))",
		"INSERT INTO vb_rs5 VALUES (1, 2, 3, 'aaa'), (2, 3, 4, 'bbb')")
	one := `fields:{name:"1" type:INT64 charset:63}`
	pk := func(cols ...vbCol) string {
		var s string
		for _, c := range cols {
			s += fmt.Sprintf(` pkfields:{name:%q type:%s charset:%d}`, c.name, c.typ, c.charset)
		}
		return s
	}
	id, val := vbInt("id"), vbVarbinary("val", 128)
	id1, id2, id3 := vbInt("id1"), vbInt("id2"), vbInt("id3")
	i64 := func(vs ...int64) []sqltypes.Value {
		var out []sqltypes.Value
		for _, v := range vs {
			out = append(out, sqltypes.NewInt64(v))
		}
		return out
	}
	for _, c := range []struct {
		query  string
		lastpk []sqltypes.Value
		want   []string
	}{
		// Rollup: the literal 1 for each row.
		{"select 1 from vb_rs1", nil, []string{one + pk(id), vbRowsBatch([]string{"2"}, []string{"1"}, []string{"1"})}},
		{"select 1, val from vb_rs1", nil, []string{one + " " + vbFields("vb_rs1", val) + pk(id),
			vbRowsBatch([]string{"2"}, []string{"1", "aaa"}, []string{"1", "bbb"})}},
		{"select 1, id, val from vb_rs1", nil, []string{one + " " + vbFields("vb_rs1", id, val) + pk(id),
			vbRowsBatch([]string{"2"}, []string{"1", "1", "aaa"}, []string{"1", "2", "bbb"})}},
		{"select val from vb_rs1", nil, []string{vbRowsFields("vb_rs1", []vbCol{val}, id),
			vbRowsBatch([]string{"2"}, []string{"aaa"}, []string{"bbb"})}},
		{"select * from vb_rs1", nil, []string{vbRowsFields("vb_rs1", []vbCol{id, val}, id),
			vbRowsBatch([]string{"2"}, []string{"1", "aaa"}, []string{"2", "bbb"})}},
		{"select * from vb_rs1", i64(1), []string{vbRowsFields("vb_rs1", []vbCol{id, val}, id),
			vbRowsBatch([]string{"2"}, []string{"2", "bbb"})}},
		{"select val, id from vb_rs1", nil, []string{vbRowsFields("vb_rs1", []vbCol{val, id}, id),
			vbRowsBatch([]string{"2"}, []string{"aaa", "1"}, []string{"bbb", "2"})}},
		{"select * from vb_rs2", nil, []string{vbRowsFields("vb_rs2", []vbCol{id1, id2, val}, id1, id2),
			vbRowsBatch([]string{"1", "3"}, []string{"1", "2", "aaa"}, []string{"1", "3", "bbb"})}},
		{"select * from vb_rs2", i64(1, 2), []string{vbRowsFields("vb_rs2", []vbCol{id1, id2, val}, id1, id2),
			vbRowsBatch([]string{"1", "3"}, []string{"1", "3", "bbb"})}},
		// No key: every column is the key.
		{"select * from vb_rs3", nil, []string{vbRowsFields("vb_rs3", []vbCol{id, val}, id, val),
			vbRowsBatch([]string{"2", "bbb"}, []string{"1", "aaa"}, []string{"2", "bbb"})}},
		{"select * from vb_rs3", []sqltypes.Value{sqltypes.NewInt64(1), sqltypes.NewVarBinary("aaa")}, []string{
			vbRowsFields("vb_rs3", []vbCol{id, val}, id, val), vbRowsBatch([]string{"2", "bbb"}, []string{"2", "bbb"})}},
		{"select * from vb_rs4", nil, []string{vbRowsFields("vb_rs4", []vbCol{id1, id2, id3, val}, id1, id2, id3),
			vbRowsBatch([]string{"2", "3", "4"}, []string{"1", "2", "3", "aaa"}, []string{"2", "3", "4", "bbb"})}},
		{"select * from vb_rs4", i64(1, 2, 3), []string{vbRowsFields("vb_rs4", []vbCol{id1, id2, id3, val}, id1, id2, id3),
			vbRowsBatch([]string{"2", "3", "4"}, []string{"2", "3", "4", "bbb"})}},
		// A unique key on NOT NULL columns stands for the primary key.
		{"select * from vb_rs5", i64(1, 2, 3), []string{vbRowsFields("vb_rs5", []vbCol{id1, id2, id3, val}, id1, id2, id3),
			vbRowsBatch([]string{"2", "3", "4"}, []string{"2", "3", "4", "bbb"})}},
	} {
		t.Run(fmt.Sprintf("%s after %v", c.query, c.lastpk), func(t *testing.T) {
			vbRowsCase(t, c.query, c.lastpk, nil, c.want...)
		})
	}
	vbRowsRefused(t, "select 2 from vb_rs5", vtrpcpb.Code_INVALID_ARGUMENT, "only the integer literal 1 is supported")
	vbRowsRefused(t, "select 'a' from vb_rs5", vtrpcpb.Code_INVALID_ARGUMENT, "only integer literals are supported")
}

// TestVitessStreamRowsFilterBetween is TestStreamRowsFilterBetween: BETWEEN and NOT BETWEEN
// are pushed to the query, so the last key is the last row the query returns.
func TestVitessStreamRowsFilterBetween(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE vb_rbtw (id1 INT, id2 INT, val VARBINARY(128), PRIMARY KEY (id1))",
		"INSERT INTO vb_rbtw VALUES (1, 100, 'aaa'), (2, 200, 'bbb'), (3, 200, 'ccc'), (4, 100, 'ddd'), (5, 200, 'eee')")
	fields := vbRowsFields("vb_rbtw", []vbCol{vbInt("id1"), vbVarbinary("val", 128)}, vbInt("id1"))
	vbRowsCase(t, "select id1, val from vb_rbtw where (id1 between 2 and 4)", nil, nil, fields,
		vbRowsBatch([]string{"4"}, []string{"2", "bbb"}, []string{"3", "ccc"}, []string{"4", "ddd"}))
	vbRowsCase(t, "select id1, val from vb_rbtw where (id1 not between 2 and 4)", nil, nil, fields,
		vbRowsBatch([]string{"5"}, []string{"1", "aaa"}, []string{"5", "eee"}))
}

// vstreamdOn starts a vstreamd serving database as keyspace ks, and returns its address; it
// stops when the test ends.
func vstreamdOn(t *testing.T, database string) string {
	t.Helper()
	base := filepath.Join(workDir, strings.ReplaceAll(t.Name(), "/", "_"))
	// The last --mysql-dsn given is the one used.
	listen, stop, err := launchVstreamd(base+".log", "--mysql-dsn", db.DSN(database), "--keyspace", "ks")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("vstreamd (%s) log tail:\n%s", filepath.Base(base), logTail(base+".log"))
		}
	})
	return listen
}

// TestVitessTableStreamer is TestTableStreamer: every table of the database in name order,
// its name on every response, fields and pkfields first, flags included, as Vitess's test
// compares them (the gtid and column_type cleared).
func TestVitessTableStreamer(t *testing.T) {
	testkit.MustExec(t, db, "DROP DATABASE IF EXISTS vb_tables", "CREATE DATABASE vb_tables",
		"CREATE TABLE vb_tables.t1 (id INT, val VARBINARY(128), PRIMARY KEY (id))",
		"INSERT INTO vb_tables.t1 VALUES (1, 'aaa'), (2, 'bbb')",
		"CREATE TABLE vb_tables.t2 (id1 INT, id2 INT, val VARBINARY(128), PRIMARY KEY (id1, id2))",
		"INSERT INTO vb_tables.t2 VALUES (1, 2, 'aaa'), (1, 3, 'bbb')",
		"CREATE TABLE vb_tables.t3 (id INT, val VARBINARY(128))",
		"INSERT INTO vb_tables.t3 VALUES (1, 'aaa'), (2, 'bbb')",
		"CREATE TABLE vb_tables.t4 (id1 INT, id2 INT, id3 INT, val VARBINARY(128), PRIMARY KEY (id1, id2, id3))",
		"INSERT INTO vb_tables.t4 VALUES (1, 2, 3, 'aaa'), (2, 3, 4, 'bbb')")
	qs := tabletAt(t, vstreamdOn(t, "vb_tables"))
	// Vitess's expected responses, with its database "vttest" as "vb_tables".
	want := []string{
		`table_name:"t1" fields:{name:"id" type:INT32 table:"t1" org_table:"t1" database:"vb_tables" org_name:"id" column_length:11 charset:63 flags:53251} fields:{name:"val" type:VARBINARY table:"t1" org_table:"t1" database:"vb_tables" org_name:"val" column_length:128 charset:63 flags:128} pkfields:{name:"id" type:INT32 charset:63 flags:53251}`,
		`table_name:"t1" rows:{lengths:1 lengths:3 values:"1aaa"} rows:{lengths:1 lengths:3 values:"2bbb"} lastpk:{lengths:1 values:"2"}`,
		`table_name:"t2" fields:{name:"id1" type:INT32 table:"t2" org_table:"t2" database:"vb_tables" org_name:"id1" column_length:11 charset:63 flags:53251} fields:{name:"id2" type:INT32 table:"t2" org_table:"t2" database:"vb_tables" org_name:"id2" column_length:11 charset:63 flags:53251} fields:{name:"val" type:VARBINARY table:"t2" org_table:"t2" database:"vb_tables" org_name:"val" column_length:128 charset:63 flags:128} pkfields:{name:"id1" type:INT32 charset:63 flags:53251} pkfields:{name:"id2" type:INT32 charset:63 flags:53251}`,
		`table_name:"t2" rows:{lengths:1 lengths:1 lengths:3 values:"12aaa"} rows:{lengths:1 lengths:1 lengths:3 values:"13bbb"} lastpk:{lengths:1 lengths:1 values:"13"}`,
		`table_name:"t3" fields:{name:"id" type:INT32 table:"t3" org_table:"t3" database:"vb_tables" org_name:"id" column_length:11 charset:63 flags:32768} fields:{name:"val" type:VARBINARY table:"t3" org_table:"t3" database:"vb_tables" org_name:"val" column_length:128 charset:63 flags:128} pkfields:{name:"id" type:INT32 charset:63 flags:32768} pkfields:{name:"val" type:VARBINARY charset:63 flags:128}`,
		`table_name:"t3" rows:{lengths:1 lengths:3 values:"1aaa"} rows:{lengths:1 lengths:3 values:"2bbb"} lastpk:{lengths:1 lengths:3 values:"2bbb"}`,
		`table_name:"t4" fields:{name:"id1" type:INT32 table:"t4" org_table:"t4" database:"vb_tables" org_name:"id1" column_length:11 charset:63 flags:53251} fields:{name:"id2" type:INT32 table:"t4" org_table:"t4" database:"vb_tables" org_name:"id2" column_length:11 charset:63 flags:53251} fields:{name:"id3" type:INT32 table:"t4" org_table:"t4" database:"vb_tables" org_name:"id3" column_length:11 charset:63 flags:53251} fields:{name:"val" type:VARBINARY table:"t4" org_table:"t4" database:"vb_tables" org_name:"val" column_length:128 charset:63 flags:128} pkfields:{name:"id1" type:INT32 charset:63 flags:53251} pkfields:{name:"id2" type:INT32 charset:63 flags:53251} pkfields:{name:"id3" type:INT32 charset:63 flags:53251}`,
		`table_name:"t4" rows:{lengths:1 lengths:1 lengths:1 lengths:3 values:"123aaa"} rows:{lengths:1 lengths:1 lengths:1 lengths:3 values:"234bbb"} lastpk:{lengths:1 lengths:1 lengths:1 values:"234"}`,
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var got []*binlogdatapb.VStreamTablesResponse
	err := qs.VStreamTables(ctx, &binlogdatapb.VStreamTablesRequest{Target: target}, func(r *binlogdatapb.VStreamTablesResponse) error {
		r = r.CloneVT()
		if r.Gtid == "" {
			t.Errorf("table %s: a response without the snapshot's gtid", r.TableName)
		}
		r.Gtid = ""
		for _, f := range r.Fields {
			f.ColumnType = ""
		}
		got = append(got, r)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d responses, want %d: %v", len(got), len(want), got)
	}
	for i, r := range got {
		w := &binlogdatapb.VStreamTablesResponse{}
		if err := prototext.Unmarshal([]byte(want[i]), w); err != nil {
			t.Fatalf("expected response %s: %v", want[i], err)
		}
		if !proto.Equal(r, w) {
			t.Errorf("response %d:\n got %s\nwant %s", i, prototext.MarshalOptions{}.Format(r), want[i])
		}
	}
}

// TestVitessStreamResults is TestStreamResults: the first response has the fields and the
// snapshot's gtid, the next ones the rows, in the query's order.
func TestVitessStreamResults(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE vb_sr (id INT, val VARBINARY(128), PRIMARY KEY (id))", "INSERT INTO vb_sr VALUES (1, 'aaa'), (2, 'bbb')")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var first *binlogdatapb.VStreamResultsResponse
	var rows []string
	err := tablet(t).VStreamResults(ctx, target, "select id, val from vb_sr order by id", func(r *binlogdatapb.VStreamResultsResponse) error {
		if first == nil {
			first = r.CloneVT()
			return nil
		}
		for _, row := range r.Rows {
			rows = append(rows, prototext.MarshalOptions{}.Format(&binlogdatapb.VStreamResultsResponse{Rows: []*querypb.Row{row}}))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if first.GetGtid() == "" || len(first.GetRows()) != 0 || len(first.GetFields()) != 2 {
		t.Errorf("first response %v: want the two fields and the gtid", first)
	}
	want := []string{`rows:{lengths:1 lengths:3 values:"1aaa"}`, `rows:{lengths:1 lengths:3 values:"2bbb"}`}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows\n got %s\nwant %s", strings.Join(rows, "\n     "), strings.Join(want, "\n     "))
	}
}

// TestVitessFloatText: VStreamRows, VStreamTables and VStreamResults send FLOAT and DOUBLE
// values as the server prints them, as Vitess's row, table and result streamers do (FLOAT
// 1.1 is "1.1"), where the binlog and the VStream copy send Vitess's binlog format
// ("1.1E+00", TestVitessTypes).
func TestVitessFloatText(t *testing.T) {
	testkit.MustExec(t, db, "DROP DATABASE IF EXISTS vb_floats", "CREATE DATABASE vb_floats",
		"CREATE TABLE vb_floats.ft (id INT PRIMARY KEY, f FLOAT, d DOUBLE, f2 FLOAT(7,3))",
		"INSERT INTO vb_floats.ft VALUES (1, 1.1, 1.1, 1.1), (2, 3.99, -0.000123, -12.5), (3, 123456789, 1e20, NULL)")
	want := `rows:{lengths:1 lengths:3 lengths:3 lengths:5 values:"11.11.11.100"} ` +
		`rows:{lengths:1 lengths:4 lengths:9 lengths:7 values:"23.99-0.000123-12.500"} ` +
		`rows:{lengths:1 lengths:9 lengths:4 lengths:-1 values:"31234570001e20"}`
	qs := tabletAt(t, vstreamdOn(t, "vb_floats"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	render := func(rows []*querypb.Row) string {
		return prototext.MarshalOptions{}.Format(&binlogdatapb.VStreamResultsResponse{Rows: rows})
	}
	var rowsGot, tablesGot, resultsGot []*querypb.Row
	err := qs.VStreamRows(ctx, &binlogdatapb.VStreamRowsRequest{Target: target, Query: "select * from ft"}, func(r *binlogdatapb.VStreamRowsResponse) error {
		rowsGot = append(rowsGot, r.CloneVT().Rows...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = qs.VStreamTables(ctx, &binlogdatapb.VStreamTablesRequest{Target: target}, func(r *binlogdatapb.VStreamTablesResponse) error {
		tablesGot = append(tablesGot, r.CloneVT().Rows...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = qs.VStreamResults(ctx, target, "select * from ft order by id", func(r *binlogdatapb.VStreamResultsResponse) error {
		resultsGot = append(resultsGot, r.CloneVT().Rows...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, rows := range map[string][]*querypb.Row{"VStreamRows": rowsGot, "VStreamTables": tablesGot, "VStreamResults": resultsGot} {
		if got := render(rows); got != want {
			t.Errorf("%s:\n got %s\nwant %s", name, got, want)
		}
	}
}
