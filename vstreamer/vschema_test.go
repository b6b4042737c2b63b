package vstreamer

import (
	"context"
	"strings"
	"testing"

	"github.com/vstream-cdc/vstream/filter"
	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/internal/testkit"
	"github.com/vstream-cdc/vstream/internal/testkit/evtext"
)

// vsTestVSchema gives vsr the two-column region_experimental vindex of Vitess's
// multicolumnVSchema and vsh a hash vindex on id2, a column that is not its primary key.
const vsTestVSchema = `{
  "sharded": true,
  "vindexes": {
    "hash": {"type": "hash"},
    "region_vdx": {"type": "region_experimental", "params": {"region_bytes": "1"}}
  },
  "tables": {
    "vsr": {"column_vindexes": [{"columns": ["region", "id"], "name": "region_vdx"}]},
    "vsh": {"column_vindexes": [{"column": "id2", "name": "hash"}]}
  }
}`

func newVSchemaEngine(t *testing.T) *Engine {
	t.Helper()
	vs, err := filter.ParseVSchema([]byte(vsTestVSchema))
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewEngine(Config{Addr: db.Addr(), User: db.User(), Password: db.Password(), Database: "test", Keyspace: "ks", VSchema: vs})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// Vitess's TestInKeyRangeMultiColumn and TestREKeyRange (its second VSchema) through an engine
// with a VSchema: SQL in, ROW events out. Keyspace ids are region_experimental's: the region
// byte, then the hash of id (hash(1) = 166b40b44aba4bd6, hash(2) = 06e7ea22ce92708f).
func TestVSchemaStreaming(t *testing.T) {
	testkit.MustExec(t, db,
		"CREATE TABLE vsr (region INT, id INT, val VARBINARY(128), PRIMARY KEY (id))",
		"CREATE TABLE vsh (id1 INT, id2 INT, val VARBINARY(128), PRIMARY KEY (id1))")
	e := newVSchemaEngine(t)
	ts := startStream(t, e, Request{Position: "current", Filter: rules(
		&binlogdata.Rule{Match: "vsr", Filter: "select id, region, val, keyspace_id() from vsr where in_keyrange('-80')"},
		&binlogdata.Rule{Match: "vsh", Filter: "-80"},
	)})
	ts.expect("GTID", "OTHER", "VGTID")
	const (
		k1 = `"\x01\x16k@\xb4J\xbaK\xd6"`
		k2 = `"\x02\x16k@\xb4J\xbaK\xd6"`
		k3 = `"\x01\x06\xe7\xea\"Βp\x8f"`
	)
	cases := []struct {
		name string
		sql  []string
		want []string
	}{{
		name: "region 1 is in -80, region 128 is not",
		sql:  []string{"INSERT INTO vsr VALUES (1, 1, 'aaa')", "INSERT INTO vsr VALUES (128, 2, 'bbb')"},
		want: []string{"BEGIN", "FIELD vsr id:INT32 region:INT32 val:VARBINARY keyspace_id:VARBINARY", "ROW vsr +[1 1 aaa " + k1 + "]", "GTID", "COMMIT", "VGTID",
			"BEGIN", "GTID", "COMMIT", "VGTID"},
	}, {
		name: "a new region in the range: both images",
		sql:  []string{"UPDATE vsr SET region = 2 WHERE id = 1"},
		want: []string{"BEGIN", "ROW vsr [1 1 aaa " + k1 + "]>[1 2 aaa " + k2 + "]", "GTID", "COMMIT", "VGTID"},
	}, {
		name: "moving out of the range: the before image",
		sql:  []string{"UPDATE vsr SET region = 128 WHERE id = 1"},
		want: []string{"BEGIN", "ROW vsr -[1 2 aaa " + k2 + "]", "GTID", "COMMIT", "VGTID"},
	}, {
		name: "moving into the range: the after image",
		sql:  []string{"UPDATE vsr SET region = 1 WHERE id = 2"},
		want: []string{"BEGIN", "ROW vsr +[2 1 bbb " + k3 + "]", "GTID", "COMMIT", "VGTID"},
	}, {
		name: "the vindex column, not the primary key, places the row",
		sql:  []string{"INSERT INTO vsh VALUES (4, 1, 'aaa')", "INSERT INTO vsh VALUES (1, 4, 'aaa')"},
		want: []string{"BEGIN", "FIELD vsh id1:INT32 id2:INT32 val:VARBINARY", "ROW vsh +[4 1 aaa]", "GTID", "COMMIT", "VGTID",
			"BEGIN", "GTID", "COMMIT", "VGTID"},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			testkit.MustExec(t, db, c.sql...)
			ts.t = t
			ts.expect(c.want...)
		})
	}
	ts.t = t
}

// The table copy (VStreamRows) reads keyspace ids from the VSchema as the binlog stream does,
// and a table the VSchema does not name is refused with Vitess's words.
func TestVSchemaRows(t *testing.T) {
	testkit.MustExec(t, db,
		"CREATE TABLE vsr_rows (region INT, id INT, PRIMARY KEY (id))",
		"INSERT INTO vsr_rows VALUES (1, 1), (128, 2), (1, 2 + 1), (127, 4)")
	e := newVSchemaEngine(t)
	var got []string
	err := e.StreamRows(context.Background(), RowsRequest{Query: "select id from vsr_rows where in_keyrange(region, id, 'region_vdx', '-80')"},
		func(b *RowsBatch) error {
			for _, r := range b.Rows {
				got = append(got, evtext.Row(r))
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, " ") != "[1] [3] [4]" {
		t.Errorf("rows in -80 = %v, want [1] [3] [4]", got)
	}
	err = e.StreamRows(context.Background(), RowsRequest{Query: "select id, keyspace_id() from vsr_rows"}, func(*RowsBatch) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "table vsr_rows not found") {
		t.Errorf("err = %v, want table vsr_rows not found", err)
	}
}
