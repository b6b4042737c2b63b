package vstreamer

import (
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/internal/testkit"
	"github.com/vstream-cdc/vstream/internal/testkit/evtext"
)

// TestAppendTemporal prints packed binary-protocol values as the server prints them in the
// text protocol: every length the server packs a value in, days of a TIME as hours, and the
// column's fractional digits whether or not the value has a fraction.
func TestAppendTemporal(t *testing.T) {
	for _, c := range []struct {
		name   string
		typ    byte
		fsp    int
		packed []byte
		want   string
	}{
		{"zero date", mysql.MYSQL_TYPE_DATE, 0, nil, "0000-00-00"},
		{"date", mysql.MYSQL_TYPE_DATE, 0, []byte{0xe8, 0x07, 2, 29}, "2024-02-29"},
		{"date of year 5", mysql.MYSQL_TYPE_DATE, 0, []byte{5, 0, 1, 1}, "0005-01-01"},
		{"zero datetime(3)", mysql.MYSQL_TYPE_DATETIME, 3, nil, "0000-00-00 00:00:00.000"},
		{"datetime at midnight", mysql.MYSQL_TYPE_DATETIME, 0, []byte{0xe8, 0x07, 12, 31}, "2024-12-31 00:00:00"},
		{"datetime", mysql.MYSQL_TYPE_DATETIME, 0, []byte{0xe8, 0x07, 12, 31, 23, 59, 59}, "2024-12-31 23:59:59"},
		{"datetime(3) without fraction", mysql.MYSQL_TYPE_DATETIME, 3, []byte{0xe8, 0x07, 1, 2, 3, 4, 5}, "2024-01-02 03:04:05.000"},
		{"datetime(6)", mysql.MYSQL_TYPE_DATETIME, 6, []byte{0xe8, 0x03, 1, 1, 0, 0, 0, 1, 0, 0, 0}, "1000-01-01 00:00:00.000001"},
		{"timestamp(3)", mysql.MYSQL_TYPE_TIMESTAMP, 3, []byte{0xf6, 0x07, 1, 19, 3, 14, 7, 0x20, 0xa1, 0x07, 0}, "2038-01-19 03:14:07.500"},
		{"zero time(2)", mysql.MYSQL_TYPE_TIME, 2, nil, "00:00:00.00"},
		{"time", mysql.MYSQL_TYPE_TIME, 0, []byte{0, 0, 0, 0, 0, 12, 34, 56}, "12:34:56"},
		{"time of days", mysql.MYSQL_TYPE_TIME, 0, []byte{1, 34, 0, 0, 0, 22, 59, 59}, "-838:59:59"},
		{"negative time(3)", mysql.MYSQL_TYPE_TIME, 3, []byte{1, 0, 0, 0, 0, 1, 2, 3, 0x20, 0xa1, 0x07, 0}, "-01:02:03.500"},
		{"time(6)", mysql.MYSQL_TYPE_TIME, 6, []byte{0, 34, 0, 0, 0, 22, 59, 59, 1, 0, 0, 0}, "838:59:59.000001"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := appendTemporal([]byte("x"), c.typ, c.fsp, c.packed)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != "x"+c.want {
				t.Errorf("got %q, want %q", got[1:], c.want)
			}
		})
	}
	for _, typ := range []byte{mysql.MYSQL_TYPE_DATETIME, mysql.MYSQL_TYPE_TIME} {
		if _, err := appendTemporal(nil, typ, 0, []byte{1, 2, 3}); err == nil {
			t.Errorf("type %d: a packed value of 3 bytes printed without an error", typ)
		}
	}
}

// TestCopyTemporalsBothPaths copies dates and times read packed in the binary protocol, with
// the table whole (printed straight into the row) and through a rule that filters and
// projects (printed into the row's values first), and checks both against the rows the
// binlog carries for the same values.
func TestCopyTemporalsBothPaths(t *testing.T) {
	testkit.MustExec(t, db, "DROP TABLE IF EXISTS ctemp",
		`CREATE TABLE ctemp (id INT PRIMARY KEY, d DATE, dt DATETIME(3), ts TIMESTAMP(6) NULL, tm TIME(2), t0 TIME)`)
	e := newEngine(t)
	bs := startStream(t, e, Request{Position: "current", Filter: rules(&binlogdata.Rule{Match: "ctemp"})})
	bs.expect("GTID", "OTHER", "VGTID")
	testkit.MustExec(t, db, "SET time_zone = '+00:00'", "SET SESSION sql_mode = ''",
		`INSERT INTO ctemp VALUES
		(1, '2024-02-29', '2024-12-31 23:59:59.125', '2038-01-19 03:14:07.000001', '-838:59:59.99', '838:59:59'),
		(2, '0000-00-00', '0000-00-00 00:00:00', NULL, '00:00:00', '-00:00:01'),
		(3, '0005-01-01', '2024-01-02 00:00:00', '1970-01-01 00:00:01', '-00:00:00.5', '12:34:56'),
		(4, NULL, NULL, NULL, NULL, NULL)`,
		"SET time_zone = SYSTEM", "SET SESSION sql_mode = DEFAULT")
	evs := bs.expect("BEGIN", "FIELD", "ROW", "GTID", "COMMIT", "VGTID")
	var binlog [][][]byte
	for _, rc := range evs[2].RowEvent.RowChanges {
		binlog = append(binlog, evtext.Cells(rc.After))
	}
	copyRows := func(rule *binlogdata.Rule) [][][]byte {
		cs := startStream(t, e, Request{Filter: rules(rule)})
		var rows [][][]byte
		for {
			ev := cs.next(false)
			switch ev.Type {
			case binlogdata.VEventType_ROW:
				for _, rc := range ev.RowEvent.RowChanges {
					rows = append(rows, evtext.Cells(rc.After))
				}
			case binlogdata.VEventType_COPY_COMPLETED:
				if ev.LastPKEvent.GetTableLastPK() == nil {
					return rows
				}
			}
		}
	}
	whole := copyRows(&binlogdata.Rule{Match: "ctemp"})
	filtered := copyRows(&binlogdata.Rule{Match: "ctemp", Filter: "select tm, id, dt, t0, ts, d from ctemp where id > 0"})
	if len(whole) != len(binlog) || len(filtered) != len(binlog) {
		t.Fatalf("rows: binlog %d, whole copy %d, filtered copy %d", len(binlog), len(whole), len(filtered))
	}
	for r, b := range binlog {
		for c := range b {
			if w := whole[r][c]; string(w) != string(b[c]) || (w == nil) != (b[c] == nil) {
				t.Errorf("row %d column %d: binlog %q, whole copy %q", r+1, c, b[c], w)
			}
		}
		// The rule's order: tm, id, dt, t0, ts, d.
		for i, c := range []int{4, 0, 2, 5, 3, 1} {
			if f := filtered[r][i]; string(f) != string(b[c]) || (f == nil) != (b[c] == nil) {
				t.Errorf("row %d column %d: binlog %q, filtered copy %q", r+1, c, b[c], f)
			}
		}
	}
}
