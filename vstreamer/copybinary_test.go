package vstreamer

import (
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
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
