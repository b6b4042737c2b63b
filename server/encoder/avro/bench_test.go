package avro

import (
	"testing"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/server/encoder"
	"github.com/vstream-cdc/vstream/server/encoder/debezium"
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

var benchSource = &binlogdata.EventSource{File: "binlog.000001", StartPos: 1234, ServerId: 1, Database: "bench"}

var benchRow = &binlogdata.VEvent{Type: binlogdata.VEventType_ROW, Timestamp: 1700000000, Source: benchSource, EventGtid: testGTID,
	RowEvent: &binlogdata.RowEvent{TableName: "orders", RowChanges: []*binlogdata.RowChange{{After: row("12345", "customer-12345",
		"15431.25", "3", "4.115E+03", "paid", "2024-01-02 03:04:05.678", "2024-01-02 03:04:05.678",
		"a note of modest length for each order", "\x2a")}}}}

// BenchmarkEncode encodes one inserted row per operation: key and envelope, from the ROW
// event to the message.
func BenchmarkEncode(b *testing.B) {
	e := newEncoder(b, encoder.Params{Database: "bench"}, nil)
	rowEv := benchRow
	fe := fieldEvent("orders", benchFields...)
	fe.Source = benchSource
	// The first row sends the schemas; the loop measures the rows after it.
	out := encodeAll(b, e, fe, rowEv)
	if len(out) != 3 {
		b.Fatalf("%d messages for the first row, want 2 schemas and the record", len(out))
	}
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
}

// repeat serializes each record it is given n times, for BenchmarkSerialize.
type repeat struct {
	*Serializer
	n int
}

func (r *repeat) Serialize(rec *debezium.Record) (*vstreamv1.EncodedMessage, error) {
	for range r.n - 1 {
		if _, err := r.Serializer.Serialize(rec); err != nil {
			return nil, err
		}
	}
	return r.Serializer.Serialize(rec)
}

// BenchmarkSerialize measures the Avro serializer alone: the Connect record of the row of
// BenchmarkEncode, made once, written b.N times.
func BenchmarkSerialize(b *testing.B) {
	p := encoder.Params{Database: "bench", Keyspace: "ks", Clock: fixedClock, Options: encoder.NewOptions(nil)}
	cfg, err := debezium.ReadConfig(p)
	if err != nil {
		b.Fatal(err)
	}
	cfg.AvroNames = true
	rep := &repeat{Serializer: NewSerializer(Name, true), n: 1}
	records := debezium.NewRecords(cfg, p, rep)
	fe := fieldEvent("orders", benchFields...)
	fe.Source = benchSource
	for _, ev := range []*binlogdata.VEvent{fe, benchRow} {
		if _, err := records.Encode(nil, ev); err != nil {
			b.Fatal(err)
		}
	}
	rep.n = b.N
	b.ReportAllocs()
	b.ResetTimer()
	if _, err := records.Encode(nil, benchRow); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}
