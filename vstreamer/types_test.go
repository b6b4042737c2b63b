package vstreamer

import (
	"testing"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	"github.com/vstream-cdc/vstream/internal/testkit"
	"github.com/vstream-cdc/vstream/internal/testkit/evtext"
)

// TestColumnTypes streams one row per case through a table with a single column of the
// type under test and checks the FIELD type and the exact cell bytes.
func TestColumnTypes(t *testing.T) {
	cases := []struct {
		name    string
		colType string
		value   string // SQL literal
		typ     query.Type
		want    string // exact cell bytes; "<NULL>" for NULL
	}{
		{"tinyint min", "TINYINT", "-128", query.Type_INT8, "-128"},
		{"tinyint unsigned max", "TINYINT UNSIGNED", "255", query.Type_UINT8, "255"},
		{"smallint min", "SMALLINT", "-32768", query.Type_INT16, "-32768"},
		{"smallint unsigned max", "SMALLINT UNSIGNED", "65535", query.Type_UINT16, "65535"},
		{"mediumint min", "MEDIUMINT", "-8388608", query.Type_INT24, "-8388608"},
		{"mediumint unsigned max", "MEDIUMINT UNSIGNED", "16777215", query.Type_UINT24, "16777215"},
		{"int min", "INT", "-2147483648", query.Type_INT32, "-2147483648"},
		{"int unsigned max", "INT UNSIGNED", "4294967295", query.Type_UINT32, "4294967295"},
		{"bigint min", "BIGINT", "-9223372036854775808", query.Type_INT64, "-9223372036854775808"},
		{"bigint unsigned max", "BIGINT UNSIGNED", "18446744073709551615", query.Type_UINT64, "18446744073709551615"},
		{"decimal 65,30", "DECIMAL(65,30)", "-12345678901234567890123456789012345.123456789012345678901234567890", query.Type_DECIMAL, "-12345678901234567890123456789012345.123456789012345678901234567890"},
		{"decimal small", "DECIMAL(10,4)", "-1.23", query.Type_DECIMAL, "-1.2300"},
		{"decimal zero", "DECIMAL(10,2)", "0", query.Type_DECIMAL, "0.00"},
		{"decimal fraction only", "DECIMAL(10,3)", "0.5", query.Type_DECIMAL, "0.500"},
		{"float", "FLOAT", "1.5", query.Type_FLOAT32, "1.5E+00"},
		{"double", "DOUBLE", "-2.25e100", query.Type_FLOAT64, "-2.25E+100"},
		{"double tenth", "DOUBLE", "0.1", query.Type_FLOAT64, "1E-01"},
		{"date", "DATE", "'2024-02-29'", query.Type_DATE, "2024-02-29"},
		{"date zero", "DATE", "'0000-00-00'", query.Type_DATE, "0000-00-00"},
		{"datetime", "DATETIME", "'2024-12-31 23:59:59'", query.Type_DATETIME, "2024-12-31 23:59:59"},
		{"datetime(3)", "DATETIME(3)", "'2024-12-31 23:59:59.125'", query.Type_DATETIME, "2024-12-31 23:59:59.125"},
		{"datetime(6)", "DATETIME(6)", "'1000-01-01 00:00:00.000001'", query.Type_DATETIME, "1000-01-01 00:00:00.000001"},
		{"datetime zero", "DATETIME", "'0000-00-00 00:00:00'", query.Type_DATETIME, "0000-00-00 00:00:00"},
		{"timestamp in UTC", "TIMESTAMP NULL", "'2024-06-01 12:00:00'", query.Type_TIMESTAMP, "2024-06-01 12:00:00"},
		{"timestamp(6)", "TIMESTAMP(6) NULL", "'2038-01-19 03:14:07.999999'", query.Type_TIMESTAMP, "2038-01-19 03:14:07.999999"},
		{"timestamp(2)", "TIMESTAMP(2) NULL", "'1970-01-01 00:00:01.5'", query.Type_TIMESTAMP, "1970-01-01 00:00:01.50"},
		{"time", "TIME", "'12:34:56'", query.Type_TIME, "12:34:56"},
		{"time negative", "TIME", "'-838:59:59'", query.Type_TIME, "-838:59:59"},
		{"time(3) negative", "TIME(3)", "'-01:02:03.5'", query.Type_TIME, "-01:02:03.500"},
		{"time(2) zero", "TIME(2)", "'00:00:00'", query.Type_TIME, "00:00:00.00"},
		// MariaDB's TIME range ends at 838:59:59.999999, MySQL's at 838:59:59.
		{"time(6)", "TIME(6)", byFlavor("'838:59:59.000001'", "'838:59:58.999999'"), query.Type_TIME, byFlavor("838:59:59.000001", "838:59:58.999999")},
		{"year", "YEAR", "2155", query.Type_YEAR, "2155"},
		{"year zero", "YEAR", "0", query.Type_YEAR, "0000"},
		{"char utf8mb4 emoji", "CHAR(10)", "'😀é'", query.Type_CHAR, "😀é"},
		{"varchar CJK", "VARCHAR(100)", "'汉字テスト'", query.Type_VARCHAR, "汉字テスト"},
		{"varchar empty", "VARCHAR(10)", "''", query.Type_VARCHAR, ""},
		{"text", "TEXT", "'line1\\nline2'", query.Type_TEXT, "line1\nline2"},
		{"longtext", "LONGTEXT", "REPEAT('x', 70000)", query.Type_TEXT, string(repeat('x', 70000))},
		{"binary padded", "BINARY(4)", "x'0102'", query.Type_BINARY, "\x01\x02\x00\x00"},
		{"varbinary bytes", "VARBINARY(10)", "x'00ff7f80'", query.Type_VARBINARY, "\x00\xff\x7f\x80"},
		{"blob bytes", "BLOB", "x'deadbeef00'", query.Type_BLOB, "\xde\xad\xbe\xef\x00"},
		{"bit(1)", "BIT(1)", "b'1'", query.Type_BIT, "\x01"},
		{"bit(12)", "BIT(12)", "b'101010101010'", query.Type_BIT, "\x0a\xaa"},
		{"bit(64)", "BIT(64)", "b'1111111111111111111111111111111111111111111111111111111111111111'", query.Type_BIT, "\xff\xff\xff\xff\xff\xff\xff\xff"},
		{"enum label", "ENUM('small','medium','large')", "'medium'", query.Type_ENUM, "medium"},
		{"enum empty (invalid value)", "ENUM('a','b')", "''", query.Type_ENUM, ""},
		{"set labels", "SET('r','w','x')", "'x,r'", query.Type_SET, "r,x"},
		{"set 64 members high bit", "SET('m1','m2','m3','m4','m5','m6','m7','m8','m9','m10','m11','m12','m13','m14','m15','m16','m17','m18','m19','m20','m21','m22','m23','m24','m25','m26','m27','m28','m29','m30','m31','m32','m33','m34','m35','m36','m37','m38','m39','m40','m41','m42','m43','m44','m45','m46','m47','m48','m49','m50','m51','m52','m53','m54','m55','m56','m57','m58','m59','m60','m61','m62','m63','m64')", "'m1,m64'", query.Type_SET, "m1,m64"},
		{"json", "JSON", `'{"a": [1, 2.5, "x"], "b": null}'`, query.Type_JSON, `{"a": [1, 2.5, "x"], "b": null}`},
		{"geometry point", "POINT", "ST_GeomFromText('POINT(1 2)')", query.Type_GEOMETRY, "\x00\x00\x00\x00\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\xf0?\x00\x00\x00\x00\x00\x00\x00@"},
		{"null", "INT", "NULL", query.Type_INT32, "<NULL>"},
	}
	testkit.MustExec(t, db, "SET GLOBAL time_zone = '+03:00'", "SET time_zone = '+03:00'")
	t.Cleanup(func() { testkit.MustExec(t, db, "SET GLOBAL time_zone = SYSTEM", "SET time_zone = SYSTEM") })
	e := newEngine(t)
	ts := startStream(t, e, Request{Position: "current", Filter: &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "/^ty_"}}}})
	ts.expect("GTID", "OTHER", "VGTID")
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ts.t = t
			table := "ty_" + itoa(i)
			// Timestamps are written in a +03:00 session and must come out in UTC.
			value := c.value
			if c.typ == query.Type_TIMESTAMP {
				value = "CONVERT_TZ(" + value + ", '+00:00', '+03:00')"
			}
			testkit.MustExec(t, db, "SET SESSION sql_mode = 'NO_ENGINE_SUBSTITUTION'", "SET time_zone = '+03:00'",
				"CREATE TABLE "+table+" (id INT PRIMARY KEY, v "+c.colType+")",
				"INSERT INTO "+table+" VALUES (1, "+value+")")
			ts.expect("GTID", "DDL CREATE TABLE "+table+" (id INT PRIMARY KEY, v "+c.colType+")", "VGTID")
			evs := ts.expect("BEGIN", "FIELD "+table+" id:INT32 v:"+c.typ.String(), "ROW", "GTID", "COMMIT", "VGTID")
			if got := evs[1].FieldEvent.Fields[1].Type; got != c.typ {
				t.Errorf("type = %v, want %v", got, c.typ)
			}
			cell := evtext.Cells(evs[2].RowEvent.RowChanges[0].After)[1]
			got := "<NULL>"
			if cell != nil {
				got = string(cell)
			}
			if got != c.want {
				t.Errorf("value = %q, want %q", got, c.want)
			}
		})
	}
	ts.t = t
}

func repeat(b byte, n int) []byte {
	out := make([]byte, n)
	for i := range out {
		out[i] = b
	}
	return out
}

func itoa(i int) string {
	return string(rune('a'+i/26)) + string(rune('a'+i%26))
}
