package canalproto

import (
	"testing"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
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

// BenchmarkEncode encodes one 10-column row per iteration. In the default packaging the rows
// go into transactions of 100 rows (the BEGIN and COMMIT are encoded every 100 rows); the
// other packagings send each rows event as it comes.
func BenchmarkEncode(b *testing.B) {
	source := &binlogdata.EventSource{File: "mariadb-bin.000001", StartPos: 4, EndPos: 200, ServerId: 1, Database: "bench", TableId: 70, GtidSet: "0-1-1000"}
	field := &binlogdata.VEvent{Type: binlogdata.VEventType_FIELD, FieldEvent: &binlogdata.FieldEvent{TableName: "orders", Fields: benchFields}}
	begin := &binlogdata.VEvent{Type: binlogdata.VEventType_BEGIN, Timestamp: 1700000000, EventGtid: "0-1-1000", Source: source}
	commit := &binlogdata.VEvent{Type: binlogdata.VEventType_COMMIT, Timestamp: 1700000000, EventGtid: "0-1-1000", Source: source}
	rowEv := &binlogdata.VEvent{Type: binlogdata.VEventType_ROW, Timestamp: 1700000000, EventGtid: "0-1-1000", Source: source,
		RowEvent: &binlogdata.RowEvent{TableName: "orders", RowChanges: []*binlogdata.RowChange{{After: row("12345", "customer-12345", "15431.25", "3",
			"4115.0", "paid", "2024-01-02 03:04:05.678", "2024-01-02 03:04:05.678", "a note of modest length for each order", "\x2a")}}}}
	for _, packet := range []string{"transaction", "entry", "none"} {
		b.Run(packet, func(b *testing.B) {
			e := newEncoder(b, map[string]string{"packet": packet})
			out, err := e.Encode(nil, field)
			if err != nil {
				b.Fatal(err)
			}
			if out, err = e.Encode(out, begin); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				out = out[:0]
				if out, err = e.Encode(out, rowEv); err != nil {
					b.Fatal(err)
				}
				if i%100 == 99 {
					if out, err = e.Encode(out, commit); err == nil {
						out, err = e.Encode(out, begin)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
			_ = []*vstreamv1.EncodedMessage(out)
		})
	}
}
