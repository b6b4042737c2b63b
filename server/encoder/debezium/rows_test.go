package debezium

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/server/encoder"
	"github.com/vstream-cdc/vstream/server/encoder/debezium/debeziumtest"
)

// sameMessages reports where two message streams differ, byte for byte.
func sameMessages(t *testing.T, got, want []*vstreamv1.EncodedMessage) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d messages, want %d", len(got), len(want))
	}
	for i, g := range got {
		w := want[i]
		if g.Topic != w.Topic || g.Format != w.Format || g.Tombstone != w.Tombstone || !bytes.Equal(g.Key, w.Key) ||
			!bytes.Equal(g.Value, w.Value) || !maps.Equal(g.Headers, w.Headers) {
			t.Errorf("message %d:\n%s %s %v\n%s\n%s\nwant\n%s %s %v\n%s\n%s", i, g.Topic, g.Headers, g.Tombstone, g.Key, g.Value,
				w.Topic, w.Headers, w.Tombstone, w.Key, w.Value)
		}
	}
}

// TestRowsOfOneEvent checks that what is made once per rows event (the source block, its
// text, the envelope) and reused for the event's rows does not show: a stream whose rows
// events hold several changes encodes to the same bytes as the stream with one change per
// rows event, with every option that changes the source block or the envelope.
func TestRowsOfOneEvent(t *testing.T) {
	fields, rows := debeziumtest.Table(t)
	streams := map[string][]*binlogdata.VEvent{
		"reference": debeziumtest.Events(fields, rows),
		"items":     debeziumtest.ItemEvents(),
		// The snapshot ends with a rows event of three reads: the last is marked "last".
		"snapshot": snapshotEvents([]*query.Row{row("1", "a", "1.00"), row("2", "b", nil)},
			[]*query.Row{row("3", "c", nil), row("4", "d", "4.00"), row("5", "e", "5.00"), row("6", "f", nil)}),
	}
	for name, evs := range streams {
		multi := 0
		for _, ev := range evs {
			if len(ev.GetRowEvent().GetRowChanges()) > 1 {
				multi++
			}
		}
		if multi == 0 {
			t.Fatalf("%s: no rows event of several changes", name)
		}
		for _, opts := range []map[string]string{
			{},
			{"schemas.enable": "false"},
			{"debezium.layout": "v2.0", "provide.transaction.metadata": "true", "include.query": "true"},
			{"schemas.enable": "false", "tombstones.on.delete": "false", "skipped.operations": "u"},
		} {
			t.Run(fmt.Sprint(name, opts), func(t *testing.T) {
				p := encoder.Params{Database: "shop", Flavor: "mysql"}
				want := encodeAll(t, newEncoder(t, p, opts), debeziumtest.SplitRows(evs)...)
				got := encodeAll(t, newEncoder(t, p, opts), evs...)
				sameMessages(t, got, want)
			})
		}
	}
}

// TestSourceRowAndSnapshot reads source.row and source.snapshot of the records of rows events
// of several changes: each record has its change's row, and only the snapshot's last read
// says "last".
func TestSourceRowAndSnapshot(t *testing.T) {
	e := newEncoder(t, encoder.Params{Database: "shop"}, map[string]string{"schemas.enable": "false"})
	var got [][3]string
	for _, m := range encodeAll(t, e, debeziumtest.SourceEvents()...) {
		if !m.Tombstone {
			doc := parse(t, m.Value)
			got = append(got, [3]string{fmt.Sprint(get(doc, "source", "row")), fmt.Sprint(get(doc, "source", "snapshot")), fmt.Sprint(get(doc, "op"))})
		}
	}
	if !slices.Equal(got, debeziumtest.SourceWant) {
		t.Errorf("source.row, source.snapshot, op:\n%v\nwant\n%v", got, debeziumtest.SourceWant)
	}
}

// TestEnvelopeTimes checks the envelope's times, whose text is kept from record to record:
// each rows event's records have the time of the clock when their event was encoded.
func TestEnvelopeTimes(t *testing.T) {
	for _, layout := range []string{"v2.6", "v2.0"} {
		var calls []time.Time
		clock := func() time.Time {
			calls = append(calls, time.UnixMicro(1_700_000_000_000_000+int64(len(calls))*1_001_001))
			return calls[len(calls)-1]
		}
		e := newEncoder(t, encoder.Params{Database: "shop", Clock: clock}, map[string]string{"debezium.layout": layout})
		var got, want []string
		for _, ev := range debeziumtest.ItemEvents() {
			n := len(calls)
			out := encodeAll(t, e, ev)
			if len(calls) != n+1 && len(out) > 0 {
				t.Fatalf("%d clock calls for one event", len(calls)-n)
			}
			for _, m := range out {
				if m.Tombstone {
					continue
				}
				doc := get(parse(t, m.Value), "payload")
				now := calls[len(calls)-1]
				got = append(got, fmt.Sprintf("%v %v %v", get(doc, "ts_ms"), get(doc, "ts_us"), get(doc, "ts_ns")))
				if layout == "v2.6" {
					want = append(want, fmt.Sprintf("%v %v %v", now.UnixMilli(), now.UnixMicro(), now.UnixNano()))
				} else {
					want = append(want, fmt.Sprintf("%v %v %v", now.UnixMilli(), nil, nil))
				}
			}
		}
		if len(got) != 9 || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: times\n%v\nwant\n%v", layout, got, want)
		}
	}
}

// TestEmptyCells checks that an empty cell is the empty value, not NULL, also in a row whose
// cells are all empty (its values are then no bytes at all, possibly a nil slice).
func TestEmptyCells(t *testing.T) {
	e := newEncoder(t, encoder.Params{Database: "shop"}, map[string]string{"schemas.enable": "false"})
	fields := []*query.Field{{Name: "a", Type: query.Type_VARCHAR, ColumnType: "varchar(8)", Charset: 45},
		{Name: "b", Type: query.Type_VARBINARY, ColumnType: "varbinary(8)", Charset: 63}, {Name: "c", Type: query.Type_INT32, ColumnType: "int"}}
	out := encodeAll(t, e, fieldEvent("t", true, fields...), &binlogdata.VEvent{Type: binlogdata.VEventType_ROW, Timestamp: 1,
		RowEvent: &binlogdata.RowEvent{TableName: "t", RowChanges: []*binlogdata.RowChange{
			{After: &query.Row{Lengths: []int64{0, 0, -1}}}, {After: &query.Row{Lengths: []int64{0, 0, -1}, Values: []byte{}}}}}})
	if len(out) != 2 {
		t.Fatalf("%d messages", len(out))
	}
	for _, m := range out {
		after := get(parse(t, m.Value), "after")
		if got := fmt.Sprint(get(after, "a"), "|", get(after, "b"), "|", get(after, "c")); got != "|"+"|"+"<nil>" {
			t.Errorf("after %v", after)
		}
	}
}
