package drs

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/server/encoder"
)

func decode(t *testing.T, msg *vstreamv1.EncodedMessage) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(msg.Value, &m); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, msg.Value)
	}
	return m
}

func rows(t *testing.T, v any) []map[string]any {
	t.Helper()
	if v == nil {
		return nil
	}
	var out []map[string]any
	for _, r := range v.([]any) {
		out = append(out, r.(map[string]any))
	}
	return out
}

var kvFields = []*query.Field{
	field("id", query.Type_INT64, "bigint(20)", query.MySqlFlag_PRI_KEY_FLAG|query.MySqlFlag_NOT_NULL_FLAG),
	field("v", query.Type_VARCHAR, "varchar(10)", 0),
}

var snapSrc = &binlogdata.EventSource{File: "binlog.000002", StartPos: 4567, Database: "db",
	GtidSet: "MariaDB/0-1-42", Snapshot: true}

// Every kind of message, for both variants: where the rows go and which members are null.
func TestOperations(t *testing.T) {
	binlogSrc := &binlogdata.EventSource{Database: "db"}
	withCreate := proto.CloneOf(snapSrc)
	withCreate.CreateTable = "CREATE TABLE `kv` (\n  `id` bigint(20) NOT NULL,\n  PRIMARY KEY (`id`)\n)"
	cases := []struct {
		name      string
		ev        *binlogdata.VEvent
		typ       string
		data, old []map[string]any
		ddl       bool
		// jsonc overrides for drs-json-c
		jsoncData, jsoncOld []map[string]any
	}{
		{name: "insert", ev: rowEvent("kv", 10, binlogSrc, &binlogdata.RowChange{After: row("1", "a")}),
			typ: "INSERT", data: []map[string]any{{"id": "1", "v": "a"}}},
		{name: "update", ev: rowEvent("kv", 10, binlogSrc, &binlogdata.RowChange{Before: row("1", "a"), After: row("2", "b")}),
			typ: "UPDATE", data: []map[string]any{{"id": "2", "v": "b"}}, old: []map[string]any{{"id": "1", "v": "a"}}},
		{name: "delete", ev: rowEvent("kv", 10, binlogSrc, &binlogdata.RowChange{Before: row("2", nil)}),
			typ: "DELETE", old: []map[string]any{{"id": "2", "v": nil}},
			jsoncData: []map[string]any{{"id": "2", "v": nil}}},
		{name: "ddl", ev: &binlogdata.VEvent{Type: binlogdata.VEventType_DDL, Timestamp: 10, Source: binlogSrc,
			Statement: "ALTER TABLE kv ADD COLUMN w INT"}, typ: "DDL", ddl: true},
		{name: "init", ev: rowEvent("kv", 0, snapSrc, &binlogdata.RowChange{After: row("3", "c")}),
			typ: "INIT", data: []map[string]any{{"id": "3", "v": "c"}}},
		{name: "init_ddl", ev: fieldEvent("kv", withCreate, kvFields...), typ: "INIT_DDL", ddl: true},
	}
	for _, jsonc := range []bool{false, true} {
		for _, tc := range cases {
			t.Run(map[bool]string{false: NameJSON, true: NameJSONC}[jsonc]+"/"+tc.name, func(t *testing.T) {
				e := newEnc(t, jsonc, "db", &clock{ms: 99}, nil)
				pre := encode(t, e, fieldEvent("kv", binlogSrc, kvFields...))
				out := encode(t, e, tc.ev)
				if len(pre) != 0 || len(out) != 1 {
					t.Fatalf("%d messages for a FIELD without copy, %d for the event", len(pre), len(out))
				}
				m := decode(t, out[0])
				wantData, wantOld := tc.data, tc.old
				if jsonc && tc.typ == "DELETE" {
					wantData, wantOld = tc.jsoncData, tc.jsoncOld
				}
				if m["type"] != tc.typ || m["isDdl"] != tc.ddl || m["database"] != "db" || m["table"] != "kv" {
					t.Errorf("type %v isDdl %v database %v table %v", m["type"], m["isDdl"], m["database"], m["table"])
				}
				if got := rows(t, m["data"]); !jsonEqual(got, wantData) {
					t.Errorf("data = %v, want %v", got, wantData)
				}
				if got := rows(t, m["old"]); !jsonEqual(got, wantOld) {
					t.Errorf("old = %v, want %v", got, wantOld)
				}
				// Both members are always present, null when empty.
				for _, k := range []string{"data", "old", "mysqlType", "sqlType", "pkNames", "sql"} {
					if _, ok := m[k]; !ok {
						t.Errorf("member %s missing", k)
					}
				}
				fullSync := tc.typ == "INIT" || tc.typ == "INIT_DDL"
				for _, k := range []string{"jobId", "shardId", "identifier", "eventId"} {
					if _, ok := m[k]; ok != fullSync {
						t.Errorf("member %s present=%v in a %s message", k, ok, tc.typ)
					}
				}
				if tc.ddl {
					if m["mysqlType"] != nil || m["sqlType"] != nil || m["pkNames"] != nil || m["sql"] == "" {
						t.Errorf("DDL members: mysqlType %v sqlType %v pkNames %v sql %q", m["mysqlType"], m["sqlType"], m["pkNames"], m["sql"])
					}
					if len(out[0].Key) != 0 {
						t.Errorf("DDL key %q", out[0].Key)
					}
				} else {
					if m["sql"] != "" || m["pkNames"].([]any)[0] != "id" || m["sqlType"].(map[string]any)["id"] != -5.0 ||
						m["mysqlType"].(map[string]any)["v"] != "varchar" {
						t.Errorf("DML members: sql %q pkNames %v sqlType %v mysqlType %v", m["sql"], m["pkNames"], m["sqlType"], m["mysqlType"])
					}
					if !strings.HasPrefix(string(out[0].Key), "db.kv:") {
						t.Errorf("key %q", out[0].Key)
					}
				}
				switch tc.typ {
				case "INIT_DDL":
					if m["id"] != 0.0 || m["es"] != 99.0 || m["ts"] != 99.0 || m["eventId"] != "" || m["shardId"] != nil || m["identifier"] != nil ||
						m["sql"] != "CREATE TABLE `kv` (  `id` bigint(20) NOT NULL,  PRIMARY KEY (`id`))" {
						t.Errorf("INIT_DDL id %v es %v ts %v eventId %v shardId %v identifier %v sql %q", m["id"], m["es"], m["ts"],
							m["eventId"], m["shardId"], m["identifier"], m["sql"])
					}
				case "INIT":
					// No read time on the event: es falls back to the clock.
					if m["id"] != 1.0 || m["es"] != 99.0 || m["eventId"] != "binlog.000002:4567;0-1-42" || m["identifier"] != "1" {
						t.Errorf("INIT id %v es %v eventId %v identifier %v", m["id"], m["es"], m["eventId"], m["identifier"])
					}
					if _, err := uuid.Parse(m["jobId"].(string)); err != nil {
						t.Errorf("jobId %v: %v", m["jobId"], err)
					}
					if _, err := uuid.Parse(m["shardId"].(string)); err != nil {
						t.Errorf("shardId %v: %v", m["shardId"], err)
					}
				default:
					if m["id"] != 1.0 || m["es"] != 10000.0 || m["ts"] != 99.0 {
						t.Errorf("id %v es %v ts %v", m["id"], m["es"], m["ts"])
					}
				}
				if out[0].Format != e.name || e.name != map[bool]string{false: NameJSON, true: NameJSONC}[jsonc] {
					t.Errorf("format %q", out[0].Format)
				}
			})
		}
	}
}

func jsonEqual(a, b []map[string]any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// The two variants differ in where deleted rows go and in TIMESTAMP text; the rest is shared.
func TestJSONAndJSONC(t *testing.T) {
	fields := []*query.Field{
		field("id", query.Type_INT32, "int(11)", query.MySqlFlag_PRI_KEY_FLAG),
		field("ts0", query.Type_TIMESTAMP, "timestamp", 0),
		field("ts3", query.Type_TIMESTAMP, "timestamp(3)", 0),
		field("ts6", query.Type_TIMESTAMP, "timestamp(6)", 0),
		field("dt", query.Type_DATETIME, "datetime(2)", 0),
		field("b", query.Type_VARBINARY, "varbinary(4)", 0),
	}
	before := row("7", "2021-06-25 09:51:53", "2021-06-25 09:51:53.201", "1970-01-01 00:00:01.000001", "2021-06-25 17:51:53.50", "\x80\x7f")
	cases := []struct {
		jsonc bool
		zone  string
		want  map[string]any
	}{
		{false, "", map[string]any{"id": "7", "ts0": "1624614713", "ts3": "1624614713.201", "ts6": "1.000001", "dt": "2021-06-25 17:51:53.50", "b": "[-128, 127]"}},
		// render_zone does not touch drs-json's epoch seconds.
		{false, "Asia/Shanghai", map[string]any{"id": "7", "ts0": "1624614713", "ts3": "1624614713.201", "ts6": "1.000001", "dt": "2021-06-25 17:51:53.50", "b": "[-128, 127]"}},
		{true, "", map[string]any{"id": "7", "ts0": "2021-06-25 09:51:53", "ts3": "2021-06-25 09:51:53.201", "ts6": "1970-01-01 00:00:01.000001", "dt": "2021-06-25 17:51:53.50", "b": "[-128, 127]"}},
		{true, "Asia/Shanghai", map[string]any{"id": "7", "ts0": "2021-06-25 17:51:53", "ts3": "2021-06-25 17:51:53.201", "ts6": "1970-01-01 08:00:01.000001", "dt": "2021-06-25 17:51:53.50", "b": "[-128, 127]"}},
		{true, "America/New_York", map[string]any{"id": "7", "ts0": "2021-06-25 05:51:53", "ts3": "2021-06-25 05:51:53.201", "ts6": "1969-12-31 19:00:01.000001", "dt": "2021-06-25 17:51:53.50", "b": "[-128, 127]"}},
	}
	for _, tc := range cases {
		opts := map[string]string{}
		if tc.zone != "" {
			opts["render_zone"] = tc.zone
		}
		e := newEnc(t, tc.jsonc, "db", &clock{}, opts)
		out := encode(t, e, fieldEvent("t", nil, fields...), rowEvent("t", 1, nil, &binlogdata.RowChange{Before: before}))
		m := decode(t, out[0])
		data, old := rows(t, m["data"]), rows(t, m["old"])
		got, empty := old, data
		if tc.jsonc {
			got, empty = data, old
		}
		if len(got) != 1 || empty != nil || !jsonEqual(got, []map[string]any{tc.want}) {
			t.Errorf("jsonc=%v zone %q: DELETE data %v old %v, want the row %v in %s and the other null", tc.jsonc, tc.zone, data, old, tc.want,
				map[bool]string{false: "old", true: "data"}[tc.jsonc])
		}
	}
}

// Values of every column type, as drs-json and drs-json-c print them.
func TestValues(t *testing.T) {
	cases := []struct {
		f         *query.Field
		cell      any // string or nil
		json      any // string or nil
		jsonc     any // when it differs from json
		sqlType   int
		mysqlType string
	}{
		{field("tiny", query.Type_INT8, "tinyint(4)", 0), "-128", "-128", nil, -6, "tinyint"},
		{field("utiny", query.Type_UINT8, "tinyint(3) unsigned", 0), "255", "255", nil, -6, "tinyint"},
		{field("small", query.Type_INT16, "smallint(6)", 0), "-32768", "-32768", nil, 5, "smallint"},
		{field("medium", query.Type_UINT24, "mediumint(8) unsigned", 0), "16777215", "16777215", nil, 4, "mediumint"},
		{field("int", query.Type_UINT32, "int(10) unsigned zerofill", 0), "4294967295", "4294967295", nil, 4, "int"},
		{field("big", query.Type_INT64, "bigint(20)", 0), "-9223372036854775808", "-9223372036854775808", nil, -5, "bigint"},
		{field("ubig", query.Type_UINT64, "bigint(20) unsigned", 0), "18446744073709551615", "18446744073709551615", nil, -5, "bigint"},
		{field("null", query.Type_INT32, "int(11)", 0), nil, nil, nil, 4, "int"},
		{field("f", query.Type_FLOAT32, "float", 0), "8.6E+01", "86.0", nil, 6, "float"},
		{field("f_exp", query.Type_FLOAT32, "float", 0), "1.2510357E+07", "1.2510357E7", nil, 6, "float"},
		{field("f_small", query.Type_FLOAT32, "float", 0), "1E-04", "1.0E-4", nil, 6, "float"},
		{field("f_prec", query.Type_FLOAT32, "float", 0), "3.4028235E+38", "3.4028235E38", nil, 6, "float"},
		{field("f_zero", query.Type_FLOAT32, "float", 0), "0E+00", "0.0", nil, 6, "float"},
		{field("f_neg", query.Type_FLOAT32, "float(7,3)", 0), "-1.5E-03", "-0.0015", nil, 6, "float"},
		{field("d", query.Type_FLOAT64, "double", 0), "1.2345678901234567E+19", "1.2345678901234567E19", nil, 8, "double"},
		{field("d_plain", query.Type_FLOAT64, "double", 0), "1.2345678E+06", "1234567.8", nil, 8, "double"},
		{field("d_tenth", query.Type_FLOAT64, "double", 0), "1E-01", "0.1", nil, 8, "double"},
		{field("dec", query.Type_DECIMAL, "decimal(5,2)", 0), "123.50", "123.50", nil, 3, "decimal"},
		{field("dec_bare", query.Type_DECIMAL, "decimal(5,2)", 0), ".50", "0.50", nil, 3, "decimal"},
		{field("dec_neg", query.Type_DECIMAL, "decimal(5,2)", 0), "-.05", "-0.05", nil, 3, "decimal"},
		{field("dec_big", query.Type_DECIMAL, "decimal(65,30)", 0), "12345678901234567890123456789012345.123456789012345678901234567890",
			"12345678901234567890123456789012345.123456789012345678901234567890", nil, 3, "decimal"},
		{field("date", query.Type_DATE, "date", 0), "2024-02-29", "2024-02-29", nil, 91, "date"},
		{field("date0", query.Type_DATE, "date", 0), "0000-00-00", "0000-00-00", nil, 91, "date"},
		{field("dt", query.Type_DATETIME, "datetime", 0), "9999-12-31 23:59:59", "9999-12-31 23:59:59", nil, 94, "datetime"},
		{field("dt6", query.Type_DATETIME, "datetime(6)", 0), "2024-01-01 00:00:00.000001", "2024-01-01 00:00:00.000001", nil, 94, "datetime"},
		{field("dt0", query.Type_DATETIME, "datetime", 0), "0000-00-00 00:00:00", "0000-00-00 00:00:00", nil, 94, "datetime"},
		{field("ts", query.Type_TIMESTAMP, "timestamp", 0), "2038-01-19 03:14:07", "2147483647", "2038-01-19 03:14:07", 93, "timestamp"},
		{field("ts0", query.Type_TIMESTAMP, "timestamp", 0), "0000-00-00 00:00:00", "0", "0000-00-00 00:00:00", 93, "timestamp"},
		{field("ts0_3", query.Type_TIMESTAMP, "timestamp(3)", 0), "0000-00-00 00:00:00.000", "0.000", "0000-00-00 00:00:00.000", 93, "timestamp"},
		{field("time", query.Type_TIME, "time", 0), "-838:59:59", "-838:59:59", nil, 92, "time"},
		{field("time3", query.Type_TIME, "time(3)", 0), "12:00:00.125", "12:00:00.125", nil, 92, "time"},
		{field("year", query.Type_YEAR, "year(4)", 0), "2155", "2155", nil, 91, "year"},
		{field("year0", query.Type_YEAR, "year(4)", 0), "0000", "0000", nil, 91, "year"},
		{field("char", query.Type_CHAR, "char(4)", 0), "ab", "ab", nil, 1, "char"},
		{field("utf8", query.Type_VARCHAR, "varchar(10)", 0), "é中😀", "é中😀", nil, 12, "varchar"},
		{field("empty", query.Type_VARCHAR, "varchar(10)", 0), "", "", nil, 12, "varchar"},
		{field("tinytext", query.Type_TEXT, "tinytext", 0), "x", "x", nil, -1, "tinytext"},
		{field("longtext", query.Type_TEXT, "longtext", 0), "line1\nline2\t\"q\"\\", "line1\nline2\t\"q\"\\", nil, -1, "longtext"},
		{field("bin", query.Type_BINARY, "binary(4)", 0), "\x01\xff\x00\x00", "[1, -1]", nil, -2, "binary"},
		{field("bin0", query.Type_BINARY, "binary(2)", 0), "\x00\x00", "[]", nil, -2, "binary"},
		{field("vbin", query.Type_VARBINARY, "varbinary(8)", 0), "\x00a\x80\x00", "[0, 97, -128, 0]", nil, -3, "varbinary"},
		{field("vbin_empty", query.Type_VARBINARY, "varbinary(8)", 0), "", "[]", nil, -3, "varbinary"},
		{field("blob", query.Type_BLOB, "blob", 0), "<>", "[60, 62]", nil, 2004, "blob"},
		{field("mblob", query.Type_BLOB, "mediumblob", 0), "\xfe", "[-2]", nil, 2004, "mediumblob"},
		{field("bit", query.Type_BIT, "bit(10)", 0), "\x02\xaa", "682", nil, -7, "bit"},
		{field("bit64", query.Type_BIT, "bit(64)", 0), "\xff\xff\xff\xff\xff\xff\xff\xff", "18446744073709551615", nil, -7, "bit"},
		{field("enum", query.Type_ENUM, "enum('x','y z')", 0), "y z", "y z", nil, 1, "enum"},
		{field("enum_empty", query.Type_ENUM, "enum('x','y')", 0), "", "", nil, 1, "enum"},
		{field("set", query.Type_SET, "set('a','b','c')", 0), "a,c", "a,c", nil, 1, "set"},
		{field("set_empty", query.Type_SET, "set('a','b')", 0), "", "", nil, 1, "set"},
		{field("json", query.Type_JSON, "json", 0), `{"a": [1, "x"]}`, `{"a": [1, "x"]}`, nil, -1, "json"},
		{field("geo", query.Type_GEOMETRY, "point", 0), "\x00\x00\x00\x00\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\xf0\x3f\x00\x00\x00\x00\x00\x00\x00\x40",
			"[0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, -16, 63, 0, 0, 0, 0, 0, 0, 0, 64]", nil, -2, "point"},
		// MariaDB's UUID and INET types are their text (FIELD types them BINARY, as Vitess
		// does by the server's flags), with CHAR's code.
		{field("uuid", query.Type_BINARY, "uuid", 0), "123e4567-e89b-12d3-a456-426614174000", "123e4567-e89b-12d3-a456-426614174000", nil, 1, "uuid"},
		{field("inet6", query.Type_BINARY, "inet6", 0), "::ffff:1.2.3.4", "::ffff:1.2.3.4", nil, 1, "inet6"},
		// A CHAR and a VARCHAR with a binary collation: FIELD says BINARY and VARBINARY; the
		// values are text.
		{collated(field("char_bin", query.Type_BINARY, "char(4)", 0), 46), "ab", "ab", nil, 1, "char"},
		{collated(field("varchar_bin", query.Type_VARBINARY, "varchar(10)", 0), 46), "é", "é", nil, 12, "varchar"},
		{collated(field("enum_bin", query.Type_BINARY, "enum('x','y')", 0), 46), "y", "y", nil, 1, "enum"},
	}
	var fields []*query.Field
	var cells []any
	for _, c := range cases {
		fields = append(fields, c.f)
		cells = append(cells, c.cell)
	}
	for _, jsonc := range []bool{false, true} {
		e := newEnc(t, jsonc, "db", &clock{}, nil)
		out := encode(t, e, fieldEvent("t", nil, fields...), rowEvent("t", 1, nil, &binlogdata.RowChange{After: row(cells...)}))
		m := decode(t, out[0])
		data := rows(t, m["data"])[0]
		sqlType, mysqlType := m["sqlType"].(map[string]any), m["mysqlType"].(map[string]any)
		for _, c := range cases {
			name := c.f.Name
			want := c.json
			if jsonc && c.jsonc != nil {
				want = c.jsonc
			}
			if got, ok := data[name]; !ok || got != want {
				t.Errorf("jsonc=%v %s (%s) %q: %#v, want %#v", jsonc, name, c.f.ColumnType, c.cell, got, want)
			}
			if sqlType[name] != float64(c.sqlType) || mysqlType[name] != c.mysqlType {
				t.Errorf("%s (%s): sqlType %v mysqlType %v, want %d %s", name, c.f.ColumnType, sqlType[name], mysqlType[name], c.sqlType, c.mysqlType)
			}
		}
		if len(data) != len(cases) {
			t.Errorf("%d columns in data, want %d", len(data), len(cases))
		}
		// Number text that parsing would hide, and the NULL that must be JSON null, not "null".
		mustContain(t, out[0].Value, `"f":"86.0"`, `"f_exp":"1.2510357E7"`, `"f_small":"1.0E-4"`, `"null":null`, `"bit":"682"`,
			`"blob":"[60, 62]"`, `"ubig":"18446744073709551615"`)
	}
}

// ENUM and SET cells given as numbers (enum_set_string_values false) become labels too.
func TestEnumSetNumbers(t *testing.T) {
	e := newEnc(t, false, "db", &clock{}, nil)
	fe := &binlogdata.VEvent{Type: binlogdata.VEventType_FIELD, FieldEvent: &binlogdata.FieldEvent{TableName: "t", Fields: []*query.Field{
		field("e", query.Type_ENUM, "enum('x','it''s')", 0), field("e0", query.Type_ENUM, "enum('x')", 0),
		field("s", query.Type_SET, "set('a','b','c')", 0), field("s0", query.Type_SET, "set('a')", 0),
	}}}
	out := encode(t, e, fe, rowEvent("t", 1, nil, &binlogdata.RowChange{After: row("2", "0", "5", "0")}))
	data := rows(t, decode(t, out[0])["data"])[0]
	want := map[string]any{"e": "it's", "e0": "", "s": "a,c", "s0": ""}
	if !jsonEqual([]map[string]any{data}, []map[string]any{want}) {
		t.Errorf("data %v, want %v", data, want)
	}
	if _, err := e.Encode(nil, rowEvent("t", 1, nil, &binlogdata.RowChange{After: row("x", "0", "5", "0")})); err == nil {
		t.Error("a non-numeric ENUM index was accepted")
	}
}

// Gson's HTML-safe escapes in values, names and SQL text, for both variants.
func TestEscaping(t *testing.T) {
	const nasty = "<a href='x'>&amp;=\u2028\u2029\"\\\x01\x7f\b\f"
	fields := []*query.Field{
		field("id", query.Type_VARCHAR, "varchar(64)", query.MySqlFlag_PRI_KEY_FLAG),
		field("c<=>'&", query.Type_TEXT, "text", 0),
		field("e", query.Type_ENUM, "enum('<>','&')", 0),
	}
	create := proto.CloneOf(snapSrc)
	create.CreateTable = "CREATE TABLE `t` (\n  `c<=>'&` text COMMENT '" + nasty + "'\n)"
	ddlSQL := "ALTER TABLE t ADD COLUMN x INT DEFAULT 1 COMMENT '" + nasty + "'"
	for _, jsonc := range []bool{false, true} {
		e := newEnc(t, jsonc, "db", &clock{}, nil)
		out := encode(t, e, fieldEvent("t", create, fields...),
			rowEvent("t", 1, nil, &binlogdata.RowChange{After: row(nasty, nasty, "<>")}),
			&binlogdata.VEvent{Type: binlogdata.VEventType_DDL, Statement: ddlSQL})
		if len(out) != 3 {
			t.Fatalf("%d messages", len(out))
		}
		for _, msg := range out {
			v := string(msg.Value)
			for _, raw := range []string{"<", ">", "&", "=", "'", "\u2028", "\u2029", "\x01", "\x7f\b"} {
				if strings.Contains(v, raw) {
					t.Errorf("jsonc=%v: raw %q in %s", jsonc, raw, v)
				}
			}
			mustContain(t, msg.Value, `\u003c`, `\u003e`, `\u0026`, `\u003d`, `\u0027`, `\u2028`, `\u2029`)
			// Gson leaves DEL raw: it escapes only characters below 0x20, quotes, backslashes
			// and the HTML set.
			mustContain(t, msg.Value, `\"\\\u0001`+"\x7f"+`\b\f`)
		}
		ddlMsg, dml, initDDL := decode(t, out[2]), decode(t, out[1]), decode(t, out[0])
		if ddlMsg["sql"] != ddlSQL {
			t.Errorf("DDL sql round trip: %q", ddlMsg["sql"])
		}
		if want := strings.ReplaceAll(create.CreateTable, "\n", ""); initDDL["sql"] != want {
			t.Errorf("INIT_DDL sql round trip: %q, want %q", initDDL["sql"], want)
		}
		data := rows(t, dml["data"])[0]
		if data["id"] != nasty || data["c<=>'&"] != nasty || data["e"] != "<>" || dml["sqlType"].(map[string]any)["c<=>'&"] != -1.0 {
			t.Errorf("values round trip: %q", data)
		}
		if string(out[1].Key) != "db.t:"+nasty {
			t.Errorf("key %q", out[1].Key)
		}
	}
	// Invalid UTF-8 becomes U+FFFD, 4-byte characters stay whole.
	if got := string(appendString(nil, []byte("a\xffb😀"))); got != "\"a\ufffdb😀\"" {
		t.Errorf("appendString(invalid UTF-8) = %q", got)
	}
}

// Ids increase over every message but INIT_DDL (0); grouping per rows event.
func TestIDsAndRowsPerMessage(t *testing.T) {
	create := proto.CloneOf(snapSrc)
	create.CreateTable = "CREATE TABLE kv (id bigint primary key, v varchar(10))"
	evs := []*binlogdata.VEvent{
		fieldEvent("kv", create, kvFields...),
		rowEvent("kv", 0, snapSrc, &binlogdata.RowChange{After: row("1", "a")}, &binlogdata.RowChange{After: row("2", "b")}),
		rowEvent("kv", 5, nil, &binlogdata.RowChange{After: row("3", "c")}, &binlogdata.RowChange{After: row("4", "d")}),
		{Type: binlogdata.VEventType_DDL, Timestamp: 6, Statement: "DROP TABLE db2.kv"},
		rowEvent("kv", 7, nil, &binlogdata.RowChange{Before: row("1", "a")}, &binlogdata.RowChange{Before: row("2", "b")}),
	}
	type msg struct {
		typ  string
		id   float64
		rows int
	}
	for _, tc := range []struct {
		opts map[string]string
		want []msg
	}{
		{nil, []msg{{"INIT_DDL", 0, 0}, {"INIT", 1, 1}, {"INIT", 2, 1}, {"INSERT", 3, 1}, {"INSERT", 4, 1}, {"DDL", 5, 0}, {"DELETE", 6, 1}, {"DELETE", 7, 1}}},
		{map[string]string{"rows_per_message": "event", "id_start": "100"},
			[]msg{{"INIT_DDL", 0, 0}, {"INIT", 100, 2}, {"INSERT", 101, 2}, {"DDL", 102, 0}, {"DELETE", 103, 2}}},
		{map[string]string{"snapshot": "insert"}, []msg{{"INSERT", 1, 1}, {"INSERT", 2, 1}, {"INSERT", 3, 1}, {"INSERT", 4, 1}, {"DDL", 5, 0}, {"DELETE", 6, 1}, {"DELETE", 7, 1}}},
		{map[string]string{"snapshot": "none"}, []msg{{"INSERT", 1, 1}, {"INSERT", 2, 1}, {"DDL", 3, 0}, {"DELETE", 4, 1}, {"DELETE", 5, 1}}},
	} {
		for _, jsonc := range []bool{false, true} {
			out := encode(t, newEnc(t, jsonc, "db", &clock{ms: 1}, tc.opts), evs...)
			var got []msg
			for _, o := range out {
				m := decode(t, o)
				n := len(rows(t, m["data"])) + len(rows(t, m["old"]))
				got = append(got, msg{m["type"].(string), m["id"].(float64), n})
				if m["type"] == "DDL" && (m["database"] != "db2" || m["table"] != "kv") {
					t.Errorf("DDL target %v.%v", m["database"], m["table"])
				}
			}
			if len(got) != len(tc.want) {
				t.Errorf("%v jsonc=%v: %v, want %v", tc.opts, jsonc, got, tc.want)
				continue
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("%v jsonc=%v: message %d %v, want %v", tc.opts, jsonc, i, got[i], tc.want[i])
				}
			}
		}
	}
}

// Copy chunks are full-sync shards: a new shardId and identifier per chunk, one jobId per
// stream derived from its first snapshot and the clock (or configured).
func TestFullSyncShards(t *testing.T) {
	chunk := func(src *binlogdata.EventSource, id string) []*binlogdata.VEvent {
		return []*binlogdata.VEvent{{Type: binlogdata.VEventType_BEGIN, Source: src}, rowEvent("kv", 0, src, &binlogdata.RowChange{After: row(id, "x")})}
	}
	src1 := &binlogdata.EventSource{File: "mysql-bin.000001", StartPos: 100, GtidSet: "MySQL56/3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5", Snapshot: true}
	src2 := &binlogdata.EventSource{File: "mysql-bin.000001", StartPos: 300, GtidSet: "MySQL56/3e11fa47-71ca-11e1-9e33-c80aa9429562:1-7", Snapshot: true}
	run := func(c *clock, opts map[string]string) []map[string]any {
		e := newEnc(t, false, "db", c, opts)
		evs := append([]*binlogdata.VEvent{fieldEvent("kv", nil, kvFields...)}, chunk(src1, "1")...)
		evs = append(evs, chunk(src2, "2")...)
		// A second ROW event in the same chunk stays in its shard.
		evs = append(evs, rowEvent("kv", 0, src2, &binlogdata.RowChange{After: row("3", "x")}))
		var out []map[string]any
		for _, m := range encode(t, e, evs...) {
			out = append(out, decode(t, m))
		}
		return out
	}
	a := run(&clock{ms: 1000}, nil)
	if len(a) != 3 {
		t.Fatalf("%d messages", len(a))
	}
	if a[0]["identifier"] != "1" || a[1]["identifier"] != "2" || a[2]["identifier"] != "2" {
		t.Errorf("identifiers %v %v %v", a[0]["identifier"], a[1]["identifier"], a[2]["identifier"])
	}
	if a[0]["shardId"] == a[1]["shardId"] || a[1]["shardId"] != a[2]["shardId"] {
		t.Errorf("shardIds %v %v %v", a[0]["shardId"], a[1]["shardId"], a[2]["shardId"])
	}
	if a[0]["jobId"] != a[1]["jobId"] || a[0]["jobId"] == a[0]["shardId"] {
		t.Errorf("jobIds %v %v", a[0]["jobId"], a[1]["jobId"])
	}
	if a[0]["eventId"] != "mysql-bin.000001:100;3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5" || a[1]["eventId"] != "mysql-bin.000001:300;3e11fa47-71ca-11e1-9e33-c80aa9429562:1-7" {
		t.Errorf("eventIds %v %v", a[0]["eventId"], a[1]["eventId"])
	}
	// Deterministic for the same input and clock; another run (clock) is another job.
	b, c := run(&clock{ms: 1000}, nil), run(&clock{ms: 2000}, nil)
	if b[0]["jobId"] != a[0]["jobId"] || b[1]["shardId"] != a[1]["shardId"] || c[0]["jobId"] == a[0]["jobId"] || c[0]["shardId"] == a[0]["shardId"] {
		t.Errorf("jobIds %v %v %v", a[0]["jobId"], b[0]["jobId"], c[0]["jobId"])
	}
	d := run(&clock{ms: 1000}, map[string]string{"job_id": "job-7"})
	if d[0]["jobId"] != "job-7" || d[1]["jobId"] != "job-7" {
		t.Errorf("configured jobId: %v", d[0]["jobId"])
	}
}

func TestSQLTypeOverrides(t *testing.T) {
	e := newEnc(t, true, "db", &clock{}, map[string]string{"sql_type_overrides": "year=12, BIT=-3,datetime=93"})
	out := encode(t, e, fieldEvent("t", nil, field("y", query.Type_YEAR, "year(4)", 0), field("b", query.Type_BIT, "bit(1)", 0),
		field("d", query.Type_DATETIME, "datetime", 0), field("i", query.Type_INT32, "int(11)", 0)),
		rowEvent("t", 1, nil, &binlogdata.RowChange{After: row("2024", "\x01", "2024-01-01 00:00:00", "1")}))
	st := decode(t, out[0])["sqlType"].(map[string]any)
	if st["y"] != 12.0 || st["b"] != -3.0 || st["d"] != 93.0 || st["i"] != 4.0 {
		t.Errorf("sqlType %v", st)
	}
	// The defaults of other encoders stay.
	if defaultSQLTypes["year"] != 91 || defaultSQLTypes["datetime"] != 94 {
		t.Error("overrides changed the shared table")
	}
}

func TestOptions(t *testing.T) {
	for _, opts := range []map[string]string{
		{"rows_per_message": "batch"}, {"render_zone": "Mars/Olympus"}, {"id_start": "0"}, {"id_start": "x"},
		{"snapshot": "read"}, {"sql_type_overrides": "year"}, {"sql_type_overrides": "year=x"},
	} {
		for _, build := range []func(encoder.Params) (*Encoder, error){NewJSON, NewJSONC} {
			if _, err := build(encoder.Params{Options: encoder.NewOptions(opts), Clock: (&clock{}).now}); err == nil {
				t.Errorf("%v accepted", opts)
			}
		}
	}
	o := encoder.NewOptions(map[string]string{"profile": "dts"})
	if _, err := NewJSON(encoder.Params{Options: o, Clock: (&clock{}).now}); err != nil {
		t.Fatal(err)
	}
	if err := o.Unknown(); err == nil || !strings.Contains(err.Error(), "profile") || !strings.Contains(err.Error(), "render_zone") {
		t.Errorf("unknown option: %v", err)
	}
}

func TestRowBeforeField(t *testing.T) {
	e := newEnc(t, false, "db", &clock{}, nil)
	if _, err := e.Encode(nil, rowEvent("kv", 1, nil, &binlogdata.RowChange{After: row("1", "a")})); err == nil {
		t.Error("ROW before FIELD accepted")
	}
	encode(t, e, fieldEvent("kv", nil, kvFields...))
	bad := row("1", "a")
	bad.Values = bad.Values[:1]
	if _, err := e.Encode(nil, rowEvent("kv", 1, nil, &binlogdata.RowChange{After: bad})); err == nil {
		t.Error("a row shorter than its lengths accepted")
	}
}

// A FIELD event with a column of a type no column can have (an expression's) is an error
// naming the table and the column, not a table whose cells are written as plain text.
func TestFieldTypeNoColumnHas(t *testing.T) {
	e := newEnc(t, false, "db", &clock{}, nil)
	_, err := e.Encode(nil, fieldEvent("kv", nil, kvFields[0], field("e", query.Type_EXPRESSION, "", 0)))
	if err == nil || !strings.Contains(err.Error(), "table kv column e") || !strings.Contains(err.Error(), "EXPRESSION") {
		t.Fatalf("EXPRESSION column: %v", err)
	}
	if _, err := e.Encode(nil, rowEvent("kv", 1, nil, &binlogdata.RowChange{After: row("1", "a")})); err == nil {
		t.Error("ROW of a table whose FIELD event was refused accepted")
	}
}

// collated gives a field a collation of its own.
func collated(f *query.Field, collation uint32) *query.Field {
	f.Charset = collation
	return f
}

// A column that a NOBLOB or MINIMAL row image left out (data_columns) is left out of data;
// old, the before image, lists every column.
func TestColumnsNotLogged(t *testing.T) {
	fields := []*query.Field{field("id", query.Type_INT32, "int(11)", query.MySqlFlag_PRI_KEY_FLAG),
		field("blb", query.Type_BLOB, "blob", 0), field("val", query.Type_VARCHAR, "varchar(4)", 0)}
	for _, jsonc := range []bool{false, true} {
		e := newEnc(t, jsonc, "db", &clock{}, nil)
		out := encode(t, e, fieldEvent("t", nil, fields...), rowEvent("t", 1, nil, &binlogdata.RowChange{
			Before: row("1", nil, "aaa"), After: row("1", nil, "bbb"), DataColumns: &binlogdata.RowChange_Bitmap{Count: 3, Cols: []byte{0b101}}}))
		m := decode(t, out[0])
		data, old := rows(t, m["data"])[0], rows(t, m["old"])[0]
		if _, has := data["blb"]; has || data["val"] != "bbb" || len(data) != 2 {
			t.Errorf("jsonc=%v data %v: the column not logged must be left out", jsonc, data)
		}
		if len(old) != 3 {
			t.Errorf("jsonc=%v old %v, want every column", jsonc, old)
		}
	}
}
