package streamsets

import (
	"testing"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/server/encoder/encodertest"
)

func BenchmarkEncode(b *testing.B) {
	for _, offset := range []string{"gtid", "file"} {
		b.Run(offset, func(b *testing.B) {
			e := newEncoder(b, "bench", 1, map[string]string{"offset": offset})
			after := encodertest.BenchRow()
			ev := rowEv("orders", "0-1-77", 1, 500, &binlogdata.RowChange{After: after})
			out := encode(b, e, fieldEv("orders", encodertest.BenchFields(), nil), beginEv("0-1-77", "MariaDB/0-1-77"))
			encodertest.BenchEncode(b, e, ev, out)
		})
	}
}
