package debezium

import (
	"testing"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/server/encoder"
	"github.com/vstream-cdc/vstream/server/encoder/encodertest"
)

var benchSource = &binlogdata.EventSource{File: "binlog.000001", StartPos: 1234, EndPos: 9000, ServerId: 1, Database: "bench"}

// benchEvent is a ROW event inserting rows into the bench table.
func benchEvent(rows ...*binlogdata.RowChange) *binlogdata.VEvent {
	return &binlogdata.VEvent{Type: binlogdata.VEventType_ROW, Timestamp: 1700000000, Source: benchSource, EventGtid: testGTID,
		RowEvent: &binlogdata.RowEvent{TableName: "orders", RowChanges: rows}}
}

func benchEncoder(b *testing.B, schemas string) *Encoder {
	e := newEncoder(b, encoder.Params{Database: "bench"}, map[string]string{"schemas.enable": schemas})
	fe := fieldEvent("orders", true, encodertest.BenchFields()...)
	fe.Source = benchSource
	encodeAll(b, e, fe)
	return e
}

// BenchmarkEncode encodes one inserted row per operation: key and envelope, with and without
// schemas.
func BenchmarkEncode(b *testing.B) {
	for _, schemas := range []string{"true", "false"} {
		b.Run("schemas="+schemas, func(b *testing.B) {
			e := benchEncoder(b, schemas)
			encodertest.BenchEncode(b, e, benchEvent(&binlogdata.RowChange{After: encodertest.BenchRow()}), nil)
		})
	}
}

// BenchmarkEncodeEvent encodes a ROW event of 100 inserted rows per operation, as the rows
// events of bench/'s binlog come: what stays the same from row to row of an event counts once.
func BenchmarkEncodeEvent(b *testing.B) {
	var changes []*binlogdata.RowChange
	for i, r := range encodertest.BenchRows(100) {
		changes = append(changes, &binlogdata.RowChange{After: r, RowIndex: uint32(i)})
	}
	for _, schemas := range []string{"true", "false"} {
		b.Run("schemas="+schemas, func(b *testing.B) {
			e := benchEncoder(b, schemas)
			encodertest.BenchEncodeEvent(b, e, benchEvent(changes...), nil)
		})
	}
}
