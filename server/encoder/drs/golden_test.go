package drs

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

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

// clock is an injectable clock the test moves.
type clock struct{ ms int64 }

func (c *clock) now() time.Time { return time.UnixMilli(c.ms) }

func newEnc(t testing.TB, jsonc bool, db string, c *clock, opts map[string]string) *Encoder {
	t.Helper()
	build := NewJSON
	if jsonc {
		build = NewJSONC
	}
	return encodertest.New(t, build, encoder.Params{Database: db, Clock: c.now}, opts)
}

func fieldEvent(table string, src *binlogdata.EventSource, fields ...*query.Field) *binlogdata.VEvent {
	return &binlogdata.VEvent{Type: binlogdata.VEventType_FIELD, Source: src,
		FieldEvent: &binlogdata.FieldEvent{TableName: table, Fields: fields, EnumSetStringValues: true}}
}

func rowEvent(table string, ts int64, src *binlogdata.EventSource, changes ...*binlogdata.RowChange) *binlogdata.VEvent {
	return &binlogdata.VEvent{Type: binlogdata.VEventType_ROW, Timestamp: ts, Source: src,
		RowEvent: &binlogdata.RowEvent{TableName: table, RowChanges: changes}}
}

// mustContain asserts lexical details that parsing hides.
func mustContain(t *testing.T, got []byte, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(string(got), p) {
			t.Errorf("output lacks %s\n%s", p, got)
		}
	}
}

func field(name string, typ query.Type, columnType string, flags query.MySqlFlag) *query.Field {
	f := &query.Field{Name: name, Type: typ, ColumnType: columnType, Flags: uint32(flags)}
	if f.Type == query.Type_BINARY || f.Type == query.Type_VARBINARY || f.Type == query.Type_BLOB || f.Type == query.Type_BIT {
		f.Charset = 63
	} else {
		f.Charset = 45
	}
	return f
}

// The table of the DRS examples; the lengths are not in the format and are chosen to fit the
// values.
var test01Fields = []*query.Field{
	field("id", query.Type_INT32, "int(11)", query.MySqlFlag_PRI_KEY_FLAG|query.MySqlFlag_NOT_NULL_FLAG),
	field("c1", query.Type_VARCHAR, "varchar(255)", 0),
	field("c2", query.Type_VARBINARY, "varbinary(255)", 0),
	field("c3", query.Type_INT32, "int(11)", 0),
	field("c4", query.Type_DATETIME, "datetime", 0),
	field("c5", query.Type_TIMESTAMP, "timestamp(3)", 0),
	field("c6", query.Type_CHAR, "char(255)", 0),
	field("c7", query.Type_FLOAT32, "float", 0),
	field("c8", query.Type_FLOAT64, "double", 0),
	field("c9", query.Type_DECIMAL, "decimal(20,0)", 0),
	field("c10", query.Type_VARCHAR, "varchar(255)", 0),
	field("c11", query.Type_BINARY, "binary(255)", 0),
	field("c12", query.Type_VARBINARY, "varbinary(255)", 0),
	field("c13", query.Type_TEXT, "text", 0),
	field("c14", query.Type_BLOB, "blob", 0),
}

const (
	test01C12     = "jgojgoidsjgojosog934094309tjhrgjew9tu09340teroejg98304ieurg9ewurg0weut9r04u095tu3092ut093ut0w9e"
	test01C14     = `jgojgoidsjgojosog934094309tjhrgjew9tu09340teroejg98304i79846546661465!@#$%^*()_)+_+|}"?>::eurg9ewurg0weut9r04u095tu3092ut093ut0w9e`
	test01C13     = "asfiajhfiaf939-0239"
	test01C13Long = test01C13 + "uoituqorjoqirfoidjfqrniowejoiwqjroqwjrowqjojoiqgoiegnkjgoi23roiugouofdug9u90weurtg103"
)

// test01Row is a row of the examples as the binlog reader gives it: TIMESTAMP in UTC, FLOAT
// and DOUBLE in Go's exponent form, BINARY c11 empty as the examples show it.
func test01Row(id, c13 string) *query.Row {
	return row(id, "cf3f70a7-7565-44b0-ae3c-83bec549ea8e:104", "", "103", "2021-06-25 17:51:53",
		"2021-06-25 09:51:53.201", "!@#$%90weurtg103", "1.0357E+04", "1.2510357E+07", "9874510357", "cloud",
		"", test01C12, c13, test01C14)
}

// lexical checks shared by the examples' rows.
var test01Lexical = []string{`"c7":"10357.0"`, `"c8":"1.2510357E7"`, `"c5":"1624614713.201"`, `"c11":"[]"`, `"c2":"[]"`,
	`"c12":"[106, 103, 111, `, `, 33, 64, 35, 36, 37, 94, 42, 40, 41, 95, 41, 43, 95, 43, 124, 125, 34, 63, 62, 58, 58, `}

// The UPDATE example. Its table is "test " with a trailing space (the INIT example says
// "test"); the input table is named so, to compare the file unchanged.
func TestGoldenUpdate(t *testing.T) {
	c := &clock{ms: 1625058726990}
	e := newEnc(t, false, "test01", c, map[string]string{"id_start": "27677"})
	out := encode(t, e, fieldEvent("test ", nil, test01Fields...),
		rowEvent("test ", 1624614713, nil, &binlogdata.RowChange{Before: test01Row("103", test01C13), After: test01Row("104", test01C13Long)}))
	if len(out) != 1 {
		t.Fatalf("%d messages for one update", len(out))
	}
	encodertest.SameJSONFile(t, out[0].Value, "testdata/001-drs-json-update.json")
	mustContain(t, out[0].Value, append([]string{`"id":27677,`, `"es":1624614713000,`, `"ts":1625058726990,`}, test01Lexical...)...)
	if out[0].Format != NameJSON || string(out[0].Key) != "test01.test :104" {
		t.Errorf("format %q key %q", out[0].Format, out[0].Key)
	}
}

// The full-sync examples, from one copy: the FIELD event opening the table's copy gives
// INIT_DDL, the copied row INIT. The examples were not taken from one run (their columns and
// clocks differ), so the clock moves between the two events and the FIELD event carries the
// fifteen columns of the row while its CREATE TABLE text is the INIT_DDL example's.
func TestGoldenFullSync(t *testing.T) {
	const (
		jobID   = "e28c0c1e-e3ab-4f6c-bbc2-69c28670deec"
		shardID = "c66c15af-747b-4bd6-9b5d-de2e8e38f935"
	)
	c := &clock{ms: 1733998006282}
	e := newEnc(t, false, "other", c, map[string]string{"id_start": "27677", "job_id": jobID})
	var shardNames []string
	e.newUUID = func(name string) string {
		shardNames = append(shardNames, name)
		return shardID
	}
	src := &binlogdata.EventSource{File: "mysql-bin.000065", StartPos: 800, EndPos: 800, Database: "test01",
		GtidSet: "MySQL56/2bf665dc-f8e2-11eb-bcfd-6c4b90b9d8b3:1-251167", Snapshot: true}
	fieldSrc := proto.CloneOf(src)
	// SHOW CREATE TABLE as the server prints it, on several lines.
	fieldSrc.CreateTable = "CREATE TABLE `test` (\n  `id` int(11) NOT NULL AUTO_INCREMENT,\n  `c1` varchar(255) DEFAULT NULL,\n" +
		"  `c2` blob,\n  `c3` longblob,\n  `c4` bit(2) DEFAULT NULL,\n  `c5` binary(255) DEFAULT NULL,\n" +
		"  `c6` varchar(255) DEFAULT NULL,\n  PRIMARY KEY (`id`)\n) ENGINE InnoDB AUTO_INCREMENT DEFAULT CHARSET utf8"

	out := encode(t, e, &binlogdata.VEvent{Type: binlogdata.VEventType_BEGIN, Source: src}, fieldEvent("test", fieldSrc, test01Fields...))
	if len(out) != 1 {
		t.Fatalf("%d messages for the FIELD opening a copy, want 1 INIT_DDL", len(out))
	}
	encodertest.SameJSONFile(t, out[0].Value, "testdata/001-drs-json-init-ddl.json")
	mustContain(t, out[0].Value, `"id":0,`, `"es":1733998006282,"ts":1733998006282,`)

	c.ms = 1625058726990
	ev := rowEvent("test", 0, src, &binlogdata.RowChange{After: test01Row("104", test01C13Long)})
	ev.CurrentTime = 1624614713000 * 1e6 // when the copy read the row
	out = encode(t, e, ev)
	if len(out) != 1 {
		t.Fatalf("%d messages for one copied row", len(out))
	}
	encodertest.SameJSONFile(t, out[0].Value, "testdata/001-drs-json-init.json")
	mustContain(t, out[0].Value, append([]string{`"id":27677,`, `"es":1624614713000,`, `"identifier":"1",`}, test01Lexical...)...)
	if len(shardNames) != 1 || !strings.HasSuffix(shardNames[0], "/test01.test/1") {
		t.Errorf("shard ids derived from %q, want one for chunk 1 of test01.test", shardNames)
	}
}
