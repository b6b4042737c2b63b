package debezium

import (
	"testing"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/server/encoder"
	"github.com/vstream-cdc/vstream/server/encoder/encodertest"
)

// BenchmarkEncode encodes one inserted row per operation: key and envelope, with and without
// schemas.
func BenchmarkEncode(b *testing.B) {
	for _, schemas := range []string{"true", "false"} {
		b.Run("schemas="+schemas, func(b *testing.B) {
			e := newEncoder(b, encoder.Params{Database: "bench"}, map[string]string{"schemas.enable": schemas})
			src := &binlogdata.EventSource{File: "binlog.000001", StartPos: 1234, ServerId: 1, Database: "bench"}
			rowEv := &binlogdata.VEvent{Type: binlogdata.VEventType_ROW, Timestamp: 1700000000, Source: src, EventGtid: testGTID,
				RowEvent: &binlogdata.RowEvent{TableName: "orders", RowChanges: []*binlogdata.RowChange{{After: encodertest.BenchRow()}}}}
			fe := fieldEvent("orders", true, encodertest.BenchFields()...)
			fe.Source = src
			out := encodeAll(b, e, fe)
			encodertest.BenchEncode(b, e, rowEv, out)
		})
	}
}
