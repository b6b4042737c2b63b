package vstreamer

import (
	"testing"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
)

// TestPartialImages ports Vitess's TestNoBlob (and covers what TestMinimalMode refuses): with
// binlog_row_image NOBLOB or MINIMAL, set per session, a column the binlog did not log reads
// NULL, and the row change's data_columns bitmap (a bit per table column, in table order)
// tells it from a real NULL. Full images carry no bitmap.
func TestPartialImages(t *testing.T) {
	execSQL(t, "DROP TABLE IF EXISTS pi1", "CREATE TABLE pi1 (id INT PRIMARY KEY, blb BLOB, val VARCHAR(4), txt TEXT)")
	t.Cleanup(func() { execSQL(t, "SET SESSION binlog_row_image = FULL", "DROP TABLE IF EXISTS pi1") })
	e := newEngine(t)
	ts := startStream(t, e, Request{Position: "current", Filter: &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "pi1"}}}})
	ts.expect("GTID", "OTHER", "VGTID")
	bits := func(rc *binlogdata.RowChange) string {
		dc := rc.GetDataColumns()
		if dc == nil {
			return "full"
		}
		out := make([]byte, dc.GetCount())
		for i := range out {
			out[i] = '0'
			if dc.GetCols()[i/8]&(1<<(i%8)) != 0 {
				out[i] = '1'
			}
		}
		return string(out)
	}
	cases := []struct {
		image, sql string
		row        string // the ROW event's short form
		dataCols   string // data_columns, column by column ("full" when there is none)
	}{
		{"FULL", "INSERT INTO pi1 VALUES (1, 'blob1', 'aaa', 'text1')", "ROW pi1 +[1 blob1 aaa text1]", "full"},
		{"NOBLOB", "UPDATE pi1 SET val = 'bbb' WHERE id = 1", "ROW pi1 [1 NULL aaa NULL]>[1 NULL bbb NULL]", "1010"},
		{"NOBLOB", "UPDATE pi1 SET txt = NULL WHERE id = 1", "ROW pi1 [1 NULL bbb NULL]>[1 NULL bbb NULL]", "1011"},
		{"NOBLOB", "INSERT INTO pi1 (id, val) VALUES (2, 'x')", "ROW pi1 +[2 NULL x NULL]", "1010"},
		{"NOBLOB", "DELETE FROM pi1 WHERE id = 2", "ROW pi1 -[2 NULL x NULL]", "full"},
		{"MINIMAL", "UPDATE pi1 SET val = 'ccc' WHERE id = 1", "ROW pi1 [1 NULL NULL NULL]>[NULL NULL ccc NULL]", "0010"},
		{"MINIMAL", "INSERT INTO pi1 (id, blb) VALUES (3, 'b3')", "ROW pi1 +[3 b3 NULL NULL]", "1100"},
		{"FULL", "UPDATE pi1 SET val = 'ddd' WHERE id = 1", "ROW pi1 [1 blob1 ccc NULL]>[1 blob1 ddd NULL]", "full"},
	}
	for _, c := range cases {
		t.Run(c.image+" "+c.sql, func(t *testing.T) {
			ts.t = t
			execSQL(t, "SET SESSION binlog_row_image = "+c.image, c.sql)
			want := []string{"BEGIN", c.row, "GTID", "COMMIT", "VGTID"}
			if len(ts.seen) == 3 {
				want = []string{"BEGIN", "FIELD", c.row, "GTID", "COMMIT", "VGTID"}
			}
			evs := ts.expect(want...)
			if got := bits(evs[len(evs)-4].RowEvent.RowChanges[0]); got != c.dataCols {
				t.Errorf("data_columns %s, want %s", got, c.dataCols)
			}
		})
	}
	ts.t = t
}
