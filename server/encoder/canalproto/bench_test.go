package canalproto

import (
	"testing"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/server/encoder/encodertest"
)

// BenchmarkEncode encodes one 10-column row per iteration. In the default packaging the rows
// go into transactions of 100 rows (the BEGIN and COMMIT are encoded every 100 rows); the
// other packagings send each rows event as it comes.
func BenchmarkEncode(b *testing.B) {
	source := &binlogdata.EventSource{File: "mariadb-bin.000001", StartPos: 4, EndPos: 200, ServerId: 1, Database: "bench", TableId: 70, GtidSet: "0-1-1000"}
	field := &binlogdata.VEvent{Type: binlogdata.VEventType_FIELD, FieldEvent: &binlogdata.FieldEvent{TableName: "orders", Fields: encodertest.BenchFields()}}
	begin := &binlogdata.VEvent{Type: binlogdata.VEventType_BEGIN, Timestamp: 1700000000, EventGtid: "0-1-1000", Source: source}
	commit := &binlogdata.VEvent{Type: binlogdata.VEventType_COMMIT, Timestamp: 1700000000, EventGtid: "0-1-1000", Source: source}
	rowEv := &binlogdata.VEvent{Type: binlogdata.VEventType_ROW, Timestamp: 1700000000, EventGtid: "0-1-1000", Source: source,
		RowEvent: &binlogdata.RowEvent{TableName: "orders", RowChanges: []*binlogdata.RowChange{{After: encodertest.BenchRow()}}}}
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
