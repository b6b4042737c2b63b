package server

import (
	"testing"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
)

// TestVtgateRewriteQualifiesWithoutAllocating: a Vitess-shaped copy sends a ROW event per
// row, so the keyspace.table name vtgate puts in each must not cost an allocation per row;
// the names stay right when the tables and keyspaces of a stream alternate.
func TestVtgateRewriteQualifiesWithoutAllocating(t *testing.T) {
	rowEv := func(ks, table string) *binlogdata.VEvent {
		return &binlogdata.VEvent{Type: binlogdata.VEventType_ROW, RowEvent: &binlogdata.RowEvent{Keyspace: ks, TableName: table}}
	}
	rw := &vtgateRewrite{qualify: true, shard: "0"}
	batch := make([]*binlogdata.VEvent, 100)
	out := make([]*binlogdata.VEvent, 0, len(batch))
	for i := range batch {
		batch[i] = rowEv("ks", "orders")
	}
	allocs := testing.AllocsPerRun(20, func() {
		for i := range batch {
			batch[i].RowEvent.TableName = "orders"
		}
		out = rw.rewrite(out[:0], batch)
	})
	if allocs != 0 {
		t.Errorf("rewriting 100 ROW events allocated %v times, want 0", allocs)
	}
	for _, ev := range out {
		if ev.RowEvent.TableName != "ks.orders" {
			t.Fatalf("table name %q, want ks.orders", ev.RowEvent.TableName)
		}
	}

	mixed := []*binlogdata.VEvent{rowEv("a", "t1"), rowEv("b", "t1"), rowEv("a", "t2"), rowEv("a", "t1"), rowEv("b", "t1"),
		{Type: binlogdata.VEventType_FIELD, FieldEvent: &binlogdata.FieldEvent{Keyspace: "b", TableName: "t2"}}}
	want := []string{"a.t1", "b.t1", "a.t2", "a.t1", "b.t1", "b.t2"}
	out = rw.rewrite(out[:0], mixed)
	for i, ev := range out {
		got := ev.GetRowEvent().GetTableName()
		if ev.FieldEvent != nil {
			got = ev.FieldEvent.TableName
		}
		if got != want[i] {
			t.Errorf("event %d: table name %q, want %q", i, got, want[i])
		}
	}
}
