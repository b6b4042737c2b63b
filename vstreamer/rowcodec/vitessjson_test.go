package rowcodec

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// The binary JSON values below are built as MySQL lays them out in a small document; the
// expected texts are what Vitess's binlog JSON decoder prints for them.

type jsonKV struct {
	key string
	val jsonBin
}

// jsonBin is a binary JSON value: its type and its bytes (inline for literals and 16-bit
// integers, which a container's entry holds itself).
type jsonBin struct {
	typ  byte
	data []byte
}

func jLit(b byte) jsonBin { return jsonBin{jsonLiteral, []byte{b, 0}} }
func jInt16(v int16) jsonBin {
	return jsonBin{jsonInt16, binary.LittleEndian.AppendUint16(nil, uint16(v))}
}
func jInt64(v int64) jsonBin {
	return jsonBin{jsonInt64, binary.LittleEndian.AppendUint64(nil, uint64(v))}
}
func jDouble(f float64) jsonBin {
	return jsonBin{jsonDouble, binary.LittleEndian.AppendUint64(nil, math.Float64bits(f))}
}
func jStr(s string) jsonBin { return jsonBin{jsonString, append([]byte{byte(len(s))}, s...)} }
func jOpaque(ft byte, v []byte) jsonBin {
	return jsonBin{jsonOpaque, append([]byte{ft, byte(len(v))}, v...)}
}

func inlined(typ byte) bool { return typ == jsonLiteral || typ == jsonInt16 || typ == jsonUint16 }

// jContainer lays out a small object (keys given) or array: count, size, key entries, value
// entries, keys, then the values not inlined, offsets from the container's start.
func jContainer(keys []string, vals []jsonBin) jsonBin {
	n := len(vals)
	header := 4 + 3*n
	if keys != nil {
		header += 4 * n
	}
	var tail []byte
	var keyEntries, valEntries []byte
	for _, k := range keys {
		keyEntries = binary.LittleEndian.AppendUint16(keyEntries, uint16(header+len(tail)))
		keyEntries = binary.LittleEndian.AppendUint16(keyEntries, uint16(len(k)))
		tail = append(tail, k...)
	}
	for _, v := range vals {
		valEntries = append(valEntries, v.typ)
		if inlined(v.typ) {
			valEntries = append(valEntries, v.data[:2]...)
			continue
		}
		valEntries = binary.LittleEndian.AppendUint16(valEntries, uint16(header+len(tail)))
		tail = append(tail, v.data...)
	}
	out := binary.LittleEndian.AppendUint16(nil, uint16(n))
	out = binary.LittleEndian.AppendUint16(out, uint16(header+len(tail)))
	out = append(append(append(out, keyEntries...), valEntries...), tail...)
	typ := byte(jsonSmallArray)
	if keys != nil {
		typ = jsonSmallObject
	}
	return jsonBin{typ, out}
}

func jObject(kvs ...jsonKV) jsonBin {
	keys := []string{}
	var vals []jsonBin
	for _, kv := range kvs {
		keys = append(keys, kv.key)
		vals = append(vals, kv.val)
	}
	return jContainer(keys, vals)
}

func jArray(vals ...jsonBin) jsonBin { return jContainer(nil, vals) }

// packedTime is MySQL's packed DATETIME/TIME of a JSON opaque value.
func packedTime(year, month, day, hour, minute, second, micro uint64) []byte {
	value := (year*13+month)<<22 | day<<17 | hour<<12 | minute<<6 | second
	return binary.LittleEndian.AppendUint64(nil, value<<24|micro)
}

func TestAppendVitessJSON(t *testing.T) {
	for _, c := range []struct {
		name string
		doc  jsonBin
		want string
	}{
		{"an object keeps the document's key order and MySQL's spacing",
			jObject(jsonKV{"b", jInt16(1)}, jsonKV{"s", jStr("x\"\n\x01")}, jsonKV{"aa", jArray(jLit(1), jLit(0), jDouble(2.5))}),
			`{"b": 1, "s": "x\"\n\u0001", "aa": [true, null, 2.5]}`},
		{"empty containers", jArray(jObject(), jArray()), `[{}, []]`},
		{"doubles as MySQL prints them", jArray(jDouble(3), jDouble(1e20), jDouble(-0.000123), jDouble(1e-20)),
			`[3.0, 1e20, -0.000123, 1e-20]`},
		{"integers and false", jArray(jInt64(-9223372036854775808), jInt16(-5), jLit(2)), `[-9223372036854775808, -5, false]`},
		{"a scalar document", jStr("vtTablet"), `"vtTablet"`},
		{"binary strings and bits in base64, both type 15",
			jObject(jsonKV{"k", jOpaque(mysql.MYSQL_TYPE_VAR_STRING, []byte("foo"))}, jsonKV{"b", jOpaque(mysql.MYSQL_TYPE_BIT, []byte("\n"))}),
			`{"k": "base64:type15:Zm9v", "b": "base64:type15:Cg=="}`},
		{"temporal values as strings", jArray(
			jOpaque(mysql.MYSQL_TYPE_DATE, packedTime(2012, 1, 2, 0, 0, 0, 0)),
			jOpaque(mysql.MYSQL_TYPE_DATETIME, packedTime(2012, 1, 2, 15, 45, 45, 120000)),
			jOpaque(mysql.MYSQL_TYPE_TIME, packedTime(0, 0, 0, 15, 45, 45, 0))),
			`["2012-01-02", "2012-01-02 15:45:45.120000", "15:45:45.000000"]`},
		{"a decimal at its scale", jOpaque(mysql.MYSQL_TYPE_NEWDECIMAL, []byte{5, 2, 0x80, 0x01, 0x32}), `1.50`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := appendVitessJSON(nil, append([]byte{c.doc.typ}, c.doc.data...))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
		})
	}
	if got, err := appendVitessJSON(nil, nil); err != nil || string(got) != "null" {
		t.Errorf("empty document: %q, %v; want null", got, err)
	}
	// A document cut short is an error, not a panic.
	doc := jObject(jsonKV{"k", jStr("value")})
	whole := append([]byte{doc.typ}, doc.data...)
	for n := 1; n < len(whole); n++ {
		if _, err := appendVitessJSON(nil, whole[:n]); err == nil {
			t.Errorf("%d of %d bytes: no error", n, len(whole))
		}
	}
}
