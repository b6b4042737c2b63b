package vstreamer

import (
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/vstream-cdc/vstream/vstreamer/rowcodec"
)

// TestRowsLeftRaw: the binlog reader leaves rows raw for the stream to decode (and, in this
// package's tests, has go-mysql decode them too, for the stream to compare), except the rows of
// a table with a MySQL JSON column, which go-mysql decodes.
func TestRowsLeftRaw(t *testing.T) {
	evs := parseBinlog(t, formatEvent(), withChecksum(t, fixture(t, "payload_insert.hex")))
	var raws int
	for _, inner := range evs[1].Event.(*replication.TransactionPayloadEvent).Events {
		if e, ok := inner.Event.(*replication.RowsEvent); ok {
			raw := rowcodec.RawOf(e)
			if raw == nil || len(raw.Decoded) != 2 {
				t.Fatalf("rows of customer: raw %v, want raw rows with go-mysql's two rows beside them", raw)
			}
			raws++
		}
	}
	if raws != 1 {
		t.Fatalf("%d rows events in the payload, want 1", raws)
	}
	evs = parseBinlog(t, formatEvent(), makeEvent(replication.TABLE_MAP_EVENT, 1, 1100, tableMapJSON()),
		withChecksum(t, fixture(t, "partial_update_json_remove_and_replace.hex")))
	e := evs[2].Event.(*replication.RowsEvent)
	if rowcodec.RawOf(e) != nil || len(e.Rows) != 10 {
		t.Fatalf("rows of customer_json: %d rows, raw %v; want go-mysql's 10 row images", len(e.Rows), rowcodec.RawOf(e))
	}
}
