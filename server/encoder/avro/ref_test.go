package avro

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"testing"

	hamba "github.com/hamba/avro/v2"

	"github.com/vstream-cdc/vstream/server/encoder"
	"github.com/vstream-cdc/vstream/server/encoder/debezium"
	"github.com/vstream-cdc/vstream/server/encoder/debezium/debeziumtest"
	"github.com/vstream-cdc/vstream/server/encoder/encodertest"
)

// TestDecodeMatchesJSON is formats.md 10.1's validation: every record of a stream over the
// reference table, decoded with hamba/avro against the schema the stream sent, equals the
// payload the debezium-json encoder writes for the same event, up to representation (bytes
// against base64, unions against plain values, decimals against their unscaled bytes). It runs
// with several combinations of the connector options that change schemas and values.
func TestDecodeMatchesJSON(t *testing.T) {
	evs := debeziumtest.Events(debeziumtest.Table(t))
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
	p, opts, evs := debeziumtest.ReferenceRun(t)
	out := encodeAll(t, newEncoder(t, p, opts), evs...)
	_, decs := decodeStream(t, out)
	if len(decs) != 1 {
		t.Fatalf("%d records", len(decs))
	}
	for _, c := range []struct {
		file   string
		schema hamba.Schema
		got    any
	}{{debeziumtest.ValueFile, decs[0].valueSchema, decs[0].value}, {debeziumtest.KeyFile, decs[0].keySchema, decs[0].key}} {
		doc := parseJSON(t, debeziumtest.File(t, c.file)).(map[string]any)
		for _, e := range match(c.file, c.schema, c.got, doc["payload"]) {
			t.Error(e)
		}
	}
}
