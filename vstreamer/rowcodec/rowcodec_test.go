package rowcodec

import (
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/vstream-cdc/vstream/gen/query"
)

func TestAppend(t *testing.T) {
	cases := []struct {
		name string
		col  Column
		v    any
		want string
		null bool
	}{
		{"null", Column{Type: mysql.MYSQL_TYPE_LONG}, nil, "", true},
		{"signed int8 read as unsigned from the schema", Column{Type: mysql.MYSQL_TYPE_TINY, Unsigned: true}, int8(-1), "255", false},
		{"unsigned int24 from sign-extended int32", Column{Type: mysql.MYSQL_TYPE_INT24, Unsigned: true}, int32(-1), "16777215", false},
		{"unsigned bigint from int64", Column{Type: mysql.MYSQL_TYPE_LONGLONG, Unsigned: true}, int64(-1), "18446744073709551615", false},
		{"decimal leading zeros", Column{Type: mysql.MYSQL_TYPE_NEWDECIMAL}, "-0001.50", "-1.50", false},
		{"decimal negative zero", Column{Type: mysql.MYSQL_TYPE_NEWDECIMAL}, "-0.00", "0.00", false},
		{"float32", Column{Type: mysql.MYSQL_TYPE_FLOAT}, float32(0.1), "1E-01", false},
		{"enum out of range keeps the number", Column{Type: mysql.MYSQL_TYPE_ENUM, Labels: []string{"a"}}, int64(3), "3", false},
		{"set without labels keeps the number", Column{Type: mysql.MYSQL_TYPE_SET}, int64(5), "5", false},
		{"bit(3)", Column{Type: mysql.MYSQL_TYPE_BIT, Meta: 3}, int64(5), "\x05", false},
		{"year", Column{Type: mysql.MYSQL_TYPE_YEAR}, 1999, "1999", false},
		{"binary pad", Column{Type: mysql.MYSQL_TYPE_STRING, Collation: BinaryCollation, Length: 3}, "a", "a\x00\x00", false},
		{"char not padded", Column{Type: mysql.MYSQL_TYPE_STRING, Collation: 45, Length: 12}, "a", "a", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, null, err := c.col.Append(nil, c.v)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want || null != c.null {
				t.Errorf("Append = %q null=%v, want %q null=%v", got, null, c.want, c.null)
			}
		})
	}
	if _, _, err := (&Column{Name: "c"}).Append(nil, struct{}{}); err == nil {
		t.Error("an unknown value type must be an error")
	}
}

func TestStringMeta(t *testing.T) {
	// ENUM and SET hide behind MYSQL_TYPE_STRING; CHAR lengths over 255 borrow bits of the type byte.
	if rt, _ := StringMeta(uint16(mysql.MYSQL_TYPE_ENUM)<<8 | 1); rt != mysql.MYSQL_TYPE_ENUM {
		t.Errorf("enum real type = %d", rt)
	}
	if rt, n := StringMeta(0xce00 | 0xfc); rt != mysql.MYSQL_TYPE_STRING || n != 1020 {
		t.Errorf("char(255) utf8mb4 (1020 bytes) = %d, %d", rt, n)
	}
}

func TestQueryType(t *testing.T) {
	cases := []struct {
		col  Column
		want query.Type
	}{
		{Column{Type: mysql.MYSQL_TYPE_VARCHAR, Collation: BinaryCollation}, query.Type_VARBINARY},
		{Column{Type: mysql.MYSQL_TYPE_VARCHAR, Collation: 45}, query.Type_VARCHAR},
		{Column{Type: mysql.MYSQL_TYPE_BLOB, Collation: 45, JSON: true}, query.Type_JSON},
		{Column{Type: mysql.MYSQL_TYPE_BLOB, Collation: BinaryCollation}, query.Type_BLOB},
		{Column{Type: mysql.MYSQL_TYPE_LONGLONG, Unsigned: true}, query.Type_UINT64},
	}
	for _, c := range cases {
		if got := c.col.QueryType(); got != c.want {
			t.Errorf("%+v: %v, want %v", c.col, got, c.want)
		}
	}
}
