package streamsets

import (
	"testing"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
)

// benchFields is a 10-column row of mixed types, the shape bench/ streams.
var benchFields = []*query.Field{
	{Name: "id", Type: query.Type_INT64, ColumnType: "bigint(20)", Flags: uint32(query.MySqlFlag_PRI_KEY_FLAG | query.MySqlFlag_NOT_NULL_FLAG)},
	{Name: "customer", Type: query.Type_VARCHAR, ColumnType: "varchar(64)"},
	{Name: "amount", Type: query.Type_DECIMAL, ColumnType: "decimal(12,2)", Decimals: 2},
	{Name: "qty", Type: query.Type_INT32, ColumnType: "int(11)"},
	{Name: "price", Type: query.Type_FLOAT64, ColumnType: "double"},
	{Name: "status", Type: query.Type_ENUM, ColumnType: "enum('new','paid','shipped')"},
	{Name: "created", Type: query.Type_DATETIME, ColumnType: "datetime(3)", Decimals: 3},
	{Name: "updated", Type: query.Type_TIMESTAMP, ColumnType: "timestamp(3)", Decimals: 3},
	{Name: "note", Type: query.Type_VARCHAR, ColumnType: "varchar(255)"},
	{Name: "flags", Type: query.Type_BIT, ColumnType: "bit(8)"},
}

func BenchmarkEncode(b *testing.B) {
	for _, offset := range []string{"gtid", "file"} {
		b.Run(offset, func(b *testing.B) {
			e := newEncoder(b, "bench", 1, map[string]string{"offset": offset})
			after := row("12345", "customer-12345", "15431.25", "3", "4115.0", "paid",
				"2024-01-02 03:04:05.678", "2024-01-02 03:04:05.678", "a note of modest length for each order", "\x2a")
			ev := rowEv("orders", "0-1-77", 1, 500, &binlogdata.RowChange{After: after})
			out := encode(b, e, fieldEv("orders", benchFields, nil), beginEv("0-1-77", "MariaDB/0-1-77"))
			var err error
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				out, err = e.Encode(out[:0], ev)
				if err != nil || len(out) != 1 {
					b.Fatal(err, len(out))
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
