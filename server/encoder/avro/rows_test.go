package avro

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	"github.com/vstream-cdc/vstream/server/encoder"
	"github.com/vstream-cdc/vstream/server/encoder/debezium"
	"github.com/vstream-cdc/vstream/server/encoder/debezium/debeziumtest"
)

// TestRowsOfOneEvent checks that what is made once per rows event and reused for the event's
// rows does not show: a stream whose rows events hold several changes encodes to the same
// bytes as the stream with one change per rows event.
func TestRowsOfOneEvent(t *testing.T) {
	streams := map[string][]*binlogdata.VEvent{
		"reference": debeziumtest.Events(debeziumtest.Table(t)),
		"items":     debeziumtest.ItemEvents(),
		// The snapshot ends with a rows event of three reads: the last is marked "last".
		"snapshot": snapshotEvents([]*query.Row{row("1", "a", "1.00"), row("2", "b", nil)},
			[]*query.Row{row("3", "c", nil), row("4", "d", "4.00"), row("5", "e", "5.00")}),
	}
	for name, evs := range streams {
		for _, opts := range []map[string]string{
			{},
			{"debezium.layout": "v2.0", "provide.transaction.metadata": "true", "include.query": "true"},
			{"tombstones.on.delete": "false", "skipped.operations": "u"},
		} {
			t.Run(fmt.Sprint(name, opts), func(t *testing.T) {
				p := encoder.Params{Database: "shop", Flavor: "mysql"}
				split := debeziumtest.SplitRows(evs)
				if len(split) == len(evs) {
					t.Fatal("no rows event of several changes")
				}
				want := encodeAll(t, newEncoder(t, p, opts), split...)
				got := encodeAll(t, newEncoder(t, p, opts), evs...)
				if len(got) != len(want) {
					t.Fatalf("%d messages, want %d", len(got), len(want))
				}
				for i, g := range got {
					w := want[i]
					if g.Topic != w.Topic || g.Tombstone != w.Tombstone || !bytes.Equal(g.Key, w.Key) || !bytes.Equal(g.Value, w.Value) ||
						!maps.Equal(g.Headers, w.Headers) {
						t.Errorf("message %d: %s %v % x % x, want %s %v % x % x", i, g.Topic, g.Headers, g.Key, g.Value,
							w.Topic, w.Headers, w.Key, w.Value)
					}
				}
			})
		}
	}
}

// TestSourceRowAndSnapshot decodes source.row and source.snapshot of the records of rows
// events of several changes: each record has its change's row, and only the snapshot's last
// read says "last".
func TestSourceRowAndSnapshot(t *testing.T) {
	e := newEncoder(t, encoder.Params{Database: "shop"}, nil)
	_, decs := decodeStream(t, encodeAll(t, e, debeziumtest.SourceEvents()...))
	var got [][3]string
	for _, d := range decs {
		if !d.msg.Tombstone {
			got = append(got, [3]string{fmt.Sprint(get(d.value, "source", "row")), fmt.Sprint(get(d.value, "source", "snapshot")), fmt.Sprint(get(d.value, "op"))})
		}
	}
	if !slices.Equal(got, debeziumtest.SourceWant) {
		t.Errorf("source.row, source.snapshot, op:\n%v\nwant\n%v", got, debeziumtest.SourceWant)
	}
}

// TestColumnsNotLogged: as in debezium-json, a BLOB or TEXT column that a NOBLOB row image
// left out (data_columns) is __debezium_unavailable_value in after, bytes in a BLOB column;
// another column left out stays null.
func TestColumnsNotLogged(t *testing.T) {
	fields := []*query.Field{
		{Name: "id", Type: query.Type_INT32, ColumnType: "int(11)", Flags: uint32(query.MySqlFlag_PRI_KEY_FLAG)},
		{Name: "blb", Type: query.Type_BLOB, ColumnType: "blob", Charset: 63},
		{Name: "txt", Type: query.Type_TEXT, ColumnType: "text", Charset: 45},
		{Name: "val", Type: query.Type_VARCHAR, ColumnType: "varchar(4)", Charset: 45},
	}
	e := newEncoder(t, encoder.Params{Database: "shop", Flavor: "mariadb"}, nil)
	_, decs := decodeStream(t, encodeAll(t, e,
		&binlogdata.VEvent{Type: binlogdata.VEventType_FIELD, FieldEvent: &binlogdata.FieldEvent{TableName: "t", Fields: fields}},
		&binlogdata.VEvent{Type: binlogdata.VEventType_ROW, Timestamp: 1700000000, RowEvent: &binlogdata.RowEvent{TableName: "t",
			RowChanges: []*binlogdata.RowChange{{Before: row("1", nil, nil, "aaa"), After: row("1", nil, nil, nil),
				DataColumns: &binlogdata.RowChange_Bitmap{Count: 4, Cols: []byte{0b0001}}}}}}))
	if len(decs) == 0 {
		t.Fatal("no record")
	}
	after := decs[0].value
	blb, txt, val := get(after, "after", "blb"), get(after, "after", "txt"), get(after, "after", "val")
	if b, ok := blb.([]byte); !ok || string(b) != debezium.UnavailableValue || txt != debezium.UnavailableValue || val != nil {
		t.Errorf("after blb %#v txt %#v val %#v", blb, txt, val)
	}
}
