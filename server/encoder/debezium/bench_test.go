package debezium

import (
	"testing"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	"github.com/vstream-cdc/vstream/server/encoder"
)

// benchFields is a 10-column row of mixed types, the shape bench/ streams.
var benchFields = []*query.Field{
	{Name: "id", Type: query.Type_INT64, ColumnType: "bigint(20)", Flags: pkFlags},
	{Name: "customer", Type: query.Type_VARCHAR, ColumnType: "varchar(64)", Charset: 45},
	{Name: "amount", Type: query.Type_DECIMAL, ColumnType: "decimal(12,2)", Decimals: 2},
	{Name: "qty", Type: query.Type_INT32, ColumnType: "int(11)"},
	{Name: "price", Type: query.Type_FLOAT64, ColumnType: "double"},
	{Name: "status", Type: query.Type_ENUM, ColumnType: "enum('new','paid','shipped')"},
	{Name: "created", Type: query.Type_DATETIME, ColumnType: "datetime(3)", Decimals: 3},
	{Name: "updated", Type: query.Type_TIMESTAMP, ColumnType: "timestamp(3)", Decimals: 3},
	{Name: "note", Type: query.Type_VARCHAR, ColumnType: "varchar(255)", Charset: 45},
	{Name: "flags", Type: query.Type_BIT, ColumnType: "bit(8)", Charset: 63},
}

// BenchmarkEncode encodes one inserted row per operation: key and envelope, with and without
// schemas.
func BenchmarkEncode(b *testing.B) {
	for _, schemas := range []string{"true", "false"} {
		b.Run("schemas="+schemas, func(b *testing.B) {
			e := newEncoder(b, encoder.Params{Database: "bench"}, map[string]string{"schemas.enable": schemas})
			src := &binlogdata.EventSource{File: "binlog.000001", StartPos: 1234, ServerId: 1, Database: "bench"}
			rowEv := &binlogdata.VEvent{Type: binlogdata.VEventType_ROW, Timestamp: 1700000000, Source: src, EventGtid: testGTID,
				RowEvent: &binlogdata.RowEvent{TableName: "orders", RowChanges: []*binlogdata.RowChange{{After: row("12345", "customer-12345",
					"15431.25", "3", "4.115E+03", "paid", "2024-01-02 03:04:05.678", "2024-01-02 03:04:05.678",
					"a note of modest length for each order", "\x2a")}}}}
			fe := fieldEvent("orders", true, benchFields...)
			fe.Source = src
			out := encodeAll(b, e, fe)
			var err error
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				out, err = e.Encode(out[:0], rowEv)
				if err != nil || len(out) != 1 {
					b.Fatal(err, len(out))
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
