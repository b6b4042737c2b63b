package debezium

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	"github.com/vstream-cdc/vstream/server/encoder"
	"github.com/vstream-cdc/vstream/sqltypes"
)

// typeCase is one column: its FIELD metadata, a cell, and the schema and JSON payload
// formats.md 9.9 gives for it.
type typeCase struct {
	name    string
	field   *query.Field
	cell    any // string cell or nil
	opts    map[string]string
	schema  string // the field's schema without "field", as JSON
	payload string // the value as JSON text, compared lexically
}

func fld(typ query.Type, columnType string, flags uint32) *query.Field {
	f := &query.Field{Type: typ, ColumnType: columnType, Flags: flags, Charset: 45}
	switch typ {
	case query.Type_BINARY, query.Type_VARBINARY, query.Type_BLOB, query.Type_BIT, query.Type_GEOMETRY:
		f.Charset = 63
	}
	return f
}

const notNull = uint32(query.MySqlFlag_NOT_NULL_FLAG)

func geometryCell(srid uint32, wkb []byte) string {
	b := binary.LittleEndian.AppendUint32(nil, srid)
	return string(append(b, wkb...))
}

func wkbPointBytes(x, y float64) []byte {
	b := []byte{1}
	b = binary.LittleEndian.AppendUint32(b, 1)
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(y))
}

var lineWKB = []byte{1, 2, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 240, 63, 0, 0, 0, 0, 0, 0, 240, 63}

var typeCases = []typeCase{
	{"tinyint", fld(query.Type_INT8, "tinyint(4)", 0), "-128", nil, `{"type":"int16","optional":true}`, `-128`},
	{"tinyint int8", fld(query.Type_INT8, "tinyint", notNull), "7", map[string]string{"tinyint.schema": "int8"}, `{"type":"int8","optional":false}`, `7`},
	{"tinyint(1)", fld(query.Type_INT8, "tinyint(1)", 0), "1", nil, `{"type":"int16","optional":true}`, `1`},
	{"tinyint unsigned", fld(query.Type_UINT8, "tinyint unsigned", 0), "255", map[string]string{"tinyint.schema": "int8"}, `{"type":"int16","optional":true}`, `255`},
	{"smallint unsigned", fld(query.Type_UINT16, "smallint unsigned", 0), "65535", nil, `{"type":"int32","optional":true}`, `65535`},
	{"mediumint", fld(query.Type_INT24, "mediumint", 0), "-8388608", nil, `{"type":"int32","optional":true}`, `-8388608`},
	{"int unsigned", fld(query.Type_UINT32, "int unsigned", 0), "4294967295", nil, `{"type":"int64","optional":true}`, `4294967295`},
	{"bigint", fld(query.Type_INT64, "bigint", 0), "-9223372036854775808", nil, `{"type":"int64","optional":true}`, `-9223372036854775808`},
	{"bigint unsigned long", fld(query.Type_UINT64, "bigint unsigned", 0), "18446744073709551615", nil, `{"type":"int64","optional":true}`, `-1`},
	{"bigint unsigned precise", fld(query.Type_UINT64, "bigint unsigned", 0), "18446744073709551615", map[string]string{"bigint.unsigned.handling.mode": "precise"},
		`{"type":"bytes","optional":true,"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"0","connect.decimal.precision":"20"}}`,
		`"AP//////////"`},
	{"float", fld(query.Type_FLOAT32, "float", 0), "8.6E+01", nil, `{"type":"float","optional":true}`, `86.0`},
	{"float big", fld(query.Type_FLOAT32, "float", 0), "1.2510357E+07", nil, `{"type":"float","optional":true}`, `1.2510357E7`},
	{"float(M,D)", fld(query.Type_FLOAT32, "float(7,4)", 0), "1.2345E+00", nil, `{"type":"double","optional":true}`, `1.2345000505447388`},
	{"double", fld(query.Type_FLOAT64, "double", 0), "1.5E-05", nil, `{"type":"double","optional":true}`, `1.5E-5`},
	{"decimal", fld(query.Type_DECIMAL, "decimal(10,2)", 0), "12.34", nil,
		`{"type":"bytes","optional":true,"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"2","connect.decimal.precision":"10"}}`, `"BNI="`},
	{"decimal 5", fld(query.Type_DECIMAL, "decimal(10,5)", notNull), "12345.12345", nil,
		`{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"5","connect.decimal.precision":"10"}}`, `"SZUp2Q=="`},
	{"decimal negative", fld(query.Type_DECIMAL, "decimal(5,2)", 0), "-1.28", nil,
		`{"type":"bytes","optional":true,"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"2","connect.decimal.precision":"5"}}`, `"gA=="`},
	{"decimal double", fld(query.Type_DECIMAL, "decimal(10,2)", 0), "-.50", map[string]string{"decimal.handling.mode": "double"}, `{"type":"double","optional":true}`, `-0.5`},
	{"decimal string", fld(query.Type_DECIMAL, "decimal(10,2)", 0), ".50", map[string]string{"decimal.handling.mode": "string"}, `{"type":"string","optional":true}`, `"0.50"`},
	{"date", fld(query.Type_DATE, "date", 0), "2023-11-30", nil, `{"type":"int32","optional":true,"name":"io.debezium.time.Date","version":1}`, `19691`},
	{"date 1000", fld(query.Type_DATE, "date", 0), "1000-01-01", nil, `{"type":"int32","optional":true,"name":"io.debezium.time.Date","version":1}`, `-354285`},
	{"zero date nullable", fld(query.Type_DATE, "date", 0), "0000-00-00", nil, `{"type":"int32","optional":true,"name":"io.debezium.time.Date","version":1}`, `null`},
	{"zero date not null", fld(query.Type_DATE, "date", notNull), "0000-00-00", nil, `{"type":"int32","optional":false,"name":"io.debezium.time.Date","version":1}`, `0`},
	{"time", fld(query.Type_TIME, "time(6)", 0), "12:34:56.123456", nil, `{"type":"int64","optional":true,"name":"io.debezium.time.MicroTime","version":1}`, `45296123456`},
	{"time negative", fld(query.Type_TIME, "time", 0), "-838:59:59", nil, `{"type":"int64","optional":true,"name":"io.debezium.time.MicroTime","version":1}`, `-3020399000000`},
	{"datetime", fld(query.Type_DATETIME, "datetime", 0), "2023-11-30 12:34:56", nil, `{"type":"int64","optional":true,"name":"io.debezium.time.Timestamp","version":1}`, `1701347696000`},
	{"datetime(3)", fld(query.Type_DATETIME, "datetime(3)", 0), "1969-12-31 23:59:59.999", nil, `{"type":"int64","optional":true,"name":"io.debezium.time.Timestamp","version":1}`, `-1`},
	{"datetime(4)", fld(query.Type_DATETIME, "datetime(4)", 0), "2023-11-30 12:34:56.1235", nil, `{"type":"int64","optional":true,"name":"io.debezium.time.MicroTimestamp","version":1}`, `1701347696123500`},
	{"zero datetime not null", fld(query.Type_DATETIME, "datetime(6)", notNull), "0000-00-00 00:00:00.000000", nil, `{"type":"int64","optional":false,"name":"io.debezium.time.MicroTimestamp","version":1}`, `0`},
	{"timestamp", fld(query.Type_TIMESTAMP, "timestamp", 0), "2023-11-30 12:34:56", nil, `{"type":"string","optional":true,"name":"io.debezium.time.ZonedTimestamp","version":1}`, `"2023-11-30T12:34:56Z"`},
	{"timestamp(1)", fld(query.Type_TIMESTAMP, "timestamp(1)", 0), "2023-11-30 12:34:56.1", nil, `{"type":"string","optional":true,"name":"io.debezium.time.ZonedTimestamp","version":1}`, `"2023-11-30T12:34:56.1Z"`},
	{"timestamp(6)", fld(query.Type_TIMESTAMP, "timestamp(6)", 0), "2023-11-30 12:34:56.120000", nil, `{"type":"string","optional":true,"name":"io.debezium.time.ZonedTimestamp","version":1}`, `"2023-11-30T12:34:56.120000Z"`},
	{"zero timestamp not null", fld(query.Type_TIMESTAMP, "timestamp(3)", notNull), "0000-00-00 00:00:00.000", nil, `{"type":"string","optional":false,"name":"io.debezium.time.ZonedTimestamp","version":1}`, `"1970-01-01T00:00:00Z"`},
	{"zero timestamp nullable", fld(query.Type_TIMESTAMP, "timestamp", 0), "0000-00-00 00:00:00", nil, `{"type":"string","optional":true,"name":"io.debezium.time.ZonedTimestamp","version":1}`, `null`},
	{"year", fld(query.Type_YEAR, "year(4)", 0), "2155", nil, `{"type":"int32","optional":true,"name":"io.debezium.time.Year","version":1}`, `2155`},
	{"varchar", fld(query.Type_VARCHAR, "varchar(64)", 0), "h\u00e9llo \U0001F600 <&>\"\\\n\t\x01", nil, `{"type":"string","optional":true}`, `"h` + "\u00e9llo \U0001F600" + ` <&>\"\\\n\t\u0001"`},
	{"latin1 text", &query.Field{Type: query.Type_TEXT, ColumnType: "text", Charset: 8}, "caf\xe9 \x80", nil, `{"type":"string","optional":true}`, `"caf` + "\u00e9 \u20ac" + `"`},
	{"binary padded", fld(query.Type_BINARY, "binary(4)", 0), "ab", nil, `{"type":"bytes","optional":true}`, `"YWIAAA=="`},
	{"blob", fld(query.Type_BLOB, "blob", 0), "\x00\xff\x10", nil, `{"type":"bytes","optional":true}`, `"AP8Q"`},
	{"blob base64", fld(query.Type_BLOB, "blob", 0), "\xfb\xff", map[string]string{"binary.handling.mode": "base64"}, `{"type":"string","optional":true}`, `"+/8="`},
	{"blob url-safe", fld(query.Type_BLOB, "blob", 0), "\xfb\xff", map[string]string{"binary.handling.mode": "base64-url-safe"}, `{"type":"string","optional":true}`, `"-_8="`},
	{"blob hex", fld(query.Type_VARBINARY, "varbinary(4)", 0), "\xfb\x0a", map[string]string{"binary.handling.mode": "hex"}, `{"type":"string","optional":true}`, `"fb0a"`},
	{"bit(1)", fld(query.Type_BIT, "bit(1)", 0), "\x01", nil, `{"type":"boolean","optional":true}`, `true`},
	{"bit(1) zero", fld(query.Type_BIT, "bit(1)", 0), "\x00", nil, `{"type":"boolean","optional":true}`, `false`},
	{"bit(10)", fld(query.Type_BIT, "bit(10)", 0), "\x02\xaa", nil, `{"type":"bytes","optional":true,"name":"io.debezium.data.Bits","version":1,"parameters":{"length":"10"}}`, `"qgI="`},
	{"bit(5)", fld(query.Type_BIT, "bit(5)", 0), "\x10", nil, `{"type":"bytes","optional":true,"name":"io.debezium.data.Bits","version":1,"parameters":{"length":"5"}}`, `"EA=="`},
	{"enum", fld(query.Type_ENUM, "enum('a','b','c')", 0), "b", nil, `{"type":"string","optional":true,"name":"io.debezium.data.Enum","version":1,"parameters":{"allowed":"a,b,c"}}`, `"b"`},
	{"enum empty", fld(query.Type_ENUM, "enum('a','b','c')", 0), "", nil, `{"type":"string","optional":true,"name":"io.debezium.data.Enum","version":1,"parameters":{"allowed":"a,b,c"}}`, `""`},
	{"set", fld(query.Type_SET, "set('x','y','z')", 0), "x,z", nil, `{"type":"string","optional":true,"name":"io.debezium.data.EnumSet","version":1,"parameters":{"allowed":"x,y,z"}}`, `"x,z"`},
	{"json", fld(query.Type_JSON, "json", 0), `{"a": [1, 2.5, "x y"], "b": null}`, nil, `{"type":"string","optional":true,"name":"io.debezium.data.Json","version":1}`, `"{\"a\":[1,2.5,\"x y\"],\"b\":null}"`},
	{"geometry", fld(query.Type_GEOMETRY, "linestring", 0), geometryCell(0, lineWKB), nil,
		`{"type":"struct","fields":[{"type":"bytes","optional":false,"field":"wkb"},{"type":"int32","optional":true,"field":"srid"}],"optional":true,"name":"io.debezium.data.geometry.Geometry","version":1,"doc":"Geometry"}`,
		`{"wkb":"` + base64.StdEncoding.EncodeToString(lineWKB) + `","srid":null}`},
	{"point", fld(query.Type_GEOMETRY, "point", 0), geometryCell(4326, wkbPointBytes(-1.5, 2.25)), nil,
		`{"type":"struct","fields":[{"type":"double","optional":false,"field":"x"},{"type":"double","optional":false,"field":"y"},{"type":"bytes","optional":true,"field":"wkb"},{"type":"int32","optional":true,"field":"srid"}],"optional":true,"name":"io.debezium.data.geometry.Point","version":1,"doc":"Geometry (POINT)"}`,
		`{"x":-1.5,"y":2.25,"wkb":"` + base64.StdEncoding.EncodeToString(wkbPointBytes(-1.5, 2.25)) + `","srid":4326}`},
	{"vector", fld(query.Type_VECTOR, "vector(2)", 0), "\x00\x00\xc0\x3f\x00\x00\x00\x40", nil,
		`{"type":"array","items":{"type":"float","optional":false},"optional":true,"name":"io.debezium.data.FloatVector","version":1}`, `[1.5,2.0]`},
	{"null", fld(query.Type_VARCHAR, "varchar(3)", 0), nil, nil, `{"type":"string","optional":true}`, `null`},
}

// TestTypes checks each MySQL type's schema and value against formats.md 9.9, the value as
// written (number text, escapes, base64).
func TestTypes(t *testing.T) {
	for _, c := range typeCases {
		t.Run(c.name, func(t *testing.T) {
			opts := map[string]string{"schemas.enable": "true"}
			for k, v := range c.opts {
				opts[k] = v
			}
			f := proto.CloneOf(c.field)
			f.Name = "v"
			key := &query.Field{Name: "id", Type: query.Type_INT32, ColumnType: "int", Flags: pkFlags}
			e := newEncoder(t, encoder.Params{Database: "db"}, opts)
			out := encodeAll(t, e, fieldEvent("t", true, key, f), &binlogdata.VEvent{Type: binlogdata.VEventType_ROW, Timestamp: 1,
				RowEvent: &binlogdata.RowEvent{TableName: "t", RowChanges: []*binlogdata.RowChange{{After: row("1", c.cell)}}}})
			doc := out[0].Value
			// The value as written, between "v": and the end of the after struct.
			text := string(doc)
			start := strings.Index(text, `"payload":{"before":null,"after":{"id":1,"v":`)
			if start < 0 {
				t.Fatalf("no after image in %s", doc)
			}
			text = text[start+len(`"payload":{"before":null,"after":{"id":1,"v":`):]
			if !strings.HasPrefix(text, c.payload+`},"source":`) {
				t.Errorf("value written as %.200s, want %s", text, c.payload)
			}
			after := schemaFields(t, schemaFields(t, get(parse(t, doc), "schema"))["after"])["v"]
			delete(after, "field")
			sameJSON(t, "schema", after, parse(t, []byte(c.schema)))
		})
	}
}

// ENUM and SET cells may come as numbers when the stream does not turn them into labels.
func TestNumericEnumSet(t *testing.T) {
	fields := []*query.Field{
		{Name: "id", Type: query.Type_INT32, ColumnType: "int", Flags: pkFlags},
		{Name: "e", Type: query.Type_ENUM, ColumnType: "enum('a','it''s','c')"},
		{Name: "s", Type: query.Type_SET, ColumnType: "set('a','b','c')"},
	}
	out := encodeAll(t, newEncoder(t, encoder.Params{Database: "db"}, map[string]string{"schemas.enable": "false"}), fieldEvent("t", false, fields...),
		&binlogdata.VEvent{Type: binlogdata.VEventType_ROW, Timestamp: 1, RowEvent: &binlogdata.RowEvent{TableName: "t",
			RowChanges: []*binlogdata.RowChange{{After: row("1", "2", "5")}, {After: row("2", "0", "0")}}}})
	sameJSON(t, "labels", get(parse(t, out[0].Value), "after"), map[string]any{"id": json.Number("1"), "e": "it's", "s": "a,c"})
	sameJSON(t, "empty", get(parse(t, out[1].Value), "after"), map[string]any{"id": json.Number("2"), "e": "", "s": ""})
}

func TestAvroNames(t *testing.T) {
	out := encodeAll(t, newEncoder(t, encoder.Params{Database: "my-db", Keyspace: "9srv"}, map[string]string{"schema.name.adjustment.mode": "avro"}),
		fieldEvent("t\u00e9", true, itemFields...),
		&binlogdata.VEvent{Type: binlogdata.VEventType_ROW, Timestamp: 1, RowEvent: &binlogdata.RowEvent{TableName: "t\u00e9",
			RowChanges: []*binlogdata.RowChange{{After: row("1", nil, nil)}}}})
	v := parse(t, out[0].Value)
	if got := get(v, "schema", "name"); got != "_srv.my_db.t_.Envelope" {
		t.Errorf("envelope name %v", got)
	}
	if out[0].Topic != "9srv.my-db.t\u00e9" {
		t.Errorf("topics keep their names: %q", out[0].Topic)
	}
	if got := AdjustName("a.b\U0001F600c"); got != "a.b__c" {
		t.Errorf("AdjustName: %q", got)
	}
}

// javaBytes is Java's BigInteger.toByteArray: minimal big-endian two's complement.
func javaBytes(n *big.Int) []byte {
	if n.Sign() >= 0 {
		b := n.Bytes()
		if len(b) == 0 || b[0]&0x80 != 0 {
			b = append([]byte{0}, b...)
		}
		return b
	}
	for k := 1; ; k++ {
		lim := new(big.Int).Lsh(big.NewInt(1), uint(8*k-1))
		if n.Cmp(new(big.Int).Neg(lim)) >= 0 {
			v := new(big.Int).Add(n, new(big.Int).Lsh(big.NewInt(1), uint(8*k)))
			return v.FillBytes(make([]byte, k))
		}
	}
}

func TestDecimalBytes(t *testing.T) {
	// Where the minimal two's complement gains a byte, on both sides of the int64 fast path.
	var edges []string
	for k := 1; k <= 9; k++ {
		b := new(big.Int).Lsh(big.NewInt(1), uint(8*k-1))
		for _, d := range []int64{-1, 0, 1} {
			n := new(big.Int).Add(b, big.NewInt(d))
			edges = append(edges, n.String(), "-"+n.String())
		}
	}
	edges = append(edges, "0", "-0", "999999999999999999", "-999999999999999999", "1000000000000000000", "-1000000000000000000")
	for _, text := range edges {
		unscaled, _ := new(big.Int).SetString(text, 10)
		var buf [96]byte
		neg, ds, ok := decimalDigits(buf[:0], []byte(text), 0)
		if !ok {
			t.Fatalf("%q not read", text)
		}
		if got, want := appendUnscaled(nil, neg, ds), javaBytes(unscaled); !bytes.Equal(got, want) {
			t.Errorf("%q: % x, want % x", text, got, want)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 5000; i++ {
		digits := 1 + rng.IntN(65)
		scale := rng.IntN(min(digits, 30) + 1)
		var sb strings.Builder
		if rng.IntN(2) == 0 {
			sb.WriteByte('-')
		}
		for j := 0; j < digits; j++ {
			if j == digits-scale {
				sb.WriteByte('.')
			}
			d := byte('0' + rng.IntN(10))
			if rng.IntN(4) == 0 {
				d = '0'
			}
			sb.WriteByte(d)
		}
		text := sb.String()
		unscaled, ok := new(big.Int).SetString(strings.Replace(strings.Replace(text, ".", "", 1), "-.", "-", 1), 10)
		if !ok {
			t.Fatalf("bad test number %q", text)
		}
		var buf [96]byte
		neg, ds, ok := decimalDigits(buf[:0], []byte(text), scale)
		if !ok {
			t.Fatalf("%q not read", text)
		}
		if got, want := appendUnscaled(nil, neg, ds), javaBytes(unscaled); !bytes.Equal(got, want) {
			t.Fatalf("%q scale %d: % x, want % x", text, scale, got, want)
		}
		plain := string(appendPlainDecimal(nil, neg, ds, scale))
		if r, _ := new(big.Rat).SetString(text); plain != r.FloatString(scale) {
			t.Fatalf("%q: plain %q, want %q", text, plain, r.FloatString(scale))
		}
	}
}

// TestZonedText checks the digit-by-digit ZonedTimestamp text against the text made part by
// part, for random date-times and every fraction precision.
func TestZonedText(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 2000; i++ {
		d := sqltypes.DateTime{Year: rng.IntN(10000), Month: rng.IntN(13), Day: rng.IntN(32), Hour: rng.IntN(24),
			Minute: rng.IntN(60), Second: rng.IntN(60), Micro: rng.IntN(1_000_000)}
		for fsp := 0; fsp <= 7; fsp++ {
			if got, want := string(appendZoned(nil, d, fsp)), string(appendZonedParts(nil, d, fsp)); got != want {
				t.Fatalf("%+v fsp %d: %s, want %s", d, fsp, got, want)
			}
		}
	}
	if got := string(appendZoned(nil, sqltypes.DateTime{Year: 2024, Month: 1, Day: 2, Hour: 3, Minute: 4, Second: 5, Micro: 678000}, 3)); got != "2024-01-02T03:04:05.678Z" {
		t.Errorf("zoned text %s", got)
	}
}

// TestCellJSON checks the JSON written straight from integer and floating-point cells against
// the JSON of their converted values, for cells as the binlog reader writes them, and that
// cells in other forms are left to conversion.
func TestCellJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	cols := map[string]*column{"int": {kind: kInt}, "uint": {kind: kUint}, "double": {kind: kFloat64}, "float": {kind: kFloat32}}
	schemas := map[string]*jsonNode{"int": {typ: Int64}, "uint": {typ: Int64}, "double": {typ: Float64}, "float": {typ: Float32}}
	check := func(name, cell string, direct bool) {
		t.Helper()
		c := cols[name]
		got, ok := appendCellJSON(nil, c, []byte(cell))
		if ok != direct {
			t.Fatalf("%s %q: written from its text %v, want %v", name, cell, ok, direct)
		}
		var v Value
		if _, err := c.convert(&v, nil, []byte(cell)); err != nil {
			if ok {
				t.Fatalf("%s %q: written from its text, but does not convert: %v", name, cell, err)
			}
			return
		}
		if want := string(scalar(nil, schemas[name], &v)); ok && string(got) != want {
			t.Fatalf("%s %q: %s, want %s", name, cell, got, want)
		}
	}
	for i := 0; i < 20000; i++ {
		bits := rng.Uint64()
		x := math.Float64frombits(bits)
		if math.IsNaN(x) || math.IsInf(x, 0) {
			continue
		}
		// Numbers of every size, and of the ranges where Java switches notation.
		if i%2 == 0 {
			x = (rng.Float64()*2 - 1) * math.Pow(10, float64(rng.IntN(14)-5))
		}
		check("double", strconv.FormatFloat(x, 'E', -1, 64), true)
		if f := float32(x); !math.IsInf(float64(f), 0) {
			check("float", strconv.FormatFloat(float64(f), 'E', -1, 32), true)
		}
		// Integers of every length: those of up to 18 digits are copied.
		in := strconv.FormatInt(int64(bits)>>rng.IntN(64), 10)
		check("int", in, len(strings.TrimPrefix(in, "-")) <= 18)
		un := strconv.FormatUint(bits>>rng.IntN(64), 10)
		check("uint", un, len(un) <= 18)
	}
	for _, c := range []struct {
		name, cell string
		direct     bool
	}{
		{"double", "0E+00", true}, {"double", "-0E+00", true}, {"double", "1E+07", true}, {"double", "9.999999999999998E+06", true},
		{"double", "1E-03", true}, {"double", "9.999999999999998E-04", true}, {"double", "5E-324", true}, {"double", "1.7976931348623157E+308", true},
		{"double", "4115.0", false}, {"double", "4.1150E+03", false}, {"double", "4.E+03", false}, {"double", "41E+03", false},
		{"double", "4.115e+03", false}, {"double", "4.115E3", false}, {"double", "NaN", false}, {"double", "+4.115E+03", false},
		{"float", "1.1E+00", true}, {"float", "3.4028235E+38", true}, {"float", "1.000000001E+00", false},
		{"int", "0", true}, {"int", "-0", false}, {"int", "007", false}, {"int", "+7", false}, {"int", "", false}, {"int", "-", false},
		{"int", "999999999999999999", true}, {"int", "9223372036854775807", false}, {"uint", "18446744073709551615", false},
	} {
		check(c.name, c.cell, c.direct)
	}
}

// TestCellJSONKinds checks, for the cell of every type case and for random DECIMAL, DATE,
// DATETIME, TIMESTAMP, TIME, BIT and binary cells, that the JSON written straight from a cell
// is what converting it and writing the value gives, and that the cells it leaves are
// converted.
func TestCellJSONKinds(t *testing.T) {
	// column builds a one-column table and returns the column and its compiled schema.
	columnOf := func(f *query.Field, opts map[string]string) (*column, *jsonNode) {
		t.Helper()
		cfg, err := ReadConfig(encoder.Params{Keyspace: "ks", Options: encoder.NewOptions(opts)})
		if err != nil {
			t.Fatal(err)
		}
		f = proto.CloneOf(f)
		f.Name = "v"
		ts, err := NewTableSchema(&cfg, "db", encoder.NewTable(fieldEvent("t", true, f).GetFieldEvent()), true)
		if err != nil {
			t.Fatal(err)
		}
		return &ts.cols[0], compileJSON(ts.Row.Fields[0].Schema, map[*Schema]*jsonNode{})
	}
	check := func(name string, c *column, node *jsonNode, cell string) bool {
		t.Helper()
		got, direct := appendCellJSON(nil, c, []byte(cell))
		var v Value
		if _, err := c.convert(&v, nil, []byte(cell)); err != nil {
			if direct {
				t.Errorf("%s %q: written as %s, but does not convert: %v", name, cell, got, err)
			}
			return false
		}
		want := string(scalar(nil, node, &v))
		if v.Kind == KindStruct || v.Kind == KindArray {
			w := jsonWriter{markAt: -1}
			want = string(w.value(nil, node, &v))
		}
		if direct && string(got) != want {
			t.Errorf("%s %q: %s, want %s", name, cell, got, want)
		}
		return direct
	}
	direct := 0
	for _, tc := range typeCases {
		if tc.cell == nil {
			continue
		}
		c, node := columnOf(tc.field, tc.opts)
		if check(tc.name, c, node, tc.cell.(string)) {
			direct++
		}
	}
	if direct < len(typeCases)/2 {
		t.Errorf("only %d type cases written straight from their cells", direct)
	}
	rng := rand.New(rand.NewPCG(9, 10))
	for _, r := range []struct {
		field *query.Field
		opts  map[string]string
		cell  func() string
	}{
		{fld(query.Type_DECIMAL, "decimal(30,4)", 0), nil, func() string {
			return fmt.Sprintf("%s%d.%04d", []string{"", "-"}[rng.IntN(2)], rng.Int64N(1<<62)>>rng.IntN(62), rng.IntN(10000))
		}},
		{fld(query.Type_DECIMAL, "decimal(30,4)", 0), map[string]string{"decimal.handling.mode": "string"}, func() string {
			return fmt.Sprintf("%s%d.%04d", []string{"", "-"}[rng.IntN(2)], rng.Int64N(1<<62)>>rng.IntN(62), rng.IntN(10000))
		}},
		{fld(query.Type_DATE, "date", 0), nil, func() string {
			return fmt.Sprintf("%04d-%02d-%02d", rng.IntN(10000), rng.IntN(13), rng.IntN(32))
		}},
		{fld(query.Type_DATETIME, "datetime(2)", notNull), nil, func() string {
			return fmt.Sprintf("%04d-%02d-%02d %02d:%02d:%02d.%02d", rng.IntN(10000), rng.IntN(13), rng.IntN(32), rng.IntN(24), rng.IntN(60), rng.IntN(60), rng.IntN(100))
		}},
		{fld(query.Type_DATETIME, "datetime(6)", 0), nil, func() string {
			return fmt.Sprintf("%04d-%02d-%02d %02d:%02d:%02d.%06d", rng.IntN(10000), 1+rng.IntN(12), 1+rng.IntN(31), rng.IntN(24), rng.IntN(60), rng.IntN(60), rng.IntN(1000000))
		}},
		{fld(query.Type_TIMESTAMP, "timestamp(3)", 0), nil, func() string {
			return fmt.Sprintf("%04d-%02d-%02d %02d:%02d:%02d.%03d", 1970+rng.IntN(68), 1+rng.IntN(12), 1+rng.IntN(28), rng.IntN(24), rng.IntN(60), rng.IntN(60), rng.IntN(1000))
		}},
		{fld(query.Type_TIME, "time(3)", 0), nil, func() string {
			return fmt.Sprintf("%s%d:%02d:%02d.%03d", []string{"", "-"}[rng.IntN(2)], rng.IntN(839), rng.IntN(60), rng.IntN(60), rng.IntN(1000))
		}},
		{fld(query.Type_BIT, "bit(20)", 0), nil, func() string { return string([]byte{byte(rng.IntN(16)), byte(rng.IntN(256)), byte(rng.IntN(256))}) }},
		{fld(query.Type_BINARY, "binary(3)", 0), map[string]string{"binary.handling.mode": "hex"}, func() string {
			return string([]byte{byte(rng.IntN(256)), byte(rng.IntN(256)), byte(rng.IntN(256))})[:1+rng.IntN(3)]
		}},
		{fld(query.Type_VARBINARY, "varbinary(9)", 0), map[string]string{"binary.handling.mode": "base64-url-safe"}, func() string {
			return string([]byte{byte(rng.IntN(256)), byte(rng.IntN(256)), 0xfb, 0xff}[:rng.IntN(5)])
		}},
	} {
		c, node := columnOf(r.field, r.opts)
		for range 2000 {
			check(r.field.GetColumnType(), c, node, r.cell())
		}
	}
}
