package encodertest_test

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/server"
	"github.com/vstream-cdc/vstream/server/encoder"
	"github.com/vstream-cdc/vstream/server/encoder/encodertest"
)

// fuzzColumns are the column shapes the fuzzer picks from: every type the binlog reader
// produces, with the column types and charsets it gives them.
var fuzzColumns = []*query.Field{
	{Type: query.Type_INT8, ColumnType: "tinyint(4)"},
	{Type: query.Type_UINT8, ColumnType: "tinyint(3) unsigned"},
	{Type: query.Type_INT16, ColumnType: "smallint(6)"},
	{Type: query.Type_UINT16, ColumnType: "smallint(5) unsigned"},
	{Type: query.Type_INT24, ColumnType: "mediumint(9)"},
	{Type: query.Type_UINT24, ColumnType: "mediumint(8) unsigned"},
	{Type: query.Type_INT32, ColumnType: "int(11)"},
	{Type: query.Type_UINT32, ColumnType: "int(10) unsigned"},
	{Type: query.Type_INT64, ColumnType: "bigint(20)"},
	{Type: query.Type_UINT64, ColumnType: "bigint(20) unsigned"},
	{Type: query.Type_FLOAT32, ColumnType: "float"},
	{Type: query.Type_FLOAT64, ColumnType: "double"},
	{Type: query.Type_DECIMAL, ColumnType: "decimal(10,2)", Decimals: 2},
	{Type: query.Type_DECIMAL, ColumnType: "decimal(65,30)", Decimals: 30},
	{Type: query.Type_DATE, ColumnType: "date"},
	{Type: query.Type_DATETIME, ColumnType: "datetime(6)", Decimals: 6},
	{Type: query.Type_DATETIME, ColumnType: "datetime"},
	{Type: query.Type_TIMESTAMP, ColumnType: "timestamp(3)", Decimals: 3},
	{Type: query.Type_TIME, ColumnType: "time(2)", Decimals: 2},
	{Type: query.Type_YEAR, ColumnType: "year(4)"},
	{Type: query.Type_CHAR, ColumnType: "char(5)", Charset: 45},
	{Type: query.Type_VARCHAR, ColumnType: "varchar(20)", Charset: 8},
	{Type: query.Type_VARCHAR, ColumnType: "varchar(20)", Charset: 28},
	{Type: query.Type_TEXT, ColumnType: "text", Charset: 54},
	{Type: query.Type_TEXT, ColumnType: "longtext", Charset: 46},
	{Type: query.Type_BINARY, ColumnType: "binary(4)", Charset: 63},
	{Type: query.Type_VARBINARY, ColumnType: "varbinary(10)", Charset: 63},
	{Type: query.Type_BLOB, ColumnType: "blob", Charset: 63},
	{Type: query.Type_BIT, ColumnType: "bit(10)", Charset: 63},
	{Type: query.Type_BIT, ColumnType: "bit(1)", Charset: 63},
	{Type: query.Type_ENUM, ColumnType: "enum('a','b','c')", Charset: 45},
	{Type: query.Type_SET, ColumnType: "set('x','y','z')", Charset: 45},
	{Type: query.Type_JSON, ColumnType: "json", Charset: 63},
	{Type: query.Type_GEOMETRY, ColumnType: "geometry", Charset: 63},
}

// FuzzEncoders runs rows of any column types and any cell bytes through every format, in
// the binlog and the copy: an encoder may refuse a cell with an error, but must not panic.
func FuzzEncoders(f *testing.F) {
	f.Add([]byte{8, 12, 21, 30}, []byte("42\xff1.50\xffcafé\xffb"), false)
	f.Add([]byte{0, 14, 17, 18, 33}, []byte("-1\xff0000-00-00\xff\xff-838:59:59.99\xff\x01\x02"), true)
	f.Add([]byte{9, 10, 11, 28, 31}, []byte("18446744073709551615\xff1E+40\xffNaN\xff\x03\xff"), false)
	f.Add([]byte{32, 23, 24, 25}, []byte("{\"a\":1\xff\x00\xe9\xff\xd8\x3d\xff\x01\x02\x03\x04\x05"), true)
	f.Fuzz(func(t *testing.T, types, cells []byte, snapshot bool) {
		if len(types) == 0 || len(types) > 12 {
			return
		}
		fields := make([]*query.Field, len(types))
		for i, ty := range types {
			c := proto.CloneOf(fuzzColumns[int(ty)%len(fuzzColumns)])
			c.Name = string(rune('a' + i))
			if i == 0 {
				c.Flags = uint32(query.MySqlFlag_PRI_KEY_FLAG | query.MySqlFlag_NOT_NULL_FLAG)
			}
			fields[i] = c
		}
		// Cells are separated by 0xff; an empty part is NULL when it follows 0xfe.
		parts := bytes.Split(cells, []byte{0xff})
		row := &query.Row{}
		for i := range fields {
			var p []byte
			if i < len(parts) {
				p = parts[i]
			}
			if len(p) == 1 && p[0] == 0xfe {
				row.Lengths = append(row.Lengths, -1)
				continue
			}
			row.Lengths = append(row.Lengths, int64(len(p)))
			row.Values = append(row.Values, p...)
		}
		events := fuzzEvents(fields, row, snapshot)
		for _, format := range server.Formats[1:] {
			enc, err := server.NewEncoder(format, nil, encoder.Params{Clock: encodertest.Clock(1700000000000),
				Database: "fz", Flavor: "mariadb", Keyspace: "fz"})
			if err != nil {
				t.Fatal(err)
			}
			var out []*vstreamv1.EncodedMessage
			for _, ev := range events {
				// Errors are allowed; a panic fails the fuzzer.
				out, _ = enc.Encode(out[:0], ev)
			}
		}
	})
}

// fuzzEvents is an insert, an update and a delete of a row, in a copy chunk or a binlog
// transaction, and a DDL.
func fuzzEvents(fields []*query.Field, row *query.Row, snapshot bool) []*binlogdata.VEvent {
	src := func() *binlogdata.EventSource {
		return &binlogdata.EventSource{File: "binlog.000001", StartPos: 4, EndPos: 100, Database: "fz", Snapshot: snapshot}
	}
	fe := &binlogdata.VEvent{Type: binlogdata.VEventType_FIELD, Source: src(),
		FieldEvent: &binlogdata.FieldEvent{TableName: "t", Fields: fields, EnumSetStringValues: true}}
	rowEv := func(changes ...*binlogdata.RowChange) *binlogdata.VEvent {
		return &binlogdata.VEvent{Type: binlogdata.VEventType_ROW, Timestamp: 1700000000, Source: src(),
			RowEvent: &binlogdata.RowEvent{TableName: "t", RowChanges: changes}}
	}
	evs := []*binlogdata.VEvent{{Type: binlogdata.VEventType_BEGIN, Source: src()}, fe}
	if snapshot {
		fe.Source.CreateTable = "CREATE TABLE t (...)"
		evs = append(evs, rowEv(&binlogdata.RowChange{After: row}),
			&binlogdata.VEvent{Type: binlogdata.VEventType_LASTPK, LastPKEvent: &binlogdata.LastPKEvent{
				TableLastPK: &binlogdata.TableLastPK{TableName: "t"}, Completed: true}},
			&binlogdata.VEvent{Type: binlogdata.VEventType_COPY_COMPLETED, LastPKEvent: &binlogdata.LastPKEvent{
				TableLastPK: &binlogdata.TableLastPK{TableName: "t"}, Completed: true}},
			&binlogdata.VEvent{Type: binlogdata.VEventType_COPY_COMPLETED})
	} else {
		evs = append(evs, rowEv(&binlogdata.RowChange{After: row}), rowEv(&binlogdata.RowChange{Before: row, After: row}),
			rowEv(&binlogdata.RowChange{Before: row}))
	}
	return append(evs, &binlogdata.VEvent{Type: binlogdata.VEventType_COMMIT, Source: src()},
		&binlogdata.VEvent{Type: binlogdata.VEventType_DDL, Statement: "ALTER TABLE t ADD COLUMN z INT", Source: src()})
}
