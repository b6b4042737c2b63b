package rowcodec

import (
	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/vstream-cdc/vstream/sqltypes"
)

// FromTableMap describes the columns of a table as its TABLE_MAP event does. Names, labels,
// signedness, collations and the primary key are only present with binlog_row_metadata=FULL;
// HasNames tells whether they were.
func FromTableMap(tm *replication.TableMapEvent) (cols []Column, hasNames bool) {
	// The event is shared by the goroutines reading one binlog, and go-mysql fills its caches
	// of names and enum and set values as strings on first use: they are filled in a copy.
	own := *tm
	tm = &own
	n := int(tm.ColumnCount)
	cols = make([]Column, n)
	names := tm.ColumnNameString()
	unsigned := tm.UnsignedMap()
	collations := tm.CollationMap()
	enumSetCollations := tm.EnumSetCollationMap()
	enums := tm.EnumStrValueMap()
	sets := tm.SetStrValueMap()
	hasNames = len(names) == n
	for i := 0; i < n; i++ {
		c := &cols[i]
		c.Type = tm.ColumnType[i]
		c.Meta = tm.ColumnMeta[i]
		switch c.Type {
		case TypeBlobCompressed:
			c.Type, c.Compressed = mysql.MYSQL_TYPE_BLOB, true
		case TypeVarcharCompressed:
			c.Type, c.Compressed = mysql.MYSQL_TYPE_VARCHAR, true
		}
		if hasNames {
			c.Name = names[i]
		}
		c.Unsigned = unsigned[i]
		_, c.Nullable = tm.Nullable(i)
		switch c.Type {
		case mysql.MYSQL_TYPE_STRING:
			rt, length := StringMeta(c.Meta)
			if rt == mysql.MYSQL_TYPE_ENUM || rt == mysql.MYSQL_TYPE_SET {
				c.Type = rt
			} else {
				c.Length = length
			}
		case mysql.MYSQL_TYPE_DATE:
			c.Type = mysql.MYSQL_TYPE_DATE
		case mysql.MYSQL_TYPE_TIME2, mysql.MYSQL_TYPE_DATETIME2, mysql.MYSQL_TYPE_TIMESTAMP2:
			c.Decimals = int(c.Meta)
		case mysql.MYSQL_TYPE_NEWDECIMAL:
			c.Decimals = int(c.Meta & 0xff)
		case mysql.MYSQL_TYPE_FLOAT, mysql.MYSQL_TYPE_DOUBLE:
			c.Decimals = 31
		}
		if coll, ok := collations[i]; ok {
			c.Collation = coll
		} else if coll, ok := enumSetCollations[i]; ok {
			c.Collation = coll
		} else if isBinaryByType(c.Type) {
			c.Collation = sqltypes.BinaryCollation
		}
		if l, ok := enums[i]; ok {
			c.Labels = l
		} else if l, ok := sets[i]; ok {
			c.Labels = l
		}
	}
	for _, pk := range tm.PrimaryKey {
		if int(pk) < n {
			cols[pk].PrimaryKey = true
		}
	}
	return cols, hasNames
}

// isBinaryByType reports the types that never carry a character set.
func isBinaryByType(t byte) bool {
	switch t {
	case mysql.MYSQL_TYPE_STRING, mysql.MYSQL_TYPE_VARCHAR, mysql.MYSQL_TYPE_VAR_STRING,
		mysql.MYSQL_TYPE_BLOB, mysql.MYSQL_TYPE_ENUM, mysql.MYSQL_TYPE_SET, mysql.MYSQL_TYPE_JSON:
		return false
	}
	return true
}
