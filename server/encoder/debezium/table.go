package debezium

import (
	"encoding/base64"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	"github.com/vstream-cdc/vstream/server/encoder"
	"github.com/vstream-cdc/vstream/sqltypes"
)

// TableSchema is what a table's change records are typed with, and how its cells become
// values of those types.
type TableSchema struct {
	Database, Table string
	// Topic is "<prefix>.<db>.<table>".
	Topic string
	// Key is the key struct "<prefix>.<db>.<table>.Key" of the primary-key columns; nil when
	// the table has no primary key (its records have a null key).
	Key *Schema
	// Row is the optional struct "<prefix>.<db>.<table>.Value", the envelope's before and
	// after.
	Row *Schema
	// Envelope is the value schema "<prefix>.<db>.<table>.Envelope".
	Envelope *Schema
	// PK holds the row indexes of the key's columns, in key order.
	PK []int

	cols []column
}

// colKind is how a column's cells are converted.
type colKind uint8

const (
	kInt colKind = iota
	kUint
	kUintDecimal
	kFloat32
	kFloat32Wide
	kFloat64
	kDecimalBytes
	kDecimalDouble
	kDecimalString
	kDate
	kDateTimeMillis
	kDateTimeMicros
	kTimestamp
	kTime
	kYear
	kText
	kBinary
	kBit1
	kBits
	kEnum
	kSet
	kJSON
	kGeometry
	kPoint
	kVector
)

type column struct {
	name     string
	kind     colKind
	optional bool
	// fsp is a temporal column's fractional-second precision; scale a DECIMAL's.
	fsp, scale int
	// size is BINARY(n)'s length, to pad to, or BIT(n)'s byte count.
	size int
	// labels are the members of an ENUM or SET; numeric says its cells are indexes/bitmasks.
	labels  []string
	numeric bool
	// charset converts the text of a character column that is not UTF-8.
	charset *sqltypes.Charset
	// binary is how binary columns are rendered: bytes, base64, base64-url-safe or hex.
	binary string
	// lob marks BLOB and TEXT columns, which a NOBLOB row image may leave out.
	lob bool
}

// NewTableSchema builds the schemas of a table of database db from what its FIELD event said.
// enumLabels tells whether ENUM and SET cells are labels (FieldEvent.enum_set_string_values)
// rather than numbers.
func NewTableSchema(c *Config, db string, t *encoder.Table, enumLabels bool) (*TableSchema, error) {
	base := c.Prefix + "." + db + "." + t.Name
	ts := &TableSchema{Database: db, Table: t.Name, Topic: base, PK: t.PK}
	row := &Schema{Type: Struct, Name: c.name(base + ".Value"), Optional: true}
	for i, f := range t.Fields {
		col, s, err := newColumn(c, f, t.Labels[i], enumLabels)
		if err != nil {
			return nil, fmt.Errorf("table %s: %w", t.Name, err)
		}
		col.lob = f.GetType() == query.Type_BLOB || f.GetType() == query.Type_TEXT
		ts.cols = append(ts.cols, col)
		row.Fields = append(row.Fields, Field{Name: f.GetName(), Schema: s})
	}
	ts.Row = row
	if len(t.PK) > 0 {
		ts.Key = &Schema{Type: Struct, Name: c.name(base + ".Key")}
		for _, i := range t.PK {
			s := *row.Fields[i].Schema
			s.Optional = false
			ts.Key.Fields = append(ts.Key.Fields, Field{Name: row.Fields[i].Name, Schema: &s})
		}
	}
	ts.Envelope = EnvelopeSchema(c, c.name(base+".Envelope"), row)
	return ts, nil
}

// EnvelopeSchema is the value schema of a table's change records, around its row struct.
func EnvelopeSchema(c *Config, name string, row *Schema) *Schema {
	ms := primitive(Int64, true)
	source := SourceSchema(c)
	if c.Layout == LayoutV20 {
		return structOf(name, 1, false,
			Field{"before", row}, Field{"after", row}, Field{"source", source},
			Field{"op", primitive(String, false)}, Field{"ts_ms", ms}, Field{"transaction", TransactionBlockSchema()})
	}
	return structOf(name, 2, false,
		Field{"before", row}, Field{"after", row}, Field{"source", source}, Field{"transaction", TransactionBlockSchema()},
		Field{"op", primitive(String, false)}, Field{"ts_ms", ms}, Field{"ts_us", ms}, Field{"ts_ns", ms})
}

// TransactionBlockSchema is the envelope's transaction field (event.block).
func TransactionBlockSchema() *Schema {
	return structOf("event.block", 1, true,
		Field{"id", primitive(String, false)}, Field{"total_order", primitive(Int64, false)},
		Field{"data_collection_order", primitive(Int64, false)})
}

// columnType splits a COLUMN_TYPE into its base name and numeric arguments:
// "decimal(10,2) unsigned" → "decimal", [10 2].
func columnType(ct string) (base string, args []int) {
	ct = strings.ToLower(strings.TrimSpace(ct))
	end := strings.IndexAny(ct, "( ")
	if end < 0 {
		return ct, nil
	}
	base = ct[:end]
	if ct[end] == '(' {
		if close := strings.IndexByte(ct[end:], ')'); close > 0 {
			for a := range strings.SplitSeq(ct[end+1:end+close], ",") {
				n, err := strconv.Atoi(strings.TrimSpace(a))
				if err != nil {
					return base, nil
				}
				args = append(args, n)
			}
		}
	}
	return base, args
}

func arg(args []int, i, def int) int {
	if i < len(args) {
		return args[i]
	}
	return def
}

func newColumn(c *Config, f *query.Field, labels []string, enumLabels bool) (column, *Schema, error) {
	optional := f.GetFlags()&uint32(query.MySqlFlag_NOT_NULL_FLAG) == 0
	col := column{name: f.GetName(), optional: optional}
	base, args := columnType(f.GetColumnType())
	prim := func(k colKind, t Type) (column, *Schema, error) {
		col.kind = k
		return col, primitive(t, optional), nil
	}
	sem := func(k colKind, t Type, name string, params ...Param) (column, *Schema, error) {
		col.kind = k
		return col, named(t, name, optional, params...), nil
	}
	fsp := func() int { return arg(args, 0, int(f.GetDecimals())) }
	kind, err := sqltypes.KindOf(f.GetType())
	if err != nil {
		return col, nil, fmt.Errorf("column %s: type %s (%s) has no Debezium mapping: %w", f.GetName(), f.GetType(), f.GetColumnType(), err)
	}
	switch kind {
	case sqltypes.KindInt8:
		return prim(kInt, c.TinyintType)
	case sqltypes.KindUint8, sqltypes.KindInt16:
		return prim(kInt, Int16)
	case sqltypes.KindUint16, sqltypes.KindInt24, sqltypes.KindUint24, sqltypes.KindInt32:
		return prim(kInt, Int32)
	case sqltypes.KindUint32, sqltypes.KindInt64:
		return prim(kInt, Int64)
	case sqltypes.KindUint64:
		if c.BigintUnsignedMode == "precise" {
			return sem(kUintDecimal, Bytes, DecimalName, Param{"scale", "0"}, Param{"connect.decimal.precision", "20"})
		}
		// Values above 2^63-1 wrap to negative, as Debezium's long mode does.
		return prim(kUint, Int64)
	case sqltypes.KindFloat32:
		// FLOAT(M,D) and FLOAT(p) with p > 24 are doubles to Debezium.
		if len(args) > 1 || arg(args, 0, 0) > 24 {
			return prim(kFloat32Wide, Float64)
		}
		return prim(kFloat32, Float32)
	case sqltypes.KindFloat64:
		return prim(kFloat64, Float64)
	case sqltypes.KindDecimal:
		precision, scale := arg(args, 0, 10), arg(args, 1, 0)
		if len(args) == 0 && f.GetColumnLength() > 0 {
			scale = int(f.GetDecimals())
			precision = int(f.GetColumnLength()) - 2
		}
		col.scale = scale
		switch c.DecimalMode {
		case "double":
			return prim(kDecimalDouble, Float64)
		case "string":
			return prim(kDecimalString, String)
		}
		return sem(kDecimalBytes, Bytes, DecimalName, Param{"scale", strconv.Itoa(scale)},
			Param{"connect.decimal.precision", strconv.Itoa(precision)})
	case sqltypes.KindDate:
		return sem(kDate, Int32, DateName)
	case sqltypes.KindDateTime:
		col.fsp = fsp()
		if col.fsp <= 3 {
			return sem(kDateTimeMillis, Int64, TimestampName)
		}
		return sem(kDateTimeMicros, Int64, MicroTimestampName)
	case sqltypes.KindTimestamp:
		col.fsp = fsp()
		return sem(kTimestamp, String, ZonedTimestampName)
	case sqltypes.KindTime:
		col.fsp = fsp()
		return sem(kTime, Int64, MicroTimeName)
	case sqltypes.KindYear:
		return sem(kYear, Int32, YearName)
	case sqltypes.KindChar, sqltypes.KindVarChar, sqltypes.KindText:
		col.charset = c.Collations.Text(f)
		return prim(kText, String)
	case sqltypes.KindBinary, sqltypes.KindVarBinary, sqltypes.KindBlob:
		if kind == sqltypes.KindBinary {
			col.size = arg(args, 0, int(f.GetColumnLength()))
		}
		col.binary = c.BinaryMode
		if c.BinaryMode == "bytes" {
			return prim(kBinary, Bytes)
		}
		return prim(kBinary, String)
	case sqltypes.KindBit:
		n := arg(args, 0, int(f.GetColumnLength()))
		if n <= 1 {
			return prim(kBit1, Boolean)
		}
		col.size = (n + 7) / 8
		return sem(kBits, Bytes, BitsName, Param{"length", strconv.Itoa(n)})
	case sqltypes.KindEnum, sqltypes.KindSet:
		col.labels, col.numeric = labels, !enumLabels
		if kind == sqltypes.KindEnum {
			return sem(kEnum, String, EnumName, Param{"allowed", strings.Join(labels, ",")})
		}
		return sem(kSet, String, EnumSetName, Param{"allowed", strings.Join(labels, ",")})
	case sqltypes.KindJSON:
		return sem(kJSON, String, JSONName)
	case sqltypes.KindGeometry:
		if base == "point" {
			col.kind = kPoint
			s := structOf(PointName, 1, optional,
				Field{"x", primitive(Float64, false)}, Field{"y", primitive(Float64, false)},
				Field{"wkb", primitive(Bytes, true)}, Field{"srid", primitive(Int32, true)})
			s.Doc = "Geometry (POINT)"
			return col, s, nil
		}
		col.kind = kGeometry
		s := structOf(GeometryName, 1, optional, Field{"wkb", primitive(Bytes, false)}, Field{"srid", primitive(Int32, true)})
		s.Doc = "Geometry"
		return col, s, nil
	case sqltypes.KindVector:
		col.kind = kVector
		s := named(Array, FloatVectorName, optional)
		s.Items = primitive(Float32, false)
		return col, s, nil
	}
	// Every kind returned above; a kind added to sqltypes fails the exhaustive lint there first.
	return col, nil, fmt.Errorf("column %s: kind %s has no Debezium mapping", f.GetName(), kind)
}

// Convert sets *v to the value of the Row struct's field i converted from the cell of column
// i of a row (nil: NULL), appending the bytes it needs to arena; v then aliases cell and arena.
// Only the fields v's kind uses are set: v may be reused from cell to cell.
func (t *TableSchema) Convert(v *Value, i int, arena, cell []byte) ([]byte, error) {
	arena, err := t.cols[i].convert(v, arena, cell)
	if err != nil {
		return arena, fmt.Errorf("column %s: %w", t.cols[i].name, err)
	}
	return arena, nil
}

// RowImages are the row images of a change record. The record's key and its envelope's before
// and after refer to them (KindKey, KindRow values) rather than hold their field values: a
// serializer converts each cell (Convert) where it writes its value, which spares a row's
// values being made and then read again.
type RowImages struct {
	Table *TableSchema
	rows  [2]*query.Row
	// starts holds where each column's cell starts in its row's values, -1 for NULL: offsets
	// rather than slices, so that splitting a row writes no pointers.
	starts [2][]int
}

// emptyCell is the empty value, which is not NULL.
var emptyCell = []byte{}

// Set makes image i (0 before, 1 after) a row of Table, or none when row is nil. Columns past
// the row's end are NULL.
func (r *RowImages) Set(i int, row *query.Row) error {
	r.rows[i] = row
	if row == nil {
		return nil
	}
	width := len(r.Table.cols)
	starts := r.starts[i]
	if len(starts) != width {
		starts = make([]int, width)
		r.starts[i] = starts
	}
	vals, lengths := row.GetValues(), row.GetLengths()
	off := 0
	for c := range starts {
		if c >= len(lengths) || lengths[c] < 0 {
			starts[c] = -1
			continue
		}
		if l := lengths[c]; l > int64(len(vals)-off) {
			return fmt.Errorf("row cell %d overruns the row's %d value bytes", c, len(vals))
		}
		starts[c] = off
		off += int(lengths[c])
	}
	return nil
}

// UnavailableValue stands, as in Debezium's MySQL and MariaDB connectors (their
// unavailable.value.placeholder), for a BLOB or TEXT column that a NOBLOB row image left out:
// this text in a TEXT column, its bytes in a BLOB column.
const UnavailableValue = "__debezium_unavailable_value"

// WithUnavailable returns the after image row with UnavailableValue in each BLOB or TEXT column
// that dataColumns says the binlog did not log. Other columns left out (MINIMAL images) stay
// NULL, as the connectors leave them. Without such a column it returns row itself.
func (ts *TableSchema) WithUnavailable(row *query.Row, dataColumns *binlogdata.RowChange_Bitmap) *query.Row {
	if row == nil || dataColumns.GetCount() == 0 {
		return row
	}
	width := len(ts.cols)
	missing := false
	for c := range ts.cols {
		if ts.cols[c].lob && !encoder.Logged(dataColumns, c, width) {
			missing = true
			break
		}
	}
	if !missing {
		return row
	}
	out := &query.Row{Lengths: make([]int64, 0, width), Values: make([]byte, 0, len(row.GetValues())+len(UnavailableValue))}
	vals, lengths := row.GetValues(), row.GetLengths()
	off := 0
	for c := range ts.cols {
		var cell []byte
		l := int64(-1)
		if c < len(lengths) {
			l = lengths[c]
			cell, off = NextCell(vals, l, off)
		}
		if ts.cols[c].lob && !encoder.Logged(dataColumns, c, width) {
			cell, l = []byte(UnavailableValue), int64(len(UnavailableValue))
		}
		out.Lengths = append(out.Lengths, l)
		out.Values = append(out.Values, cell...)
	}
	return out
}

// Has reports whether image i is set.
func (r *RowImages) Has(i int) bool { return r.rows[i] != nil }

// Cell returns the cell of column col of image i: nil for NULL, else the value's bytes, which
// alias the row.
func (r *RowImages) Cell(i, col int) []byte {
	row := r.rows[i]
	if row == nil || col >= len(r.starts[i]) || r.starts[i][col] < 0 {
		return nil
	}
	off, end := r.starts[i][col], r.starts[i][col]+int(row.Lengths[col])
	if off == end {
		return emptyCell
	}
	return row.Values[off:end:end]
}

// Row returns image i's cell values and lengths (-1: NULL), for reading its cells in column
// order with NextCell, which costs less than Cell. Set checked that they fit.
func (r *RowImages) Row(i int) (vals []byte, lengths []int64) {
	return r.rows[i].GetValues(), r.rows[i].GetLengths()
}

// NextCell returns the cell of length l at off in a row's values (as Row returns them) and the
// offset of the next cell. A NULL cell (l < 0) is nil.
func NextCell(vals []byte, l int64, off int) ([]byte, int) {
	switch {
	case l < 0:
		return nil, off
	case l == 0:
		return emptyCell, off
	}
	end := off + int(l)
	return vals[off:end:end], end
}

// Fields returns the number of fields of the struct v refers to (KindRow or KindKey).
func (r *RowImages) Fields(v *Value) int {
	if v.Kind == KindKey {
		return len(r.Table.PK)
	}
	return len(r.Table.cols)
}

// Field returns the column of field f of the struct v refers to (KindRow or KindKey) and its
// cell; f must be below Fields(v).
func (r *RowImages) Field(v *Value, f int) (col int, cell []byte) {
	col = f
	if v.Kind == KindKey {
		col = r.Table.PK[f]
	}
	return col, r.Cell(int(v.I&1), col)
}

// Values converts the cells of the struct v refers to (KindRow or KindKey) into its field
// values, appending them to dst and the bytes they need to arena, for a serializer that wants
// the values themselves. The values alias the row and arena.
func (r *RowImages) Values(dst []Value, arena []byte, v Value) ([]Value, []byte, error) {
	for f := range r.Fields(&v) {
		col, cell := r.Field(&v, f)
		var fv Value
		var err error
		if arena, err = r.Table.Convert(&fv, col, arena, cell); err != nil {
			return dst, arena, err
		}
		dst = append(dst, fv)
	}
	return dst, arena, nil
}

// SameKey reports whether the two images have the same primary key.
func (r *RowImages) SameKey() bool {
	for _, i := range r.Table.PK {
		a, b := r.Cell(0, i), r.Cell(1, i)
		if (a == nil) != (b == nil) || string(a) != string(b) {
			return false
		}
	}
	return true
}

// convert sets *v to the value of a cell (nil: NULL), appending the bytes it needs to arena.
// Only the fields of v its kind uses are set.
func (c *column) convert(v *Value, arena, cell []byte) ([]byte, error) {
	if cell == nil {
		v.Kind = KindNull
		return arena, nil
	}
	switch c.kind {
	case kInt:
		i, ok := sqltypes.ParseInt(cell)
		if !ok {
			return arena, fmt.Errorf("%q is not an integer", cell)
		}
		v.setInt(i)
		return arena, nil
	case kUint:
		u, ok := sqltypes.ParseUint(cell)
		if !ok {
			return arena, fmt.Errorf("%q is not an unsigned integer", cell)
		}
		v.setInt(int64(u))
		return arena, nil
	case kUintDecimal:
		if _, ok := sqltypes.ParseUint(cell); !ok {
			return arena, fmt.Errorf("%q is not an unsigned integer", cell)
		}
		start := len(arena)
		arena = appendUnscaled(arena, false, cell)
		v.setBlob(arena[start:])
		return arena, nil
	case kFloat32, kFloat32Wide:
		x, err := strconv.ParseFloat(string(cell), 32)
		if err != nil {
			return arena, fmt.Errorf("%q is not a number", cell)
		}
		v.setFloat(x)
		return arena, nil
	case kFloat64, kDecimalDouble:
		x, err := strconv.ParseFloat(string(cell), 64)
		if err != nil {
			return arena, fmt.Errorf("%q is not a number", cell)
		}
		v.setFloat(x)
		return arena, nil
	case kDecimalBytes, kDecimalString:
		return c.convertDecimal(v, arena, cell)
	case kDate, kDateTimeMillis, kDateTimeMicros, kTimestamp:
		return c.convertDateTime(v, arena, cell)
	case kTime:
		us, _, err := sqltypes.ParseTime(cell)
		if err != nil {
			return arena, err
		}
		v.setInt(us)
		return arena, nil
	case kYear:
		y, ok := sqltypes.ParseInt(cell)
		if !ok {
			return arena, fmt.Errorf("%q is not a year", cell)
		}
		v.setInt(y)
		return arena, nil
	case kText:
		return c.convertText(v, arena, cell)
	case kBinary:
		return c.convertBinary(v, arena, cell)
	case kBit1:
		v.setBool(sqltypes.BitValue(cell) != 0)
		return arena, nil
	case kBits:
		return c.convertBits(v, arena, cell)
	case kEnum:
		return c.convertEnum(v, arena, cell)
	case kSet:
		return c.convertSet(v, arena, cell)
	case kJSON:
		start := len(arena)
		arena = appendCompactJSON(arena, cell)
		v.setText(arena[start:])
		return arena, nil
	case kGeometry, kPoint:
		return c.convertGeometry(v, arena, cell)
	case kVector:
		return convertVector(v, arena, cell)
	}
	return arena, fmt.Errorf("unknown column kind %d", c.kind)
}

// convertText is a character cell as text, converted to UTF-8 from the column's character set.
func (c *column) convertText(v *Value, arena, cell []byte) ([]byte, error) {
	if c.charset == nil {
		v.setText(cell)
		return arena, nil
	}
	start := len(arena)
	arena = c.charset.Append(arena, cell)
	v.setText(arena[start:])
	return arena, nil
}

// convertBinary is a binary cell as bytes (or as the column's binary handling mode says).
func (c *column) convertBinary(v *Value, arena, cell []byte) ([]byte, error) {
	if len(cell) < c.size {
		// BINARY(n) is zero-padded to n.
		start := len(arena)
		arena = append(arena, cell...)
		for len(arena)-start < c.size {
			arena = append(arena, 0)
		}
		cell = arena[start:]
	}
	return c.binaryValue(v, arena, cell)
}

// convertDecimal is a DECIMAL cell as Debezium's bytes of the unscaled value, or as a plain string.
func (c *column) convertDecimal(v *Value, arena, cell []byte) ([]byte, error) {
	var buf [96]byte
	neg, digits, ok := decimalDigits(buf[:0], cell, c.scale)
	if !ok {
		return arena, fmt.Errorf("%q is not a decimal", cell)
	}
	start := len(arena)
	if c.kind == kDecimalBytes {
		arena = appendUnscaled(arena, neg, digits)
		v.setBlob(arena[start:])
		return arena, nil
	}
	arena = appendPlainDecimal(arena, neg, digits, c.scale)
	v.setText(arena[start:])
	return arena, nil
}

// convertDateTime is a DATE, DATETIME or TIMESTAMP cell as days or milliseconds or microseconds
// since the epoch, or as a zoned string.
func (c *column) convertDateTime(v *Value, arena, cell []byte) ([]byte, error) {
	d, err := sqltypes.ParseDateTime(cell)
	if err != nil {
		return arena, err
	}
	if d.IsZeroDate() {
		// Zero dates have no instant: null where allowed, else the epoch (Debezium's
		// fallback for NOT NULL columns).
		if c.optional {
			v.Kind = KindNull
			return arena, nil
		}
		if c.kind == kTimestamp {
			v.setStr("1970-01-01T00:00:00Z")
			return arena, nil
		}
		v.setInt(0)
		return arena, nil
	}
	switch c.kind {
	case kDate:
		v.setInt(d.EpochDay())
		return arena, nil
	case kDateTimeMillis:
		v.setInt(floorDiv(d.UnixMicro(), 1000))
		return arena, nil
	case kDateTimeMicros:
		v.setInt(d.UnixMicro())
		return arena, nil
	default:
		// kTimestamp: a zoned string, below.
	}
	start := len(arena)
	arena = appendZoned(arena, d, c.fsp)
	v.setText(arena[start:])
	return arena, nil
}

// convertBits is a BIT(n>1) cell as Debezium's Bits.
func (c *column) convertBits(v *Value, arena, cell []byte) ([]byte, error) {
	// Debezium's Bits are little-endian; the cell is big-endian.
	start := len(arena)
	for i := len(cell) - 1; i >= 0; i-- {
		arena = append(arena, cell[i])
	}
	for len(arena)-start < c.size {
		arena = append(arena, 0)
	}
	v.setBlob(arena[start:])
	return arena, nil
}

// convertEnum is an ENUM cell as its label: the cell, or the label of the index a statement
// logged.
func (c *column) convertEnum(v *Value, arena, cell []byte) ([]byte, error) {
	if !c.numeric {
		v.setText(cell)
		return arena, nil
	}
	i, ok := sqltypes.ParseInt(cell)
	if !ok || i < 0 {
		return arena, fmt.Errorf("%q is not an ENUM index", cell)
	}
	if i == 0 || int(i) > len(c.labels) {
		v.setStr("")
		return arena, nil
	}
	v.setStr(c.labels[i-1])
	return arena, nil
}

// convertSet is a SET cell as its labels: the cell, or the labels of the bitmask a statement
// logged.
func (c *column) convertSet(v *Value, arena, cell []byte) ([]byte, error) {
	if !c.numeric {
		v.setText(cell)
		return arena, nil
	}
	mask, ok := sqltypes.ParseUint(cell)
	if !ok {
		return arena, fmt.Errorf("%q is not a SET bitmask", cell)
	}
	start := len(arena)
	for j, l := range c.labels {
		if j < 64 && mask&(1<<uint(j)) != 0 {
			if len(arena) > start {
				arena = append(arena, ',')
			}
			arena = append(arena, l...)
		}
	}
	v.setText(arena[start:])
	return arena, nil
}

// convertGeometry is a spatial cell (SRID then WKB) as Debezium's Geometry or Point struct.
func (c *column) convertGeometry(v *Value, arena, cell []byte) ([]byte, error) {
	if len(cell) < 4 {
		return arena, fmt.Errorf("geometry of %d bytes has no SRID", len(cell))
	}
	srid := Null
	if s := int32(uint32(cell[0]) | uint32(cell[1])<<8 | uint32(cell[2])<<16 | uint32(cell[3])<<24); s != 0 {
		srid = Int(int64(s))
	}
	wkb := Blob(cell[4:])
	if c.kind == kGeometry {
		*v = StructOf(wkb, srid)
		return arena, nil
	}
	x, y, ok := wkbPoint(cell[4:])
	if !ok {
		return arena, fmt.Errorf("%d bytes of WKB are not a 2D point", len(cell)-4)
	}
	*v = StructOf(Float(x), Float(y), wkb, srid)
	return arena, nil
}

// convertVector is a VECTOR cell (little-endian float32s) as an array of floats.
func convertVector(v *Value, arena, cell []byte) ([]byte, error) {
	if len(cell)%4 != 0 {
		return arena, fmt.Errorf("vector of %d bytes", len(cell))
	}
	elems := make([]Value, len(cell)/4)
	for i := range elems {
		b := cell[4*i:]
		elems[i] = Float(float64(math.Float32frombits(uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24)))
	}
	*v = ArrayOf(elems...)
	return arena, nil
}

func (c *column) binaryValue(v *Value, arena, b []byte) ([]byte, error) {
	start := len(arena)
	arena, text := appendBinaryText(arena, c.binary, b)
	if !text {
		v.setBlob(b)
		return arena, nil
	}
	v.setText(arena[start:])
	return arena, nil
}

// appendBinaryText appends binary bytes as text in a binary.handling.mode that makes them
// text (base64, base64-url-safe, hex), and reports whether the mode does.
func appendBinaryText(dst []byte, mode string, b []byte) ([]byte, bool) {
	switch mode {
	case "base64":
		return base64.StdEncoding.AppendEncode(dst, b), true
	case "base64-url-safe":
		return base64.URLEncoding.AppendEncode(dst, b), true
	case "hex":
		const digits = "0123456789abcdef"
		for _, x := range b {
			dst = append(dst, digits[x>>4], digits[x&0xf])
		}
		return dst, true
	}
	return dst, false
}

func wkbPoint(wkb []byte) (x, y float64, ok bool) {
	if len(wkb) != 21 {
		return 0, 0, false
	}
	le := wkb[0] != 0
	u32 := func(b []byte) uint32 {
		if le {
			return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
		}
		return uint32(b[3]) | uint32(b[2])<<8 | uint32(b[1])<<16 | uint32(b[0])<<24
	}
	u64 := func(b []byte) uint64 {
		if le {
			return uint64(u32(b)) | uint64(u32(b[4:]))<<32
		}
		return uint64(u32(b[4:])) | uint64(u32(b))<<32
	}
	if u32(wkb[1:]) != 1 {
		return 0, 0, false
	}
	return math.Float64frombits(u64(wkb[5:])), math.Float64frombits(u64(wkb[13:])), true
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}
