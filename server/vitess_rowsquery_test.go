package server

import (
	"slices"
	"testing"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
)

// TestVitessRewritesKeepRowsQuery: vtgate and tablets send a ROWS_QUERY event as the tablet's
// vstreamer made it, in its place between BEGIN and the rows it describes.
func TestVitessRewritesKeepRowsQuery(t *testing.T) {
	events := func() []*binlogdata.VEvent {
		return []*binlogdata.VEvent{
			{Type: binlogdata.VEventType_BEGIN},
			{Type: binlogdata.VEventType_ROWS_QUERY, Statement: "insert into t values(6)", Keyspace: "ks", Shard: "0"},
			{Type: binlogdata.VEventType_FIELD, FieldEvent: &binlogdata.FieldEvent{TableName: "t"}},
			{Type: binlogdata.VEventType_ROW, RowEvent: &binlogdata.RowEvent{TableName: "t"}},
			{Type: binlogdata.VEventType_GTID},
			{Type: binlogdata.VEventType_COMMIT},
			{Type: binlogdata.VEventType_VGTID, Vgtid: &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Keyspace: "ks", Shard: "0"}}}},
		}
	}
	types := func(evs []*binlogdata.VEvent) []string {
		var out []string
		for _, ev := range evs {
			out = append(out, ev.Type.String())
		}
		return out
	}
	for _, c := range []struct {
		name string
		out  []*binlogdata.VEvent
		want []string
	}{
		{"vtgate", (&vtgateRewrite{qualify: true, shard: "0"}).rewrite(nil, events()), []string{"BEGIN", "ROWS_QUERY", "FIELD", "ROW", "VGTID", "COMMIT"}},
		{"tablet", rewriteTablet(nil, events()), []string{"BEGIN", "ROWS_QUERY", "FIELD", "ROW", "GTID", "COMMIT"}},
	} {
		if got := types(c.out); !slices.Equal(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
			continue
		}
		if rq := c.out[1]; rq.Statement != "insert into t values(6)" || rq.Keyspace != "ks" || rq.Shard != "0" {
			t.Errorf("%s: ROWS_QUERY = %v, want it as the engine sent it", c.name, rq)
		}
	}
}
