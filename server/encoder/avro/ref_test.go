package avro

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	hamba "github.com/hamba/avro/v2"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	"github.com/vstream-cdc/vstream/server/encoder"
	"github.com/vstream-cdc/vstream/server/encoder/debezium"
	"github.com/vstream-cdc/vstream/server/encoder/encodertest"
	"github.com/vstream-cdc/vstream/vstreamer/ddl"
)

// refDir holds real Debezium 2.4 output for a table with a column of every MySQL type.
const refDir = "testdata/debezium-2.4-mysql-datatypes"

// refColumn is a column of datatype.ddl.sql.
type refColumn struct {
	name string
	// typ is the declared type: "DATETIME(4)", "INT UNSIGNED", "ENUM('a', 'b')".
	typ string
	pk  bool
}

// readRefDDL reads the columns of the reference CREATE TABLE (one column per line).
func readRefDDL(t *testing.T) []refColumn {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(refDir, "datatype.ddl.sql"))
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`^\s*(\w+)\s+(.+?),?\s*$`)
	var cols []refColumn
	for _, l := range strings.Split(string(b), "\n") {
		m := line.FindStringSubmatch(l)
		if m == nil || strings.HasPrefix(strings.ToUpper(l), "CREATE") {
			continue
		}
		typ, pk := strings.CutSuffix(m[2], " PRIMARY KEY")
		cols = append(cols, refColumn{name: m[1], typ: typ, pk: pk})
	}
	return cols
}

// readRefDML reads the literals of the reference INSERT: numbers as text, strings unquoted.
func readRefDML(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(refDir, "datatype.dml.sql"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	s = s[strings.Index(s, "(")+1 : strings.LastIndex(s, ")")]
	lit := regexp.MustCompile(`'((?:[^'\\]|\\.|'')*)'|(-?[0-9.]+)`)
	var vals []string
	for _, m := range lit.FindAllStringSubmatch(s, -1) {
		if m[2] != "" {
			vals = append(vals, m[2])
		} else {
			vals = append(vals, strings.ReplaceAll(m[1], "''", "'"))
		}
	}
	return vals
}

// typeArgs returns the numeric arguments of a COLUMN_TYPE: "decimal(10,5)" → [10 5].
func typeArgs(ct string) []int {
	open, end := strings.IndexByte(ct, '('), strings.IndexByte(ct, ')')
	if open < 0 || end < open {
		return nil
	}
	var args []int
	for a := range strings.SplitSeq(ct[open+1:end], ",") {
		n, err := strconv.Atoi(strings.TrimSpace(a))
		if err != nil {
			return nil
		}
		args = append(args, n)
	}
	return args
}

func typeArg(ct string, i, def int) int {
	if args := typeArgs(ct); i < len(args) {
		return args[i]
	}
	return def
}

// refField is the FIELD metadata a MySQL 8 source reports for a declared column type.
func refField(c refColumn) *query.Field {
	base, rest, _ := strings.Cut(c.typ, "(")
	base = strings.ToUpper(base)
	base, unsigned := strings.CutSuffix(base, " UNSIGNED")
	args := ""
	if rest != "" {
		args = "(" + strings.ReplaceAll(rest, " ", "")
		if i := strings.Index(args, ")"); i >= 0 {
			args = args[:i+1]
		}
	}
	types := map[string][2]query.Type{
		"TINYINT": {query.Type_INT8, query.Type_UINT8}, "SMALLINT": {query.Type_INT16, query.Type_UINT16},
		"MEDIUMINT": {query.Type_INT24, query.Type_UINT24}, "INT": {query.Type_INT32, query.Type_UINT32},
		"BIGINT": {query.Type_INT64, query.Type_UINT64}, "FLOAT": {query.Type_FLOAT32}, "DOUBLE": {query.Type_FLOAT64},
		"DECIMAL": {query.Type_DECIMAL}, "NUMERIC": {query.Type_DECIMAL}, "DATE": {query.Type_DATE},
		"DATETIME": {query.Type_DATETIME}, "TIMESTAMP": {query.Type_TIMESTAMP}, "TIME": {query.Type_TIME},
		"YEAR": {query.Type_YEAR}, "BIT": {query.Type_BIT}, "VARCHAR": {query.Type_VARCHAR}, "CHAR": {query.Type_CHAR},
		"VARBINARY": {query.Type_VARBINARY}, "BINARY": {query.Type_BINARY}, "BLOB": {query.Type_BLOB},
		"ENUM": {query.Type_ENUM}, "SET": {query.Type_SET}, "JSON": {query.Type_JSON},
	}
	tt, ok := types[base]
	if !ok {
		panic("no FIELD type for " + c.typ)
	}
	typ := tt[0]
	if unsigned {
		typ = tt[1]
	}
	f := &query.Field{Name: c.name, Type: typ, Charset: 255}
	if base == "NUMERIC" {
		base = "DECIMAL"
	}
	f.ColumnType = strings.ToLower(base) + args
	if base == "ENUM" || base == "SET" {
		f.ColumnType = strings.ToLower(base) + "(" + strings.ReplaceAll(rest, ", ", ",")
	}
	if unsigned {
		f.ColumnType += " unsigned"
		f.Flags |= uint32(query.MySqlFlag_UNSIGNED_FLAG)
	}
	switch typ {
	case query.Type_VARBINARY, query.Type_BINARY, query.Type_BLOB, query.Type_BIT:
		f.Charset = 63
	}
	if c.pk {
		f.Flags |= uint32(query.MySqlFlag_NOT_NULL_FLAG | query.MySqlFlag_PRI_KEY_FLAG)
	}
	return f
}

// refCell is the cell the binlog reader produces (formats.md 1.3) for a literal stored in a
// column, as MySQL stores it: fractional seconds rounded to the column's precision, FLOAT
// single precision, out-of-range ENUM/SET members stored as the empty value (non-strict mode).
func refCell(t *testing.T, f *query.Field, lit string) string {
	t.Helper()
	fsp := typeArg(f.ColumnType, 0, 0)
	switch f.Type {
	case query.Type_DATETIME, query.Type_TIMESTAMP:
		if strings.HasPrefix(lit, "0000-00-00") {
			return "0000-00-00 00:00:00" + fraction(0, fsp)
		}
		tm, err := time.Parse("2006-01-02 15:04:05.999999", lit)
		if err != nil {
			t.Fatal(err)
		}
		tm = tm.Round(time.Duration(math.Pow10(9 - fsp)))
		return tm.Format("2006-01-02 15:04:05") + fraction(tm.Nanosecond()/1000, fsp)
	case query.Type_TIME:
		neg := strings.HasPrefix(lit, "-")
		whole, frac, _ := strings.Cut(strings.TrimPrefix(lit, "-"), ".")
		parts := strings.Split(whole, ":")
		h, _ := strconv.Atoi(parts[0])
		m, _ := strconv.Atoi(parts[1])
		s, _ := strconv.Atoi(parts[2])
		us, _ := strconv.Atoi((frac + "000000")[:6])
		total := time.Duration(h)*time.Hour + time.Duration(m)*time.Minute + time.Duration(s)*time.Second + time.Duration(us)*time.Microsecond
		total = total.Round(time.Duration(math.Pow10(9 - fsp)))
		sign := ""
		if neg {
			sign = "-"
		}
		secs := int(total / time.Second)
		return fmt.Sprintf("%s%02d:%02d:%02d", sign, secs/3600, secs/60%60, secs%60) + fraction(int(total%time.Second/time.Microsecond), fsp)
	case query.Type_FLOAT32:
		x, _ := strconv.ParseFloat(lit, 32)
		return strconv.FormatFloat(x, 'E', -1, 32)
	case query.Type_FLOAT64:
		x, _ := strconv.ParseFloat(lit, 64)
		return strconv.FormatFloat(x, 'E', -1, 64)
	case query.Type_DECIMAL:
		r, _ := new(big.Rat).SetString(lit)
		return r.FloatString(typeArg(f.ColumnType, 1, 0))
	case query.Type_BIT:
		n, _ := new(big.Int).SetString(lit, 10)
		return string(n.FillBytes(make([]byte, (fsp+7)/8)))
	case query.Type_BINARY:
		return lit + strings.Repeat("\x00", fsp-len(lit))
	case query.Type_ENUM:
		for _, l := range ddl.Labels(f.ColumnType) {
			if l == lit {
				return lit
			}
		}
		return ""
	case query.Type_SET:
		var kept []string
		for _, l := range ddl.Labels(f.ColumnType) {
			for m := range strings.SplitSeq(lit, ",") {
				if m == l {
					kept = append(kept, l)
				}
			}
		}
		if len(kept) != len(strings.Split(lit, ",")) {
			return ""
		}
		return strings.Join(kept, ",")
	}
	return lit
}

func fraction(us, fsp int) string {
	if fsp == 0 {
		return ""
	}
	s := strconv.Itoa(1_000_000 + us)[1:]
	return "." + s[:fsp]
}

// otherCell is a second value for a column, at the other end of its range where it has one:
// negative where the reference is positive, extremes, pre-epoch times, text that needs
// escaping in JSON, bytes above 0x7f.
func otherCell(f *query.Field) string {
	fsp := typeArg(f.ColumnType, 0, 0)
	frac := ""
	if fsp > 0 {
		frac = "." + strings.Repeat("5", fsp)
	}
	switch f.Type {
	case query.Type_INT8:
		return "127"
	case query.Type_INT16:
		return "32767"
	case query.Type_INT24:
		return "8388607"
	case query.Type_INT32:
		return "2147483647"
	case query.Type_INT64:
		return "9223372036854775807"
	case query.Type_UINT8, query.Type_UINT16, query.Type_UINT24, query.Type_UINT32:
		return "0"
	case query.Type_UINT64:
		return "9223372036854775808"
	case query.Type_FLOAT32:
		return "-1.5E-10"
	case query.Type_FLOAT64:
		return "1.7976931348623157E+308"
	case query.Type_DECIMAL:
		return "-99999.99999"
	case query.Type_DATE:
		return "1969-12-31"
	case query.Type_DATETIME:
		return "1969-12-31 23:59:59" + frac
	case query.Type_TIMESTAMP:
		return "1970-01-01 00:00:01" + frac
	case query.Type_TIME:
		return "-838:59:59" + strings.ReplaceAll(frac, "5", "0")
	case query.Type_YEAR:
		return "1901"
	case query.Type_BIT:
		n := typeArg(f.ColumnType, 0, 1)
		if n == 1 {
			return "\x00"
		}
		b := make([]byte, (n+7)/8)
		for i := range b {
			b[i] = 0xff
		}
		b[0] &= byte(0xff >> (8*len(b) - n))
		return string(b)
	case query.Type_VARCHAR, query.Type_CHAR:
		return "h\u00e9llo \U0001F600 \"\\\n\t"
	case query.Type_BINARY:
		return "\x00\xff\x10" + strings.Repeat("\x00", fsp-3)
	case query.Type_VARBINARY, query.Type_BLOB:
		return "\x00\xff\x10"
	case query.Type_ENUM:
		return "c"
	case query.Type_SET:
		return "a,c"
	case query.Type_JSON:
		return `{"k": [1, 2.5, "x y"], "n": null}`
	}
	panic("no other value for " + f.ColumnType)
}

// refTable is the reference table as FIELD metadata and three rows of cells: the reference
// row (pk 1), the other values (pk 2) and all NULL (pk 3).
func refTable(t *testing.T) ([]*query.Field, [3][]any) {
	t.Helper()
	cols := readRefDDL(t)
	lits := readRefDML(t)
	if len(cols) != len(lits) || len(cols) < 50 {
		t.Fatalf("%d columns, %d values", len(cols), len(lits))
	}
	var fields []*query.Field
	var rows [3][]any
	for i, c := range cols {
		f := refField(c)
		fields = append(fields, f)
		if c.pk {
			rows[0], rows[1], rows[2] = append(rows[0], "1"), append(rows[1], "2"), append(rows[2], "3")
			continue
		}
		rows[0] = append(rows[0], refCell(t, f, lits[i]))
		rows[1] = append(rows[1], otherCell(f))
		rows[2] = append(rows[2], nil)
	}
	return fields, rows
}

// refEvents is a stream over the reference table: its copy (the three rows), then a
// transaction that inserts, updates, moves (primary key change) and deletes, a DDL, and a
// TRUNCATE.
func refEvents(fields []*query.Field, rows [3][]any) []*binlogdata.VEvent {
	snap := &binlogdata.EventSource{File: "mysql-bin.000005", StartPos: 10394, EndPos: 10394, Database: "test", Snapshot: true}
	fe := fieldEvent("foo", fields...)
	fe.Source = snap
	withPK := func(r []any, pk string) *query.Row {
		c := append([]any{pk}, r[1:]...)
		return row(c...)
	}
	bin := func(pos uint64) *binlogdata.EventSource {
		return &binlogdata.EventSource{File: "mysql-bin.000006", StartPos: pos, EndPos: pos + 100, ServerId: 223344, Database: "test",
			ThreadId: 11, Query: "insert into foo ..."}
	}
	rowEv := func(pos uint64, changes ...*binlogdata.RowChange) *binlogdata.VEvent {
		return &binlogdata.VEvent{Type: binlogdata.VEventType_ROW, Timestamp: 1701673705, EventGtid: testGTID, Source: bin(pos),
			RowEvent: &binlogdata.RowEvent{TableName: "foo", RowChanges: changes}}
	}
	fe2 := fieldEvent("foo", fields...)
	fe2.Source = bin(150)
	return []*binlogdata.VEvent{
		{Type: binlogdata.VEventType_BEGIN, Source: snap},
		fe,
		{Type: binlogdata.VEventType_ROW, Source: snap, RowEvent: &binlogdata.RowEvent{TableName: "foo", RowChanges: []*binlogdata.RowChange{
			{After: row(rows[0]...)}, {After: row(rows[1]...)}, {After: row(rows[2]...)}}}},
		{Type: binlogdata.VEventType_LASTPK, LastPKEvent: &binlogdata.LastPKEvent{TableLastPK: &binlogdata.TableLastPK{TableName: "foo"}, Completed: true}},
		{Type: binlogdata.VEventType_COPY_COMPLETED, LastPKEvent: &binlogdata.LastPKEvent{TableLastPK: &binlogdata.TableLastPK{TableName: "foo"}, Completed: true}},
		{Type: binlogdata.VEventType_COPY_COMPLETED},
		{Type: binlogdata.VEventType_COMMIT},
		{Type: binlogdata.VEventType_BEGIN, Timestamp: 1701673705, EventGtid: testGTID, Source: &binlogdata.EventSource{File: "mysql-bin.000006", StartPos: 100, ServerId: 223344, ThreadId: 11}},
		fe2,
		rowEv(200, &binlogdata.RowChange{After: withPK(rows[1], "4"), RowIndex: 0}, &binlogdata.RowChange{After: withPK(rows[2], "5"), RowIndex: 1}),
		rowEv(300, &binlogdata.RowChange{Before: withPK(rows[1], "4"), After: withPK(rows[0], "4")},
			&binlogdata.RowChange{Before: withPK(rows[2], "5"), After: withPK(rows[1], "5"), RowIndex: 1}),
		rowEv(400, &binlogdata.RowChange{Before: withPK(rows[0], "4"), After: withPK(rows[0], "40")}),
		rowEv(500, &binlogdata.RowChange{Before: withPK(rows[1], "5")}, &binlogdata.RowChange{Before: row(rows[1]...), RowIndex: 1}),
		{Type: binlogdata.VEventType_COMMIT, Timestamp: 1701673706, EventGtid: testGTID, Source: bin(600)},
		{Type: binlogdata.VEventType_DDL, Timestamp: 1701673707, EventGtid: testGTID, Statement: "ALTER TABLE foo ADD COLUMN extra INT", Source: bin(700)},
		{Type: binlogdata.VEventType_DDL, Timestamp: 1701673708, EventGtid: testGTID, Statement: "TRUNCATE TABLE foo", Source: bin(800)},
	}
}

// TestDecodeMatchesJSON is formats.md 10.1's validation: every record of a stream over the
// reference table, decoded with hamba/avro against the schema the stream sent, equals the
// payload the debezium-json encoder writes for the same event, up to representation (bytes
// against base64, unions against plain values, decimals against their unscaled bytes). It runs
// with several combinations of the connector options that change schemas and values.
func TestDecodeMatchesJSON(t *testing.T) {
	fields, rows := refTable(t)
	evs := refEvents(fields, rows)
	for _, opts := range []map[string]string{
		{},
		{"decimal.handling.mode": "double", "binary.handling.mode": "base64", "debezium.layout": "v2.0", "skipped.operations": "none"},
		{"decimal.handling.mode": "string", "binary.handling.mode": "hex", "bigint.unsigned.handling.mode": "precise", "tinyint.schema": "int8"},
		{"provide.transaction.metadata": "true", "include.query": "true", "binary.handling.mode": "base64-url-safe", "skipped.operations": "c"},
	} {
		t.Run(fmt.Sprint(opts), func(t *testing.T) {
			jsonOpts := map[string]string{"schemas.enable": "false", "schema.name.adjustment.mode": "avro"}
			for k, v := range opts {
				jsonOpts[k] = v
			}
			je := encodertest.New(t, debezium.New, encoder.Params{Database: "test", Flavor: "mysql", Clock: fixedClock, Keyspace: "ks"}, jsonOpts)
			want := encodeAll(t, je, evs...)
			got := encodeAll(t, newEncoder(t, encoder.Params{Database: "test", Flavor: "mysql"}, opts), evs...)
			_, decs := decodeStream(t, got)
			if len(decs) != len(want) || len(want) < 10 {
				t.Fatalf("%d Avro records, %d JSON records", len(decs), len(want))
			}
			ops := map[string]int{}
			for i, d := range decs {
				w := want[i]
				what := fmt.Sprintf("record %d (%s)", i, w.Topic)
				if d.msg.Topic != w.Topic || d.msg.Tombstone != w.Tombstone || len(d.msg.Key) == 0 != (len(w.Key) == 0) {
					t.Fatalf("%s: topic %q tombstone %v key %v, want topic %q tombstone %v key %v", what,
						d.msg.Topic, d.msg.Tombstone, len(d.msg.Key) > 0, w.Topic, w.Tombstone, len(w.Key) > 0)
				}
				if len(d.msg.Headers) != len(w.Headers) {
					t.Errorf("%s: headers %v, want %v", what, d.msg.Headers, w.Headers)
				}
				for k, v := range w.Headers {
					if d.msg.Headers[k] != v {
						t.Errorf("%s: header %s = %s, want %s", what, k, d.msg.Headers[k], v)
					}
				}
				if len(w.Key) > 0 {
					for _, e := range match(what+" key", d.keySchema, d.key, parseJSON(t, w.Key)) {
						t.Error(e)
					}
				}
				if !w.Tombstone {
					for _, e := range match(what+" value", d.valueSchema, d.value, parseJSON(t, w.Value)) {
						t.Error(e)
					}
					op, _ := get(d.value, "op").(string)
					status, _ := get(d.value, "status").(string)
					ops[op+status]++
				}
			}
			t.Logf("%d records: %v", len(decs), ops)
		})
	}
}

// match compares a datum decoded by hamba/avro with the JSON payload of the same value, led by
// the Avro schema, and lists the differences.
func match(path string, s hamba.Schema, got, want any) []string {
	bad := func() []string { return []string{fmt.Sprintf("%s: Avro %v (%T), JSON %v", path, got, got, show(want))} }
	switch s := s.(type) {
	case *hamba.RefSchema:
		return match(path, s.Schema(), got, want)
	case *hamba.UnionSchema:
		if got == nil || want == nil {
			if got != want {
				return bad()
			}
			return nil
		}
		m, ok := got.(map[string]any)
		if !ok || len(m) != 1 {
			return bad()
		}
		for _, b := range s.Types() {
			if b.Type() == hamba.Null {
				continue
			}
			for _, v := range m {
				return match(path, b, v, want)
			}
		}
		return bad()
	case *hamba.RecordSchema:
		g, ok1 := got.(map[string]any)
		w, ok2 := want.(map[string]any)
		if !ok1 || !ok2 || len(g) != len(s.Fields()) || len(w) != len(s.Fields()) {
			return bad()
		}
		var out []string
		for _, f := range s.Fields() {
			gv, ok1 := g[f.Name()]
			wv, ok2 := w[f.Name()]
			if !ok1 || !ok2 {
				out = append(out, fmt.Sprintf("%s.%s: missing", path, f.Name()))
				continue
			}
			out = append(out, match(path+"."+f.Name(), f.Type(), gv, wv)...)
		}
		return out
	case *hamba.ArraySchema:
		g, ok1 := got.([]any)
		w, ok2 := want.([]any)
		if !ok1 || !ok2 || len(g) != len(w) {
			return bad()
		}
		var out []string
		for i := range g {
			out = append(out, match(fmt.Sprintf("%s[%d]", path, i), s.Items(), g[i], w[i])...)
		}
		return out
	case *hamba.PrimitiveSchema:
		n, _ := want.(json.Number)
		switch s.Type() {
		case hamba.Int, hamba.Long:
			var g int64
			switch v := got.(type) {
			case int:
				g = int64(v)
			case int64:
				g = v
			default:
				return bad()
			}
			if w, err := n.Int64(); err != nil || w != g {
				return bad()
			}
		case hamba.Float:
			w, err := strconv.ParseFloat(string(n), 32)
			if g, ok := got.(float32); !ok || err != nil || float32(w) != g {
				return bad()
			}
		case hamba.Double:
			w, err := strconv.ParseFloat(string(n), 64)
			if g, ok := got.(float64); !ok || err != nil || w != g {
				return bad()
			}
		case hamba.Boolean, hamba.String:
			if got != want {
				return bad()
			}
		case hamba.Bytes:
			w, ok := want.(string)
			raw, err := base64.StdEncoding.DecodeString(w)
			if !ok || err != nil {
				return bad()
			}
			if d, ok := s.Logical().(*hamba.DecimalLogicalSchema); ok {
				// JSON carries the unscaled value's two's complement bytes.
				unscaled := new(big.Int).SetBytes(raw)
				if len(raw) > 0 && raw[0]&0x80 != 0 {
					unscaled.Sub(unscaled, new(big.Int).Lsh(big.NewInt(1), uint(8*len(raw))))
				}
				wr := new(big.Rat).SetFrac(unscaled, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(d.Scale())), nil))
				if g, ok := got.(*big.Rat); !ok || g.Cmp(wr) != 0 {
					return bad()
				}
				return nil
			}
			if g, ok := got.([]byte); !ok || string(g) != string(raw) {
				return bad()
			}
		default:
			return bad()
		}
		return nil
	}
	return []string{fmt.Sprintf("%s: unexpected schema %s", path, s.Type())}
}

// TestReferencePayload decodes the reference row, encoded with the options and context of the
// reference run, and compares it with the payload real Debezium 2.4 wrote for it.
func TestReferencePayload(t *testing.T) {
	fields, rows := refTable(t)
	src := &binlogdata.EventSource{File: "mysql-bin.000005", StartPos: 10394, EndPos: 10500, ServerId: 223344, Database: "test"}
	e := newEncoder(t, encoder.Params{Flavor: "mysql", Database: "test", Clock: func() time.Time { return time.UnixMilli(1701673705263) }},
		map[string]string{"topic.prefix": "dbserver1", "debezium.layout": "v2.0", "decimal.handling.mode": "double",
			"binary.handling.mode": "base64", "source.version": "2.4.0.Final"})
	fe := fieldEvent("foo", fields...)
	fe.Source = src
	out := encodeAll(t, e,
		&binlogdata.VEvent{Type: binlogdata.VEventType_BEGIN, Timestamp: 1701673705, Source: &binlogdata.EventSource{File: src.File, StartPos: 10200, ServerId: 223344, ThreadId: 11}},
		fe,
		&binlogdata.VEvent{Type: binlogdata.VEventType_ROW, Timestamp: 1701673705, Source: src,
			RowEvent: &binlogdata.RowEvent{TableName: "foo", RowChanges: []*binlogdata.RowChange{{After: row(rows[0]...)}}}})
	_, decs := decodeStream(t, out)
	if len(decs) != 1 {
		t.Fatalf("%d records", len(decs))
	}
	for _, c := range []struct {
		file   string
		schema hamba.Schema
		got    any
	}{{"datatype.dbz.json", decs[0].valueSchema, decs[0].value}, {"datatype.dbz.key.json", decs[0].keySchema, decs[0].key}} {
		b, err := os.ReadFile(filepath.Join(refDir, c.file))
		if err != nil {
			t.Fatal(err)
		}
		doc := parseJSON(t, b).(map[string]any)
		for _, e := range match(c.file, c.schema, c.got, doc["payload"]) {
			t.Error(e)
		}
	}
}
