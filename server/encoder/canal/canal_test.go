package canal

import (
	"strings"
	"testing"
	"time"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	"github.com/vstream-cdc/vstream/server/encoder"
	"github.com/vstream-cdc/vstream/sqltypes"
)

func TestAppendValue(t *testing.T) {
	shanghai, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		f        *query.Field
		cell     string
		zone     *time.Location
		want     string
		wantCode int
	}{
		{"tinyint", &query.Field{Type: query.Type_INT8}, "-128", nil, "-128", -6},
		{"tinyint unsigned in range", &query.Field{Type: query.Type_UINT8}, "127", nil, "127", -6},
		{"tinyint unsigned promoted", &query.Field{Type: query.Type_UINT8}, "255", nil, "255", 5},
		{"smallint unsigned promoted", &query.Field{Type: query.Type_UINT16}, "65535", nil, "65535", 4},
		{"mediumint unsigned never promoted", &query.Field{Type: query.Type_UINT24}, "16777215", nil, "16777215", 4},
		{"int unsigned promoted", &query.Field{Type: query.Type_UINT32}, "4294967295", nil, "4294967295", -5},
		{"bigint unsigned in range", &query.Field{Type: query.Type_UINT64}, "9223372036854775807", nil, "9223372036854775807", -5},
		{"bigint unsigned promoted", &query.Field{Type: query.Type_UINT64}, "18446744073709551615", nil, "18446744073709551615", 3},
		{"decimal", &query.Field{Type: query.Type_DECIMAL}, "-12.50", nil, "-12.50", 3},
		{"decimal without leading zero", &query.Field{Type: query.Type_DECIMAL}, ".50", nil, "0.50", 3},
		{"negative decimal without leading zero", &query.Field{Type: query.Type_DECIMAL}, "-.50", nil, "-0.50", 3},
		{"float", &query.Field{Type: query.Type_FLOAT32}, "8.6E+01", nil, "86.0", 7},
		{"double", &query.Field{Type: query.Type_FLOAT64}, "1.2510357E+07", nil, "1.2510357E7", 8},
		{"bit", &query.Field{Type: query.Type_BIT}, "\x02\xaa", nil, "682", -7},
		{"date", &query.Field{Type: query.Type_DATE}, "0000-00-00", nil, "0000-00-00", 91},
		{"datetime", &query.Field{Type: query.Type_DATETIME}, "2024-01-01 00:00:00.5", shanghai, "2024-01-01 00:00:00.5", 93},
		{"timestamp utc", &query.Field{Type: query.Type_TIMESTAMP}, "2024-01-01 00:00:00", nil, "2024-01-01 00:00:00", 93},
		{"timestamp zone", &query.Field{Type: query.Type_TIMESTAMP}, "2023-12-31 20:00:00.500", shanghai, "2024-01-01 04:00:00.500", 93},
		{"zero timestamp", &query.Field{Type: query.Type_TIMESTAMP}, "0000-00-00 00:00:00", shanghai, "0000-00-00 00:00:00", 93},
		{"time", &query.Field{Type: query.Type_TIME}, "-838:59:59.000000", nil, "-838:59:59.000000", 92},
		{"year", &query.Field{Type: query.Type_YEAR}, "0000", nil, "0000", 12},
		{"char", &query.Field{Type: query.Type_CHAR}, "abc", nil, "abc", 1},
		{"varchar", &query.Field{Type: query.Type_VARCHAR}, "汉字😀", nil, "汉字😀", 12},
		{"text", &query.Field{Type: query.Type_TEXT}, "x", nil, "x", 2005},
		{"binary unpadded", &query.Field{Type: query.Type_BINARY}, "\x01\xff\x00\x00", nil, "\u0001\u00ff", 2004},
		{"varbinary", &query.Field{Type: query.Type_VARBINARY}, "\x00\x80", nil, "\u0000\u0080", 2004},
		{"blob", &query.Field{Type: query.Type_BLOB}, "\xe9", nil, "é", 2004},
		// VECTOR is bytes like a BLOB (its code says so); its raw bytes were written as they
		// are, which is not UTF-8 text a Java string holds.
		{"vector", &query.Field{Type: query.Type_VECTOR}, "\x00\x00\x80\x3f", nil, "\u0000\u0000\u0080?", 2004},
		{"enum", &query.Field{Type: query.Type_ENUM, ColumnType: "enum('x','y')"}, "y", nil, "2", 4},
		{"enum empty", &query.Field{Type: query.Type_ENUM, ColumnType: "enum('x','y')"}, "", nil, "0", 4},
		{"set", &query.Field{Type: query.Type_SET, ColumnType: "set('a','b','c')"}, "a,c", nil, "5", -7},
		{"json", &query.Field{Type: query.Type_JSON}, `{"a": 1}`, nil, `{"a": 1}`, 12},
		// MariaDB's JSON is a LONGTEXT (column_type longtext), a CLOB to canal.
		{"mariadb json", &query.Field{Type: query.Type_JSON, ColumnType: "longtext"}, `{"a": 1}`, nil, `{"a": 1}`, 2005},
	}
	for _, c := range cases {
		o := Options{Zone: c.zone}
		got, code, err := o.AppendValue([]byte("prefix:"), c.f, sqltypes.Labels(c.f.GetColumnType()), []byte(c.cell))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if string(got) != "prefix:"+c.want || code != c.wantCode {
			t.Errorf("%s: %q code %d, want %q code %d", c.name, got, code, "prefix:"+c.want, c.wantCode)
		}
	}
	if _, _, err := (Options{}).AppendValue(nil, &query.Field{Name: "f", Type: query.Type_FLOAT64}, nil, []byte("x")); err == nil ||
		!strings.Contains(err.Error(), "column f") {
		t.Errorf("bad float: %v", err)
	}
	// A type no column has is an error naming the column, not bytes written without a word.
	if _, _, err := (Options{}).AppendValue(nil, &query.Field{Name: "e", Type: query.Type_EXPRESSION}, nil, []byte("x")); err == nil ||
		!strings.Contains(err.Error(), "column e") || !strings.Contains(err.Error(), "EXPRESSION") {
		t.Errorf("EXPRESSION column: %v", err)
	}
}

func TestSQLTypeOfNull(t *testing.T) {
	cases := map[query.Type]int{
		query.Type_UINT64: -5, query.Type_TEXT: 2005, query.Type_BLOB: 2004, query.Type_VARBINARY: 2004,
		query.Type_SET: 2004, query.Type_GEOMETRY: 2004, query.Type_JSON: 1111, query.Type_ENUM: 4, query.Type_BIT: -7,
	}
	for typ, want := range cases {
		if got := SQLType(&query.Field{Type: typ}, true); got != want {
			t.Errorf("NULL %s: %d, want %d", typ, got, want)
		}
	}
}

func TestReadOptions(t *testing.T) {
	opts, err := ReadOptions(encoder.Params{Options: encoder.NewOptions(map[string]string{"render_zone": "Asia/Shanghai", "mysql_type": "base"})})
	if err != nil {
		t.Fatal(err)
	}
	if opts.Zone.String() != "Asia/Shanghai" || !opts.BaseType {
		t.Errorf("options %+v", opts)
	}
	for in, want := range map[string]string{"bigint(20) unsigned": "bigint unsigned", "int": "int", "decimal(10,2)": "decimal",
		"enum('a','b(c)')": "enum"} {
		if got := opts.MySQLType(in); got != want {
			t.Errorf("base MySQLType(%s) = %s, want %s", in, got, want)
		}
	}
	if got := (Options{}).MySQLType("bigint(20) unsigned"); got != "bigint(20) unsigned" {
		t.Errorf("full MySQLType = %s", got)
	}
	if _, err := ReadOptions(encoder.Params{Options: encoder.NewOptions(map[string]string{"render_zone": "Mars/Base"})}); err == nil {
		t.Error("unknown zone accepted")
	}
	if _, err := ReadOptions(encoder.Params{Options: encoder.NewOptions(map[string]string{"mysql_type": "short"})}); err == nil {
		t.Error("unknown mysql_type accepted")
	}
}

func TestAppendKey(t *testing.T) {
	key := AppendKeyPart(AppendKeyPart(AppendKeyPart(AppendKey(nil, "db", "t"), []byte("1")), ""), "x")
	if got := string(key); got != "db.t:1::x" {
		t.Errorf("key %q", got)
	}
}

func TestDDL(t *testing.T) {
	cases := map[string][3]string{
		"CREATE TABLE t (id INT)":                      {"CREATE", "def", "t"},
		"ALTER TABLE t ADD COLUMN c INT":               {"ALTER", "def", "t"},
		"ALTER TABLE t RENAME TO u":                    {"RENAME", "def", "t"},
		"ALTER TABLE t ADD INDEX i (c)":                {"CINDEX", "def", "t"},
		"ALTER TABLE t ADD UNIQUE KEY u (c)":           {"CINDEX", "def", "t"},
		"ALTER TABLE t DROP INDEX i":                   {"DINDEX", "def", "t"},
		"DROP TABLE other.t":                           {"ERASE", "other", "t"},
		"CREATE INDEX i ON t (c)":                      {"CINDEX", "def", "t"},
		"DROP INDEX i ON t":                            {"DINDEX", "def", "t"},
		"TRUNCATE TABLE t":                             {"TRUNCATE", "def", "t"},
		"RENAME TABLE t TO u":                          {"RENAME", "def", "t"},
		"CREATE DATABASE d":                            {"QUERY", "def", ""},
		"/* x */ CREATE TABLE IF NOT EXISTS t (a INT)": {"CREATE", "def", "t"},
	}
	for sql, want := range cases {
		kind, db, table := DDL(sql, "def")
		if got := [3]string{kind, db, table}; got != want {
			t.Errorf("%s: %v, want %v", sql, got, want)
		}
	}
}

func TestExecuteTime(t *testing.T) {
	clock := func() time.Time { return time.UnixMilli(1234) }
	if got := ExecuteTime(nil, clock); got != 1234 {
		t.Errorf("copied row: %d", got)
	}
	if got := ExecuteTime(&binlogdata.VEvent{Timestamp: 1700000000}, clock); got != 1700000000000 {
		t.Errorf("binlog event: %d", got)
	}
}

func TestGTIDSet(t *testing.T) {
	for in, want := range map[string]string{
		"MariaDB/0-1-100,1-2-3":                            "0-1-100,1-2-3",
		"MySQL56/3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5": "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5",
		"0-1-100": "0-1-100",
	} {
		if got := GTIDSet(in); got != want {
			t.Errorf("GTIDSet(%q) = %q, want %q", in, got, want)
		}
	}
}
