package render

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/vstream-cdc/vstream/gen/query"
	"github.com/vstream-cdc/vstream/sqltypes"
)

// maxExact is the largest magnitude a JSON number keeps exactly in a float64 reader (jq,
// JavaScript): larger integers are written as strings so no digit is lost.
const maxExact = 1 << 53

// AppendJSON appends the JSON value of one cell of column f: integers, YEAR and BIT as
// numbers while exact, floats as numbers, DECIMAL, temporal and text values as strings (text
// converted from the column's character set), binary values as base64, JSON as itself, and a
// nil cell (NULL) as null. The kind decides, as sqltypes names it.
func AppendJSON(dst []byte, f *query.Field, cell []byte) []byte {
	if cell == nil {
		return append(dst, "null"...)
	}
	kind, err := sqltypes.KindOf(f.GetType())
	if err != nil {
		return appendString(dst, cell)
	}
	switch kind {
	case sqltypes.KindInt8, sqltypes.KindInt16, sqltypes.KindInt24, sqltypes.KindInt32, sqltypes.KindInt64:
		if v, ok := sqltypes.ParseInt(cell); ok && v <= maxExact && v >= -maxExact {
			return strconv.AppendInt(dst, v, 10)
		}
	case sqltypes.KindUint8, sqltypes.KindUint16, sqltypes.KindUint24, sqltypes.KindUint32, sqltypes.KindUint64, sqltypes.KindYear:
		if v, ok := sqltypes.ParseUint(cell); ok && v <= maxExact {
			return strconv.AppendUint(dst, v, 10)
		}
	case sqltypes.KindBit:
		if v := sqltypes.BitValue(cell); v <= maxExact {
			return strconv.AppendUint(dst, v, 10)
		}
		return strconv.AppendQuote(dst, strconv.FormatUint(sqltypes.BitValue(cell), 10))
	case sqltypes.KindFloat32, sqltypes.KindFloat64:
		if b, ok := appendFloat(dst, kind, cell); ok {
			return b
		}
	case sqltypes.KindJSON:
		if json.Valid(cell) {
			return appendCompact(dst, cell)
		}
	case sqltypes.KindBinary, sqltypes.KindVarBinary, sqltypes.KindBlob, sqltypes.KindGeometry, sqltypes.KindVector:
		dst = append(dst, '"')
		dst = base64.StdEncoding.AppendEncode(dst, cell)
		return append(dst, '"')
	case sqltypes.KindChar, sqltypes.KindVarChar, sqltypes.KindText:
		return appendString(dst, utf8Text(f, cell))
	case sqltypes.KindDecimal, sqltypes.KindDate, sqltypes.KindDateTime, sqltypes.KindTimestamp, sqltypes.KindTime,
		sqltypes.KindEnum, sqltypes.KindSet:
		// Strings: DECIMAL keeps its exact digits, the others are text.
	}
	return appendString(dst, cell)
}

// utf8Text is a text cell in UTF-8: converted from the column's character set, or the cell
// itself when that is UTF-8 already.
func utf8Text(f *query.Field, cell []byte) []byte {
	if cs := sqltypes.DefaultCharsets.Text(f); cs != nil {
		return cs.Append(nil, cell)
	}
	return cell
}

// appendFloat appends a FLOAT or DOUBLE cell (the server's text, e.g. 1.25E+00) as the
// shortest number that reads back as the same float of the column's size.
func appendFloat(dst []byte, kind sqltypes.Kind, cell []byte) ([]byte, bool) {
	bits := 64
	if kind == sqltypes.KindFloat32 {
		bits = 32
	}
	v, err := strconv.ParseFloat(string(cell), bits)
	if err != nil {
		return dst, false
	}
	return strconv.AppendFloat(dst, v, 'g', -1, bits), true
}

// appendString appends s as a JSON string, without allocating: quotes, backslashes and
// control characters escaped, bytes that are not UTF-8 written as U+FFFD.
func appendString(dst, s []byte) []byte {
	const hexDigits = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			case c == '\t':
				dst = append(dst, '\\', 't')
			case c < ' ' || c == 0x7f:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && n == 1 {
			dst = append(dst, "\\ufffd"...)
		} else {
			dst = append(dst, s[i:i+n]...)
		}
		i += n
	}
	return append(dst, '"')
}

// AppendText appends one cell of column f as a person reads it: NULL, numbers and temporal
// values bare, text quoted (converted from the column's character set), binary values as
// 0x hex, BIT as its number, JSON as itself.
func AppendText(dst []byte, f *query.Field, cell []byte) []byte {
	if cell == nil {
		return append(dst, "NULL"...)
	}
	kind, err := sqltypes.KindOf(f.GetType())
	if err != nil {
		return strconv.AppendQuote(dst, string(cell))
	}
	switch kind {
	case sqltypes.KindBinary, sqltypes.KindVarBinary, sqltypes.KindBlob, sqltypes.KindGeometry, sqltypes.KindVector:
		dst = append(dst, "0x"...)
		return hex.AppendEncode(dst, cell)
	case sqltypes.KindBit:
		return strconv.AppendUint(dst, sqltypes.BitValue(cell), 10)
	case sqltypes.KindFloat32, sqltypes.KindFloat64:
		if b, ok := appendFloat(dst, kind, cell); ok {
			return b
		}
	case sqltypes.KindChar, sqltypes.KindVarChar, sqltypes.KindText:
		return strconv.AppendQuote(dst, string(utf8Text(f, cell)))
	case sqltypes.KindEnum, sqltypes.KindSet, sqltypes.KindDate, sqltypes.KindDateTime, sqltypes.KindTimestamp, sqltypes.KindTime:
		return strconv.AppendQuote(dst, string(cell))
	case sqltypes.KindInt8, sqltypes.KindUint8, sqltypes.KindInt16, sqltypes.KindUint16, sqltypes.KindInt24,
		sqltypes.KindUint24, sqltypes.KindInt32, sqltypes.KindUint32, sqltypes.KindInt64, sqltypes.KindUint64,
		sqltypes.KindDecimal, sqltypes.KindYear, sqltypes.KindJSON:
		// Numbers and JSON read as they are.
	}
	return append(dst, cell...)
}
