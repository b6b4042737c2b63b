package sqltypes

import (
	"strings"

	"github.com/vstream-cdc/vstream/gen/query"
)

// Unsigned reports an UNSIGNED column by its COLUMN_TYPE text ("int(10) unsigned", "bigint
// unsigned zerofill", "decimal(10,2) unsigned").
func Unsigned(columnType string) bool { return hasAttribute(columnType, "unsigned") }

// Zerofill reports a ZEROFILL column by its COLUMN_TYPE text ("int(10) unsigned zerofill").
func Zerofill(columnType string) bool { return hasAttribute(columnType, "zerofill") }

// hasAttribute reports an attribute word after a COLUMN_TYPE's name and arguments. The
// arguments are skipped, not searched: an ENUM or SET label may be any text, "unsigned" too.
func hasAttribute(columnType, attr string) bool {
	rest := columnType
	if i := strings.LastIndexByte(rest, ')'); i >= 0 {
		rest = rest[i+1:]
	} else if i := strings.IndexByte(rest, ' '); i >= 0 {
		rest = rest[i:]
	} else {
		return false
	}
	for _, w := range strings.Fields(rest) {
		if strings.EqualFold(w, attr) {
			return true
		}
	}
	return false
}

// BinaryTypedText reports a column that FIELD types BINARY, VARBINARY or BLOB though it
// holds text: Vitess, as the server's result flags do, types a CHAR, VARCHAR or TEXT (and an
// ENUM or SET) with a binary collation (utf8mb4_bin) as the binary type of its size, and only
// its collation id, which is a character set's and not binary's (63), says it is text.
// Collation 0 is a column whose collation is not known, taken as binary.
func BinaryTypedText(typ query.Type, collation uint32) bool {
	switch typ {
	case query.Type_BINARY, query.Type_VARBINARY, query.Type_BLOB:
		return collation != BinaryCollation && collation != 0
	default:
		// The other types say by themselves whether they hold text.
	}
	return false
}
