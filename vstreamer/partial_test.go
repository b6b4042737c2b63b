package vstreamer

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/internal/testkit"
	"github.com/vstream-cdc/vstream/internal/testkit/evtext"
)

// TestPartialImages ports Vitess's TestNoBlob (and covers what TestMinimalMode refuses): with
// binlog_row_image NOBLOB or MINIMAL, set per session, a column the binlog did not log reads
// NULL, and the row change's data_columns bitmap (a bit per table column, in table order)
// tells it from a real NULL. Full images carry no bitmap.
func TestPartialImages(t *testing.T) {
	testkit.MustExec(t, db, "DROP TABLE IF EXISTS pi1", "CREATE TABLE pi1 (id INT PRIMARY KEY, blb BLOB, val VARCHAR(4), txt TEXT)")
	t.Cleanup(func() { testkit.MustExec(t, db, "SET SESSION binlog_row_image = FULL", "DROP TABLE IF EXISTS pi1") })
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
			testkit.MustExec(t, db, "SET SESSION binlog_row_image = "+c.image, c.sql)
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

// TestPartialImageFilter: a filter whose condition tests a column a row image left out
// cannot judge the row; the stream ends with an error naming the column, rather than
// reading it as NULL. Conditions on logged columns work as usual.
func TestPartialImageFilter(t *testing.T) {
	// The filter compares txt and val: in a collation it compares on both flavors (MySQL's
	// default, utf8mb4_0900_ai_ci, is one it refuses).
	testkit.MustExec(t, db, "DROP TABLE IF EXISTS pi2",
		"CREATE TABLE pi2 (id INT PRIMARY KEY, txt TEXT COLLATE utf8mb4_general_ci, val VARCHAR(4) COLLATE utf8mb4_general_ci)",
		"INSERT INTO pi2 VALUES (1, 'a', 'x')")
	t.Cleanup(func() { testkit.MustExec(t, db, "SET SESSION binlog_row_image = FULL", "DROP TABLE IF EXISTS pi2") })
	e := newEngine(t)
	ok := startStream(t, e, Request{Position: "current", Filter: &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "pi2", Filter: "select * from pi2 where val = 'y'"}}}})
	ok.expect("GTID", "OTHER", "VGTID")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	started := make(chan struct{})
	var once sync.Once
	go func() {
		errc <- e.Stream(ctx, Request{Position: "current", Filter: &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "pi2", Filter: "select * from pi2 where txt = 'a'"}}}},
			func([]*binlogdata.VEvent) error { once.Do(func() { close(started) }); return nil })
	}()
	// The stream reads from current: the update must come after its first events.
	select {
	case <-started:
	case err := <-errc:
		t.Fatalf("stream ended before it started: %v", err)
	case <-time.After(15 * time.Second):
		t.Fatal("the stream did not start")
	}
	testkit.MustExec(t, db, "SET SESSION binlog_row_image = NOBLOB", "UPDATE pi2 SET val = 'y' WHERE id = 1", "SET SESSION binlog_row_image = FULL")
	ok.expect("BEGIN", "FIELD pi2 id:INT32 txt:TEXT val:VARCHAR", "ROW pi2 [1 NULL x]>[1 NULL y]", "GTID", "COMMIT", "VGTID")
	select {
	case err := <-errc:
		if !errors.Is(err, ErrSchema) || !strings.Contains(err.Error(), "column txt") || !strings.Contains(err.Error(), "binlog_row_image") {
			t.Errorf("err = %v, want ErrSchema naming column txt and binlog_row_image", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the stream whose filter tests a column left out did not end")
	}
}

// TestPartialImageDuringCopy: a MINIMAL update during a table copy leaves the key out of its
// after image; the change still counts as one to a row the client holds (by its before
// image), so it arrives as an update, not as a delete of a row leaving the copied range. A
// change to a row not copied yet arrives with the row's copy.
func TestPartialImageDuringCopy(t *testing.T) {
	testkit.MustExec(t, db, "DROP TABLE IF EXISTS pic", "CREATE TABLE pic (id INT PRIMARY KEY, val VARCHAR(4))", "INSERT INTO pic VALUES (1, 'a'), (2, 'b'), (3, 'c')")
	t.Cleanup(func() { testkit.MustExec(t, db, "SET SESSION binlog_row_image = FULL", "DROP TABLE IF EXISTS pic") })
	e := newEngine(t)
	ts := startStream(t, e, Request{Filter: &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "pic"}}}, CopyChunkRows: 1})
	ts.expect("BEGIN", "FIELD pic id:INT32 val:VARCHAR", "ROW pic +[1 a]", "LASTPK", "COMMIT", "VGTID")
	testkit.MustExec(t, db, "SET SESSION binlog_row_image = MINIMAL", "UPDATE pic SET val = 'z' WHERE id = 1", "UPDATE pic SET val = 'w' WHERE id = 3",
		"SET SESSION binlog_row_image = FULL")
	// The copy may read rows 2 and 3 before or after the updates run, and the updates may
	// come after the copy has completed; either way row 1's change is an update, and row 3
	// ends as 'w' whether copied so or updated after.
	var rows []string
	row1 := func() bool { return slices.Contains(rows, "ROW pic [1 NULL]>[NULL z]") }
	row3 := func() bool {
		return slices.Contains(rows, "ROW pic +[3 w]") || slices.Contains(rows, "ROW pic +[3 c]") && slices.Contains(rows, "ROW pic [3 NULL]>[NULL w]")
	}
	for !row1() || !row3() {
		ev := ts.next(false)
		if ev.Type == binlogdata.VEventType_ROW {
			rows = append(rows, evtext.Short(ev))
		}
	}
	if slices.ContainsFunc(rows, func(r string) bool { return strings.HasPrefix(r, "ROW pic -") }) {
		t.Errorf("row 1's MINIMAL update must arrive as an update: %v", rows)
	}
}

// TestCompressedColumns: go-mysql cannot read the rows of a table with MariaDB COMPRESSED
// columns. A stream that selects such a table ends with an error naming the column; a stream
// of other tables goes on past its rows.
func TestCompressedColumns(t *testing.T) {
	skipOnMySQL(t, "COMPRESSED columns are MariaDB's")
	testkit.MustExec(t, db, "DROP TABLE IF EXISTS cz1", "DROP TABLE IF EXISTS cz2",
		"CREATE TABLE cz1 (id INT PRIMARY KEY, a TEXT COMPRESSED, b VARCHAR(100) COMPRESSED, c INT)",
		"CREATE TABLE cz2 (id INT PRIMARY KEY)")
	t.Cleanup(func() { testkit.MustExec(t, db, "DROP TABLE IF EXISTS cz1", "DROP TABLE IF EXISTS cz2") })
	e := newEngine(t)
	other := startStream(t, e, Request{Position: "current", Filter: &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "cz2"}}}})
	other.expect("GTID", "OTHER", "VGTID")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	started := make(chan struct{})
	var once sync.Once
	go func() {
		errc <- e.Stream(ctx, Request{Position: "current", Filter: &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "cz1"}}}},
			func([]*binlogdata.VEvent) error { once.Do(func() { close(started) }); return nil })
	}()
	select {
	case <-started:
	case err := <-errc:
		t.Fatalf("stream ended before it started: %v", err)
	case <-time.After(15 * time.Second):
		t.Fatal("the stream did not start")
	}
	testkit.MustExec(t, db, "INSERT INTO cz1 VALUES (1, REPEAT('a', 300), 'b', 3)", "INSERT INTO cz2 VALUES (1)")
	// The other stream reads past cz1's transaction (its rows are not decoded) to cz2's row.
	other.expect("BEGIN", "GTID", "COMMIT", "VGTID")
	other.expect("BEGIN", "FIELD cz2 id:INT32", "ROW cz2 +[1]", "GTID", "COMMIT", "VGTID")
	select {
	case err := <-errc:
		if !errors.Is(err, ErrSchema) || !strings.Contains(err.Error(), "column a") || !strings.Contains(err.Error(), "COMPRESSED") {
			t.Errorf("err = %v, want ErrSchema naming column a and COMPRESSED", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the stream of the table with COMPRESSED columns did not end")
	}
}
