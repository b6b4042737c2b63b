package sqltypes

import (
	"fmt"

	"github.com/vstream-cdc/vstream/gen/query"
)

// Kind is the kind of a MySQL or MariaDB column, a closed set: a switch over it names every
// kind (the exhaustive linter checks), so a kind added here is a compile-time list of the
// places that must decide how to write it. The kinds follow the FIELD types Vitess gives
// columns: MariaDB's UUID, INET4 and INET6 are BINARY, its JSON columns JSON.
type Kind uint8

// The kinds, by family.
const (
	KindInt8 Kind = iota + 1
	KindUint8
	KindInt16
	KindUint16
	KindInt24
	KindUint24
	KindInt32
	KindUint32
	KindInt64
	KindUint64
	KindFloat32
	KindFloat64
	KindDecimal
	KindYear
	KindDate
	KindDateTime
	KindTimestamp
	KindTime
	KindChar
	KindVarChar
	KindText
	KindBinary
	KindVarBinary
	KindBlob
	KindBit
	KindEnum
	KindSet
	KindJSON
	KindGeometry
	KindVector
)

// typeByKind is the FIELD type of each kind, KindOf turned around.
var typeByKind = func() (t [KindVector + 1]query.Type) {
	for typ := range query.Type_name {
		if k, err := KindOf(query.Type(typ)); err == nil {
			t[k] = query.Type(typ)
		}
	}
	return t
}()

// KindOf returns the kind of a column of FIELD type t; a type no column has (an expression's,
// a tuple's, NULL_TYPE) is an error.
func KindOf(t query.Type) (Kind, error) {
	// A switch, not a map: encoders look the kind up per cell.
	switch t {
	case query.Type_INT8:
		return KindInt8, nil
	case query.Type_UINT8:
		return KindUint8, nil
	case query.Type_INT16:
		return KindInt16, nil
	case query.Type_UINT16:
		return KindUint16, nil
	case query.Type_INT24:
		return KindInt24, nil
	case query.Type_UINT24:
		return KindUint24, nil
	case query.Type_INT32:
		return KindInt32, nil
	case query.Type_UINT32:
		return KindUint32, nil
	case query.Type_INT64:
		return KindInt64, nil
	case query.Type_UINT64:
		return KindUint64, nil
	case query.Type_FLOAT32:
		return KindFloat32, nil
	case query.Type_FLOAT64:
		return KindFloat64, nil
	case query.Type_DECIMAL:
		return KindDecimal, nil
	case query.Type_YEAR:
		return KindYear, nil
	case query.Type_DATE:
		return KindDate, nil
	case query.Type_DATETIME:
		return KindDateTime, nil
	case query.Type_TIMESTAMP:
		return KindTimestamp, nil
	case query.Type_TIME:
		return KindTime, nil
	case query.Type_CHAR:
		return KindChar, nil
	case query.Type_VARCHAR:
		return KindVarChar, nil
	case query.Type_TEXT:
		return KindText, nil
	case query.Type_BINARY:
		return KindBinary, nil
	case query.Type_VARBINARY:
		return KindVarBinary, nil
	case query.Type_BLOB:
		return KindBlob, nil
	case query.Type_BIT:
		return KindBit, nil
	case query.Type_ENUM:
		return KindEnum, nil
	case query.Type_SET:
		return KindSet, nil
	case query.Type_JSON:
		return KindJSON, nil
	case query.Type_GEOMETRY:
		return KindGeometry, nil
	case query.Type_VECTOR:
		return KindVector, nil
	default:
		// The types of values that are no column's: literals, expressions, tuples, NULL.
	}
	return 0, fmt.Errorf("%s is not the type of a MySQL or MariaDB column", t)
}

// Type is the kind's FIELD type.
func (k Kind) Type() query.Type {
	if k < 1 || k > KindVector {
		return query.Type_NULL_TYPE
	}
	return typeByKind[k]
}

// String names the kind as its FIELD type does ("INT8", "VARCHAR", "VECTOR").
func (k Kind) String() string {
	if k < 1 || k > KindVector {
		return fmt.Sprintf("Kind(%d)", uint8(k))
	}
	return k.Type().String()
}
