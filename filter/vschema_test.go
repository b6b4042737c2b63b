package filter

import (
	"strings"
	"testing"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
)

// The VSchemas of Vitess's vstreamer tests (engine_test.go: shardedVSchema and
// multicolumnVSchema; TestREKeyRange's second VSchema), and variants.
const (
	vsSharded = `{"sharded": true, "vindexes": {"hash": {"type": "hash"}},
		"tables": {"t1": {"column_vindexes": [{"column": "id1", "name": "hash"}]}}}`
	vsAlt = `{"sharded": true, "vindexes": {"hash": {"type": "hash"}},
		"tables": {"t1": {"column_vindexes": [{"column": "id2", "name": "hash"}]}}}`
	vsRegion1 = `{"sharded": true,
		"vindexes": {"region_vdx": {"type": "region_experimental", "params": {"region_bytes": "1"}}},
		"tables": {"t1": {"column_vindexes": [{"columns": ["region", "id"], "name": "region_vdx"}]}}}`
	vsRegion2 = `{"sharded": true,
		"vindexes": {"region_vdx": {"type": "region_experimental", "params": {"region_bytes": "2"}}},
		"tables": {"t1": {"columnVindexes": [{"columns": ["region", "id"], "name": "region_vdx"}]}}}`
	// The cheapest unique vindex that needs no lookup gives the keyspace id, as in Vitess:
	// numeric (cost 0) over xxhash (cost 1); hash after a lookup.
	vsCheapest = `{"sharded": true,
		"vindexes": {"x": {"type": "xxhash"}, "n": {"type": "numeric"}, "h": {"type": "hash"},
			"lk": {"type": "lookup_unique", "params": {"table": "lk", "from": "id2", "to": "keyspace_id"}, "owner": "t1"}},
		"tables": {
			"t1": {"column_vindexes": [{"column": "val", "name": "x"}, {"column": "id1", "name": "n"}]},
			"t2": {"column_vindexes": [{"column": "id2", "name": "lk"}, {"column": "id1", "name": "h"}]}}}`
)

var (
	vsT1    = []*query.Field{vsInt("id1"), vsInt("id2"), {Name: "val", Type: query.Type_VARBINARY, Charset: 63}}
	vsT1Reg = []*query.Field{vsInt("region"), vsInt("id"), {Name: "val", Type: query.Type_VARBINARY, Charset: 63}}
)

func vsInt(name string) *query.Field {
	return &query.Field{Name: name, Type: query.Type_INT32, Charset: 63}
}

const (
	ksid11 = "\x16k@\xb4J\xbaK\xd6"        // hash(1)
	ksid2  = "\x06\xe7\xea\"\xce\x92p\x8f" // hash(2)
	ksid4  = "\xd2\xfd\x88g\xd5\r-\xfe"    // hash(4)
)

// TestVSchemaRows: a VSchema, a rule and a row image in; whether the row is kept and, for a
// select, the row streamed (keyspace_id() as its bytes) out. The keyspace ids are Vitess's
// (vstreamer_test.go's TestInKeyRangeMultiColumn, region_experimental_test.go).
func TestVSchemaRows(t *testing.T) {
	cases := []struct {
		name, vschema, filter string
		fields                []*query.Field
		row                   []string // "NULL" for NULL
		kept                  bool
		out                   string // the projected row, cells joined by |; "" when not checked
	}{
		// TestREKeyRange: the hash of id1, then of id2.
		{"id1 1", vsSharded, "-80", vsT1, []string{"1", "1", "aaa"}, true, ""},
		{"id1 4", vsSharded, "-80", vsT1, []string{"4", "1", "bbb"}, false, ""},
		{"id2 1", vsAlt, "-80", vsT1, []string{"4", "1", "aaa"}, true, ""},
		{"id2 4", vsAlt, "-80", vsT1, []string{"1", "4", "aaa"}, false, ""},
		{"ksid of id2", vsAlt, "select id1, keyspace_id() from t1", vsT1, []string{"1", "4", "aaa"}, true, "1|" + ksid4},
		// TestInKeyRangeMultiColumn and TestREMultiColumnVindex: region_experimental over
		// (region, id), region_bytes 1.
		{"region 1 id 1", vsRegion1, "select id, region, val, keyspace_id() from t1 where in_keyrange('-80')", vsT1Reg,
			[]string{"1", "1", "aaa"}, true, "1|1|aaa|\x01" + ksid11},
		{"region 2 id 1", vsRegion1, "select id, region, val, keyspace_id() from t1 where in_keyrange('-80')", vsT1Reg,
			[]string{"2", "1", "aaa"}, true, "1|2|aaa|\x02" + ksid11},
		{"region 1 id 2", vsRegion1, "select id, region, val, keyspace_id() from t1 where in_keyrange('-80')", vsT1Reg,
			[]string{"1", "2", "bbb"}, true, "2|1|bbb|\x01" + ksid2},
		{"region 128", vsRegion1, "select id, region, val, keyspace_id() from t1 where in_keyrange('-80')", vsT1Reg,
			[]string{"128", "2", "bbb"}, false, ""},
		{"rule, region 1", vsRegion1, "-80", vsT1Reg, []string{"1", "1", "aaa"}, true, ""},
		{"rule, region 128", vsRegion1, "-80", vsT1Reg, []string{"128", "1", "aaa"}, false, ""},
		{"rule 80-, region 128", vsRegion1, "80-", vsT1Reg, []string{"128", "1", "aaa"}, true, ""},
		// The region is cast to 16 bits and keeps its low region_bytes bytes.
		{"region 255", vsRegion1, "select keyspace_id() from t1", vsT1Reg, []string{"255", "1", "x"}, true, "\xff" + ksid11},
		{"region 256", vsRegion1, "select keyspace_id() from t1", vsT1Reg, []string{"256", "1", "x"}, true, "\x00" + ksid11},
		{"region -1", vsRegion1, "select keyspace_id() from t1", vsT1Reg, []string{"-1", "1", "x"}, true, "\xff" + ksid11},
		{"2 bytes, region 1", vsRegion2, "select keyspace_id() from t1", vsT1Reg, []string{"1", "1", "x"}, true, "\x00\x01" + ksid11},
		{"2 bytes, region 256", vsRegion2, "select keyspace_id() from t1", vsT1Reg, []string{"256", "1", "x"}, true, "\x01\x00" + ksid11},
		{"2 bytes, region 65536", vsRegion2, "select keyspace_id() from t1", vsT1Reg, []string{"65536", "1", "x"}, true, "\x00\x00" + ksid11},
		// A NULL vindex column has no keyspace id: not in any range, NULL in keyspace_id().
		{"NULL region", vsRegion1, "-80", vsT1Reg, []string{"NULL", "1", "x"}, false, ""},
		{"NULL region ksid", vsRegion1, "select id, keyspace_id() from t1", vsT1Reg, []string{"NULL", "1", "x"}, true, "1|NULL"},
		// in_keyrange names the VSchema's vindex, or a vindex type.
		{"named vindex", vsRegion1, "select id from t1 where in_keyrange(region, id, 'region_vdx', '80-')", vsT1Reg,
			[]string{"128", "2", "bbb"}, true, "2"},
		{"named type", vsRegion1, "select id from t1 where in_keyrange(id, 'hash', '-80')", vsT1Reg,
			[]string{"128", "1", "bbb"}, true, "1"},
		// Of several vindexes, the cheapest.
		{"numeric over xxhash", vsCheapest, "select keyspace_id() from t1", vsT1, []string{"1", "2", "x"}, true, "\x00\x00\x00\x00\x00\x00\x00\x01"},
		{"hash after a lookup", vsCheapest, "select keyspace_id() from t2", vsT1, []string{"1", "2", "x"}, true, ksid11},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vs, err := ParseVSchema([]byte(c.vschema))
			if err != nil {
				t.Fatal(err)
			}
			table := "t1"
			if st, serr := SelectTable(c.filter); serr == nil {
				table = st
			}
			f, err := New(&binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: table, Filter: c.filter}}})
			if err != nil {
				t.Fatal(err)
			}
			p, err := f.WithVSchema(vs).Plan(table, c.fields, []int{1})
			if err != nil {
				t.Fatal(err)
			}
			cells := make([][]byte, len(c.row))
			for i, v := range c.row {
				if v != "NULL" {
					cells[i] = []byte(v)
				}
			}
			if got := p.Match(cells); got != c.kept {
				t.Fatalf("kept = %v, want %v", got, c.kept)
			}
			if c.out == "" {
				return
			}
			values, lengths := p.AppendRow(nil, nil, cells)
			var got []string
			for _, l := range lengths {
				if l < 0 {
					got = append(got, "NULL")
					continue
				}
				got = append(got, string(values[:l]))
				values = values[l:]
			}
			if strings.Join(got, "|") != c.out {
				t.Errorf("row = %q, want %q", strings.Join(got, "|"), c.out)
			}
		})
	}
}

// The keyspace_id FIELD is as long as the vindex's keyspace ids.
func TestVSchemaKeyspaceIDField(t *testing.T) {
	for _, c := range []struct {
		vschema string
		length  uint32
	}{{vsSharded, 8}, {vsRegion1, 9}, {vsRegion2, 10}} {
		vs, err := ParseVSchema([]byte(c.vschema))
		if err != nil {
			t.Fatal(err)
		}
		f, _ := New(&binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "t1", Filter: "select keyspace_id() from t1"}}})
		fields := vsT1Reg
		if c.length == 8 {
			fields = vsT1
		}
		p, err := f.WithVSchema(vs).Plan("t1", fields, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Fields()[0]; got.Name != "keyspace_id" || got.Type != query.Type_VARBINARY || got.ColumnLength != c.length {
			t.Errorf("field = %v, want keyspace_id VARBINARY of length %d", got, c.length)
		}
	}
}

// A VSchema is checked when it is read; its errors are Vitess's.
func TestParseVSchemaErrors(t *testing.T) {
	cases := []struct{ vschema, msg string }{
		{`{"vindexes": {"v": {"type": "nope"}}}`, `vindexType "nope" not found`},
		{`{"vindexes": {"v": {"type": "region_experimental"}}}`, "region_experimental missing region_bytes param"},
		{`{"vindexes": {"v": {"type": "region_experimental", "params": {"region_bytes": "3"}}}}`, "region_bytes must be 1 or 2: 3"},
		{`{"tables": {"t": {"column_vindexes": [{"column": "id", "name": "v"}]}}}`, "vindex v not found for table t"},
		{`{"vindexes": {"v": {"type": "hash"}}, "tables": {"t": {"column_vindexes": [{"column": "id", "columns": ["id"], "name": "v"}]}}}`,
			"can't use column and columns at the same time in vindex (v) and table (t)"},
		{`{"vindexes": {"v": {"type": "hash"}}, "tables": {"t": {"column_vindexes": [{"name": "v"}]}}}`,
			"must specify at least one column for vindex (v) and table (t)"},
		{`{"vindexes": {"v": {"type": "lookup"}}, "tables": {"t": {"column_vindexes": [{"column": "id", "name": "v"}]}}}`,
			"primary vindex v is not Unique for table t"},
		{`{"vindexes": {"h": {"type": "hash"}, "r": {"type": "region_experimental", "params": {"region_bytes": "1"}}},
			"tables": {"t": {"column_vindexes": [{"column": "id", "name": "h"}, {"columns": ["a", "b"], "name": "r"}]}}}`,
			"multi-column vindex r should be a primary vindex for table t"},
		{`{"sharded": true, "tables": {"t": {}}}`, "missing primary col vindex for table: t"},
		{`{"tables": {"t": {"type": "view"}}}`, "unidentified table type view"},
		{`{"sharded": true, "tables": {"s": {"type": "sequence"}}}`, "sequence table has to be in an unsharded keyspace or must be pinned: s"},
		{`{"sharded": tru}`, "vschema: invalid character"},
		{`{} {}`, "more than one JSON value"},
	}
	for _, c := range cases {
		if _, err := ParseVSchema([]byte(c.vschema)); err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: err = %v, want %q", c.vschema, err, c.msg)
		}
	}
	// What Vitess accepts: reference and pinned tables of a sharded keyspace have no vindex,
	// an unsharded keyspace's tables none either; fields a stream does not read are ignored.
	ok := `{"sharded": true, "require_explicit_routing": false, "foreignKeyMode": "unmanaged",
		"vindexes": {"h": {"type": "hash"}},
		"tables": {"r": {"type": "reference"}, "p": {"pinned": "80"},
			"t": {"column_vindexes": [{"column": "id", "name": "h"}], "auto_increment": {"column": "id", "sequence": "s"}}}}`
	if _, err := ParseVSchema([]byte(ok)); err != nil {
		t.Error(err)
	}
}

// Plans of tables the VSchema cannot give keyspace ids; the errors are Vitess's where its
// tests check them.
func TestVSchemaPlanErrors(t *testing.T) {
	cases := []struct{ vschema, table, filter, msg string }{
		{vsSharded, "t2", "-80", "table t2 not found"},
		{vsSharded, "t2", "select keyspace_id() from t2", "table t2 not found"},
		{`{"vindexes": {"h": {"type": "hash"}}, "tables": {"t1": {"column_vindexes": [{"column": "id", "name": "h"}]}}}`,
			"t1", "-80", "column id not found in table t1"},
		{`{"tables": {"t1": {}}}`, "t1", "select id1 from t1 where in_keyrange('-80')", "table t1 has no vindex"},
		{`{"vindexes": {"u": {"type": "unicode_loose_md5"}}, "tables": {"t1": {"column_vindexes": [{"column": "val", "name": "u"}]}}}`,
			"t1", "-80", `vindex u: type "unicode_loose_md5" is not supported`},
		{`{"vindexes": {"l": {"type": "lookup_unique"}}, "tables": {"t1": {"column_vindexes": [{"column": "id1", "name": "l"}]}}}`,
			"t1", "-80", "could not find a vindex to compute keyspace id for table t1"},
		{vsRegion1, "t1", "select id from t1 where in_keyrange(id, 'region_vdx', '-80')", "the region_vdx vindex (region_experimental) needs two columns"},
		{vsRegion1, "t1", "select id from t1 where in_keyrange(region, val, 'region_vdx', '-80')", "the region_vdx vindex needs an integer column; val is VARBINARY"},
		{vsRegion1, "t1", "select id from t1 where in_keyrange(region, id, 'region_experimental', '-80')", "region_experimental missing region_bytes param"},
		{vsRegion1, "t1", "select id from t1 where in_keyrange(region, id, 'hash', '-80')", "the hash vindex takes one column, got 2"},
	}
	for _, c := range cases {
		vs, err := ParseVSchema([]byte(c.vschema))
		if err != nil {
			t.Fatal(err)
		}
		f, err := New(&binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: c.table, Filter: c.filter}}})
		if err != nil {
			t.Fatal(err)
		}
		fields := vsT1
		if c.vschema == vsRegion1 {
			fields = vsT1Reg
		}
		if _, err := f.WithVSchema(vs).Plan(c.table, fields, []int{0}); err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s on %s: err = %v, want %q", c.filter, c.table, err, c.msg)
		}
	}
}

// Without a VSchema, keyspace ids hash a primary key of one integer column, as before; the
// tables Vitess's planbuilder test finds in its VSchema are refused.
func TestNoVSchemaKeyspaceIDs(t *testing.T) {
	for _, tb := range []pbTable{pbT2, pbT1alt, pbRegional} {
		f, _ := New(&binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "/.*/", Filter: "-80"}}})
		_, err := f.Plan(tb.name, tb.fields, tb.pk)
		if want := "keyspace ids need a primary key of one integer column (the hash vindex) or a VSchema"; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", tb.name, err, want)
		}
	}
	f, _ := New(&binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "t1", Filter: "select keyspace_id() from t1"}}})
	p, err := f.Plan("t1", pbT1.fields, pbT1.pk)
	if err != nil {
		t.Fatal(err)
	}
	if values, _ := p.AppendRow(nil, nil, [][]byte{[]byte("1"), []byte("a")}); string(values) != ksid11 {
		t.Errorf("keyspace_id() = %q, want %q", values, ksid11)
	}
}

// Judging and projecting a row under a two-column vindex does not allocate.
func TestVSchemaRowAllocations(t *testing.T) {
	vs, err := ParseVSchema([]byte(vsRegion1))
	if err != nil {
		t.Fatal(err)
	}
	f, _ := New(&binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "t1", Filter: "select id, keyspace_id() from t1 where in_keyrange('-80')"}}})
	p, err := f.WithVSchema(vs).Plan("t1", vsT1Reg, []int{1})
	if err != nil {
		t.Fatal(err)
	}
	cells := [][]byte{[]byte("1"), []byte("2"), []byte("x")}
	values, lengths := make([]byte, 0, 64), make([]int64, 0, 4)
	if n := testing.AllocsPerRun(100, func() {
		if !p.Match(cells) {
			t.Fatal("row not in -80")
		}
		values, lengths = p.AppendRow(values[:0], lengths[:0], cells)
	}); n != 0 {
		t.Errorf("a row allocates %.1f times", n)
	}
}
