package drs

import (
	"testing"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
)

// BenchmarkEncode encodes an UPDATE of a 10-column row of mixed types (both images rendered).
func BenchmarkEncode(b *testing.B) {
	fields := []*query.Field{
		field("id", query.Type_INT64, "bigint(20)", query.MySqlFlag_PRI_KEY_FLAG),
		field("u", query.Type_UINT32, "int(10) unsigned", 0),
		field("name", query.Type_VARCHAR, "varchar(64)", 0),
		field("price", query.Type_DECIMAL, "decimal(10,2)", 0),
		field("ratio", query.Type_FLOAT64, "double", 0),
		field("created", query.Type_DATETIME, "datetime(3)", 0),
		field("updated", query.Type_TIMESTAMP, "timestamp(6)", 0),
		field("state", query.Type_ENUM, "enum('new','paid','sent')", 0),
		field("payload", query.Type_BLOB, "blob", 0),
		field("note", query.Type_TEXT, "text", 0),
	}
	before := row("123456789", "4000000000", "Widget <large> & co", ".99", "1.2510357E+07", "2024-05-01 12:34:56.789",
		"2024-05-01 10:34:56.123456", "paid", "\x00\x01\x02\xfe\xff binary payload", nil)
	after := row("123456789", "4000000001", "Widget <large> & co", "10.99", "8.6E+01", "2024-05-01 12:34:56.789",
		"2024-05-02 10:34:56.123456", "sent", "\x00\x01\x02\xfe\xff binary payload", "a note with 'quotes' = fine")
	for _, v := range []struct {
		name  string
		jsonc bool
		opts  map[string]string
	}{{NameJSON, false, nil}, {NameJSONC, true, map[string]string{"render_zone": "Asia/Shanghai"}}} {
		b.Run(v.name, func(b *testing.B) {
			e := newEnc(b, v.jsonc, "db", &clock{ms: 1}, v.opts)
			out := encode(b, e, fieldEvent("t", nil, fields...))
			ev := rowEvent("t", 1700000000, nil, &binlogdata.RowChange{Before: before, After: after})
			b.ReportAllocs()
			b.ResetTimer()
			var err error
			for b.Loop() {
				if out, err = e.Encode(out[:0], ev); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
