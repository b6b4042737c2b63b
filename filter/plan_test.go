package filter

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
)

// testFields is a 10-column table covering every comparison kind.
func testFields() []*query.Field {
	f := func(name string, t query.Type, charset uint32) *query.Field {
		return &query.Field{Name: name, Type: t, Charset: charset}
	}
	return []*query.Field{
		f("id", query.Type_INT64, 63),
		f("u", query.Type_UINT64, 63),
		f("price", query.Type_DECIMAL, 63),
		f("ratio", query.Type_FLOAT64, 63),
		f("name", query.Type_VARCHAR, 45),
		f("code", query.Type_VARCHAR, 46),
		f("raw", query.Type_VARBINARY, 63),
		f("born", query.Type_DATETIME, 63),
		f("dur", query.Type_TIME, 63),
		f("status", query.Type_ENUM, 45),
	}
}

// row builds cells in testFields order; "NULL" is SQL NULL.
func row(vals ...string) [][]byte {
	out := make([][]byte, len(vals))
	for i, v := range vals {
		if v != "NULL" {
			out[i] = []byte(v)
		}
	}
	return out
}

var sampleRow = row("-7", "18446744073709551615", "12.50", "2.5E-01", "Ünïcode ", "AbC", "\x00\x01", "2024-02-29 10:00:00.5", "-01:30:00", "paid")

func plan(t testing.TB, filterText string) *TablePlan {
	t.Helper()
	f, err := New(&binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "t", Filter: filterText}}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := f.Plan("t", testFields(), []int{0})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestWhere(t *testing.T) {
	cases := []struct {
		where string
		want  bool
	}{
		{"id = -7", true},
		{"id = '-7'", true},
		{"id < -6.5", true},
		{"id > -7", false},
		{"id != -7", false},
		{"id <> 3", true},
		{"u = 18446744073709551615", true},
		{"u > 18446744073709551614", true},
		{"u < 1e20", true},
		{"price = 12.5", true},
		{"price = 12.500", true},
		{"price > 12.49", true},
		{"price between 12 and 13", true},
		{"price not between 12 and 13", false},
		{"ratio = 0.25", true},
		{"ratio < 0.3", true},
		{"name = 'ünïcode'", true},
		{"name = 'unicode'", true}, // utf8mb4_general_ci weighs ü as u, as the server does
		{"name = 'unicodes'", false},
		{"name > 'a'", true},
		{"code = 'abc'", false},
		{"code = 'AbC'", true},
		{"code = 'AbC   '", true},
		{"raw = 'x'", false},
		{"born = '2024-02-29 10:00:00.5'", true},
		{"born > '2024-02-29'", true},
		{"born < '2024-03-01'", true},
		{"born between '2024-01-01' and '2024-12-31 23:59:59'", true},
		{"dur < '00:00:00'", true},
		{"dur = '-1:30:00.000000'", true},
		{"status in ('new', 'PAID')", true},
		{"status not in ('new', 'paid')", false},
		{"status = 'gone'", false},
		{"id is not null", true},
		{"id is null", false},
		{"id = null", false},
		{"id != null", false},
		{"id in (1, 2, -7) and u > 0 and status = 'paid'", true},
		{"id in (1, 2, -7) and u > 0 and status = 'new'", false},
		{"in_keyrange('-')", true},
		{"(id = -7)", true},
		{"raw = X'0001'", true},
		{"raw = x'0002'", false},
		{"raw = 0x0001", true},
		{"raw = 0x1", false},
		{"raw = b'0000000000000001'", true},
		{"u = 0xFFFFFFFFFFFFFFFF", true},
		{"price > 0b1010", true},
		{"name > X'41'", true},
		{"id in (null, -7)", true},
		{"id in (null)", false},
		{"id not in (null, 3)", false},
		{"((id = -7) and (u > 0 and (status = 'paid')))", true},
		{"(id = -7) and (status = 'new')", false},
		{"id = +7", false},
	}
	for _, c := range cases {
		t.Run(c.where, func(t *testing.T) {
			p := plan(t, "select * from t where "+c.where)
			if got := p.Match(sampleRow); got != c.want {
				t.Errorf("Match = %v, want %v", got, c.want)
			}
		})
	}
}

func TestNullNeverMatches(t *testing.T) {
	nulls := row("1", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL")
	for _, where := range []string{"u = 1", "u != 1", "price < 5", "ratio > 0", "name = ''", "name != 'x'", "born < '9999-01-01'",
		"status in ('a')", "status not in ('a')", "u between 0 and 5", "u not between 0 and 5"} {
		if plan(t, "select * from t where "+where).Match(nulls) {
			t.Errorf("%s matched a NULL", where)
		}
	}
	if !plan(t, "select * from t where u is null").Match(nulls) {
		t.Error("IS NULL did not match a NULL")
	}
}

func TestProjection(t *testing.T) {
	p := plan(t, "select status, id, convert(name using utf8mb4) as n, keyspace_id() from t")
	var names []string
	for _, f := range p.Fields() {
		names = append(names, f.Name+":"+f.Type.String())
	}
	if got := strings.Join(names, " "); got != "status:ENUM id:INT64 name:VARCHAR keyspace_id:VARBINARY" {
		t.Errorf("fields = %s", got)
	}
	values, lengths := p.AppendRow(nil, nil, row("1", "2", "3", "4", "nm", "c", "r", "2024-01-01", "00:00:00", "new"))
	if string(values) != "new1nm\x16\x6b\x40\xb4\x4a\xba\x4b\xd6" || len(lengths) != 4 || lengths[3] != 8 {
		t.Errorf("row = %q %v", values, lengths)
	}
	if p.Passthrough() {
		t.Error("a projection is not passthrough")
	}
	if !plan(t, "").Passthrough() || !plan(t, "select * from t").Passthrough() {
		t.Error("select * without WHERE must be passthrough")
	}
}

// TestConvertLatin1 converts latin1 text by collation id: MariaDB's NO PAD collations (1032,
// latin1_swedish_nopad_ci) are latin1 too; they were refused as unknown before the filter
// read the shared collation table.
func TestConvertLatin1(t *testing.T) {
	f, _ := New(&binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "t", Filter: "select convert(l using utf8mb4) from t"}}})
	for _, collation := range []uint32{8, 1032} {
		p, err := f.Plan("t", []*query.Field{{Name: "l", Type: query.Type_VARCHAR, Charset: collation}}, nil)
		if err != nil {
			t.Fatalf("collation %d: %v", collation, err)
		}
		values, _ := p.AppendRow(nil, nil, [][]byte{{'c', 0xe9, 0x80}})
		if string(values) != "cé€" {
			t.Errorf("collation %d: latin1 -> utf8mb4 = %q", collation, values)
		}
	}
	// utf8mb4_nopad_bin (MariaDB's 1069) is utf8mb4 already: its text passes as it is.
	p, err := f.Plan("t", []*query.Field{{Name: "l", Type: query.Type_VARCHAR, Charset: 1069}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if values, _ := p.AppendRow(nil, nil, [][]byte{[]byte("cé")}); string(values) != "cé" {
		t.Errorf("utf8mb4_nopad_bin -> utf8mb4 = %q", values)
	}
}

// A VARCHAR with a binary collation is typed VARBINARY in FIELD (as Vitess types it) and is
// still a character column convert() reads.
func TestConvertBinaryCollation(t *testing.T) {
	f, _ := New(&binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "t", Filter: "select convert(l using utf8mb4) from t"}}})
	p, err := f.Plan("t", []*query.Field{{Name: "l", Type: query.Type_VARBINARY, Charset: 47}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	values, _ := p.AppendRow(nil, nil, [][]byte{{'c', 0xe9}})
	if string(values) != "cé" {
		t.Errorf("latin1_bin -> utf8mb4 = %q", values)
	}
	if _, err := f.Plan("t", []*query.Field{{Name: "l", Type: query.Type_VARBINARY, Charset: 63}}, nil); err == nil {
		t.Error("convert() of a VARBINARY column must fail")
	}
}

func TestPlanErrors(t *testing.T) {
	cases := []struct {
		filter, msg string
	}{
		{"select nope from t", "column nope not found in table t"},
		{"select id from t where nope = 1", "column nope not found in table t"},
		{"select id from t where id = 'x'", "'x' is not a number"},
		{"select id from t where ratio = 'x'", "is not a number"},
		{"select id from t where born = 'soon'", "is not a date"},
		{"select id from t where dur = '25'", "is not a time"},
		{"select convert(id using utf8mb4) from t", "not a character column"},
		{"select convert(name using koi8r) from t", "only utf8mb4"},
		{"select id from t where in_keyrange(name, 'hash', '-80')", "needs an integer column"},
		{"select id from t where in_keyrange(id, 'unicode_loose_md5', '-80')", `vindex "unicode_loose_md5" is not supported`},
		{"select id from t where in_keyrange(id, 'lookup', '-80')", "vindex must be Unique to be used for VReplication: lookup"},
		{"select id from t where in_keyrange(name, 'numeric', '-80')", "the numeric vindex needs an integer column"},
		{"select id from t where in_keyrange('zz-')", "not hex"},
		{"select id from t where id = 0x010203040506070809", "is not a number of at most 64 bits"},
		{"select id, keyspace_id() from t where in_keyrange(id, u, 'hash', '-80')", "the hash vindex takes one column, got 2"},
	}
	for _, c := range cases {
		f, err := New(&binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "t", Filter: c.filter}}})
		if err == nil {
			_, err = f.Plan("t", testFields(), []int{0})
		}
		if err == nil || !strings.Contains(err.Error(), c.msg) || !strings.Contains(err.Error(), "rule 1") {
			t.Errorf("%s: err = %v, want rule 1 and %q", c.filter, err, c.msg)
		}
	}
	f, _ := New(&binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "t", Filter: "select keyspace_id() from t"}}})
	if _, err := f.Plan("t", testFields(), []int{0, 1}); err == nil || !strings.Contains(err.Error(), "one integer column") {
		t.Errorf("keyspace_id() on a composite key: err = %v", err)
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		filter, msg string
	}{
		{"select", "syntax error at position 7 (expected a column)"},
		{"select id t", "syntax error at position 12 (expected FROM)"},
		{"select id from t where", "syntax error at position 23"},
		{"select id from t where id = 1 or id = 2", "unsupported constraint: id = 1 or id = 2"},
		{"select id from t where (id = 1 || id = 2)", "unsupported constraint: id = 1 || id = 2"},
		{"select id from t where id = 1 xor id = 2", "unsupported constraint: id = 1 xor id = 2"},
		{"select id from t where not id = 1", "unsupported constraint: not id = 1"},
		{"select id from t where not (id = 1 and u = 2)", "unsupported constraint: not (id = 1 and u = 2)"},
		{"select id from t where id = other", "unexpected: other"},
		{"select id from t where 1 = id", "unexpected: 1 = id"},
		{"select id from t where id = id + 1", "unexpected: id + 1"},
		{"select id from t where id like 'a%'", "comparison operator like not supported"},
		{"select id from t where id not like 'a%'", "comparison operator not like not supported"},
		{"select id from t where id <=> 1", "comparison operator <=> not supported"},
		{"select id from t where id regexp 'a'", "comparison operator regexp not supported"},
		{"select id from t where id is true", "unsupported constraint: id is true"},
		{"select id from t where id", "unsupported constraint: id"},
		{"select id from t where lower(id) = 1", "unexpected: lower(id) = 1"},
		{"select id from t where t.id = 1", "unsupported qualifier for column: t.id"},
		{"select id from t where id in (1, u)", "unexpected: u"},
		{"select id from t where id in (select 1)", "syntax error"},
		{"select id + 1 from t", "unsupported: id + 1"},
		{"select -id from t", "unsupported: -id"},
		{"select `id`+`select`+`a b` from t", "unsupported: id + `select` + `a b`"},
		{"select 'a' from t", "only integer literals are supported"},
		{"select 1.5 from t", "only integer literals are supported"},
		{"select 2 from t", "only the integer literal 1 is supported"},
		{"select count(*) from t", "unsupported function: count(*)"},
		{"select lower(name) from t", "unsupported function: lower(name)"},
		{"select cast(id as char) from t", "unsupported function: cast(id as char)"},
		{"select convert(id, char(10)) from t", "unsupported function: convert(id, char(10))"},
		{"select convert_tz(born, 'UTC', '+03:00') as born from t", "unsupported function: convert_tz(born, 'UTC', '+03:00')"},
		{"select keyspace_id(id) from t", "unexpected: keyspace_id(id)"},
		{"select convert(id + 1 using utf8mb4) from t", "unsupported: convert(id + 1 using utf8mb4)"},
		{"select t.id from t", "unsupported qualifier for column: t.id"},
		{"select id from db.t", "unsupported: select id from db.t"},
		{"select id from t where name = 'open", "syntax error at position 36 (unterminated string)"},
		{"select id from t limit 1", "unsupported: limit 1"},
		{"select id from t order by id", "unsupported: order by id"},
		{"select id from t where id in ()", "syntax error at position 32"},
		{"select id from t where id between 1", "syntax error at position 36 (expected AND)"},
		{"select id from t where id = 1 id = 2", "syntax error at position 33 near 'id'"},
		{"update t set id = 1", "unsupported: update t set id = 1"},
		{"select id from t where in_keyrange('-80', 'x')", "unexpected in_keyrange parameters"},
		{"select id from t where in_keyrange(id, 'hash', '-40-80-')", "unexpected in_keyrange parameter: '-40-80-'"},
		{"select id from t where in_keyrange(id, 'hash', '')", `malformed spec: doesn't define a range: ""`},
		{"select id from t where raw = X'123'", "syntax error at position 36 near 'X'123'' (malformed hexadecimal or bit literal)"},
		{"select id from t where raw = b'102'", "malformed hexadecimal or bit literal"},
		{"select X'01' from t", "only integer literals are supported"},
		{"select id from t where id = 1 /*! and 1 */", "syntax error at position 34 (executable comments are not supported)"},
		// MariaDB runs /*M! ... */ as MySQL runs /*! ... */: the same refusal (sqltext.Comment).
		{"select id from t where id = 1 /*M!100100 and 1 */", "syntax error at position 35 (executable comments are not supported)"},
		// "--" followed by neither a space nor a control character is two minus signs.
		{"select id from t where id = 1 --x", "unexpected: 1 - -x"},
		{"select id from t /* open", "unterminated comment"},
	}
	for _, c := range cases {
		_, err := New(&binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "t", Filter: c.filter}}})
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: err = %v, want %q", c.filter, err, c.msg)
		}
	}
}

func TestKeyRange(t *testing.T) {
	cases := []struct {
		kr  string
		id  string
		in  bool
		err bool
	}{
		{"-80", "\x7f\xff", true, false},
		{"-80", "\x80", false, false},
		{"80-", "\x80\x00", true, false},
		{"40-80", "\x40", true, false},
		{"40-80", "\x3f\xff", false, false},
		{"", "\xff", true, false},
		{"0", "\x00", true, false},
		{"x-", "", false, true},
		{"80-40", "", false, true},
		{"80", "", false, true},
	}
	for _, c := range cases {
		kr, err := ParseKeyRange(c.kr)
		if (err != nil) != c.err {
			t.Errorf("ParseKeyRange(%q) err = %v", c.kr, err)
			continue
		}
		if err == nil && kr.Contains([]byte(c.id)) != c.in {
			t.Errorf("%q contains %x = %v, want %v", c.kr, c.id, !c.in, c.in)
		}
	}
}

func TestHashVindex(t *testing.T) {
	v := newHashVindex()
	for in, want := range map[uint64]string{1: "166b40b44aba4bd6", 2: "06e7ea22ce92708f", 3: "4eb190c9a2fa169c", 4: "d2fd8867d50d2dfe"} {
		got := ""
		for _, b := range v.integer(in) {
			got += string("0123456789abcdef"[b>>4]) + string("0123456789abcdef"[b&15])
		}
		if got != want {
			t.Errorf("hash(%d) = %s, want %s", in, got, want)
		}
	}
}

// BenchmarkWhere evaluates a 3-condition WHERE over a 10-column row.
func BenchmarkWhere(b *testing.B) {
	p := plan(b, "select * from t where price > 10 and name = 'ünïcode' and born between '2024-01-01' and '2024-12-31'")
	if !p.Match(sampleRow) {
		b.Fatal("the sample row must match")
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if !p.Match(sampleRow) {
			b.Fatal("no match")
		}
	}
}

func TestWhereDoesNotAllocate(t *testing.T) {
	p := plan(t, "select * from t where price > 10 and name = 'ünïcode' and born between '2024-01-01' and '2024-12-31' and ratio < 1 and id in (1, -7) and in_keyrange('-')")
	if n := testing.AllocsPerRun(100, func() { p.Match(sampleRow) }); n != 0 {
		t.Errorf("Match allocates %.1f times per row", n)
	}
	out := make([]byte, 0, 256)
	lens := make([]int64, 0, 16)
	q := plan(t, "select status, id, keyspace_id() from t where id < 0")
	if n := testing.AllocsPerRun(100, func() { q.AppendRow(out[:0], lens[:0], sampleRow) }); n != 0 {
		t.Errorf("AppendRow allocates %.1f times per row", n)
	}
}

func FuzzFilter(f *testing.F) {
	for _, s := range []string{
		"select * from t where id = 1",
		"select id, keyspace_id() from t where in_keyrange(id, 'hash', '-80') and name in ('a', 'b')",
		"select convert(name using utf8mb4) as n from t where born between '2024-01-01' and '2025-01-01' and dur is not null",
		"-80", "exclude", "select id from t where price >= -1.5e3 and code <> 'x''y'",
		"select 1, id as x from t where (id = 1 and (name is null)) or not u in (1)",
		"select id from t where raw in (X'00', 0x1, b'1') and u > 0b11",
		"select id from t where in_keyrange(name, 'xxhash', '80-') and in_keyrange(raw, 'binary_md5', '-40-80-')",
	} {
		f.Add(s, "12.5", "2024-01-01 00:00:00", "abc")
	}
	f.Fuzz(func(t *testing.T, filterText, num, date, str string) {
		flt, err := New(&binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "t", Filter: filterText}}})
		if err != nil {
			return
		}
		p, err := flt.Plan("t", testFields(), []int{0})
		if err != nil || p == nil {
			return
		}
		r := row(num, num, num, num, str, str, str, date, date, str)
		p.Match(r)
		p.AppendRow(nil, nil, r)
	})
}

func TestWhereSQL(t *testing.T) {
	p := plan(t, `select id, name from t where price >= -1.5 and name in ('a', 'it''s') and born between '2024-01-01' and '2024-12-31' and code is not null and in_keyrange('-80')`)
	want := "(`price` >= -1.5) AND (`name` IN ('a', 'it\\'s')) AND (`born` BETWEEN '2024-01-01' AND '2024-12-31') AND (`code` IS NOT NULL)"
	if got := p.WhereSQL(testFields()); got != want {
		t.Errorf("WhereSQL =\n %s\nwant\n %s", got, want)
	}
	if got := plan(t, "select id from t where raw in (x'00ff', 0b1) and id = 0x10").WhereSQL(testFields()); got != "(`raw` IN (X'00ff', X'01')) AND (`id` = X'10')" {
		t.Errorf("binary literals: %s", got)
	}
	if got := plan(t, "select id from t").WhereSQL(testFields()); got != "" {
		t.Errorf("no conditions: %q", got)
	}
	// Projected, tested and keyspace-id columns, in table order.
	if got := plan(t, "select status, keyspace_id() from t where price > 1").UsedColumns(); !reflect.DeepEqual(got, []int{0, 2, 9}) {
		t.Errorf("UsedColumns = %v", got)
	}
}

func TestConditionColumns(t *testing.T) {
	p := plan(t, "select name from t where ratio > 1 and name = 'a' and price < 3 and in_keyrange(id, 'hash', '-80')")
	if got := p.ConditionColumns(); !slices.Equal(got, []int{0, 2, 3, 4}) {
		t.Errorf("ConditionColumns = %v, want [0 2 3 4]", got)
	}
	if got := plan(t, "select name, raw from t").ConditionColumns(); len(got) != 0 {
		t.Errorf("a projection has no condition columns: %v", got)
	}
}
