package streamsets

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"strconv"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	"github.com/vstream-cdc/vstream/server/encoder"
	"github.com/vstream-cdc/vstream/sqltypes"
)

// kind is how a column's values are written: the StreamSets field type MysqlType gives the
// column's type, and its JSON form.
type kind uint8

const (
	kindSigned   kind = iota // TINYINT…BIGINT: INTEGER or LONG, a JSON number
	kindUnsigned             // the same, unsigned: wrapped into the signed type of its width
	kindYear                 // YEAR: INTEGER
	kindFloat                // FLOAT: FLOAT, Java float text
	kindDouble               // DOUBLE: DOUBLE, Java double text
	kindDecimal              // DECIMAL: DECIMAL, the exact digits as a JSON number
	kindDateTime             // DATE, DATETIME, TIMESTAMP: DATE or DATETIME, epoch time
	kindTime                 // TIME: TIME, a signed duration
	kindText                 // CHAR, VARCHAR, TEXT, JSON: STRING
	kindBlob                 // BLOB family: BYTE_ARRAY, base64
	kindBytes                // BINARY, VARBINARY, GEOMETRY: STRING, ISO-8859-1 text
	kindBit                  // BIT: STRING, the unsigned value in decimal
	kindEnum                 // ENUM: INTEGER, the 1-based member index
	kindSet                  // SET: LONG, the member bitmask
)

// table is what the encoder keeps about a table from its FIELD event.
type table struct {
	*encoder.Table
	kinds []kind
	// bits is the width of unsigned integer columns.
	bits []uint8
	// charsets convert the text of character columns that is not UTF-8.
	charsets []*sqltypes.Charset
	// keys are the columns' names as JSON object keys, colon included.
	keys [][]byte
	// labelText says ENUM and SET values arrive as labels, not numbers.
	labelText bool
	database  string
}

func (e *Encoder) field(ev *binlogdata.VEvent) error {
	fe := ev.GetFieldEvent()
	t := &table{Table: encoder.NewTable(fe), labelText: fe.GetEnumSetStringValues(), database: ev.GetSource().GetDatabase()}
	n := len(t.Fields)
	t.kinds, t.bits, t.keys, t.charsets = make([]kind, n), make([]uint8, n), make([][]byte, n), make([]*sqltypes.Charset, n)
	for i, f := range t.Fields {
		var err error
		if t.kinds[i], t.bits[i], err = kindOf(f); err != nil {
			return fmt.Errorf("streamsets: table %s column %s: %w", t.Name, f.GetName(), err)
		}
		t.charsets[i] = e.p.Collations.Text(f)
		t.keys[i] = append(encoder.AppendJSONString(nil, f.GetName()), ':')
	}
	e.tables[t.Name] = t
	return nil
}

// kindOf maps a column to its kind (schema/MysqlType.java), with the width of unsigned
// integers. A type that is no column's is an error: a record must not carry a value the
// encoder cannot say it wrote right.
func kindOf(f *query.Field) (kind, uint8, error) {
	k, err := sqltypes.KindOf(f.GetType())
	if err != nil {
		return 0, 0, err
	}
	switch k {
	case sqltypes.KindInt8, sqltypes.KindInt16, sqltypes.KindInt24, sqltypes.KindInt32, sqltypes.KindInt64:
		return kindSigned, 0, nil
	case sqltypes.KindUint8:
		return kindUnsigned, 8, nil
	case sqltypes.KindUint16:
		return kindUnsigned, 16, nil
	case sqltypes.KindUint24:
		return kindUnsigned, 24, nil
	case sqltypes.KindUint32:
		return kindUnsigned, 32, nil
	case sqltypes.KindUint64:
		return kindUnsigned, 64, nil
	case sqltypes.KindYear:
		return kindYear, 0, nil
	case sqltypes.KindFloat32:
		return kindFloat, 0, nil
	case sqltypes.KindFloat64:
		return kindDouble, 0, nil
	case sqltypes.KindDecimal:
		return kindDecimal, 0, nil
	case sqltypes.KindDate, sqltypes.KindDateTime, sqltypes.KindTimestamp:
		return kindDateTime, 0, nil
	case sqltypes.KindTime:
		return kindTime, 0, nil
	case sqltypes.KindChar, sqltypes.KindVarChar, sqltypes.KindText, sqltypes.KindJSON:
		return kindText, 0, nil
	case sqltypes.KindBlob:
		return kindBlob, 0, nil
	case sqltypes.KindBit:
		return kindBit, 0, nil
	case sqltypes.KindEnum:
		return kindEnum, 0, nil
	case sqltypes.KindSet:
		return kindSet, 0, nil
	case sqltypes.KindBinary, sqltypes.KindVarBinary, sqltypes.KindGeometry, sqltypes.KindVector:
		// Bytes, which only ISO-8859-1 turns into a string without loss.
		return kindBytes, 0, nil
	}
	return 0, 0, fmt.Errorf("no StreamSets type for %v", k)
}

// appendValue writes the typed JSON value of a non-NULL cell.
func (e *Encoder) appendValue(b []byte, t *table, i int, cell []byte) ([]byte, error) {
	switch t.kinds[i] {
	case kindSigned:
		v, ok := sqltypes.ParseInt(cell)
		if !ok {
			return b, fmt.Errorf("%q is not an integer", cell)
		}
		return strconv.AppendInt(b, v, 10), nil
	case kindUnsigned:
		v, ok := sqltypes.ParseUint(cell)
		if !ok {
			return b, fmt.Errorf("%q is not an unsigned integer", cell)
		}
		if e.widen {
			return strconv.AppendUint(b, v, 10), nil
		}
		// The origin reads an unsigned column as the signed Java type of its width:
		// TINYINT UNSIGNED 255 is -1.
		shift := 64 - t.bits[i]
		return strconv.AppendInt(b, int64(v<<shift)>>shift, 10), nil
	case kindYear:
		v, ok := sqltypes.ParseUint(cell)
		if !ok {
			return b, fmt.Errorf("%q is not a year", cell)
		}
		return strconv.AppendUint(b, v, 10), nil
	case kindFloat, kindDouble:
		bits := 64
		if t.kinds[i] == kindFloat {
			bits = 32
		}
		x, err := strconv.ParseFloat(view(cell), bits)
		if err != nil {
			return b, fmt.Errorf("%q is not a number", cell)
		}
		return encoder.AppendJavaFloat(b, x, bits), nil
	case kindDecimal:
		return appendDecimal(b, cell)
	case kindDateTime:
		d, err := sqltypes.ParseDateTime(cell)
		if err != nil {
			return b, err
		}
		if d.IsZeroDate() {
			// No instant has a zero year, month or day: the origin's binlog reader makes
			// such values null.
			return append(b, "null"...), nil
		}
		us := d.UnixMicro()
		if e.micros {
			return strconv.AppendInt(b, us, 10), nil
		}
		// Floor, so that an instant before 1970 keeps its wall-clock digits.
		ms := us / 1000
		if us%1000 < 0 {
			ms--
		}
		return strconv.AppendInt(b, ms, 10), nil
	case kindTime:
		us, _, err := sqltypes.ParseTime(cell)
		if err != nil {
			return b, err
		}
		if !e.micros {
			// A TIME is a signed duration: truncating toward zero keeps its digits.
			us /= 1000
		}
		return strconv.AppendInt(b, us, 10), nil
	case kindText:
		if cs := t.charsets[i]; cs != nil {
			e.text = cs.Append(e.text[:0], cell)
			cell = e.text
		}
		return encoder.AppendJSONString(b, view(cell)), nil
	case kindBlob:
		b = append(b, '"')
		b = base64.StdEncoding.AppendEncode(b, cell)
		return append(b, '"'), nil
	case kindBytes:
		// ISO-8859-1 text, byte b as U+00bb: a consumer gets the bytes back with an
		// ISO-8859-1 encoder.
		e.text = sqltypes.AppendISOLatin1(e.text[:0], cell)
		return encoder.AppendJSONString(b, view(e.text)), nil
	case kindBit:
		b = append(b, '"')
		b = strconv.AppendUint(b, sqltypes.BitValue(cell), 10)
		return append(b, '"'), nil
	case kindEnum:
		if !t.labelText {
			v, ok := sqltypes.ParseUint(cell)
			if !ok {
				return b, fmt.Errorf("%q is not an ENUM index", cell)
			}
			return strconv.AppendUint(b, v, 10), nil
		}
		return strconv.AppendInt(b, int64(sqltypes.EnumIndex(t.Labels[i], cell)), 10), nil
	case kindSet:
		var mask uint64
		if t.labelText {
			mask = sqltypes.SetMask(t.Labels[i], cell)
		} else {
			var ok bool
			if mask, ok = sqltypes.ParseUint(cell); !ok {
				return b, fmt.Errorf("%q is not a SET bitmask", cell)
			}
		}
		if e.widen {
			return strconv.AppendUint(b, mask, 10), nil
		}
		// LONG is signed: a member in bit 63 makes the mask negative, as in the origin.
		return strconv.AppendInt(b, int64(mask), 10), nil
	}
	return b, fmt.Errorf("no rendering for kind %d", t.kinds[i])
}

// appendDecimal writes DECIMAL text as a JSON number with the same digits: the binlog reader
// may drop the 0 before the point (".50") and a ZEROFILL column read by the copy pads the
// integer part, neither of which JSON allows.
func appendDecimal(b []byte, cell []byte) ([]byte, error) {
	s := cell
	if len(s) > 0 && s[0] == '-' {
		b = append(b, '-')
		s = s[1:]
	}
	intPart, frac := s, []byte(nil)
	if j := bytes.IndexByte(s, '.'); j >= 0 {
		intPart, frac = s[:j], s[j+1:]
		if len(frac) == 0 {
			return b, fmt.Errorf("%q is not a decimal", cell)
		}
	}
	if !allDigits(intPart) || !allDigits(frac) || len(intPart)+len(frac) == 0 {
		return b, fmt.Errorf("%q is not a decimal", cell)
	}
	for len(intPart) > 1 && intPart[0] == '0' {
		intPart = intPart[1:]
	}
	if len(intPart) == 0 {
		b = append(b, '0')
	}
	b = append(b, intPart...)
	if frac != nil {
		b = append(b, '.')
		b = append(b, frac...)
	}
	return b, nil
}

func allDigits(s []byte) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
