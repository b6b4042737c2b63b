package rowcodec

import (
	"strconv"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/vstream-cdc/vstream/gen/query"
	"github.com/vstream-cdc/vstream/sqltypes"
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
		{"binary pad", Column{Type: mysql.MYSQL_TYPE_STRING, Collation: sqltypes.BinaryCollation, Length: 3}, "a", "a\x00\x00", false},
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
		{Column{Type: mysql.MYSQL_TYPE_VARCHAR, Collation: sqltypes.BinaryCollation}, query.Type_VARBINARY},
		{Column{Type: mysql.MYSQL_TYPE_VARCHAR, Collation: 45}, query.Type_VARCHAR},
		{Column{Type: mysql.MYSQL_TYPE_BLOB, Collation: 45, JSON: true}, query.Type_JSON},
		{Column{Type: mysql.MYSQL_TYPE_BLOB, Collation: sqltypes.BinaryCollation}, query.Type_BLOB},
		{Column{Type: mysql.MYSQL_TYPE_LONGLONG, Unsigned: true}, query.Type_UINT64},
	}
	for _, c := range cases {
		if got := c.col.QueryType(); got != c.want {
			t.Errorf("%+v: %v, want %v", c.col, got, c.want)
		}
	}
}

// TestAppendExt checks the text of MariaDB's UUID and INET types against what the server
// prints for the same bytes (SELECT CAST(x AS INET6) and friends on MariaDB 10.11). The
// binlog drops trailing zero bytes, so short values are the zero-padded ones.
func TestAppendExt(t *testing.T) {
	ip6 := func(s string) string {
		b := make([]byte, 0, 16)
		for i := 0; i+1 < len(s); i += 2 {
			v, _ := strconv.ParseUint(s[i:i+2], 16, 8)
			b = append(b, byte(v))
		}
		return string(b)
	}
	cases := []struct {
		ext  Ext
		raw  string
		want string
	}{
		{ExtUUID, ip6("123e4567e89b12d3a456426614174000"), "123e4567-e89b-12d3-a456-426614174000"},
		{ExtUUID, ip6("123e4567e89b12d3a4564266141740"), "123e4567-e89b-12d3-a456-426614174000"},
		{ExtINET4, "\x01\x02\x03\x04", "1.2.3.4"},
		{ExtINET4, "", "0.0.0.0"},
		{ExtINET4, "\xff\xff\xff\xff", "255.255.255.255"},
		{ExtINET6, "", "::"},
		{ExtINET6, ip6("00000000000000000000000000000001"), "::1"},
		{ExtINET6, ip6("00000000000000000000000000000002"), "::2"},
		{ExtINET6, ip6("00000000000000000000000000010000"), "::0.1.0.0"},
		{ExtINET6, ip6("00000000000000000000ffff00000001"), "::ffff:0.0.0.1"},
		{ExtINET6, ip6("00000000000000000000ffff"), "::ffff:0.0.0.0"},
		{ExtINET6, ip6("00000000000000000000ffff01020304"), "::ffff:1.2.3.4"},
		{ExtINET6, ip6("0001"), "1::"},
		{ExtINET6, ip6("00010000000000010000000000000001"), "1:0:0:1::1"},
		{ExtINET6, ip6("00010000000000010000000000010001"), "1::1:0:0:1:1"},
		{ExtINET6, ip6("fe800000000000000001"), "fe80::1:0:0:0"},
		{ExtINET6, ip6("00000000000000000000000101020304"), "::1:102:304"},
		{ExtINET6, ip6("00000001000000010000000100000001"), "::1:0:1:0:1:0:1"},
		{ExtINET6, ip6("00010000000100010001000100010001"), "1::1:1:1:1:1:1"},
		{ExtINET6, ip6("0001000100010001000100010001"), "1:1:1:1:1:1:1::"},
		{ExtINET6, ip6("00000000000000000001ffff00010002"), "::1:ffff:1:2"},
		{ExtINET6, ip6("abcd00000000000000000000000000ef"), "abcd::ef"},
		{ExtINET6, ip6("20010db8000000000000000000000001"), "2001:db8::1"},
	}
	for _, c := range cases {
		col := Column{Type: mysql.MYSQL_TYPE_STRING, Collation: sqltypes.BinaryCollation, Length: c.ext.Size(), Ext: c.ext}
		got, _, err := col.Append(nil, c.raw)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != c.want {
			t.Errorf("%x: %q, want %q", c.raw, got, c.want)
		}
		if got, _, _ := col.Append(nil, []byte(c.raw)); string(got) != c.want {
			t.Errorf("%x as bytes: %q, want %q", c.raw, got, c.want)
		}
	}
}

// TestCharsByCollation turns a VARCHAR's byte length into its display length when the
// schema does not name the character set and only the collation id tells it. The MariaDB
// ids were misread before the shared collation table: NO PAD utf8mb4 (1069) as one byte a
// character, UCA 14 utf8mb3 (2048) and ucs2 (2560) as four.
func TestCharsByCollation(t *testing.T) {
	for _, tc := range []struct {
		collation uint64
		bytes     int
		want      int
	}{
		{45, 40, 40},   // utf8mb4_general_ci: VARCHAR(10)
		{33, 30, 40},   // utf8mb3_general_ci
		{8, 10, 40},    // latin1_swedish_ci
		{1069, 40, 40}, // utf8mb4_nopad_bin
		{2048, 30, 40}, // utf8mb3_uca1400_ai_ci
		{2560, 20, 40}, // ucs2_uca1400_ai_ci
		{3327, 40, 40}, // utf32
		{sqltypes.BinaryCollation, 10, 10},
	} {
		c := Column{Type: mysql.MYSQL_TYPE_VARCHAR, Collation: tc.collation}
		if got := c.chars(tc.bytes); got != tc.want {
			t.Errorf("collation %d, %d bytes: %d, want %d", tc.collation, tc.bytes, got, tc.want)
		}
	}
}
