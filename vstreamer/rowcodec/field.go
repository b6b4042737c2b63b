package rowcodec

import (
	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/vstream-cdc/vstream/gen/query"
	"github.com/vstream-cdc/vstream/sqltypes"
)

// ResultField is what the server says of a column in the metadata of a result set that
// selects it (SELECT * FROM t LIMIT 0) on a utf8mb4 connection: the column type, flags,
// display length and decimals Vitess puts in FIELD events, since Vitess reads its fields the
// same way.
type ResultField struct {
	// Type is the protocol's column type (MYSQL_TYPE_STRING for CHAR, ENUM and SET).
	Type     byte
	Flags    uint16
	Length   uint32
	Decimals uint8
}

// resultCharsetMaxLen is the longest character of utf8mb4, the result character set the
// server's display lengths are counted in.
const resultCharsetMaxLen = 4

// Field renders the column as a query.Field of the given table. With the server's result-set
// metadata (Result) the field is what Vitess reports for the column: the type modified by the
// server's flags (a CHAR, ENUM or SET with a binary collation is BINARY, a VARCHAR VARBINARY,
// a TEXT BLOB), and the server's length, decimals and flags. Without it (the binlog describes
// a shape the table no longer has) the same is worked out from the binlog's metadata.
func (c *Column) Field(database, table string) *query.Field {
	typ := c.FieldType()
	charset := uint32(c.Collation)
	if charset == 0 || !c.isCharacter() {
		charset = sqltypes.BinaryCollation
	}
	var length, decimals, flags uint32
	if r := c.Result; r != nil {
		length, decimals, flags = r.Length, uint32(r.Decimals), uint32(r.Flags)
	} else {
		length, decimals, flags = uint32(c.displayLength()), uint32(c.Decimals), c.synthesizedFlags(typ)
	}
	colType := c.ColumnType
	if colType == "" {
		colType = c.synthesizedColumnType()
	}
	return &query.Field{
		Name:         c.Name,
		Type:         typ,
		Table:        table,
		OrgTable:     table,
		Database:     database,
		OrgName:      c.Name,
		ColumnLength: length,
		Charset:      charset,
		Decimals:     decimals,
		Flags:        flags,
		ColumnType:   colType,
	}
}

// FieldType is the type FIELD events give the column: QueryType, modified as Vitess modifies
// a column type by the server's BINARY flag.
func (c *Column) FieldType() query.Type {
	typ := c.QueryType()
	if c.Result == nil || c.Result.Flags&mysql.BINARY_FLAG == 0 {
		return typ
	}
	switch typ {
	case query.Type_CHAR, query.Type_ENUM, query.Type_SET:
		return query.Type_BINARY
	case query.Type_VARCHAR:
		return query.Type_VARBINARY
	case query.Type_TEXT:
		return query.Type_BLOB
	default:
		// Other types have no binary form of their own.
	}
	return typ
}

// isCharacter reports the columns whose values are text in a character set.
func (c *Column) isCharacter() bool {
	if c.Ext != ExtNone || c.JSON {
		return false
	}
	switch c.Type {
	case mysql.MYSQL_TYPE_STRING, mysql.MYSQL_TYPE_VARCHAR, mysql.MYSQL_TYPE_VAR_STRING, mysql.MYSQL_TYPE_ENUM, mysql.MYSQL_TYPE_SET,
		mysql.MYSQL_TYPE_BLOB, mysql.MYSQL_TYPE_TINY_BLOB, mysql.MYSQL_TYPE_MEDIUM_BLOB, mysql.MYSQL_TYPE_LONG_BLOB:
		return c.Collation != sqltypes.BinaryCollation
	}
	return false
}

// synthesizedFlags are the flags the server would report, as far as the binlog tells them.
func (c *Column) synthesizedFlags(typ query.Type) uint32 {
	flags := c.Flags
	if !c.Nullable {
		flags |= uint32(query.MySqlFlag_NOT_NULL_FLAG)
	}
	if c.PrimaryKey {
		flags |= uint32(query.MySqlFlag_PRI_KEY_FLAG | query.MySqlFlag_PART_KEY_FLAG)
	}
	if c.Unsigned || c.Ext != ExtNone || c.Type == mysql.MYSQL_TYPE_BIT || c.Type == mysql.MYSQL_TYPE_YEAR ||
		c.Type == mysql.MYSQL_TYPE_TIMESTAMP || c.Type == mysql.MYSQL_TYPE_TIMESTAMP2 {
		flags |= uint32(query.MySqlFlag_UNSIGNED_FLAG)
	}
	if typ&query.Type(query.Flag_ISINTEGRAL) != 0 || typ == query.Type_DECIMAL || typ == query.Type_FLOAT32 || typ == query.Type_FLOAT64 {
		flags |= uint32(query.MySqlFlag_NUM_FLAG)
	}
	switch typ {
	case query.Type_YEAR:
		flags |= uint32(query.MySqlFlag_ZEROFILL_FLAG | query.MySqlFlag_NUM_FLAG)
	case query.Type_ENUM:
		flags |= uint32(query.MySqlFlag_ENUM_FLAG)
	case query.Type_SET:
		flags |= uint32(query.MySqlFlag_SET_FLAG)
	case query.Type_TIMESTAMP:
		flags |= uint32(query.MySqlFlag_TIMESTAMP_FLAG)
	case query.Type_BLOB, query.Type_TEXT, query.Type_JSON, query.Type_GEOMETRY:
		flags |= uint32(query.MySqlFlag_BLOB_FLAG)
	default:
		// No flag of the type's own.
	}
	numeric := flags&uint32(query.MySqlFlag_NUM_FLAG) != 0
	if !c.isCharacter() && !numeric && typ != query.Type_BIT {
		flags |= uint32(query.MySqlFlag_BINARY_FLAG)
	}
	return flags
}

// displayLength is the column's display length as the server reports it on a utf8mb4
// connection, worked out from the binlog's metadata.
func (c *Column) displayLength() int {
	switch c.Ext {
	case ExtUUID:
		return 36 * resultCharsetMaxLen
	case ExtINET4:
		return 15 * resultCharsetMaxLen
	case ExtINET6:
		return 39 * resultCharsetMaxLen
	default:
		// Not an extension type: by the binlog type below.
	}
	signed := func(digits int) int {
		if c.Unsigned {
			return digits
		}
		return digits + 1
	}
	fsp := func(base int) int {
		if c.Decimals > 0 {
			return base + 1 + c.Decimals
		}
		return base
	}
	switch c.Type {
	case mysql.MYSQL_TYPE_TINY:
		return signed(3)
	case mysql.MYSQL_TYPE_SHORT:
		return signed(5)
	case mysql.MYSQL_TYPE_INT24:
		return signed(8)
	case mysql.MYSQL_TYPE_LONG:
		return signed(10)
	case mysql.MYSQL_TYPE_LONGLONG:
		return 20
	case mysql.MYSQL_TYPE_FLOAT:
		return 12
	case mysql.MYSQL_TYPE_DOUBLE:
		return 22
	case mysql.MYSQL_TYPE_NEWDECIMAL:
		n := int(c.Meta >> 8)
		if c.Meta&0xff > 0 {
			n++
		}
		return signed(n)
	case mysql.MYSQL_TYPE_YEAR:
		return 4
	case mysql.MYSQL_TYPE_DATE, mysql.MYSQL_TYPE_NEWDATE:
		return 10
	case mysql.MYSQL_TYPE_TIME, mysql.MYSQL_TYPE_TIME2:
		return fsp(10)
	case mysql.MYSQL_TYPE_DATETIME, mysql.MYSQL_TYPE_DATETIME2, mysql.MYSQL_TYPE_TIMESTAMP, mysql.MYSQL_TYPE_TIMESTAMP2:
		return fsp(19)
	case mysql.MYSQL_TYPE_BIT:
		return c.bitWidth()
	case mysql.MYSQL_TYPE_STRING:
		return c.chars(c.Length)
	case mysql.MYSQL_TYPE_VARCHAR, mysql.MYSQL_TYPE_VAR_STRING:
		return c.chars(int(c.Meta))
	case mysql.MYSQL_TYPE_ENUM, mysql.MYSQL_TYPE_SET:
		n := 0
		for i, l := range c.Labels {
			chars := len([]rune(l))
			if c.Type == mysql.MYSQL_TYPE_ENUM {
				n = max(n, chars)
				continue
			}
			if i > 0 {
				n++
			}
			n += chars
		}
		return n * resultCharsetMaxLen
	case mysql.MYSQL_TYPE_BLOB, mysql.MYSQL_TYPE_TINY_BLOB, mysql.MYSQL_TYPE_MEDIUM_BLOB, mysql.MYSQL_TYPE_LONG_BLOB:
		if c.JSON {
			return 1<<32 - 1
		}
		n := [...]int{1<<32 - 1, 1<<8 - 1, 1<<16 - 1, 1<<24 - 1, 1<<32 - 1}[min(int(c.Meta), 4)]
		if c.Collation == sqltypes.BinaryCollation {
			return n
		}
		// The server counts a TEXT's length in characters of its own byte length.
		return int(min(int64(n)*resultCharsetMaxLen, 1<<32-1))
	case mysql.MYSQL_TYPE_GEOMETRY, mysql.MYSQL_TYPE_JSON:
		return 1<<32 - 1
	}
	return 0
}

// chars turns a byte length of a CHAR or VARCHAR into the server's display length: its
// characters, counted in utf8mb4 bytes.
func (c *Column) chars(bytes int) int {
	if c.Collation == sqltypes.BinaryCollation {
		return bytes
	}
	return bytes / mbMaxLen(c.Charset, c.Collation) * resultCharsetMaxLen
}

// mbMaxLen is the longest character of a character set in bytes. The schema names the
// character set; without it the collation id tells.
func mbMaxLen(charset string, collation uint64) int {
	if charset == "" && collation < sqltypes.MaxCollation {
		charset = sqltypes.CharsetOf(uint32(collation))
	}
	return sqltypes.MaxCharLen(charset)
}

func (c *Column) bitWidth() int {
	return int(c.Meta>>8)*8 + int(c.Meta&0xff)
}
