package drs

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	"github.com/vstream-cdc/vstream/server/encoder"
	"github.com/vstream-cdc/vstream/sqltypes"
)

// table is what a FIELD event said about a table, with the parts of its messages that do not
// change from row to row already rendered.
type table struct {
	name     string
	cols     []column
	pk       []int
	nameJSON []byte
	// mysqlType, sqlType and pkNames members, rendered.
	mysqlTypeJSON, sqlTypeJSON, pkNamesJSON []byte
}

// column is one column and how its values are rendered.
type column struct {
	name     string
	nameJSON []byte // "name":
	kind     kind
	labels   []string // ENUM and SET members
	// labelsInRows: ENUM/SET cells are labels, not numbers.
	labelsInRows bool
	// charset converts the text of a character column that is not UTF-8.
	charset *sqltypes.Charset
}

// kind is how a column's cells become DRS text.
type kind uint8

const (
	kindPlain     kind = iota // integers, DATE, DATETIME, TIME, YEAR: the cell text as it is
	kindText                  // character data, JSON: escaped text
	kindFloat32               // Java float text
	kindFloat64               // Java double text
	kindDecimal               // the cell text with a leading 0 before a bare point
	kindTimestamp             // epoch seconds (drs-json) or wall clock in the render zone (drs-json-c)
	kindBytes                 // Java byte-array text
	kindBinary                // BINARY(n): Java byte-array text without the zero padding
	kindBit                   // unsigned decimal
	kindEnum
	kindSet
)

// defaultSQLTypes are the sqlType codes by mysqlType name. The DRS documentation shows int,
// float, double, decimal, char, varchar, text, binary, varbinary, blob, datetime (94, DRS's own
// code) and timestamp; the others are JDBC's codes for the type and can be overridden.
var defaultSQLTypes = map[string]int{
	"int": 4, "integer": 4, "float": 6, "double": 8, "real": 8, "decimal": 3, "numeric": 3,
	"char": 1, "varchar": 12, "text": -1, "binary": -2, "varbinary": -3, "blob": 2004,
	"datetime": 94, "timestamp": 93,

	"tinyint": -6, "smallint": 5, "mediumint": 4, "bigint": -5,
	"date": 91, "time": 92, "year": 91, "bit": -7,
	"tinytext": -1, "mediumtext": -1, "longtext": -1,
	"tinyblob": 2004, "mediumblob": 2004, "longblob": 2004,
	"enum": 1, "set": 1, "json": -1,
	"geometry": -2, "point": -2, "linestring": -2, "polygon": -2, "multipoint": -2,
	"multilinestring": -2, "multipolygon": -2, "geometrycollection": -2, "geomcollection": -2,
}

// baseNames name a column's type when the FIELD event gives no column type.
var baseNames = map[query.Type]string{
	query.Type_INT8: "tinyint", query.Type_UINT8: "tinyint", query.Type_INT16: "smallint", query.Type_UINT16: "smallint",
	query.Type_INT24: "mediumint", query.Type_UINT24: "mediumint", query.Type_INT32: "int", query.Type_UINT32: "int",
	query.Type_INT64: "bigint", query.Type_UINT64: "bigint", query.Type_FLOAT32: "float", query.Type_FLOAT64: "double",
	query.Type_DECIMAL: "decimal", query.Type_DATE: "date", query.Type_TIME: "time", query.Type_DATETIME: "datetime",
	query.Type_TIMESTAMP: "timestamp", query.Type_YEAR: "year", query.Type_CHAR: "char", query.Type_BINARY: "binary",
	query.Type_VARCHAR: "varchar", query.Type_VARBINARY: "varbinary", query.Type_TEXT: "text", query.Type_BLOB: "blob",
	query.Type_BIT: "bit", query.Type_ENUM: "enum", query.Type_SET: "set", query.Type_JSON: "json",
	query.Type_GEOMETRY: "geometry", query.Type_VECTOR: "varbinary",
}

// mysqlType is the base name of a column's type, as DRS prints it: no length, no unsigned.
func mysqlType(f *query.Field) string {
	ct := f.GetColumnType()
	if i := strings.IndexAny(ct, "( "); i >= 0 {
		ct = ct[:i]
	}
	if ct == "" {
		return baseNames[f.GetType()]
	}
	return strings.ToLower(ct)
}

// kindOf is how the cells of a column of kind k are rendered.
func kindOf(k sqltypes.Kind) kind {
	switch k {
	case sqltypes.KindFloat32:
		return kindFloat32
	case sqltypes.KindFloat64:
		return kindFloat64
	case sqltypes.KindDecimal:
		return kindDecimal
	case sqltypes.KindTimestamp:
		return kindTimestamp
	case sqltypes.KindBinary:
		return kindBinary
	case sqltypes.KindVarBinary, sqltypes.KindBlob, sqltypes.KindGeometry, sqltypes.KindVector:
		return kindBytes
	case sqltypes.KindBit:
		return kindBit
	case sqltypes.KindEnum:
		return kindEnum
	case sqltypes.KindSet:
		return kindSet
	case sqltypes.KindChar, sqltypes.KindVarChar, sqltypes.KindText, sqltypes.KindJSON:
		return kindText
	case sqltypes.KindInt8, sqltypes.KindUint8, sqltypes.KindInt16, sqltypes.KindUint16,
		sqltypes.KindInt24, sqltypes.KindUint24, sqltypes.KindInt32, sqltypes.KindUint32,
		sqltypes.KindInt64, sqltypes.KindUint64, sqltypes.KindYear, sqltypes.KindDate,
		sqltypes.KindDateTime, sqltypes.KindTime:
		// Integers, temporal types and YEAR: their text as it is.
	}
	return kindPlain
}

// field records a FIELD event; a column of a type no column can have is an error naming it.
func (e *Encoder) field(ev *binlogdata.VEvent) (*table, error) {
	fe := ev.GetFieldEvent()
	t := &table{name: fe.GetTableName(), cols: make([]column, len(fe.GetFields()))}
	t.nameJSON = appendString(nil, t.name)
	var pkNames []string
	t.mysqlTypeJSON = append(t.mysqlTypeJSON, '{')
	t.sqlTypeJSON = append(t.sqlTypeJSON, '{')
	for i, f := range encoder.ValueFields(fe.GetFields()) {
		c := &t.cols[i]
		c.name = f.GetName()
		k, err := sqltypes.KindOf(f.GetType())
		if err != nil {
			return nil, fmt.Errorf("%s: table %s column %s: %w", e.name, t.name, c.name, err)
		}
		c.kind = kindOf(k)
		c.charset = e.p.Collations.Text(f)
		c.nameJSON = append(appendString(nil, c.name), ':')
		if c.kind == kindEnum || c.kind == kindSet {
			c.labels = sqltypes.Labels(f.GetColumnType())
			c.labelsInRows = fe.GetEnumSetStringValues()
		}
		if f.GetFlags()&uint32(query.MySqlFlag_PRI_KEY_FLAG) != 0 {
			t.pk = append(t.pk, i)
			pkNames = append(pkNames, c.name)
		}
		if i > 0 {
			t.mysqlTypeJSON = append(t.mysqlTypeJSON, ',')
			t.sqlTypeJSON = append(t.sqlTypeJSON, ',')
		}
		mt := mysqlType(f)
		code, ok := e.sqlTypes[mt]
		if !ok {
			// A type the table does not name (MariaDB's uuid, inet6...): the code of the type
			// it travels as.
			code = e.sqlTypes[baseNames[f.GetType()]]
		}
		t.mysqlTypeJSON = append(t.mysqlTypeJSON, c.nameJSON...)
		t.mysqlTypeJSON = appendString(t.mysqlTypeJSON, mt)
		t.sqlTypeJSON = append(t.sqlTypeJSON, c.nameJSON...)
		t.sqlTypeJSON = strconv.AppendInt(t.sqlTypeJSON, int64(code), 10)
	}
	t.mysqlTypeJSON = append(t.mysqlTypeJSON, '}')
	t.sqlTypeJSON = append(t.sqlTypeJSON, '}')
	if len(pkNames) == 0 {
		t.pkNamesJSON = []byte("null")
	} else {
		t.pkNamesJSON = append(t.pkNamesJSON, '[')
		for i, n := range pkNames {
			if i > 0 {
				t.pkNamesJSON = append(t.pkNamesJSON, ',')
			}
			t.pkNamesJSON = appendString(t.pkNamesJSON, n)
		}
		t.pkNamesJSON = append(t.pkNamesJSON, ']')
	}
	e.tables[t.name] = t
	return t, nil
}
