// Package rowcodec turns binlog row values into the textual cell encoding and query.Type that
// Vitess puts in FIELD and ROW events: straight from a rows event's bytes (Raw.Decode, the
// binlog path), or from the values go-mysql decodes (Append, for the rows go-mysql still
// decodes) and the server's text protocol (AppendText, the copy). Every MySQL and MariaDB
// column type is handled here and nowhere else, so the binlog phase and the copy phase render
// a value the same way.
package rowcodec

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/vstream-cdc/vstream/gen/query"
	"github.com/vstream-cdc/vstream/sqltypes"
)

// Column is everything needed to describe and encode one column of a table.
type Column struct {
	Name string
	// Type is the binlog column type after resolving ENUM/SET hidden behind MYSQL_TYPE_STRING.
	Type byte
	// Meta is the binlog column metadata (precision, fsp, lengths).
	Meta     uint16
	Unsigned bool
	Nullable bool
	// Collation is the collation id of character columns; sqltypes.BinaryCollation for binary ones.
	Collation uint64
	// Charset names the character set of character columns when the schema is known.
	Charset string
	// Labels of ENUM or SET columns, in definition order.
	Labels []string
	// JSON marks MariaDB JSON columns, which the binlog carries as LONGTEXT.
	JSON bool
	// Length is the declared byte length of CHAR/BINARY columns, used to pad BINARY(n).
	Length int
	// Decimals is the fractional-second precision or decimal scale.
	Decimals int
	// PrimaryKey marks columns of the table's primary key.
	PrimaryKey bool
	// ColumnType is information_schema's COLUMN_TYPE when known, else a close rendering.
	ColumnType string
	// Flags are extra MySqlFlag bits known from the schema (AUTO_INCREMENT, UNIQUE_KEY...).
	Flags uint32
	// Ext names a MariaDB type the binlog carries as fixed-length binary (UUID, INET4, INET6).
	Ext Ext
	// Result is the server's own result-set metadata of the column, when the schema that
	// describes the row is the table's current one.
	Result *ResultField
	// Compressed marks MariaDB's COMPRESSED columns (Type is then BLOB or VARCHAR), whose rows
	// DecodeRows leaves undecoded.
	Compressed bool
}

// StringMeta splits the metadata of a MYSQL_TYPE_STRING column into its real type and byte
// length, as the server packs them.
func StringMeta(meta uint16) (realType byte, length int) {
	if meta < 256 {
		return mysql.MYSQL_TYPE_STRING, int(meta)
	}
	b0 := byte(meta >> 8)
	b1 := byte(meta & 0xff)
	if b0&0x30 != 0x30 {
		return b0 | 0x30, int(uint16(b1) | uint16((b0&0x30)^0x30)<<4)
	}
	return b0, int(b1)
}

// QueryType is the Vitess type of the column's values, as the binlog describes them: CHAR,
// VARCHAR and TEXT for character columns whatever their collation. Field's type follows the
// server's result-set flags instead (see FieldType).
func (c *Column) QueryType() query.Type {
	binary := c.Collation == sqltypes.BinaryCollation
	switch c.Type {
	case mysql.MYSQL_TYPE_TINY:
		return pick(c.Unsigned, query.Type_UINT8, query.Type_INT8)
	case mysql.MYSQL_TYPE_SHORT:
		return pick(c.Unsigned, query.Type_UINT16, query.Type_INT16)
	case mysql.MYSQL_TYPE_INT24:
		return pick(c.Unsigned, query.Type_UINT24, query.Type_INT24)
	case mysql.MYSQL_TYPE_LONG:
		return pick(c.Unsigned, query.Type_UINT32, query.Type_INT32)
	case mysql.MYSQL_TYPE_LONGLONG:
		return pick(c.Unsigned, query.Type_UINT64, query.Type_INT64)
	case mysql.MYSQL_TYPE_FLOAT:
		return query.Type_FLOAT32
	case mysql.MYSQL_TYPE_DOUBLE:
		return query.Type_FLOAT64
	case mysql.MYSQL_TYPE_NEWDECIMAL, mysql.MYSQL_TYPE_DECIMAL:
		return query.Type_DECIMAL
	case mysql.MYSQL_TYPE_YEAR:
		return query.Type_YEAR
	case mysql.MYSQL_TYPE_DATE, mysql.MYSQL_TYPE_NEWDATE:
		return query.Type_DATE
	case mysql.MYSQL_TYPE_TIME, mysql.MYSQL_TYPE_TIME2:
		return query.Type_TIME
	case mysql.MYSQL_TYPE_DATETIME, mysql.MYSQL_TYPE_DATETIME2:
		return query.Type_DATETIME
	case mysql.MYSQL_TYPE_TIMESTAMP, mysql.MYSQL_TYPE_TIMESTAMP2:
		return query.Type_TIMESTAMP
	case mysql.MYSQL_TYPE_BIT:
		return query.Type_BIT
	case mysql.MYSQL_TYPE_JSON:
		return query.Type_JSON
	case mysql.MYSQL_TYPE_ENUM:
		return query.Type_ENUM
	case mysql.MYSQL_TYPE_SET:
		return query.Type_SET
	case mysql.MYSQL_TYPE_GEOMETRY:
		return query.Type_GEOMETRY
	case mysql.MYSQL_TYPE_VECTOR:
		return query.Type_VECTOR
	case mysql.MYSQL_TYPE_VARCHAR, mysql.MYSQL_TYPE_VAR_STRING:
		return pick(binary, query.Type_VARBINARY, query.Type_VARCHAR)
	case mysql.MYSQL_TYPE_STRING:
		return pick(binary || c.Ext != ExtNone, query.Type_BINARY, query.Type_CHAR)
	case mysql.MYSQL_TYPE_BLOB, mysql.MYSQL_TYPE_TINY_BLOB, mysql.MYSQL_TYPE_MEDIUM_BLOB, mysql.MYSQL_TYPE_LONG_BLOB:
		if c.JSON {
			return query.Type_JSON
		}
		return pick(binary, query.Type_BLOB, query.Type_TEXT)
	}
	return query.Type_NULL_TYPE
}

func pick(cond bool, a, b query.Type) query.Type {
	if cond {
		return a
	}
	return b
}

// synthesizedColumnType renders a COLUMN_TYPE from binlog metadata alone, used when the
// schema is not available for the position being streamed.
func (c *Column) synthesizedColumnType() string {
	unsigned := ""
	if c.Unsigned {
		unsigned = " unsigned"
	}
	switch c.Ext {
	case ExtUUID:
		return "uuid"
	case ExtINET4:
		return "inet4"
	case ExtINET6:
		return "inet6"
	default:
		// Not an extension type: by the binlog type below.
	}
	// Integers carry the display width MariaDB's COLUMN_TYPE gives them.
	width := func(name string) string {
		return name + "(" + strconv.Itoa(c.displayLength()) + ")" + unsigned
	}
	switch c.Type {
	case mysql.MYSQL_TYPE_TINY:
		return width("tinyint")
	case mysql.MYSQL_TYPE_SHORT:
		return width("smallint")
	case mysql.MYSQL_TYPE_INT24:
		return width("mediumint")
	case mysql.MYSQL_TYPE_LONG:
		return width("int")
	case mysql.MYSQL_TYPE_LONGLONG:
		return width("bigint")
	case mysql.MYSQL_TYPE_FLOAT:
		return "float"
	case mysql.MYSQL_TYPE_DOUBLE:
		return "double"
	case mysql.MYSQL_TYPE_NEWDECIMAL:
		return fmt.Sprintf("decimal(%d,%d)", c.Meta>>8, c.Meta&0xff) + unsigned
	case mysql.MYSQL_TYPE_YEAR:
		return "year(4)"
	case mysql.MYSQL_TYPE_DATE, mysql.MYSQL_TYPE_NEWDATE:
		return "date"
	case mysql.MYSQL_TYPE_TIME, mysql.MYSQL_TYPE_TIME2:
		return withFsp("time", c.Decimals)
	case mysql.MYSQL_TYPE_DATETIME, mysql.MYSQL_TYPE_DATETIME2:
		return withFsp("datetime", c.Decimals)
	case mysql.MYSQL_TYPE_TIMESTAMP, mysql.MYSQL_TYPE_TIMESTAMP2:
		return withFsp("timestamp", c.Decimals)
	case mysql.MYSQL_TYPE_BIT:
		return fmt.Sprintf("bit(%d)", c.bitWidth())
	case mysql.MYSQL_TYPE_JSON:
		return "json"
	case mysql.MYSQL_TYPE_ENUM, mysql.MYSQL_TYPE_SET:
		kind := "enum"
		if c.Type == mysql.MYSQL_TYPE_SET {
			kind = "set"
		}
		quoted := make([]string, len(c.Labels))
		for i, l := range c.Labels {
			quoted[i] = "'" + strings.ReplaceAll(l, "'", "''") + "'"
		}
		return kind + "(" + strings.Join(quoted, ",") + ")"
	case mysql.MYSQL_TYPE_GEOMETRY:
		return "geometry"
	case mysql.MYSQL_TYPE_VECTOR:
		return "vector"
	case mysql.MYSQL_TYPE_VARCHAR, mysql.MYSQL_TYPE_VAR_STRING:
		if c.Collation == sqltypes.BinaryCollation {
			return fmt.Sprintf("varbinary(%d)", c.Meta)
		}
		return fmt.Sprintf("varchar(%d)", c.chars(int(c.Meta))/resultCharsetMaxLen)
	case mysql.MYSQL_TYPE_STRING:
		if c.Collation == sqltypes.BinaryCollation {
			return fmt.Sprintf("binary(%d)", c.Length)
		}
		return fmt.Sprintf("char(%d)", c.chars(c.Length)/resultCharsetMaxLen)
	case mysql.MYSQL_TYPE_BLOB:
		if c.JSON {
			return "longtext"
		}
		prefix := [...]string{"", "tiny", "", "medium", "long"}
		base := "text"
		if c.Collation == sqltypes.BinaryCollation {
			base = "blob"
		}
		if int(c.Meta) < len(prefix) {
			return prefix[c.Meta] + base
		}
		return base
	}
	return ""
}

func withFsp(base string, fsp int) string {
	if fsp == 0 {
		return base
	}
	return base + "(" + strconv.Itoa(fsp) + ")"
}

// Append appends the Vitess text encoding of v, a value go-mysql decoded for column c, to dst.
// It reports null for SQL NULL. It does not allocate beyond growing dst.
func (c *Column) Append(dst []byte, v any) (out []byte, null bool, err error) {
	switch x := v.(type) {
	case nil:
		return dst, true, nil
	case int8:
		if c.Unsigned {
			return strconv.AppendUint(dst, uint64(uint8(x)), 10), false, nil
		}
		return strconv.AppendInt(dst, int64(x), 10), false, nil
	case int16:
		if c.Unsigned {
			return strconv.AppendUint(dst, uint64(uint16(x)), 10), false, nil
		}
		return strconv.AppendInt(dst, int64(x), 10), false, nil
	case int32:
		if c.Unsigned {
			if c.Type == mysql.MYSQL_TYPE_INT24 {
				return strconv.AppendUint(dst, uint64(uint32(x)&0xffffff), 10), false, nil
			}
			return strconv.AppendUint(dst, uint64(uint32(x)), 10), false, nil
		}
		return strconv.AppendInt(dst, int64(x), 10), false, nil
	case int64:
		return c.appendInt64(dst, x)
	case uint8:
		return strconv.AppendUint(dst, uint64(x), 10), false, nil
	case uint16:
		return strconv.AppendUint(dst, uint64(x), 10), false, nil
	case uint32:
		return strconv.AppendUint(dst, uint64(x), 10), false, nil
	case uint64:
		return strconv.AppendUint(dst, x, 10), false, nil
	case int:
		if c.Type == mysql.MYSQL_TYPE_YEAR {
			return appendYear(dst, x), false, nil
		}
		return strconv.AppendInt(dst, int64(x), 10), false, nil
	case float32:
		return strconv.AppendFloat(dst, float64(x), 'E', -1, 32), false, nil
	case float64:
		return strconv.AppendFloat(dst, x, 'E', -1, 64), false, nil
	case string:
		return c.appendString(dst, x), false, nil
	case []byte:
		return c.appendBytes(dst, x), false, nil
	}
	return dst, false, fmt.Errorf("column %s: unsupported binlog value of type %T", c.Name, v)
}

func (c *Column) appendInt64(dst []byte, x int64) ([]byte, bool, error) {
	switch c.Type {
	case mysql.MYSQL_TYPE_BIT:
		n := (c.bitWidth() + 7) / 8
		var buf [8]byte
		binary.BigEndian.PutUint64(buf[:], uint64(x))
		return append(dst, buf[8-n:]...), false, nil
	case mysql.MYSQL_TYPE_ENUM:
		if x <= 0 || int(x) > len(c.Labels) {
			if x == 0 {
				return dst, false, nil
			}
			return strconv.AppendInt(dst, x, 10), false, nil
		}
		return append(dst, c.Labels[x-1]...), false, nil
	case mysql.MYSQL_TYPE_SET:
		bits := uint64(x)
		first := true
		for i, l := range c.Labels {
			if bits&(1<<uint(i)) == 0 {
				continue
			}
			if !first {
				dst = append(dst, ',')
			}
			dst = append(dst, l...)
			first = false
		}
		if first && bits != 0 && len(c.Labels) == 0 {
			return strconv.AppendUint(dst, bits, 10), false, nil
		}
		return dst, false, nil
	}
	if c.Unsigned {
		return strconv.AppendUint(dst, uint64(x), 10), false, nil
	}
	return strconv.AppendInt(dst, x, 10), false, nil
}

func appendYear(dst []byte, y int) []byte {
	if y == 0 {
		return append(dst, "0000"...)
	}
	return strconv.AppendInt(dst, int64(y), 10)
}

func (c *Column) appendString(dst []byte, s string) []byte {
	switch c.Type {
	case mysql.MYSQL_TYPE_NEWDECIMAL:
		return appendDecimal(dst, s)
	case mysql.MYSQL_TYPE_TIME2, mysql.MYSQL_TYPE_TIME:
		start := len(dst)
		return c.timeFraction(append(dst, s...), start)
	case mysql.MYSQL_TYPE_STRING:
		if c.Ext != ExtNone {
			return appendExt(dst, c.Ext, s)
		}
		dst = append(dst, s...)
		return c.pad(dst, len(s))
	}
	return append(dst, s...)
}

func (c *Column) appendBytes(dst []byte, b []byte) []byte {
	if c.Type == mysql.MYSQL_TYPE_STRING {
		if c.Ext != ExtNone {
			return appendExt(dst, c.Ext, b)
		}
		dst = append(dst, b...)
		return c.pad(dst, len(b))
	}
	return append(dst, b...)
}

// timeFraction completes the TIME text go-mysql wrote at dst[start:]: it renders a zero
// TIME(n) without its fraction.
func (c *Column) timeFraction(dst []byte, start int) []byte {
	if c.Decimals > 0 && bytes.IndexByte(dst[start:], '.') < 0 {
		dst = append(dst, '.')
		for i := 0; i < c.Decimals; i++ {
			dst = append(dst, '0')
		}
	}
	return dst
}

// pad right-pads BINARY(n) with zero bytes: the binlog drops them but SELECT returns them.
func (c *Column) pad(dst []byte, n int) []byte {
	if c.Collation != sqltypes.BinaryCollation || n >= c.Length {
		return dst
	}
	for i := n; i < c.Length; i++ {
		dst = append(dst, 0)
	}
	return dst
}

// appendDecimal trims the leading zeros go-mysql keeps in the integral part.
func appendDecimal(dst []byte, s string) []byte {
	neg, digits := trimDecimal(s)
	if neg {
		dst = append(dst, '-')
	}
	return append(dst, digits...)
}

// trimDecimal splits go-mysql's text of a DECIMAL into whether it prints a sign and its
// digits without the leading zeros go-mysql keeps in the integral part. Negative zero has no
// sign.
func trimDecimal[T string | []byte](s T) (neg bool, digits T) {
	if len(s) > 0 && s[0] == '-' {
		neg = true
		s = s[1:]
	}
	i := 0
	for i < len(s)-1 && s[i] == '0' && s[i+1] != '.' {
		i++
	}
	s = s[i:]
	return neg && !isZeroDecimal(s), s
}

func isZeroDecimal[T string | []byte](s T) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != '0' && s[i] != '.' {
			return false
		}
	}
	return true
}

// AppendText appends the Vitess encoding of a value as the server's text protocol returns it
// (the copy phase), so that a row reads the same whether it was copied or streamed. FLOAT
// columns must be selected as CAST(col AS DOUBLE): the server rounds FLOAT text to six digits.
func (c *Column) AppendText(dst, text []byte) ([]byte, error) {
	switch c.Type {
	case mysql.MYSQL_TYPE_FLOAT:
		f, err := strconv.ParseFloat(string(text), 64)
		if err != nil {
			return dst, fmt.Errorf("column %s: float %q: %w", c.Name, text, err)
		}
		return strconv.AppendFloat(dst, float64(float32(f)), 'E', -1, 32), nil
	case mysql.MYSQL_TYPE_DOUBLE:
		f, err := strconv.ParseFloat(string(text), 64)
		if err != nil {
			return dst, fmt.Errorf("column %s: double %q: %w", c.Name, text, err)
		}
		return strconv.AppendFloat(dst, f, 'E', -1, 64), nil
	case mysql.MYSQL_TYPE_TIME, mysql.MYSQL_TYPE_TIME2:
		return c.appendString(dst, string(text)), nil
	}
	return append(dst, text...), nil
}

// AppendCopied appends the Vitess encoding of a value read with the text protocol, as
// go-mysql parses it (numbers parsed, everything else bytes). null reports SQL NULL.
func (c *Column) AppendCopied(dst []byte, fv *mysql.FieldValue) (out []byte, null bool, err error) {
	switch fv.Type {
	case mysql.FieldValueTypeNull:
		return dst, true, nil
	case mysql.FieldValueTypeUnsigned:
		if c.Type == mysql.MYSQL_TYPE_YEAR {
			return appendYear(dst, int(fv.AsUint64())), false, nil
		}
		return strconv.AppendUint(dst, fv.AsUint64(), 10), false, nil
	case mysql.FieldValueTypeSigned:
		if c.Type == mysql.MYSQL_TYPE_YEAR {
			return appendYear(dst, int(fv.AsInt64())), false, nil
		}
		return strconv.AppendInt(dst, fv.AsInt64(), 10), false, nil
	case mysql.FieldValueTypeFloat:
		if c.Type == mysql.MYSQL_TYPE_FLOAT {
			return strconv.AppendFloat(dst, float64(float32(fv.AsFloat64())), 'E', -1, 32), false, nil
		}
		return strconv.AppendFloat(dst, fv.AsFloat64(), 'E', -1, 64), false, nil
	}
	out, err = c.AppendText(dst, fv.AsString())
	return out, false, err
}
