package streamsets

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"strconv"
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

// Section numbers in the comments below are those of the format specification
// (formats.md): 11.2 record fields, 11.3 column field types, 11.4 projection onto JSON, 1.3
// cell text forms, 3.x shared rendering rules.

func newEncoder(t testing.TB, db string, clockMs int64, opts map[string]string) *Encoder {
	t.Helper()
	return encodertest.New(t, New, encoder.Params{Database: db, Flavor: "mariadb", Clock: func() time.Time { return time.UnixMilli(clockMs) }}, opts)
}

// decode parses a record keeping number text (UseNumber), so that comparisons see digits.
func decode(t testing.TB, b []byte) map[string]any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		t.Fatalf("record is not a JSON object: %v\n%s", err, b)
	}
	return m
}

// raw returns the members of a record's image as their JSON text.
func raw(t testing.TB, b []byte, image string) map[string]string {
	t.Helper()
	var rec map[string]json.RawMessage
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	var img map[string]json.RawMessage
	if err := json.Unmarshal(rec[image], &img); err != nil {
		t.Fatalf("%s: %v\n%s", image, err, b)
	}
	out := map[string]string{}
	for k, v := range img {
		out[k] = string(v)
	}
	return out
}

var usersFields = []*query.Field{
	{Name: "id", Type: query.Type_INT32, ColumnType: "int(11)", Flags: uint32(query.MySqlFlag_NOT_NULL_FLAG | query.MySqlFlag_PRI_KEY_FLAG)},
	{Name: "name", Type: query.Type_VARCHAR, ColumnType: "varchar(32)"},
}

func fieldEv(table string, fields []*query.Field, src *binlogdata.EventSource) *binlogdata.VEvent {
	return &binlogdata.VEvent{Type: binlogdata.VEventType_FIELD, Source: src,
		FieldEvent: &binlogdata.FieldEvent{TableName: table, Fields: fields, EnumSetStringValues: true}}
}

func beginEv(gtid, set string) *binlogdata.VEvent {
	return &binlogdata.VEvent{Type: binlogdata.VEventType_BEGIN, Timestamp: 1700000000, EventGtid: gtid,
		Source: &binlogdata.EventSource{File: "mysql-bin.000003", StartPos: 300, EndPos: 380, ServerId: 7, GtidSet: set}}
}

func rowEv(table, gtid string, ordinal uint32, endPos uint64, changes ...*binlogdata.RowChange) *binlogdata.VEvent {
	return &binlogdata.VEvent{Type: binlogdata.VEventType_ROW, Timestamp: 1700000000, EventGtid: gtid,
		Source:   &binlogdata.EventSource{File: "mysql-bin.000003", StartPos: endPos - 60, EndPos: endPos, ServerId: 7, Database: "shop", RowsEventOrdinal: ordinal},
		RowEvent: &binlogdata.RowEvent{TableName: table, RowChanges: changes}}
}

// TestOperations: one record per row change (11.1), Type and the sdc.operation.type header
// (11.2: 1 insert, 2 delete, 3 update), Data for INSERT and UPDATE, OldData for UPDATE (the
// full before image) and DELETE (the deleted row).
func TestOperations(t *testing.T) {
	cases := []struct {
		name          string
		change        *binlogdata.RowChange
		typ, header   string
		data, oldData map[string]any
	}{
		{"insert", &binlogdata.RowChange{After: row("1", "ann")}, "INSERT", "1",
			map[string]any{"id": json.Number("1"), "name": "ann"}, nil},
		{"update", &binlogdata.RowChange{Before: row("1", "ann"), After: row("1", "bob")}, "UPDATE", "3",
			map[string]any{"id": json.Number("1"), "name": "bob"}, map[string]any{"id": json.Number("1"), "name": "ann"}},
		{"update-key", &binlogdata.RowChange{Before: row("1", nil), After: row("2", nil)}, "UPDATE", "3",
			map[string]any{"id": json.Number("2"), "name": nil}, map[string]any{"id": json.Number("1"), "name": nil}},
		{"delete", &binlogdata.RowChange{Before: row("1", "bob")}, "DELETE", "2",
			nil, map[string]any{"id": json.Number("1"), "name": "bob"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEncoder(t, "shop", 0, nil)
			out := encode(t, e, fieldEv("users", usersFields, nil), beginEv("0-7-12", "MariaDB/0-7-12"),
				rowEv("users", "0-7-12", 1, 500, c.change))
			if len(out) != 1 {
				t.Fatalf("%d messages for one row", len(out))
			}
			m := out[0]
			if m.Format != Name || m.Headers[HeaderOperation] != c.header || len(m.Headers) != 1 {
				t.Errorf("format %q headers %v, want %s=%s", m.Format, m.Headers, HeaderOperation, c.header)
			}
			rec := decode(t, m.Value)
			if rec["Type"] != c.typ {
				t.Errorf("Type %v, want %s", rec["Type"], c.typ)
			}
			for member, want := range map[string]map[string]any{"Data": c.data, "OldData": c.oldData} {
				got, present := rec[member]
				if want == nil {
					if present {
						t.Errorf("%s present: %v", member, got)
					}
					continue
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s = %v, want %v", member, got, want)
				}
			}
		})
	}
}

// TestRowsOfOneEvent: every row of a rows event is its own record with the event's offset
// (11.1, 11.2: all rows of one rows event share SeqNo).
func TestRowsOfOneEvent(t *testing.T) {
	e := newEncoder(t, "shop", 0, nil)
	out := encode(t, e, fieldEv("users", usersFields, nil), beginEv("0-7-12", "MariaDB/0-7-12"),
		rowEv("users", "0-7-12", 2, 500, &binlogdata.RowChange{After: row("1", "a")}, &binlogdata.RowChange{After: row("2", "b")}))
	if len(out) != 2 {
		t.Fatalf("%d messages for two rows", len(out))
	}
	for i, m := range out {
		rec := decode(t, m.Value)
		if rec["SeqNo"] != json.Number("2") || rec["Data"].(map[string]any)["id"] != json.Number([]string{"1", "2"}[i]) {
			t.Errorf("record %d: %s", i, m.Value)
		}
	}
}

// TestOffsets: the binlog coordinates of each offset mode (11.2) and the record's other
// header fields.
func TestOffsets(t *testing.T) {
	cases := []struct {
		name, option string
		gtid, set    string
		ordinal      uint32
		// want holds the members expected; absent lists members that must not exist.
		want   map[string]any
		absent []string
	}{
		{
			// GTID on: Offset is GtidSourceOffset as Jackson writes it, gtidSet the executed
			// set when the transaction started (the set before it), the transaction
			// incomplete at this rows event's SeqNo.
			name: "gtid-mariadb", gtid: "0-7-12", set: "MariaDB/0-7-12,1-9-4", ordinal: 1,
			want: map[string]any{"GTID": "0-7-12", "SeqNo": json.Number("1"),
				"Offset": `{"gtidSet":"0-7-11,1-9-4","incompleteTransactions":{"0-7-12":1}}`},
			absent: []string{"BinLogFilename", "BinLogPosition"},
		},
		{
			name: "gtid-mysql", gtid: "3e11fa47-71ca-11e1-9e33-c80aa9429562:23",
			set: "MySQL56/3e11fa47-71ca-11e1-9e33-c80aa9429562:1-23,4f11fa47-71ca-11e1-9e33-c80aa9429562:1-5", ordinal: 3,
			want: map[string]any{"GTID": "3e11fa47-71ca-11e1-9e33-c80aa9429562:23", "SeqNo": json.Number("3"),
				"Offset": `{"gtidSet":"3e11fa47-71ca-11e1-9e33-c80aa9429562:1-22,4f11fa47-71ca-11e1-9e33-c80aa9429562:1-5","incompleteTransactions":{"3e11fa47-71ca-11e1-9e33-c80aa9429562:23":3}}`},
			absent: []string{"BinLogFilename", "BinLogPosition"},
		},
		{
			// GTID off: "<file>:<position>" with the end position of the rows event, the
			// position the origin's client stands at after reading it.
			name: "file", option: "file", gtid: "0-7-12", set: "MariaDB/0-7-12", ordinal: 1,
			want: map[string]any{"BinLogFilename": "mysql-bin.000003", "BinLogPosition": json.Number("500"),
				"Offset": "mysql-bin.000003:500"},
			absent: []string{"GTID", "SeqNo"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var opts map[string]string
			if c.option != "" {
				opts = map[string]string{"offset": c.option}
			}
			e := newEncoder(t, "fallback", 0, opts)
			out := encode(t, e, fieldEv("users", usersFields, nil), beginEv(c.gtid, c.set),
				rowEv("users", c.gtid, c.ordinal, 500, &binlogdata.RowChange{After: row("1", "a")}))
			rec := decode(t, out[0].Value)
			// Fields every record has (11.2): Database of the table, ServerId of the event,
			// Timestamp in ms (binlog seconds × 1000).
			common := map[string]any{"Type": "INSERT", "Database": "shop", "Table": "users",
				"ServerId": json.Number("7"), "Timestamp": json.Number("1700000000000")}
			for k, v := range common {
				if rec[k] != v {
					t.Errorf("%s = %#v, want %#v", k, rec[k], v)
				}
			}
			for k, v := range c.want {
				if rec[k] != v {
					t.Errorf("%s = %#v, want %#v", k, rec[k], v)
				}
			}
			for _, k := range c.absent {
				if _, ok := rec[k]; ok {
					t.Errorf("%s present in %s mode", k, c.name)
				}
			}
			if off, ok := rec["Offset"].(string); ok && strings.HasPrefix(off, "{") && !json.Valid([]byte(off)) {
				t.Errorf("Offset is not JSON: %s", off)
			}
		})
	}
}

// TestSeqNoAcrossTransactions: SeqNo is the rows event's ordinal inside its transaction
// (11.2), and each transaction's offset names its own GTID.
func TestSeqNoAcrossTransactions(t *testing.T) {
	e := newEncoder(t, "shop", 0, nil)
	out := encode(t, e, fieldEv("users", usersFields, nil),
		beginEv("0-7-12", "MariaDB/0-7-12"),
		rowEv("users", "0-7-12", 1, 500, &binlogdata.RowChange{After: row("1", "a")}),
		rowEv("users", "0-7-12", 2, 600, &binlogdata.RowChange{Before: row("1", "a"), After: row("1", "b")}),
		&binlogdata.VEvent{Type: binlogdata.VEventType_GTID, Gtid: "MariaDB/0-7-12"},
		&binlogdata.VEvent{Type: binlogdata.VEventType_COMMIT},
		beginEv("0-7-13", "MariaDB/0-7-13"),
		rowEv("users", "0-7-13", 1, 800, &binlogdata.RowChange{Before: row("1", "b")}))
	want := []struct{ gtid, seq, offset string }{
		{"0-7-12", "1", `{"gtidSet":"0-7-11","incompleteTransactions":{"0-7-12":1}}`},
		{"0-7-12", "2", `{"gtidSet":"0-7-11","incompleteTransactions":{"0-7-12":2}}`},
		{"0-7-13", "1", `{"gtidSet":"0-7-12","incompleteTransactions":{"0-7-13":1}}`},
	}
	if len(out) != len(want) {
		t.Fatalf("%d messages, want %d", len(out), len(want))
	}
	for i, w := range want {
		rec := decode(t, out[i].Value)
		if rec["GTID"] != w.gtid || rec["SeqNo"] != json.Number(w.seq) || rec["Offset"] != w.offset {
			t.Errorf("record %d: GTID %v SeqNo %v Offset %v, want %s %s %s", i, rec["GTID"], rec["SeqNo"], rec["Offset"], w.gtid, w.seq, w.offset)
		}
	}
}

func TestSetBefore(t *testing.T) {
	const u1, u2 = "3e11fa47-71ca-11e1-9e33-c80aa9429562", "4f11fa47-71ca-11e1-9e33-c80aa9429562"
	cases := []struct{ set, gtid, want string }{
		{"MariaDB/0-1-100", "0-1-100", "0-1-99"},
		{"MariaDB/0-1-1", "0-1-1", ""},
		{"MariaDB/0-1-100,1-2-7", "1-2-7", "0-1-100,1-2-6"},
		{"MariaDB/0-1-1,1-2-7", "0-1-1", "1-2-7"},
		{"0-1-5", "0-1-5", "0-1-4"},
		{"MySQL56/" + u1 + ":1-100", u1 + ":100", u1 + ":1-99"},
		{"MySQL56/" + u1 + ":1", u1 + ":1", ""},
		{"MySQL56/" + u1 + ":1-10", u1 + ":5", u1 + ":1-4:6-10"},
		{"MySQL56/" + u1 + ":1-3," + u2 + ":1-9", u2 + ":9", u1 + ":1-3," + u2 + ":1-8"},
		{"MySQL56/" + u1 + ":1-3," + u2 + ":1", u2 + ":1", u1 + ":1-3"},
		{"MySQL56/" + u1 + ":1-3:lane:1-4", u1 + ":lane:4", u1 + ":1-3:lane:1-3"},
	}
	for _, c := range cases {
		got, err := setBefore(c.set, c.gtid)
		if err != nil || got != c.want {
			t.Errorf("setBefore(%q, %q) = %q, %v; want %q", c.set, c.gtid, got, err, c.want)
		}
	}
	for _, bad := range [][2]string{{"MariaDB/0-1-x", "0-1-2"}, {"MySQL56/nope:1", "nope:1"}, {"Oracle/1", "1"}, {"MariaDB/0-1-2", "zz"}} {
		if _, err := setBefore(bad[0], bad[1]); err == nil {
			t.Errorf("setBefore(%q, %q): no error", bad[0], bad[1])
		}
	}
}

// TestValues: the JSON text of every column type (11.3 for the StreamSets field type, 11.4
// for its JSON form), in every option that changes it. The want texts are lexical: number
// text and escapes are compared as written.
func TestValues(t *testing.T) {
	f := func(typ query.Type, columnType string) *query.Field {
		fl := &query.Field{Name: "v", Type: typ, ColumnType: columnType}
		if typ == query.Type_BINARY || typ == query.Type_VARBINARY || typ == query.Type_BLOB || typ == query.Type_GEOMETRY || typ == query.Type_BIT {
			fl.Charset = 63
		}
		return fl
	}
	cases := []struct {
		name  string
		field *query.Field
		cell  string
		// want is the default rendering; us (time_unit=us) and widen (unsigned=widen) the
		// renderings under those options when they differ.
		want, us, widen string
	}{
		// TINYINT/SMALLINT/MEDIUMINT/INT → INTEGER, BIGINT → LONG: JSON numbers (11.3, 11.4).
		{"tinyint", f(query.Type_INT8, "tinyint(4)"), "-128", "-128", "", ""},
		{"smallint", f(query.Type_INT16, "smallint(6)"), "32767", "32767", "", ""},
		{"mediumint", f(query.Type_INT24, "mediumint(9)"), "-8388608", "-8388608", "", ""},
		{"int", f(query.Type_INT32, "int(11)"), "-2147483648", "-2147483648", "", ""},
		{"bigint", f(query.Type_INT64, "bigint(20)"), "-9223372036854775808", "-9223372036854775808", "", ""},
		// ZEROFILL text from the copy's SELECT: JSON numbers cannot have leading zeros.
		{"int-zerofill", f(query.Type_INT32, "int(5) unsigned zerofill"), "00042", "42", "", ""},
		// Unsigned values are not widened (11.3): the origin reads each as the signed Java
		// type of its width, so values above the signed range wrap.
		{"tinyint-unsigned", f(query.Type_UINT8, "tinyint(3) unsigned"), "255", "-1", "", "255"},
		{"tinyint-unsigned-small", f(query.Type_UINT8, "tinyint(3) unsigned"), "127", "127", "", "127"},
		{"smallint-unsigned", f(query.Type_UINT16, "smallint(5) unsigned"), "65535", "-1", "", "65535"},
		{"mediumint-unsigned", f(query.Type_UINT24, "mediumint(8) unsigned"), "8388608", "-8388608", "", "8388608"},
		{"int-unsigned", f(query.Type_UINT32, "int(10) unsigned"), "4294967295", "-1", "", "4294967295"},
		{"int-unsigned-2^31", f(query.Type_UINT32, "int(10) unsigned"), "2147483648", "-2147483648", "", "2147483648"},
		{"bigint-unsigned", f(query.Type_UINT64, "bigint(20) unsigned"), "18446744073709551615", "-1", "", "18446744073709551615"},
		{"bigint-unsigned-2^63", f(query.Type_UINT64, "bigint(20) unsigned"), "9223372036854775808", "-9223372036854775808", "", "9223372036854775808"},
		// YEAR → INTEGER (11.3).
		{"year", f(query.Type_YEAR, "year(4)"), "2155", "2155", "", ""},
		{"year-zero", f(query.Type_YEAR, "year(4)"), "0000", "0", "", ""},
		// FLOAT → FLOAT, DOUBLE → DOUBLE: JSON numbers in Java float/double text (3.1,
		// the jackson profile of 3.7); the cell is re-parsed at its own width (1.3).
		{"float", f(query.Type_FLOAT32, "float"), "1.2510357E+07", "1.2510357E7", "", ""},
		{"float-86", f(query.Type_FLOAT32, "float"), "8.6E+01", "86.0", "", ""},
		{"float-small", f(query.Type_FLOAT32, "float"), "1E-03", "0.001", "", ""},
		{"double", f(query.Type_FLOAT64, "double"), "-3.141592653589793E+00", "-3.141592653589793", "", ""},
		{"double-large", f(query.Type_FLOAT64, "double"), "1E+300", "1.0E300", "", ""},
		{"double-zero", f(query.Type_FLOAT64, "double"), "0", "0.0", "", ""},
		// DECIMAL → DECIMAL: a JSON number with the exact digits and scale (3.3, 11.4).
		{"decimal", f(query.Type_DECIMAL, "decimal(30,10)"), "12345678901234567890.1234567890", "12345678901234567890.1234567890", "", ""},
		{"decimal-no-leading-zero", f(query.Type_DECIMAL, "decimal(5,2)"), ".50", "0.50", "", ""},
		{"decimal-negative", f(query.Type_DECIMAL, "decimal(5,2)"), "-.05", "-0.05", "", ""},
		{"decimal-scale-0", f(query.Type_DECIMAL, "decimal(5,0)"), "-120", "-120", "", ""},
		{"decimal-zerofill", f(query.Type_DECIMAL, "decimal(6,2) unsigned zerofill"), "0001.50", "1.50", "", ""},
		// DATE → DATE, DATETIME and TIMESTAMP → DATETIME: epoch ms (11.4). DATETIME is
		// zone-less and read as UTC; TIMESTAMP cells are UTC (1.3). Instants before 1970
		// round down, as epoch ms of an instant do.
		{"date", f(query.Type_DATE, "date"), "2024-02-29", "1709164800000", "1709164800000000", ""},
		{"date-1000", f(query.Type_DATE, "date"), "1000-01-01", "-30610224000000", "-30610224000000000", ""},
		{"datetime6", f(query.Type_DATETIME, "datetime(6)"), "2020-02-29 12:34:56.789012", "1582979696789", "1582979696789012", ""},
		{"datetime-before-1970", f(query.Type_DATETIME, "datetime(4)"), "1969-12-31 23:59:59.9995", "-1", "-500", ""},
		{"timestamp3", f(query.Type_TIMESTAMP, "timestamp(3)"), "2038-01-19 03:14:07.499", "2147483647499", "2147483647499000", ""},
		// Zero dates are no instant; the origin's binlog reader makes them null.
		{"date-zero", f(query.Type_DATE, "date"), "0000-00-00", "null", "null", ""},
		{"datetime-zero", f(query.Type_DATETIME, "datetime"), "0000-00-00 00:00:00", "null", "null", ""},
		{"date-zero-day", f(query.Type_DATE, "date"), "2020-01-00", "null", "null", ""},
		// TIME → TIME: the signed duration in ms (11.4), truncated toward zero.
		{"time", f(query.Type_TIME, "time"), "-838:59:59", "-3020399000", "-3020399000000", ""},
		{"time3", f(query.Type_TIME, "time(3)"), "-00:00:01.500", "-1500", "-1500000", ""},
		{"time6", f(query.Type_TIME, "time(6)"), "12:00:00.000999", "43200000", "43200000999", ""},
		// VARCHAR, TEXT, CHAR, JSON → STRING (11.3), escaped as JSON strings: quotes,
		// backslashes and control characters escaped, non-ASCII raw (3.5).
		{"varchar", f(query.Type_VARCHAR, "varchar(64)"), "h\u00e9llo \U0001F600 <&>='\"\\ \n\t", `"h` + "\u00e9llo \U0001F600" + ` <&>='\"\\ \n\t"`, "", ""},
		{"char", f(query.Type_CHAR, "char(5)"), "ab", `"ab"`, "", ""},
		{"text-empty", f(query.Type_TEXT, "text"), "", `""`, "", ""},
		{"json", f(query.Type_JSON, "json"), `{"a": [1, 2.5]}`, `"{\"a\": [1, 2.5]}"`, "", ""},
		// BLOB family → BYTE_ARRAY: base64 (11.4).
		{"blob", f(query.Type_BLOB, "blob"), "\xde\xad\xbe\xef", `"3q2+7w=="`, "", ""},
		{"blob-empty", f(query.Type_BLOB, "blob"), "", `""`, "", ""},
		// BINARY, VARBINARY, geometry → STRING of the bytes (11.3), as ISO-8859-1 text (3.6):
		// byte b is U+00bb. BINARY(n) keeps the padding the cell has (1.3).
		{"binary", f(query.Type_BINARY, "binary(4)"), "\x00\xff\x10\x00", `"\u0000` + "\u00ff" + `\u0010\u0000"`, "", ""},
		{"varbinary", f(query.Type_VARBINARY, "varbinary(10)"), "a\"\x7f\x80", `"a\"\u007f` + "\u0080" + `"`, "", ""},
		{"geometry", f(query.Type_GEOMETRY, "point"), "\x00\x00\x00\x00\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\xf0?\x00\x00\x00\x00\x00\x00\x00@",
			`"\u0000\u0000\u0000\u0000\u0001\u0001\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0000` + "\u00f0" + `?\u0000\u0000\u0000\u0000\u0000\u0000\u0000@"`, "", ""},
		// BIT → STRING of its value: the unsigned number its big-endian bytes hold.
		{"bit", f(query.Type_BIT, "bit(10)"), "\x02\xaa", `"682"`, "", ""},
		{"bit1", f(query.Type_BIT, "bit(1)"), "\x01", `"1"`, "", ""},
		// ENUM → INTEGER: the 1-based member index, 0 for the empty invalid value (11.3, 1.3).
		{"enum", f(query.Type_ENUM, "enum('a','b','c')"), "b", "2", "", ""},
		{"enum-invalid", f(query.Type_ENUM, "enum('a','b','c')"), "", "0", "", ""},
		// SET → LONG: the member bitmask (11.3); a member in bit 63 makes the LONG negative
		// unless widened.
		{"set", f(query.Type_SET, "set('x','y','z')"), "x,z", "5", "", ""},
		{"set-empty", f(query.Type_SET, "set('x','y','z')"), "", "0", "", ""},
		{"set-64", f(query.Type_SET, "set("+members64()+")"), "m64", "-9223372036854775808", "", "9223372036854775808"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			variants := map[string]string{"": c.want, "us": c.us, "widen": c.widen}
			for variant, want := range variants {
				opts := map[string]string{}
				switch variant {
				case "us":
					opts["time_unit"] = "us"
				case "widen":
					opts["unsigned"] = "widen"
				}
				if want == "" {
					want = c.want
				}
				e := newEncoder(t, "db", 0, opts)
				fields := []*query.Field{{Name: "id", Type: query.Type_INT32, Flags: uint32(query.MySqlFlag_PRI_KEY_FLAG)}, c.field}
				out := encode(t, e, fieldEv("t", fields, nil), beginEv("0-1-1", "MariaDB/0-1-1"),
					rowEv("t", "0-1-1", 1, 500, &binlogdata.RowChange{After: row("1", c.cell)}))
				if got := raw(t, out[0].Value, "Data")["v"]; got != want {
					t.Errorf("%s %q: got %s, want %s", variant, c.cell, got, want)
				}
			}
		})
	}
}

func members64() string {
	var m []string
	for i := 1; i <= 64; i++ {
		m = append(m, "'m"+strconv.Itoa(i)+"'")
	}
	return strings.Join(m, ",")
}

// TestNumericLabels: ENUM and SET cells arrive as numbers when the FIELD event says they do
// not carry labels (1.3); the values are the same.
func TestNumericLabels(t *testing.T) {
	fields := []*query.Field{{Name: "id", Type: query.Type_INT32}, {Name: "e", Type: query.Type_ENUM, ColumnType: "enum('a','b')"},
		{Name: "s", Type: query.Type_SET, ColumnType: "set('x','y','z')"}}
	e := newEncoder(t, "db", 0, nil)
	field := fieldEv("t", fields, nil)
	field.FieldEvent.EnumSetStringValues = false
	out := encode(t, e, field, beginEv("0-1-1", "MariaDB/0-1-1"), rowEv("t", "0-1-1", 1, 500, &binlogdata.RowChange{After: row("1", "2", "6")}))
	if got := raw(t, out[0].Value, "Data"); got["e"] != "2" || got["s"] != "6" {
		t.Errorf("got %v", got)
	}
}

// TestNulls: NULL is JSON null in both images, for every kind of column (11.4).
func TestNulls(t *testing.T) {
	var fields []*query.Field
	cells := []any{"1"}
	for i, typ := range []query.Type{query.Type_INT8, query.Type_UINT64, query.Type_FLOAT32, query.Type_FLOAT64, query.Type_DECIMAL,
		query.Type_DATE, query.Type_DATETIME, query.Type_TIMESTAMP, query.Type_TIME, query.Type_YEAR, query.Type_CHAR, query.Type_VARCHAR,
		query.Type_TEXT, query.Type_BLOB, query.Type_BINARY, query.Type_VARBINARY, query.Type_BIT, query.Type_ENUM, query.Type_SET,
		query.Type_JSON, query.Type_GEOMETRY} {
		fields = append(fields, &query.Field{Name: "c" + strconv.Itoa(i+1), Type: typ, ColumnType: "x"})
		cells = append(cells, nil)
	}
	fields = append([]*query.Field{{Name: "id", Type: query.Type_INT32}}, fields...)
	e := newEncoder(t, "db", 0, nil)
	out := encode(t, e, fieldEv("t", fields, nil), beginEv("0-1-1", "MariaDB/0-1-1"),
		rowEv("t", "0-1-1", 1, 500, &binlogdata.RowChange{Before: row(cells...), After: row(cells...)}))
	for _, image := range []string{"Data", "OldData"} {
		got := raw(t, out[0].Value, image)
		if len(got) != len(fields) {
			t.Errorf("%s has %d members, want %d", image, len(got), len(fields))
		}
		for _, f := range fields[1:] {
			if got[f.Name] != "null" {
				t.Errorf("%s %s (%s) = %s, want null", image, f.Name, f.Type, got[f.Name])
			}
		}
	}
}

// TestPartialImage: columns a MINIMAL/NOBLOB row image does not include are left out, not
// rendered as NULL (1.6).
func TestPartialImage(t *testing.T) {
	e := newEncoder(t, "db", 0, nil)
	rc := &binlogdata.RowChange{Before: row("1", "a"), After: row("1", nil),
		DataColumns: &binlogdata.RowChange_Bitmap{Count: 2, Cols: []byte{0b01}}}
	out := encode(t, e, fieldEv("users", usersFields, nil), beginEv("0-1-1", "MariaDB/0-1-1"), rowEv("users", "0-1-1", 1, 500, rc))
	if got := raw(t, out[0].Value, "Data"); len(got) != 1 || got["id"] != "1" {
		t.Errorf("Data = %v, want only id", got)
	}
	if got := raw(t, out[0].Value, "OldData"); len(got) != 2 {
		t.Errorf("OldData = %v, want both columns", got)
	}
}

// TestSnapshot: copied rows have no binlog event. By default they are INSERT records (11.1)
// at the snapshot's position: in GTID mode the snapshot's set with no incomplete transaction
// and null GTID and SeqNo; in file mode the snapshot's file and offset. Their Timestamp is
// the time they were encoded. snapshot_as_insert=false leaves them out.
func TestSnapshot(t *testing.T) {
	src := &binlogdata.EventSource{File: "mysql-bin.000002", StartPos: 4711, EndPos: 4711, Database: "shop", GtidSet: "MariaDB/0-7-40", Snapshot: true}
	evs := []*binlogdata.VEvent{
		{Type: binlogdata.VEventType_BEGIN, Source: src},
		fieldEv("users", usersFields, src),
		{Type: binlogdata.VEventType_ROW, Source: src, RowEvent: &binlogdata.RowEvent{TableName: "users",
			RowChanges: []*binlogdata.RowChange{{After: row("1", "a")}, {After: row("2", "b")}}}},
		{Type: binlogdata.VEventType_COMMIT},
		{Type: binlogdata.VEventType_LASTPK},
		{Type: binlogdata.VEventType_COPY_COMPLETED},
	}
	cases := []struct {
		name string
		opts map[string]string
		n    int
		want map[string]any
	}{
		{"gtid", nil, 2, map[string]any{"Type": "INSERT", "Timestamp": json.Number("1700000000123"), "ServerId": json.Number("0"),
			"Offset": `{"gtidSet":"0-7-40","incompleteTransactions":{}}`, "GTID": nil, "SeqNo": nil}},
		{"file", map[string]string{"offset": "file"}, 2, map[string]any{"Type": "INSERT", "Timestamp": json.Number("1700000000123"),
			"Offset": "mysql-bin.000002:4711", "BinLogFilename": "mysql-bin.000002", "BinLogPosition": json.Number("4711")}},
		{"left-out", map[string]string{"snapshot_as_insert": "false"}, 0, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := encode(t, newEncoder(t, "db", 1700000000123, c.opts), evs...)
			if len(out) != c.n {
				t.Fatalf("%d messages, want %d", len(out), c.n)
			}
			for _, m := range out {
				if m.Headers[HeaderOperation] != OpInsert {
					t.Errorf("headers %v", m.Headers)
				}
				rec := decode(t, m.Value)
				for k, v := range c.want {
					if got, ok := rec[k]; !ok || got != v {
						t.Errorf("%s = %#v (present %v), want %#v", k, got, ok, v)
					}
				}
			}
		})
	}
}

// TestNoRecords: only row changes are records (11.1): DDL, transaction boundaries, GTID and
// the rest produce none.
func TestNoRecords(t *testing.T) {
	e := newEncoder(t, "db", 0, nil)
	out := encode(t, e,
		&binlogdata.VEvent{Type: binlogdata.VEventType_GTID, Gtid: "MariaDB/0-1-5"},
		&binlogdata.VEvent{Type: binlogdata.VEventType_DDL, Statement: "ALTER TABLE users ADD COLUMN x INT", EventGtid: "0-1-5",
			Source: &binlogdata.EventSource{GtidSet: "MariaDB/0-1-5"}},
		&binlogdata.VEvent{Type: binlogdata.VEventType_OTHER, Statement: "FLUSH LOGS"},
		beginEv("0-1-6", "MariaDB/0-1-6"),
		fieldEv("users", usersFields, nil),
		&binlogdata.VEvent{Type: binlogdata.VEventType_COMMIT},
		&binlogdata.VEvent{Type: binlogdata.VEventType_HEARTBEAT},
		&binlogdata.VEvent{Type: binlogdata.VEventType_ROWS_QUERY, Statement: "INSERT ..."})
	if len(out) != 0 {
		t.Errorf("%d messages; first %s", len(out), out[0].Value)
	}
}

func TestErrors(t *testing.T) {
	cases := []struct {
		name string
		opts map[string]string
		evs  []*binlogdata.VEvent
		want string
	}{
		{"row-before-field", nil, []*binlogdata.VEvent{rowEv("users", "0-1-1", 1, 500, &binlogdata.RowChange{After: row("1", "a")})}, "before its FIELD"},
		{"row-without-begin", nil, []*binlogdata.VEvent{fieldEv("users", usersFields, nil),
			rowEv("users", "0-1-1", 1, 500, &binlogdata.RowChange{After: row("1", "a")})}, "without the transaction's BEGIN"},
		{"bad-gtid-set", nil, []*binlogdata.VEvent{beginEv("0-1-1", "MariaDB/zz")}, "transaction 0-1-1"},
		{"bad-int", map[string]string{"offset": "file"}, []*binlogdata.VEvent{fieldEv("users", usersFields, nil),
			rowEv("users", "", 1, 500, &binlogdata.RowChange{After: row("x1", "a")})}, "column id"},
		{"short-row", map[string]string{"offset": "file"}, []*binlogdata.VEvent{fieldEv("users", usersFields, nil),
			rowEv("users", "", 1, 500, &binlogdata.RowChange{After: &query.Row{Lengths: []int64{5}, Values: []byte("1")}})}, "overruns"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEncoder(t, "db", 0, c.opts)
			var err error
			for _, ev := range c.evs {
				if _, err = e.Encode(nil, ev); err != nil {
					break
				}
			}
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "streamsets: ") {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
		})
	}
	// In file mode a missing BEGIN does not matter.
	e := newEncoder(t, "db", 0, map[string]string{"offset": "file"})
	encode(t, e, fieldEv("users", usersFields, nil), rowEv("users", "0-1-1", 1, 500, &binlogdata.RowChange{After: row("1", "a")}))
}

func TestOptions(t *testing.T) {
	for _, bad := range []map[string]string{{"offset": "binlog"}, {"snapshot_as_insert": "maybe"}, {"time_unit": "s"}, {"unsigned": "yes"}} {
		if _, err := New(encoder.Params{Options: encoder.NewOptions(bad), Clock: time.Now}); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	o := encoder.NewOptions(map[string]string{"profile": "x"})
	if _, err := New(encoder.Params{Options: o, Clock: time.Now}); err != nil {
		t.Fatal(err)
	}
	err := o.Unknown()
	if err == nil || !strings.Contains(err.Error(), "profile") {
		t.Fatalf("unknown option: %v", err)
	}
	for _, name := range []string{"offset", "snapshot_as_insert", "time_unit", "unsigned"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("valid options in %q lack %s", err, name)
		}
	}
}

// golden compares a record with a golden file, parsed with number text kept.
func golden(t *testing.T, got []byte, file string) {
	t.Helper()
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	g, w := decode(t, got), decode(t, want)
	if !reflect.DeepEqual(g, w) {
		t.Errorf("differs from %s\n got %s\nwant %s", file, got, want)
	}
}

// TestColumnKinds: a VECTOR column is bytes, written as ISO-8859-1 text like VARBINARY; a
// FIELD whose column has a type no MySQL or MariaDB column has is an error naming the table
// and the column, not a record of bytes the encoder cannot vouch for.
func TestColumnKinds(t *testing.T) {
	e := newEncoder(t, "shop", 0, nil)
	fields := []*query.Field{{Name: "id", Type: query.Type_INT32}, {Name: "v", Type: query.Type_VECTOR}}
	out := encode(t, e, fieldEv("vecs", fields, nil), beginEv("0-7-12", "MariaDB/0-7-12"),
		rowEv("vecs", "0-7-12", 1, 500, &binlogdata.RowChange{After: row("1", "\x00\x00\x80\x3f")}))
	if len(out) != 1 {
		t.Fatalf("%d messages for one row", len(out))
	}
	if got := decode(t, out[0].Value)["Data"].(map[string]any)["v"]; got != "\x00\x00\u0080?" {
		t.Errorf("VECTOR cell = %q", got)
	}
	bad := []*query.Field{{Name: "id", Type: query.Type_INT32}, {Name: "expr", Type: query.Type_EXPRESSION}}
	_, err := e.Encode(nil, fieldEv("odd", bad, nil))
	if err == nil || !strings.Contains(err.Error(), "table odd column expr") || !strings.Contains(err.Error(), "EXPRESSION") {
		t.Fatalf("FIELD with an EXPRESSION column: %v, want an error naming table odd column expr", err)
	}
}
