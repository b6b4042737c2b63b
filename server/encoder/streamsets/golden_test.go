package streamsets

import (
	"testing"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
)

// The golden records are written by hand from the specification; testdata/README.md lists,
// for each file, its input events and the rule behind every expected value.

var goldenAllTypes = []*query.Field{
	{Name: "id", Type: query.Type_INT32, ColumnType: "int(11)", Flags: uint32(query.MySqlFlag_NOT_NULL_FLAG | query.MySqlFlag_PRI_KEY_FLAG)},
	{Name: "tu", Type: query.Type_UINT8, ColumnType: "tinyint(3) unsigned"},
	{Name: "bu", Type: query.Type_UINT64, ColumnType: "bigint(20) unsigned"},
	{Name: "f", Type: query.Type_FLOAT32, ColumnType: "float"},
	{Name: "d", Type: query.Type_FLOAT64, ColumnType: "double"},
	{Name: "dec", Type: query.Type_DECIMAL, ColumnType: "decimal(5,2)", Decimals: 2},
	{Name: "dt", Type: query.Type_DATE, ColumnType: "date"},
	{Name: "dtm6", Type: query.Type_DATETIME, ColumnType: "datetime(6)", Decimals: 6},
	{Name: "ts", Type: query.Type_TIMESTAMP, ColumnType: "timestamp(3)", Decimals: 3},
	{Name: "tm", Type: query.Type_TIME, ColumnType: "time"},
	{Name: "y", Type: query.Type_YEAR, ColumnType: "year(4)"},
	{Name: "c", Type: query.Type_CHAR, ColumnType: "char(5)", Charset: 45},
	{Name: "vc", Type: query.Type_VARCHAR, ColumnType: "varchar(64)", Charset: 45},
	{Name: "bn", Type: query.Type_BINARY, ColumnType: "binary(4)", Charset: 63},
	{Name: "bl", Type: query.Type_BLOB, ColumnType: "blob", Charset: 63},
	{Name: "bt", Type: query.Type_BIT, ColumnType: "bit(10)", Charset: 63},
	{Name: "e", Type: query.Type_ENUM, ColumnType: "enum('a','b','c')", Charset: 45},
	{Name: "st", Type: query.Type_SET, ColumnType: "set('x','y','z')", Charset: 45},
	{Name: "j", Type: query.Type_JSON, ColumnType: "json"},
	{Name: "g", Type: query.Type_GEOMETRY, ColumnType: "geometry", Charset: 63},
	{Name: "n", Type: query.Type_INT32, ColumnType: "int(11)"},
}

var goldenUsers = []*query.Field{
	{Name: "id", Type: query.Type_INT32, ColumnType: "int(11)", Flags: uint32(query.MySqlFlag_NOT_NULL_FLAG | query.MySqlFlag_PRI_KEY_FLAG)},
	{Name: "name", Type: query.Type_VARCHAR, ColumnType: "varchar(32)", Charset: 45},
	{Name: "score", Type: query.Type_FLOAT64, ColumnType: "double"},
}

func TestGolden(t *testing.T) {
	const mysqlUUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
	rowSrc := func(file string, start, end uint64, serverID uint32, db string, ordinal uint32) *binlogdata.EventSource {
		return &binlogdata.EventSource{File: file, StartPos: start, EndPos: end, ServerId: serverID, Database: db, RowsEventOrdinal: ordinal}
	}
	snap := &binlogdata.EventSource{File: "mariadb-bin.000001", StartPos: 4711, EndPos: 4711, Database: "shop", GtidSet: "MariaDB/0-1-40", Snapshot: true}
	cases := []struct {
		file    string
		opts    map[string]string
		clockMs int64
		evs     []*binlogdata.VEvent
		header  string
	}{
		{
			file: "insert-alltypes-gtid-mariadb.json",
			evs: []*binlogdata.VEvent{
				{Type: binlogdata.VEventType_BEGIN, Timestamp: 1700000000, EventGtid: "0-1-42",
					Source: &binlogdata.EventSource{File: "mariadb-bin.000001", StartPos: 900, EndPos: 940, ServerId: 1, GtidSet: "MariaDB/0-1-42"}},
				fieldEv("alltypes", goldenAllTypes, rowSrc("mariadb-bin.000001", 940, 1000, 1, "inventory", 0)),
				{Type: binlogdata.VEventType_ROW, Timestamp: 1700000000, EventGtid: "0-1-42", Source: rowSrc("mariadb-bin.000001", 1000, 1234, 1, "inventory", 1),
					RowEvent: &binlogdata.RowEvent{TableName: "alltypes", RowChanges: []*binlogdata.RowChange{{After: row(
						"1", "255", "18446744073709551615", "1.2510357E+07", "-3.141592653589793E+00", ".50",
						"2024-02-29", "2020-02-29 12:34:56.789012", "2038-01-19 03:14:07.499", "-838:59:59", "2155",
						"ab", "h\u00e9llo \"q\" \\ \n", "\x00\xff\x10\x00", "\xde\xad\xbe\xef", "\x02\xaa", "b", "x,z", `{"a": [1, 2.5]}`,
						"\x00\x00\x00\x00\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\xf0?\x00\x00\x00\x00\x00\x00\x00@", nil)}}}},
			},
			header: OpInsert,
		},
		{
			file: "update-file.json",
			opts: map[string]string{"offset": "file"},
			evs: []*binlogdata.VEvent{
				{Type: binlogdata.VEventType_BEGIN, Timestamp: 1731068693, EventGtid: "0-3-9", Source: &binlogdata.EventSource{GtidSet: "MariaDB/0-3-9"}},
				fieldEv("users", goldenUsers, nil),
				{Type: binlogdata.VEventType_ROW, Timestamp: 1731068693, EventGtid: "0-3-9", Source: rowSrc("mysql-bin.000004", 8740, 8812, 3, "shop", 1),
					RowEvent: &binlogdata.RowEvent{TableName: "users", RowChanges: []*binlogdata.RowChange{
						{Before: row("7", "ann", "8.6E+01"), After: row("7", "ann", "9.55E+01")}}}},
			},
			header: OpUpdate,
		},
		{
			file: "delete-gtid-mysql.json",
			evs: []*binlogdata.VEvent{
				{Type: binlogdata.VEventType_BEGIN, Timestamp: 1731068713, EventGtid: mysqlUUID + ":23",
					Source: &binlogdata.EventSource{File: "mysql-bin.000004", ServerId: 3, GtidSet: "MySQL56/" + mysqlUUID + ":1-23"}},
				fieldEv("users", goldenUsers, nil),
				{Type: binlogdata.VEventType_ROW, Timestamp: 1731068713, EventGtid: mysqlUUID + ":23", Source: rowSrc("mysql-bin.000004", 9100, 9160, 3, "shop", 2),
					RowEvent: &binlogdata.RowEvent{TableName: "users", RowChanges: []*binlogdata.RowChange{{Before: row("7", "ann", "9.55E+01")}}}},
			},
			header: OpDelete,
		},
		{
			file:    "snapshot-insert-gtid.json",
			clockMs: 1700000000123,
			evs: []*binlogdata.VEvent{
				{Type: binlogdata.VEventType_BEGIN, Source: snap},
				fieldEv("users", goldenUsers, snap),
				{Type: binlogdata.VEventType_ROW, Source: snap,
					RowEvent: &binlogdata.RowEvent{TableName: "users", RowChanges: []*binlogdata.RowChange{{After: row("1", "bob", nil)}}}},
				{Type: binlogdata.VEventType_COMMIT},
			},
			header: OpInsert,
		},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			out := encode(t, newEncoder(t, "fallback", c.clockMs, c.opts), c.evs...)
			if len(out) != 1 {
				t.Fatalf("%d messages, want 1", len(out))
			}
			golden(t, out[0].Value, "testdata/"+c.file)
			want := vstreamv1.EncodedMessage{Format: "streamsets", Headers: map[string]string{"sdc.operation.type": c.header}}
			if out[0].Format != want.Format || len(out[0].Headers) != 1 || out[0].Headers["sdc.operation.type"] != c.header ||
				len(out[0].Key) != 0 || out[0].Topic != "" || out[0].Tombstone {
				t.Errorf("message %+v, want format, headers %v and no key, topic or tombstone", out[0], want.Headers)
			}
		})
	}
}
