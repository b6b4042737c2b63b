package canaljson

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	"github.com/vstream-cdc/vstream/server/encoder"
	"github.com/vstream-cdc/vstream/server/encoder/encodertest"
)

// Shared test helpers.
var (
	row    = encodertest.Row
	encode = encodertest.Encode
)

func newEncoder(t *testing.T, db string, clockMs int64, opts map[string]string) *Encoder {
	t.Helper()
	return encodertest.New(t, New, encoder.Params{Database: db, Clock: func() time.Time { return time.UnixMilli(clockMs) }}, opts)
}

var dtsTestFields = []*query.Field{
	{Name: "id", Type: query.Type_INT32, ColumnType: "int(11)", Flags: uint32(query.MySqlFlag_NOT_NULL_FLAG | query.MySqlFlag_PRI_KEY_FLAG)},
	{Name: "name", Type: query.Type_CHAR, ColumnType: "char(255)", Charset: 45},
	{Name: "message", Type: query.Type_TEXT, ColumnType: "longtext", Charset: 45},
}

// The Volcengine DTS examples (golden files from the format's documentation).
func TestGoldenDTS(t *testing.T) {
	e := newEncoder(t, "dts_test", 1682578031120, map[string]string{"profile": "dts"})
	out := encode(t, e, &binlogdata.VEvent{Type: binlogdata.VEventType_DDL, Timestamp: 1682578031,
		Statement: "CREATE TABLE test (id INT NOT NULL PRIMARY KEY, name CHAR(255), message LONGTEXT)"})
	if len(out) != 1 {
		t.Fatalf("%d messages for a DDL", len(out))
	}
	encodertest.SameJSONFile(t, out[0].Value, "testdata/000-dts-canal-json-ddl.json")

	e = newEncoder(t, "dts_test", 1682578770185, map[string]string{"profile": "dts"})
	out = encode(t, e,
		&binlogdata.VEvent{Type: binlogdata.VEventType_FIELD, FieldEvent: &binlogdata.FieldEvent{TableName: "test", Fields: dtsTestFields}},
		&binlogdata.VEvent{Type: binlogdata.VEventType_ROW, Timestamp: 1682578770, RowEvent: &binlogdata.RowEvent{TableName: "test",
			RowChanges: []*binlogdata.RowChange{{After: row("1", "Bob", "This is a longtext")}}}})
	if len(out) != 1 {
		t.Fatalf("%d messages for one row", len(out))
	}
	encodertest.SameJSONFile(t, out[0].Value, "testdata/000-dts-canal-json-insert.json")
	if string(out[0].Key) != "dts_test.test:1" || out[0].Format != "canal-json" {
		t.Errorf("key %q format %q", out[0].Key, out[0].Format)
	}
}

func TestCanalValuesAndUpdates(t *testing.T) {
	fields := []*query.Field{
		{Name: "id", Type: query.Type_UINT64, ColumnType: "bigint(20) unsigned", Flags: uint32(query.MySqlFlag_PRI_KEY_FLAG)},
		{Name: "f", Type: query.Type_FLOAT32, ColumnType: "float"},
		{Name: "d", Type: query.Type_FLOAT64, ColumnType: "double"},
		{Name: "b", Type: query.Type_BIT, ColumnType: "bit(10)"},
		{Name: "e", Type: query.Type_ENUM, ColumnType: "enum('x','y')"},
		{Name: "s", Type: query.Type_SET, ColumnType: "set('a','b','c')"},
		{Name: "bin", Type: query.Type_BINARY, ColumnType: "binary(4)", Charset: 63},
		{Name: "ts", Type: query.Type_TIMESTAMP, ColumnType: "timestamp(3)"},
		{Name: "j", Type: query.Type_JSON, ColumnType: "json"},
	}
	e := newEncoder(t, "db", 1000, map[string]string{"render_zone": "Asia/Shanghai"})
	field := &binlogdata.VEvent{Type: binlogdata.VEventType_FIELD, FieldEvent: &binlogdata.FieldEvent{TableName: "t", Fields: fields}}
	before := row("18446744073709551615", "8.6E+01", "1.2510357E+07", "\x02\xaa", "y", "a,c", "\x01\xff\x00\x00", "2024-01-01 00:00:00.500", nil)
	after := row("18446744073709551615", "8.6E+01", "1.5E-05", "\x02\xaa", "", "", "\x01\xff\x00\x00", "2024-01-01 00:00:00.500", nil)
	out := encode(t, e, field, &binlogdata.VEvent{Type: binlogdata.VEventType_ROW, Timestamp: 5, RowEvent: &binlogdata.RowEvent{TableName: "t",
		RowChanges: []*binlogdata.RowChange{{Before: before, After: after}}}})
	var m map[string]any
	if err := json.Unmarshal(out[0].Value, &m); err != nil {
		t.Fatal(err)
	}
	data := m["data"].([]any)[0].(map[string]any)
	want := map[string]any{"id": "18446744073709551615", "f": "86.0", "d": "1.5E-5", "b": "682", "e": "0", "s": "0",
		"bin": "\u0001\u00ff", "ts": "2024-01-01 08:00:00.500", "j": nil}
	if !reflect.DeepEqual(data, want) {
		t.Errorf("data = %v\nwant %v", data, want)
	}
	old := m["old"].([]any)[0].(map[string]any)
	if wantOld := map[string]any{"d": "1.2510357E7", "e": "2", "s": "5"}; !reflect.DeepEqual(old, wantOld) {
		t.Errorf("old (changed columns) = %v, want %v", old, wantOld)
	}
	sqlType := m["sqlType"].(map[string]any)
	if sqlType["id"] != 3.0 || sqlType["f"] != 7.0 || sqlType["s"] != -7.0 || sqlType["j"] != 1111.0 || sqlType["bin"] != 2004.0 {
		t.Errorf("sqlType = %v", sqlType)
	}
	if m["es"] != 5000.0 || m["ts"] != 1000.0 || m["type"] != "UPDATE" || m["pgType"] != nil {
		t.Errorf("es/ts/type/pgType = %v %v %v %v", m["es"], m["ts"], m["type"], m["pgType"])
	}
	if _, has := m["pgType"]; has {
		t.Error("the canal profile has no pgType")
	}
}

func TestRowsPerMessageAndDelete(t *testing.T) {
	field := &binlogdata.VEvent{Type: binlogdata.VEventType_FIELD, FieldEvent: &binlogdata.FieldEvent{TableName: "test", Fields: dtsTestFields}}
	del := &binlogdata.VEvent{Type: binlogdata.VEventType_ROW, Timestamp: 1, RowEvent: &binlogdata.RowEvent{TableName: "test",
		RowChanges: []*binlogdata.RowChange{{Before: row("1", "a", nil)}, {Before: row("2", "b", nil)}}}}
	out := encode(t, newEncoder(t, "db", 0, nil), field, del)
	if len(out) != 2 || !strings.Contains(string(out[1].Value), `"type":"DELETE"`) || !strings.Contains(string(out[1].Value), `"data":[{"id":"2","name":"b","message":null}]`) {
		t.Fatalf("one message per row: %d\n%s", len(out), out[len(out)-1].Value)
	}
	out = encode(t, newEncoder(t, "db", 0, map[string]string{"rows_per_message": "event", "id": "sequence"}), field, del)
	if len(out) != 1 || !strings.Contains(string(out[0].Value), `"data":[{"id":"1","name":"a","message":null},{"id":"2","name":"b","message":null}]`) ||
		!strings.HasPrefix(string(out[0].Value), `{"id":1,`) {
		t.Fatalf("one message per event:\n%s", out[0].Value)
	}
}

func TestOptions(t *testing.T) {
	o := encoder.NewOptions(map[string]string{"profile": "kafka"})
	if _, err := New(encoder.Params{Options: o, Clock: time.Now}); err == nil || !strings.Contains(err.Error(), "canal, dts") {
		t.Errorf("bad profile: %v", err)
	}
	o = encoder.NewOptions(map[string]string{"colour": "blue"})
	if _, err := New(encoder.Params{Options: o, Clock: time.Now}); err != nil {
		t.Fatal(err)
	}
	if err := o.Unknown(); err == nil || !strings.Contains(err.Error(), "colour") || !strings.Contains(err.Error(), "rows_per_message") {
		t.Errorf("unknown option: %v", err)
	}
}

// A column that a NOBLOB or MINIMAL row image left out (data_columns) is left out of data and
// old, as canal lists only the columns the binlog row holds; a real NULL stays null.
func TestColumnsNotLogged(t *testing.T) {
	fields := []*query.Field{
		{Name: "id", Type: query.Type_INT32, ColumnType: "int(11)", Flags: uint32(query.MySqlFlag_PRI_KEY_FLAG)},
		{Name: "blb", Type: query.Type_BLOB, ColumnType: "blob", Charset: 63},
		{Name: "val", Type: query.Type_VARCHAR, ColumnType: "varchar(4)"},
		{Name: "n", Type: query.Type_VARCHAR, ColumnType: "varchar(4)"},
	}
	field := &binlogdata.VEvent{Type: binlogdata.VEventType_FIELD, FieldEvent: &binlogdata.FieldEvent{TableName: "t", Fields: fields}}
	upd := &binlogdata.VEvent{Type: binlogdata.VEventType_ROW, Timestamp: 1, RowEvent: &binlogdata.RowEvent{TableName: "t",
		RowChanges: []*binlogdata.RowChange{{Before: row("1", nil, "aaa", "x"), After: row("1", nil, "bbb", nil),
			DataColumns: &binlogdata.RowChange_Bitmap{Count: 4, Cols: []byte{0b1101}}}}}}
	out := encode(t, newEncoder(t, "db", 0, nil), field, upd)
	if got := string(out[0].Value); !strings.Contains(got, `"data":[{"id":"1","val":"bbb","n":null}]`) || !strings.Contains(got, `"old":[{"val":"aaa","n":"x"}]`) {
		t.Errorf("the column not logged must be left out of data and old:\n%s", got)
	}
}
