package drs

import (
	"testing"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
)

// benchFields is a 10-column row of mixed types, the shape bench/ streams.
var benchFields = []*query.Field{
	field("id", query.Type_INT64, "bigint(20)", query.MySqlFlag_PRI_KEY_FLAG|query.MySqlFlag_NOT_NULL_FLAG),
	field("customer", query.Type_VARCHAR, "varchar(64)", 0),
	field("amount", query.Type_DECIMAL, "decimal(12,2)", 0),
	field("qty", query.Type_UINT32, "int(10) unsigned", 0),
	field("price", query.Type_FLOAT64, "double", 0),
	field("status", query.Type_ENUM, "enum('new','paid','shipped')", 0),
	field("created", query.Type_DATETIME, "datetime(3)", 0),
	field("updated", query.Type_TIMESTAMP, "timestamp(3)", 0),
	field("note", query.Type_VARCHAR, "varchar(255)", 0),
	field("payload", query.Type_BLOB, "blob", 0),
}

// BenchmarkEncode encodes one row change of a 10-column row: an INSERT (one image) and an
// UPDATE (both images), in both variants.
func BenchmarkEncode(b *testing.B) {
	before := row("12345", "customer-12345", "15431.25", "3", "4.115E+03", "paid", "2024-01-02 03:04:05.678",
		"2024-01-02 03:04:05.678", "a note of modest length for each order", "\x00\x01\x02\xfe\xff")
	after := row("12345", "customer-12345", "15431.25", "4", "4.115E+03", "shipped", "2024-01-02 03:04:05.678",
		"2024-01-03 10:00:00.001", "a note with <markup> & 'quotes' = escaped", "\x00\x01\x02\xfe\xff")
	for _, v := range []struct {
		name  string
		jsonc bool
		opts  map[string]string
	}{{NameJSON, false, nil}, {NameJSONC, true, map[string]string{"render_zone": "Asia/Shanghai"}}} {
		for _, op := range []struct {
			name string
			rc   *binlogdata.RowChange
		}{{"insert", &binlogdata.RowChange{After: after}}, {"update", &binlogdata.RowChange{Before: before, After: after}}} {
			b.Run(v.name+"/"+op.name, func(b *testing.B) {
				e := newEnc(b, v.jsonc, "bench", &clock{ms: 1}, v.opts)
				out := encode(b, e, fieldEvent("orders", nil, benchFields...))
				ev := rowEvent("orders", 1700000000, nil, op.rc)
				b.ReportAllocs()
				b.ResetTimer()
				var err error
				for b.Loop() {
					if out, err = e.Encode(out[:0], ev); err != nil || len(out) != 1 {
						b.Fatal(err, len(out))
					}
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
			})
		}
	}
}
