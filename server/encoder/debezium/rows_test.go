package debezium

import (
	"bytes"
	"fmt"
	"maps"
	"testing"

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
	evs := append(snapshotEvents([]*query.Row{row("1", "a", nil), row("2", "b", nil), row("3", "c", nil)}), debeziumtest.ItemEvents()...)
	var rowsOf, snapshots, ops []string
	for _, m := range encodeAll(t, e, evs...) {
		if m.Tombstone {
			continue
		}
		doc := parse(t, m.Value)
		rowsOf = append(rowsOf, fmt.Sprint(get(doc, "source", "row")))
		snapshots = append(snapshots, fmt.Sprint(get(doc, "source", "snapshot")))
		ops = append(ops, fmt.Sprint(get(doc, "op")))
	}
	for _, c := range []struct {
		name      string
		got, want []string
	}{
		// Snapshot reads have no row index; then the inserts, the updates (the second a delete
		// and a create), the deletes.
		{"row", rowsOf, []string{"0", "0", "0", "0", "1", "2", "0", "1", "1", "2", "0", "1"}},
		{"snapshot", snapshots, []string{"true", "true", "last", "false", "false", "false", "false", "false", "false", "false", "false", "false"}},
		{"op", ops, []string{"r", "r", "r", "c", "c", "c", "u", "d", "c", "u", "d", "d"}},
	} {
		if fmt.Sprint(c.got) != fmt.Sprint(c.want) {
			t.Errorf("%s: %v, want %v", c.name, c.got, c.want)
		}
	}
}
