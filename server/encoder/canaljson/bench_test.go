package canaljson

import (
	"testing"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/server/encoder/encodertest"
)

func BenchmarkEncode(b *testing.B) {
	for _, profile := range []string{"canal", "dts"} {
		b.Run(profile, func(b *testing.B) {
			e := newEncoder(&testing.T{}, "bench", 1, map[string]string{"profile": profile})
			field := &binlogdata.VEvent{Type: binlogdata.VEventType_FIELD, FieldEvent: &binlogdata.FieldEvent{TableName: "orders", Fields: encodertest.BenchFields()}}
			rowEv := &binlogdata.VEvent{Type: binlogdata.VEventType_ROW, Timestamp: 1700000000, RowEvent: &binlogdata.RowEvent{TableName: "orders",
				RowChanges: []*binlogdata.RowChange{{After: encodertest.BenchRow()}}}}
			out, err := e.Encode(nil, field)
			if err != nil {
				b.Fatal(err)
			}
			encodertest.BenchEncode(b, e, rowEv, out)
			_ = vstreamv1.EncodedMessage{}
		})
	}
}
