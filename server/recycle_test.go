package server

import (
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/vstream-cdc/vstream/gen/query"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/server/encoder"
	"github.com/vstream-cdc/vstream/server/encoder/debezium/debeziumtest"
	"github.com/vstream-cdc/vstream/server/encoder/encodertest"
)

// TestRecycleKeepsMessages encodes a copy (whose latest read Debezium holds back until it
// knows whether it was the last) and a transaction twice in every format: once keeping all
// memory, once as the server does, recycling it after each event's messages have been sent.
// The messages must be the same: nothing held back may be written over.
func TestRecycleKeepsMessages(t *testing.T) {
	var chunks [][]*query.Row
	for c := range 3 {
		var rows []*query.Row
		for i := range 40 {
			id := c*40 + i + 1
			rows = append(rows, encodertest.Row(fmt.Sprint(id), fmt.Sprintf("item %d", id), fmt.Sprintf("%d.25", id)))
		}
		chunks = append(chunks, rows)
	}
	events := append(debeziumtest.SnapshotEvents(4, chunks...), debeziumtest.ItemEvents()...)
	params := func() encoder.Params {
		return encoder.Params{Clock: encodertest.Clock(1700000000000), Database: "shop", Flavor: "mariadb", Keyspace: "shop"}
	}
	for _, format := range Formats[1:] {
		t.Run(format, func(t *testing.T) {
			kept, err := NewEncoder(format, nil, params())
			if err != nil {
				t.Fatal(err)
			}
			recycled, err := NewEncoder(format, nil, params())
			if err != nil {
				t.Fatal(err)
			}
			var want, got, out []*vstreamv1.EncodedMessage
			for _, ev := range events {
				if want, err = kept.Encode(want, ev); err != nil {
					t.Fatal(err)
				}
				if out, err = recycled.Encode(out[:0], ev); err != nil {
					t.Fatal(err)
				}
				for _, m := range out {
					got = append(got, proto.Clone(m).(*vstreamv1.EncodedMessage))
				}
				if r, ok := recycled.(encoder.Recycler); ok {
					r.Recycle()
				}
			}
			if len(got) != len(want) {
				t.Fatalf("%d messages recycling, %d without", len(got), len(want))
			}
			for i := range want {
				if !proto.Equal(got[i], want[i]) {
					t.Fatalf("message %d differs when recycling:\n%s\nwant\n%s", i, got[i].Value, want[i].Value)
				}
			}
		})
	}
}
