package filter

import (
	"fmt"
	"strconv"
	"unsafe"

	"github.com/vstream-cdc/vstream/gen/query"
	"github.com/vstream-cdc/vstream/sqltypes"
)

// valueKind is how cells of a column compare, following SQL for the column's type.
type valueKind int

const (
	kindDecimal  valueKind = iota // integers, DECIMAL, YEAR: exact numeric text
	kindFloat                     // FLOAT, DOUBLE
	kindDateTime                  // DATE, DATETIME, TIMESTAMP
	kindTime                      // TIME
	kindString                    // character and binary strings, ENUM, SET: by collation
	kindBit                       // BIT: as an unsigned number
)

// kindOf says how a column's cells compare: a switch over every column kind, so that a kind
// added to sqltypes must be decided here.
func kindOf(f *query.Field) (valueKind, error) {
	k, err := sqltypes.KindOf(f.Type)
	if err != nil {
		return 0, fmt.Errorf("column %s: %v", f.Name, err)
	}
	switch k {
	case sqltypes.KindInt8, sqltypes.KindUint8, sqltypes.KindInt16, sqltypes.KindUint16,
		sqltypes.KindInt24, sqltypes.KindUint24, sqltypes.KindInt32, sqltypes.KindUint32,
		sqltypes.KindInt64, sqltypes.KindUint64, sqltypes.KindDecimal, sqltypes.KindYear:
		return kindDecimal, nil
	case sqltypes.KindFloat32, sqltypes.KindFloat64:
		return kindFloat, nil
	case sqltypes.KindDate, sqltypes.KindDateTime, sqltypes.KindTimestamp:
		return kindDateTime, nil
	case sqltypes.KindTime:
		return kindTime, nil
	case sqltypes.KindChar, sqltypes.KindVarChar, sqltypes.KindText, sqltypes.KindEnum, sqltypes.KindSet,
		sqltypes.KindBinary, sqltypes.KindVarBinary, sqltypes.KindBlob:
		return kindString, nil
	case sqltypes.KindBit:
		return kindBit, nil
	case sqltypes.KindJSON, sqltypes.KindGeometry, sqltypes.KindVector:
		// The server compares these by rules of their own (JSON's, spatial); none is modelled.
	}
	return 0, fmt.Errorf("column %s of type %s cannot be compared in a filter", f.Name, f.Type)
}

// collationOf is the collation a string column's cells compare under. FIELD types a
// character column of a _bin collation BINARY, VARBINARY or BLOB (as Vitess does) and keeps
// the collation in Charset; a binary string's is 63, or 0 where a FIELD leaves it out.
func collationOf(f *query.Field) (*sqltypes.Collation, error) {
	c, err := sqltypes.CollationOf(collationID(f))
	if err != nil {
		return nil, fmt.Errorf("column %s cannot be compared in a filter: %w", f.Name, err)
	}
	return c, nil
}

func collationID(f *query.Field) uint32 {
	if f.Charset == 0 && (f.Type == query.Type_BINARY || f.Type == query.Type_VARBINARY || f.Type == query.Type_BLOB) {
		return sqltypes.BinaryCollation
	}
	return f.Charset
}

// bytesString views b as a string without copying; the string must not outlive b.
func bytesString(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}

func parseFloat(b []byte) (float64, bool) {
	f, err := strconv.ParseFloat(bytesString(b), 64)
	return f, err == nil
}
