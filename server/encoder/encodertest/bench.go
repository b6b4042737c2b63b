package encodertest

import (
	"strconv"
	"testing"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/server/encoder"
)

// BenchFields is the 10-column table of mixed types that bench/ streams (id BIGINT PRIMARY KEY,
// customer VARCHAR(64), amount DECIMAL(12,2), qty INT, price DOUBLE, status ENUM, created
// DATETIME(3), updated TIMESTAMP(3), note VARCHAR(255), flags BIT(8)), as its FIELD event
// describes it. Each call returns new fields.
func BenchFields() []*query.Field {
	return []*query.Field{
		{Name: "id", Type: query.Type_INT64, ColumnType: "bigint(20)", Flags: uint32(query.MySqlFlag_PRI_KEY_FLAG | query.MySqlFlag_NOT_NULL_FLAG)},
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
}

// BenchRow is a row of BenchFields in the cell forms the binlog reader produces (formats.md
// 1.3: DOUBLE in exponent form, ENUM as its label, BIT as bytes). Each call returns a new row.
func BenchRow() *query.Row {
	return Row("12345", "customer-12345", "15431.25", "3", "4.115E+03", "paid", "2024-01-02 03:04:05.678",
		"2024-01-02 03:04:05.678", "a note of modest length for each order", "\x2a")
}

// BenchRows is n rows of BenchFields, as one rows event of the benchmark binlog holds them:
// ids 1 to n, the other cells as in BenchRow.
func BenchRows(n int) []*query.Row {
	rows := make([]*query.Row, n)
	for i := range rows {
		rows[i] = Row(strconv.Itoa(i+1), "customer-12345", "15431.25", "3", "4.115E+03", "paid", "2024-01-02 03:04:05.678",
			"2024-01-02 03:04:05.678", "a note of modest length for each order", "\x2a")
	}
	return rows
}

// BenchEncode measures an encoder on one event that makes one message (a ROW event of one
// row change), reporting allocations and rows/s. out is reused for the messages.
func BenchEncode(b *testing.B, e encoder.Encoder, ev *binlogdata.VEvent, out []*vstreamv1.EncodedMessage) {
	b.Helper()
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
}

// BenchEncodeEvent measures an encoder on one ROW event that makes one message per row change,
// reporting allocations and rows/s. out is reused for the messages.
func BenchEncodeEvent(b *testing.B, e encoder.Encoder, ev *binlogdata.VEvent, out []*vstreamv1.EncodedMessage) {
	b.Helper()
	rows := len(ev.GetRowEvent().GetRowChanges())
	var err error
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out, err = e.Encode(out[:0], ev)
		if err != nil || len(out) != rows {
			b.Fatal(err, len(out))
		}
	}
	b.ReportMetric(float64(b.N*rows)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/row")
}
