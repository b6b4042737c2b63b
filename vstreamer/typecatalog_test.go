package vstreamer

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	"github.com/vstream-cdc/vstream/internal/testkit"
	"github.com/vstream-cdc/vstream/internal/testkit/evtext"
	"github.com/vstream-cdc/vstream/vstreamer/rowcodec"
	"github.com/vstream-cdc/vstream/vstreamer/schema"
)

// Flag bits of query.Field.flags, short for the catalog below.
const (
	notNull = uint32(query.MySqlFlag_NOT_NULL_FLAG)
	uni     = uint32(query.MySqlFlag_UNIQUE_KEY_FLAG)
	blob    = uint32(query.MySqlFlag_BLOB_FLAG)
	uns     = uint32(query.MySqlFlag_UNSIGNED_FLAG)
	zf      = uint32(query.MySqlFlag_ZEROFILL_FLAG)
	bin     = uint32(query.MySqlFlag_BINARY_FLAG)
	enum    = uint32(query.MySqlFlag_ENUM_FLAG)
	ai      = uint32(query.MySqlFlag_AUTO_INCREMENT_FLAG)
	set     = uint32(query.MySqlFlag_SET_FLAG)
	num     = uint32(query.MySqlFlag_NUM_FLAG)
	part    = uint32(query.MySqlFlag_PART_KEY_FLAG)
)

// typeCatalog is every column type MariaDB 10.11 accepts (with the aliases that name another
// type, and the collations that change how Vitess types a column), one value of each, and
// the FIELD metadata Vitess gives the column. The lengths, decimals and flags are what
// `mariadb --default-character-set=utf8mb4 --column-type-info` prints for `SELECT v` of each
// column; the type is Vitess's for that protocol type and those flags (a CHAR, ENUM or SET
// with a binary collation is BINARY, a VARCHAR VARBINARY, a TEXT BLOB); the charset is the
// column's collation (63 for JSON, as Vitess gives it); column_type is
// information_schema.COLUMNS.COLUMN_TYPE. want is the cell as SELECT returns it. MariaDB's
// COMPRESSED columns are apart (TestCompressedColumns): their binlog rows cannot be read.
// flavorCatalog gives MySQL's account of the same types.
var typeCatalog = []catalogType{
	{"TINYINT", `-128`, "-128", query.Type_INT8, 4, 0, 63, num, "tinyint(4)"},
	{"TINYINT UNSIGNED", `255`, "255", query.Type_UINT8, 3, 0, 63, uns | num, "tinyint(3) unsigned"},
	{"TINYINT(2) ZEROFILL", `7`, "7", query.Type_UINT8, 2, 0, 63, uns | zf | num, "tinyint(2) unsigned zerofill"},
	{"BOOLEAN", `1`, "1", query.Type_INT8, 1, 0, 63, num, "tinyint(1)"},
	{"SMALLINT", `-32768`, "-32768", query.Type_INT16, 6, 0, 63, num, "smallint(6)"},
	{"SMALLINT UNSIGNED", `65535`, "65535", query.Type_UINT16, 5, 0, 63, uns | num, "smallint(5) unsigned"},
	{"MEDIUMINT", `-8388608`, "-8388608", query.Type_INT24, 9, 0, 63, num, "mediumint(9)"},
	{"MEDIUMINT UNSIGNED", `16777215`, "16777215", query.Type_UINT24, 8, 0, 63, uns | num, "mediumint(8) unsigned"},
	{"INT", `-2147483648`, "-2147483648", query.Type_INT32, 11, 0, 63, num, "int(11)"},
	{"INT UNSIGNED", `4294967295`, "4294967295", query.Type_UINT32, 10, 0, 63, uns | num, "int(10) unsigned"},
	{"INT(5) ZEROFILL", `42`, "42", query.Type_UINT32, 5, 0, 63, uns | zf | num, "int(5) unsigned zerofill"},
	{"BIGINT", `-9223372036854775808`, "-9223372036854775808", query.Type_INT64, 20, 0, 63, num, "bigint(20)"},
	{"BIGINT UNSIGNED", `18446744073709551615`, "18446744073709551615", query.Type_UINT64, 20, 0, 63, uns | num, "bigint(20) unsigned"},
	{"SERIAL", `7`, "7", query.Type_UINT64, 20, 0, 63, notNull | uni | uns | ai | num | part, "bigint(20) unsigned"},
	{"DECIMAL(5,2)", `-1.5`, "-1.50", query.Type_DECIMAL, 7, 2, 63, num, "decimal(5,2)"},
	{"DECIMAL(5,2) UNSIGNED", `1.5`, "1.50", query.Type_DECIMAL, 6, 2, 63, uns | num, "decimal(5,2) unsigned"},
	{"DECIMAL(10)", `1234567890`, "1234567890", query.Type_DECIMAL, 11, 0, 63, num, "decimal(10,0)"},
	{"DECIMAL(65,30)", `-12345678901234567890123456789012345.123456789012345678901234567890`, "-12345678901234567890123456789012345.123456789012345678901234567890", query.Type_DECIMAL, 67, 30, 63, num, "decimal(65,30)"},
	{"NUMERIC(5,2)", `2.99`, "2.99", query.Type_DECIMAL, 7, 2, 63, num, "decimal(5,2)"},
	{"FIXED(4,1)", `-0.5`, "-0.5", query.Type_DECIMAL, 6, 1, 63, num, "decimal(4,1)"},
	{"FLOAT", `3.99`, "3.99E+00", query.Type_FLOAT32, 12, 31, 63, num, "float"},
	{"FLOAT UNSIGNED", `1.5`, "1.5E+00", query.Type_FLOAT32, 12, 31, 63, uns | num, "float unsigned"},
	{"FLOAT(5,2)", `1.25`, "1.25E+00", query.Type_FLOAT32, 5, 2, 63, num, "float(5,2)"},
	{"FLOAT(30)", `0.1`, "1E-01", query.Type_FLOAT64, 22, 31, 63, num, "double"},
	{"DOUBLE", `-2.25e100`, "-2.25E+100", query.Type_FLOAT64, 22, 31, 63, num, "double"},
	{"DOUBLE(10,3)", `1.5`, "1.5E+00", query.Type_FLOAT64, 10, 3, 63, num, "double(10,3)"},
	{"REAL", `4.99`, "4.99E+00", query.Type_FLOAT64, 22, 31, 63, num, "double"},
	{"BIT(1)", `b'1'`, "\x01", query.Type_BIT, 1, 0, 63, uns, "bit(1)"},
	{"BIT(12)", `b'101010101010'`, "\n\xaa", query.Type_BIT, 12, 0, 63, uns, "bit(12)"},
	{"BIT(64)", `b'1111111111111111111111111111111111111111111111111111111111111111'`, "\xff\xff\xff\xff\xff\xff\xff\xff", query.Type_BIT, 64, 0, 63, uns, "bit(64)"},
	{"YEAR", `2155`, "2155", query.Type_YEAR, 4, 0, 63, uns | zf | num, "year(4)"},
	{"DATE", `'2024-02-29'`, "2024-02-29", query.Type_DATE, 10, 0, 63, bin, "date"},
	{"TIME", `'-838:59:59'`, "-838:59:59", query.Type_TIME, 10, 0, 63, bin, "time"},
	{"TIME(3)", `'12:34:56.5'`, "12:34:56.500", query.Type_TIME, 14, 3, 63, bin, "time(3)"},
	{"DATETIME", `'2024-12-31 23:59:59'`, "2024-12-31 23:59:59", query.Type_DATETIME, 19, 0, 63, bin, "datetime"},
	{"DATETIME(6)", `'1000-01-01 00:00:00.000001'`, "1000-01-01 00:00:00.000001", query.Type_DATETIME, 26, 6, 63, bin, "datetime(6)"},
	{"TIMESTAMP NULL", `'2024-06-01 12:00:00'`, "2024-06-01 12:00:00", query.Type_TIMESTAMP, 19, 0, 63, uns | bin, "timestamp"},
	{"TIMESTAMP(3) NULL", `'2038-01-19 03:14:07.5'`, "2038-01-19 03:14:07.500", query.Type_TIMESTAMP, 23, 3, 63, uns | bin, "timestamp(3)"},
	{"CHAR(10)", `'😀é'`, "😀é", query.Type_CHAR, 40, 0, 45, 0, "char(10)"},
	{"CHAR(10) COLLATE utf8mb4_bin", `'bin'`, "bin", query.Type_BINARY, 40, 0, 46, bin, "char(10)"},
	{"CHAR(10) CHARACTER SET latin1", `_latin1 x'636166e9'`, "caf\xe9", query.Type_CHAR, 40, 0, 8, 0, "char(10)"},
	{"CHAR(10) CHARACTER SET utf8mb3", `'é'`, "é", query.Type_CHAR, 40, 0, 33, 0, "char(10)"},
	{"CHAR(0)", `''`, "", query.Type_CHAR, 0, 0, 45, 0, "char(0)"},
	{"NATIONAL CHAR(3)", `'abc'`, "abc", query.Type_CHAR, 12, 0, 33, 0, "char(3)"},
	{"VARCHAR(16)", `'汉字'`, "汉字", query.Type_VARCHAR, 64, 0, 45, 0, "varchar(16)"},
	{"VARCHAR(16) COLLATE utf8mb4_bin", `'Bin'`, "Bin", query.Type_VARBINARY, 64, 0, 46, bin, "varchar(16)"},
	{"VARCHAR(16) CHARACTER SET latin1 COLLATE latin1_bin", `'x'`, "x", query.Type_VARBINARY, 64, 0, 47, bin, "varchar(16)"},
	{"BINARY(4)", `x'0102'`, "\x01\x02\x00\x00", query.Type_BINARY, 4, 0, 63, bin, "binary(4)"},
	{"VARBINARY(16)", `x'00ff7f80'`, "\x00\xff\x7f\x80", query.Type_VARBINARY, 16, 0, 63, bin, "varbinary(16)"},
	{"TINYBLOB", `x'de'`, "\xde", query.Type_BLOB, 255, 0, 63, blob | bin, "tinyblob"},
	{"BLOB", `x'deadbeef00'`, "ޭ\xbe\xef\x00", query.Type_BLOB, 65535, 0, 63, blob | bin, "blob"},
	{"BLOB(300)", `'b'`, "b", query.Type_BLOB, 65535, 0, 63, blob | bin, "blob"},
	{"MEDIUMBLOB", `'m'`, "m", query.Type_BLOB, 16777215, 0, 63, blob | bin, "mediumblob"},
	{"LONGBLOB", `'l'`, "l", query.Type_BLOB, 4294967295, 0, 63, blob | bin, "longblob"},
	{"LONG VARBINARY", `'lv'`, "lv", query.Type_BLOB, 16777215, 0, 63, blob | bin, "mediumblob"},
	{"TINYTEXT", `'t'`, "t", query.Type_TEXT, 1020, 0, 45, blob, "tinytext"},
	{"TEXT", `'line1\nline2'`, "line1\nline2", query.Type_TEXT, 262140, 0, 45, blob, "text"},
	{"TEXT(10)", `'t10'`, "t10", query.Type_TEXT, 1020, 0, 45, blob, "tinytext"},
	{"TEXT COLLATE utf8mb4_bin", `'tb'`, "tb", query.Type_BLOB, 262140, 0, 46, blob | bin, "text"},
	{"TEXT CHARACTER SET latin1", `'l1'`, "l1", query.Type_TEXT, 262140, 0, 8, blob, "text"},
	{"MEDIUMTEXT", `'mt'`, "mt", query.Type_TEXT, 67108860, 0, 45, blob, "mediumtext"},
	{"LONGTEXT", `'lt'`, "lt", query.Type_TEXT, 4294967295, 0, 45, blob, "longtext"},
	{"LONG", `'lg'`, "lg", query.Type_TEXT, 67108860, 0, 45, blob, "mediumtext"},
	{"ENUM('a','b')", `'b'`, "b", query.Type_ENUM, 4, 0, 45, enum, "enum('a','b')"},
	{"ENUM('a','bb') COLLATE utf8mb4_bin", `'bb'`, "bb", query.Type_BINARY, 8, 0, 46, bin | enum, "enum('a','bb')"},
	{"ENUM('xyz') CHARACTER SET latin1", `'xyz'`, "xyz", query.Type_ENUM, 12, 0, 8, enum, "enum('xyz')"},
	{"SET('a','b')", `'b,a'`, "a,b", query.Type_SET, 12, 0, 45, set, "set('a','b')"},
	{"SET('a','b') COLLATE utf8mb4_bin", `'a,b'`, "a,b", query.Type_BINARY, 12, 0, 46, bin | set, "set('a','b')"},
	{"JSON", `'{"a": [1, 2.5, "x"]}'`, "{\"a\": [1, 2.5, \"x\"]}", query.Type_JSON, 4294967295, 0, 63, blob | bin, "longtext"},
	{"GEOMETRY", `ST_GeomFromText('POINT(1 2)')`, "\x00\x00\x00\x00\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\xf0?\x00\x00\x00\x00\x00\x00\x00@", query.Type_GEOMETRY, 4294967295, 0, 63, blob | bin, "geometry"},
	{"POINT", `POINT(1,2)`, "\x00\x00\x00\x00\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\xf0?\x00\x00\x00\x00\x00\x00\x00@", query.Type_GEOMETRY, 4294967295, 0, 63, blob | bin, "point"},
	{"LINESTRING", `ST_GeomFromText('LINESTRING(0 0,1 1)')`, "\x00\x00\x00\x00\x01\x02\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\xf0?\x00\x00\x00\x00\x00\x00\xf0?", query.Type_GEOMETRY, 4294967295, 0, 63, blob | bin, "linestring"},
	{"POLYGON", `ST_GeomFromText('POLYGON((0 0,1 0,1 1,0 0))')`, "\x00\x00\x00\x00\x01\x03\x00\x00\x00\x01\x00\x00\x00\x04\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\xf0?\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\xf0?\x00\x00\x00\x00\x00\x00\xf0?\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00", query.Type_GEOMETRY, 4294967295, 0, 63, blob | bin, "polygon"},
	{"MULTIPOINT", `ST_GeomFromText('MULTIPOINT(0 0,1 1)')`, "\x00\x00\x00\x00\x01\x04\x00\x00\x00\x02\x00\x00\x00\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\xf0?\x00\x00\x00\x00\x00\x00\xf0?", query.Type_GEOMETRY, 4294967295, 0, 63, blob | bin, "multipoint"},
	{"MULTILINESTRING", `ST_GeomFromText('MULTILINESTRING((0 0,1 1))')`, "\x00\x00\x00\x00\x01\x05\x00\x00\x00\x01\x00\x00\x00\x01\x02\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\xf0?\x00\x00\x00\x00\x00\x00\xf0?", query.Type_GEOMETRY, 4294967295, 0, 63, blob | bin, "multilinestring"},
	{"MULTIPOLYGON", `ST_GeomFromText('MULTIPOLYGON(((0 0,1 0,1 1,0 0)))')`, "\x00\x00\x00\x00\x01\x06\x00\x00\x00\x01\x00\x00\x00\x01\x03\x00\x00\x00\x01\x00\x00\x00\x04\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\xf0?\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\xf0?\x00\x00\x00\x00\x00\x00\xf0?\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00", query.Type_GEOMETRY, 4294967295, 0, 63, blob | bin, "multipolygon"},
	{"GEOMETRYCOLLECTION", `ST_GeomFromText('GEOMETRYCOLLECTION(POINT(1 1))')`, "\x00\x00\x00\x00\x01\x07\x00\x00\x00\x01\x00\x00\x00\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\xf0?\x00\x00\x00\x00\x00\x00\xf0?", query.Type_GEOMETRY, 4294967295, 0, 63, blob | bin, "geometrycollection"},
	{"UUID", `'123e4567-e89b-12d3-a456-426614174000'`, "123e4567-e89b-12d3-a456-426614174000", query.Type_BINARY, 144, 0, 63, uns | bin, "uuid"},
	{"INET4", `'10.0.0.1'`, "10.0.0.1", query.Type_BINARY, 60, 0, 63, uns | bin, "inet4"},
	{"INET6", `'::ffff:1.2.3.4'`, "::ffff:1.2.3.4", query.Type_BINARY, 156, 0, 63, uns | bin, "inet6"},
}

// catalogType is a column type of the catalog and what Vitess says of it.
type catalogType struct {
	colType, value, want string
	typ                  query.Type
	length, decimals     uint32
	charset, flags       uint32
	columnType           string
}

// mariadbOnlyTypes are the catalog's types MySQL does not have.
var mariadbOnlyTypes = map[string]bool{"UUID": true, "INET4": true, "INET6": true}

// mysqlCatalog changes the catalog's entries where MySQL describes a type otherwise (its
// default collation, utf8mb4_0900_ai_ci = 255 for MariaDB's 45, is changed for every entry).
var mysqlCatalog = map[string]func(*catalogType){
	"YEAR": func(c *catalogType) { c.columnType = "year" },
	// MySQL's TIMESTAMP carries no UNSIGNED flag.
	"TIMESTAMP NULL":    func(c *catalogType) { c.flags &^= uns },
	"TIMESTAMP(3) NULL": func(c *catalogType) { c.flags &^= uns },
	// A type of its own, where MariaDB's JSON is LONGTEXT.
	"JSON":               func(c *catalogType) { c.columnType = "json" },
	"GEOMETRYCOLLECTION": func(c *catalogType) { c.columnType = "geomcollection" },
}

// intWidth is the display width of an integer COLUMN_TYPE, which MySQL 8.0.19 and later
// leave out but for TINYINT(1) and ZEROFILL columns.
var intWidth = regexp.MustCompile(`^((?:tiny|small|medium|big)?int)\(\d+\)`)

// flavorCatalog is the catalog as the test server describes it.
func flavorCatalog() []catalogType {
	if !onMySQL() {
		return typeCatalog
	}
	var out []catalogType
	for _, c := range typeCatalog {
		if mariadbOnlyTypes[c.colType] {
			continue
		}
		if c.charset == 45 {
			c.charset = 255
		}
		if c.columnType != "tinyint(1)" && !strings.Contains(c.columnType, "zerofill") {
			c.columnType = intWidth.ReplaceAllString(c.columnType, "$1")
		}
		if f := mysqlCatalog[c.colType]; f != nil {
			f(&c)
		}
		out = append(out, c)
	}
	return out
}

// TestTypeCatalog streams each catalog type twice, once copied and once from the binlog, and
// checks type by type that both phases give the same FIELD and the same ROW, that the FIELD
// is Vitess's, and that the value is what SELECT returns. A second row of NULL (or the
// column's default) must also read the same in both phases.
func TestTypeCatalog(t *testing.T) {
	typeCatalog := flavorCatalog()
	table := func(i int) string { return "tcat_" + itoa(i) }
	var ddl []string
	for i, c := range typeCatalog {
		ddl = append(ddl, "DROP TABLE IF EXISTS "+table(i), "CREATE TABLE "+table(i)+" (id INT PRIMARY KEY, v "+c.colType+")")
	}
	testkit.MustExec(t, db, ddl...)
	t.Cleanup(func() {
		var drop []string
		for i := range typeCatalog {
			drop = append(drop, "DROP TABLE IF EXISTS "+table(i))
		}
		testkit.MustExec(t, db, drop...)
	})
	flt := &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "/^tcat_"}}}
	e := newEngine(t)
	ts := startStream(t, e, Request{Position: "current", Filter: flt})
	ts.expect("GTID", "OTHER", "VGTID")
	testkit.MustExec(t, db, "SET time_zone = '+00:00'", "SET SESSION sql_mode = 'STRICT_ALL_TABLES'")
	for i, c := range typeCatalog {
		testkit.MustExec(t, db, "INSERT INTO "+table(i)+" VALUES (1, "+c.value+"), (2, DEFAULT)")
	}
	testkit.MustExec(t, db, "SET time_zone = SYSTEM", "SET SESSION sql_mode = DEFAULT")
	type phase struct {
		field *query.Field
		rows  [][]byte // the v cell of row 1 and row 2
	}
	binlog := make([]phase, len(typeCatalog))
	for i := range typeCatalog {
		evs := ts.expect("BEGIN", "FIELD", "ROW", "GTID", "COMMIT", "VGTID")
		if got := evs[1].FieldEvent.TableName; got != table(i) {
			t.Fatalf("binlog FIELD of %s, want %s", got, table(i))
		}
		binlog[i].field = evs[1].FieldEvent.Fields[1]
		for _, rc := range evs[2].RowEvent.RowChanges {
			binlog[i].rows = append(binlog[i].rows, evtext.Cells(rc.After)[1])
		}
	}

	copied := make([]phase, len(typeCatalog))
	index := map[string]int{}
	for i := range typeCatalog {
		index[table(i)] = i
	}
	cs := startStream(t, e, Request{Filter: flt})
	for done := false; !done; {
		ev := cs.next(false)
		switch ev.Type {
		case binlogdata.VEventType_FIELD:
			copied[index[ev.FieldEvent.TableName]].field = ev.FieldEvent.Fields[1]
		case binlogdata.VEventType_ROW:
			p := &copied[index[ev.RowEvent.TableName]]
			for _, rc := range ev.RowEvent.RowChanges {
				p.rows = append(p.rows, evtext.Cells(rc.After)[1])
			}
		case binlogdata.VEventType_COPY_COMPLETED:
			done = ev.LastPKEvent.GetTableLastPK() == nil
		}
	}

	conn, err := db.Conn("test")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Display widths and FLOAT(M,D) are in the schema only: without it the binlog cannot
	// tell them.
	schemaOnly := map[string]bool{"TINYINT(2) ZEROFILL": true, "BOOLEAN": true, "INT(5) ZEROFILL": true, "FLOAT(5,2)": true, "DOUBLE(10,3)": true}
	for i, c := range typeCatalog {
		t.Run(c.colType, func(t *testing.T) {
			if !schemaOnly[c.colType] {
				// Without the server's metadata (a binlog row of a table changed since), the
				// length and decimals are worked out to the same numbers.
				info, err := schema.Load(conn, "test", table(i))
				if err != nil {
					t.Fatal(err)
				}
				col := schema.Columns(info)[1]
				col.Result = nil
				if f := col.Field("test", table(i)); f.ColumnLength != c.length || f.Decimals != c.decimals {
					t.Errorf("without result metadata: column_length %d decimals %d, want %d %d", f.ColumnLength, f.Decimals, c.length, c.decimals)
				}
			}
			want := &query.Field{Name: "v", Type: c.typ, Table: table(i), OrgTable: table(i), Database: "test", OrgName: "v",
				ColumnLength: c.length, Charset: c.charset, Decimals: c.decimals, Flags: c.flags, ColumnType: c.columnType}
			if !proto.Equal(copied[i].field, want) {
				t.Errorf("copy FIELD:\n got %s\nwant %s", prototext.Format(copied[i].field), prototext.Format(want))
			}
			if !proto.Equal(binlog[i].field, copied[i].field) {
				t.Errorf("binlog FIELD differs from the copy's:\nbinlog %s\n  copy %s", prototext.Format(binlog[i].field), prototext.Format(copied[i].field))
			}
			if len(copied[i].rows) != 2 || len(binlog[i].rows) != 2 {
				t.Fatalf("rows: copy %d, binlog %d, want 2 each", len(copied[i].rows), len(binlog[i].rows))
			}
			if got := string(copied[i].rows[0]); got != c.want {
				t.Errorf("copied value %q, want %q", got, c.want)
			}
			for r := range 2 {
				if b, cp := show(binlog[i].rows[r]), show(copied[i].rows[r]); b != cp {
					t.Errorf("row %d: binlog %s, copy %s", r+1, b, cp)
				}
			}
		})
	}
}

// show renders a cell for comparison, NULL apart from the empty value.
func show(cell []byte) string {
	if cell == nil {
		return "NULL"
	}
	return fmt.Sprintf("%q", cell)
}

// TestTypesAfterLaterDDL reads a row from the binlog after its table changed (a column added
// since): the columns the table still has keep the schema's description, so a UUID is its
// text and the FIELD says what the copy's would (Vitess's metadata), not a BINARY(16).
func TestTypesAfterLaterDDL(t *testing.T) {
	skipOnMySQL(t, "UUID is a MariaDB type")
	testkit.MustExec(t, db, "DROP TABLE IF EXISTS tlater", "CREATE TABLE tlater (id INT PRIMARY KEY, u UUID, c CHAR(4) COLLATE utf8mb4_bin)")
	t.Cleanup(func() { testkit.MustExec(t, db, "DROP TABLE IF EXISTS tlater") })
	e := newEngine(t)
	flt := &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "tlater"}}}
	ts := startStream(t, e, Request{Position: "current", Filter: flt})
	pos := ts.expect("GTID", "OTHER", "VGTID")[2].Vgtid.ShardGtids[0].Gtid
	ts.stop()
	testkit.MustExec(t, db, "INSERT INTO tlater VALUES (1, '123e4567-e89b-12d3-a456-426614174000', 'ab')", "ALTER TABLE tlater ADD COLUMN extra INT")
	rs := startStream(t, e, Request{Position: pos, Filter: flt})
	evs := rs.expect("BEGIN", "FIELD tlater id:INT32 u:BINARY c:BINARY", "ROW tlater +[1 123e4567-e89b-12d3-a456-426614174000 ab]", "GTID", "COMMIT", "VGTID")
	f := evs[1].FieldEvent.Fields
	if f[1].ColumnType != "uuid" || f[1].ColumnLength != 144 || f[2].ColumnType != "char(4)" || f[2].Charset != 46 || f[2].ColumnLength != 16 {
		t.Errorf("fields described without the schema: %v", f)
	}
}

// TestExtOrder checks that rowcodec.CompareExt orders UUID, INET4 and INET6 values as the
// server's ORDER BY does: the copy reads keys in the server's order and places binlog rows
// against its last key with CompareExt.
func TestExtOrder(t *testing.T) {
	skipOnMySQL(t, "UUID, INET4 and INET6 are MariaDB types")
	values := map[string][]string{
		"UUID": {"00000000-0000-1000-8000-000000000002", "00000000-0001-1000-8000-000000000001", "00000001-0000-1000-8000-000000000000",
			"00000000-0000-4000-8000-000000000003", "ffffffff-0000-4000-8000-000000000000", "00000000-0000-0000-0000-000000000005",
			"10000000-0000-0000-0000-000000000000", "00000000-0000-1000-0000-000000000000", "00000000-0000-6000-8000-000000000000",
			"00000000-0000-5000-c000-000000000000", "123e4567-e89b-12d3-a456-426614174000", "01234567-89ab-4def-8123-456789abcdef"},
		"INET4": {"10.0.0.2", "9.0.0.1", "10.0.0.10", "255.255.255.255", "0.0.0.0", "192.168.1.1"},
		"INET6": {"::2", "::10", "::ffff:1.2.3.4", "2001:db8::1", "fe80::1", "::", "::1.2.3.4", "1::"},
	}
	conn, err := db.Conn("test")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for typ, vals := range values {
		t.Run(typ, func(t *testing.T) {
			testkit.MustExec(t, db, "DROP TABLE IF EXISTS text_order", "CREATE TABLE text_order (v "+typ+" PRIMARY KEY)")
			t.Cleanup(func() { testkit.MustExec(t, db, "DROP TABLE IF EXISTS text_order") })
			for _, v := range vals {
				testkit.MustExec(t, db, "INSERT INTO text_order VALUES ('"+v+"')")
			}
			r, err := conn.Execute("SELECT v FROM text_order ORDER BY v")
			if err != nil {
				t.Fatal(err)
			}
			var server []string
			for i := range r.RowNumber() {
				s, _ := r.GetString(i, 0)
				server = append(server, strings.Clone(s))
			}
			r.Close()
			ours := slices.Clone(vals)
			e := rowcodec.ExtOf(strings.ToLower(typ))
			slices.SortFunc(ours, func(a, b string) int { return rowcodec.CompareExt(e, []byte(a), []byte(b)) })
			if !slices.Equal(ours, server) {
				t.Errorf("CompareExt order\n%v\nserver order\n%v", ours, server)
			}
		})
	}
}
