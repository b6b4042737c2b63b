package avro

import (
	"testing"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/server/encoder"
	"github.com/vstream-cdc/vstream/server/encoder/debezium"
	"github.com/vstream-cdc/vstream/server/encoder/encodertest"
)

var benchSource = &binlogdata.EventSource{File: "binlog.000001", StartPos: 1234, ServerId: 1, Database: "bench"}

var benchRow = &binlogdata.VEvent{Type: binlogdata.VEventType_ROW, Timestamp: 1700000000, Source: benchSource, EventGtid: testGTID,
	RowEvent: &binlogdata.RowEvent{TableName: "orders", RowChanges: []*binlogdata.RowChange{{After: encodertest.BenchRow()}}}}

// BenchmarkEncode encodes one inserted row per operation: key and envelope, from the ROW
// event to the message.
func BenchmarkEncode(b *testing.B) {
	e := newEncoder(b, encoder.Params{Database: "bench"}, nil)
	rowEv := benchRow
	fe := fieldEvent("orders", encodertest.BenchFields()...)
	fe.Source = benchSource
	// The first row sends the schemas; the loop measures the rows after it.
	out := encodeAll(b, e, fe, rowEv)
	if len(out) != 3 {
		b.Fatalf("%d messages for the first row, want 2 schemas and the record", len(out))
	}
	encodertest.BenchEncode(b, e, rowEv, out)
}

// BenchmarkEncodeEvent encodes a ROW event of 100 inserted rows per operation, as the rows
// events of bench/'s binlog come.
func BenchmarkEncodeEvent(b *testing.B) {
	e := newEncoder(b, encoder.Params{Database: "bench"}, nil)
	fe := fieldEvent("orders", encodertest.BenchFields()...)
	fe.Source = benchSource
	var changes []*binlogdata.RowChange
	for i, r := range encodertest.BenchRows(100) {
		changes = append(changes, &binlogdata.RowChange{After: r, RowIndex: uint32(i)})
	}
	ev := &binlogdata.VEvent{Type: binlogdata.VEventType_ROW, Timestamp: 1700000000, Source: benchSource, EventGtid: testGTID,
		RowEvent: &binlogdata.RowEvent{TableName: "orders", RowChanges: changes}}
	// The first event sends the schemas; the loop measures the events after it.
	out := encodeAll(b, e, fe, ev)
	encodertest.BenchEncodeEvent(b, e, ev, out)
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
	fe := fieldEvent("orders", encodertest.BenchFields()...)
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
