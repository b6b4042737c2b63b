package interop

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"vitess.io/vitess/go/vt/vterrors"

	binlogdatapb "vitess.io/vitess/go/vt/proto/binlogdata"
	querypb "vitess.io/vitess/go/vt/proto/query"

	"github.com/vstream-cdc/vstream/internal/testkit"
)

// Vitess's vstreamer tests that set a VSchema (TestREKeyRange, TestInKeyRangeMultiColumn,
// TestREMultiColumnVindex), each against a vstreamd of its own started with the VSchema as its
// vschema-file: Vitess's test sets the keyspace's VSchema where vstreamd reads one at start.
// The VSchemas are Vitess's (engine_test.go's shardedVSchema and multicolumnVSchema, and
// TestREKeyRange's second one) with the tables named as here.

// The VSchemas of the tests: the hash vindex on id1, on id2, and region_experimental
// (region_bytes 1) on (region, id).
const (
	vsShardedVSchema = `{
  "sharded": true,
  "vindexes": {"hash": {"type": "hash"}},
  "tables": {"va_rekv": {"column_vindexes": [{"column": "id1", "name": "hash"}]}}
}`
	vsAltVSchema = `{
  "sharded": true,
  "vindexes": {"hash": {"type": "hash"}},
  "tables": {"va_rekv": {"column_vindexes": [{"column": "id2", "name": "hash"}]}}
}`
	vsMulticolumnVSchema = `{
  "sharded": true,
  "vindexes": {
    "region_vdx": {"type": "region_experimental", "params": {"region_bytes": "1"}}
  },
  "tables": {
    "va_mcol": {"column_vindexes": [{"columns": ["region", "id"], "name": "region_vdx"}]},
    "va_rmcv": {"column_vindexes": [{"columns": ["region", "id"], "name": "region_vdx"}]}
  }
}`
)

// vstreamdWithVSchema starts a vstreamd with vschema as its vschema-file and returns its
// address; it stops when the test ends.
func vstreamdWithVSchema(t *testing.T, vschema string) string {
	t.Helper()
	base := filepath.Join(workDir, strings.ReplaceAll(t.Name(), "/", "_"))
	if err := os.WriteFile(base+".json", []byte(vschema), 0o600); err != nil {
		t.Fatal(err)
	}
	listen, stop, err := launchVstreamd(base+".log", "--vschema-file", base+".json")
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

// vsFieldKS is the FIELD of table with keyspace and shard, as Vitess's TestREKeyRange expects.
func vsFieldKS(table string, cols ...vaCol) string {
	fe := &binlogdatapb.FieldEvent{TableName: table, Keyspace: "ks", Shard: "0"}
	for _, c := range cols {
		fe.Fields = append(fe.Fields, &querypb.Field{Name: c.name, Type: c.typ, Table: table, OrgTable: table,
			Database: "ks", OrgName: c.name, ColumnLength: c.length, Charset: c.charset, ColumnType: c.colType})
	}
	return (&binlogdatapb.VEvent{Type: binlogdatapb.VEventType_FIELD, FieldEvent: fe}).String()
}

func vsRowKS(table string, c vaChange) string {
	return vaRowWith(&binlogdatapb.RowEvent{TableName: table, Keyspace: "ks", Shard: "0"}, c)
}

// Vitess's TestREKeyRange: a keyrange rule under the VSchema's hash vindex on id1, then, with
// the VSchema switched to make id2 the vindex, on id2 (not the primary key).
func TestVSREKeyRangeVSchema(t *testing.T) {
	const ddl = "create table va_rekv(id1 int, id2 int, val varbinary(128), primary key(id1))"
	vaTables(t, ddl)
	cols := []vaCol{vaIntCol("id1"), vaIntCol("id2"), vaVarbinCol("val", 128)}
	t.Run("id1", func(t *testing.T) {
		s := startVAAt(t, vstreamdWithVSchema(t, vsShardedVSchema), vaRule("/va_rekv/", "-80"), "current")
		s.ksh = true
		// 1, 2, 3 and 5 are in -80; 4 and 6 in 80-.
		s.run([]vaCase{{
			input: []string{"begin",
				"insert into va_rekv values (1, 1, 'aaa')",
				"insert into va_rekv values (4, 1, 'bbb')",
				"update va_rekv set id1 = 2 where id1 = 1", // stays in -80
				"update va_rekv set id1 = 6 where id1 = 2", // moves to 80-
				"update va_rekv set id1 = 3 where id1 = 4", // comes back to -80
				"commit"},
			output: [][]string{{"begin",
				vsFieldKS("va_rekv", cols...),
				vsRowKS("va_rekv", vaChange{after: []string{"1", "1", "aaa"}}),
				vsRowKS("va_rekv", vaChange{before: []string{"1", "1", "aaa"}, after: []string{"2", "1", "aaa"}}),
				vsRowKS("va_rekv", vaChange{before: []string{"2", "1", "aaa"}}),
				vsRowKS("va_rekv", vaChange{after: []string{"3", "1", "bbb"}}),
				"gtid", "commit"}},
		}})
	})
	// Vitess's ts.Reset() and ts.Init(): the table again, empty, and a new stream.
	testkit.MustExec(t, db, "drop table va_rekv", ddl+" ENGINE=InnoDB CHARSET=utf8mb4")
	t.Run("id2", func(t *testing.T) {
		s := startVAAt(t, vstreamdWithVSchema(t, vsAltVSchema), vaRule("/va_rekv/", "-80"), "current")
		s.ksh = true
		// Only the first insert: its id2 is 1 (in -80), the second's 4 (in 80-).
		s.run([]vaCase{{
			input: []string{"begin",
				"insert into va_rekv values (4, 1, 'aaa')",
				"insert into va_rekv values (1, 4, 'aaa')",
				"commit"},
			output: [][]string{{"begin",
				vsFieldKS("va_rekv", cols...),
				vsRowKS("va_rekv", vaChange{after: []string{"4", "1", "aaa"}}),
				"gtid", "commit"}},
		}})
	})
}

// Vitess's TestInKeyRangeMultiColumn: in_keyrange('-80') and keyspace_id() under the
// two-column region_experimental vindex; the keyspace ids are Vitess's.
func TestVSInKeyRangeMultiColumn(t *testing.T) {
	vaTables(t, "create table va_mcol(region int, id int, val varbinary(128), primary key(id))")
	s := startVAAt(t, vstreamdWithVSchema(t, vsMulticolumnVSchema),
		vaRule("va_mcol", "select id, region, val, keyspace_id() from va_mcol where in_keyrange('-80')"), "current")
	fe := &binlogdatapb.FieldEvent{TableName: "va_mcol"}
	for _, c := range []vaCol{vaIntCol("id"), vaIntCol("region"), vaVarbinCol("val", 128)} {
		fe.Fields = append(fe.Fields, &querypb.Field{Name: c.name, Type: c.typ, Table: "va_mcol", OrgTable: "va_mcol",
			Database: "ks", OrgName: c.name, ColumnLength: c.length, Charset: c.charset, ColumnType: c.colType})
	}
	// Vitess's keyspace_id column has a name, a type and charset 63; vstreamd's also names
	// its table and gives the keyspace ids' length (a region byte and 8 of hash).
	fe.Fields = append(fe.Fields, &querypb.Field{Name: "keyspace_id", Type: querypb.Type_VARBINARY, Table: "va_mcol", OrgTable: "va_mcol",
		ColumnLength: 9, Charset: 63})
	field := (&binlogdatapb.VEvent{Type: binlogdatapb.VEventType_FIELD, FieldEvent: fe}).String()
	// 1 and 2 are in shard -80; 128 is in 80-.
	const (
		keyspaceID1 = "\x01\x16k@\xb4J\xbaK\xd6"
		keyspaceID2 = "\x02\x16k@\xb4J\xbaK\xd6"
		keyspaceID3 = "\x01\x06\xe7\xea\"Βp\x8f"
	)
	s.run([]vaCase{{
		input: []string{"begin",
			"insert into va_mcol values (1, 1, 'aaa')",
			"insert into va_mcol values (128, 2, 'bbb')",
			"update va_mcol set region = 2 where id = 1",
			"update va_mcol set region = 128 where id = 1",
			"update va_mcol set region = 1 where id = 2",
			"commit"},
		output: [][]string{{"begin",
			field,
			vaIns("va_mcol", "1", "1", "aaa", keyspaceID1),
			vaUpd("va_mcol", []string{"1", "1", "aaa", keyspaceID1}, []string{"1", "2", "aaa", keyspaceID2}),
			vaRow("va_mcol", vaChange{before: []string{"1", "2", "aaa", keyspaceID2}}),
			vaIns("va_mcol", "2", "1", "bbb", keyspaceID3),
			"gtid", "commit"}},
	}})
}

// Vitess's TestREMultiColumnVindex: a keyrange rule under the two-column region_experimental
// vindex. (1, 1) and (1, 2) are in -80; (128, 1) and (128, 2) in 80-.
func TestVSREMultiColumnVindex(t *testing.T) {
	vaTables(t, "create table va_rmcv(region int, id int, val varbinary(128), primary key(id))")
	s := startVAAt(t, vstreamdWithVSchema(t, vsMulticolumnVSchema), vaRule("/va_rmcv/", "-80"), "current")
	s.run([]vaCase{{
		input: []string{"begin",
			"insert into va_rmcv values (1, 1, 'aaa')",
			"insert into va_rmcv values (128, 2, 'bbb')",
			"update va_rmcv set region = 2 where id = 1",
			"update va_rmcv set region = 128 where id = 1",
			"update va_rmcv set region = 1 where id = 2",
			"commit"},
		output: [][]string{{"begin",
			vaField("va_rmcv", vaIntCol("region"), vaIntCol("id"), vaVarbinCol("val", 128)),
			vaIns("va_rmcv", "1", "1", "aaa"),
			vaUpd("va_rmcv", []string{"1", "1", "aaa"}, []string{"2", "1", "aaa"}),
			vaRow("va_rmcv", vaChange{before: []string{"2", "1", "aaa"}}),
			vaIns("va_rmcv", "1", "2", "bbb"),
			"gtid", "commit"}},
	}})
}

// A keyrange on a table the VSchema does not name is refused as Vitess's planner refuses it,
// as InvalidArgument.
func TestVSVSchemaTableNotFound(t *testing.T) {
	vaTables(t, "create table va_nov(id int, val varbinary(128), primary key(id))")
	qs := tabletConnAt(t, vstreamdWithVSchema(t, vsMulticolumnVSchema))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := qs.VStream(ctx, &binlogdatapb.VStreamRequest{Target: tabletTarget, Position: "current",
		Filter: vaRule("/va_nov/", "-80")}, func([]*binlogdatapb.VEvent) error { return nil })
	if codes.Code(vterrors.Code(err)) != codes.InvalidArgument || !strings.Contains(err.Error(), "table va_nov not found") {
		t.Errorf("err = %v, want INVALID_ARGUMENT with %q", err, "table va_nov not found")
	}
}
