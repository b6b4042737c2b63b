package rowcodec

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// A MySQL JSON column's binlog value is MySQL's binary JSON. Vitess's vstreamer sends it as
// the text its own decoder prints (vitess.io/vitess/go/mysql/binlog.ParseBinaryJSON, then
// json.Value.MarshalTo), which is the text SELECT prints for it: `{"k": v, "k2": v2}` and
// `[a, b]` with MySQL's spacing, keys in the document's order, doubles as MySQL prints them,
// DATE, TIME and DATETIME values as strings, DECIMAL values as numbers at their scale, and
// binary strings and bits as "base64:type15:...". go-mysql prints the same value compactly,
// with keys sorted and opaque values as their bytes, so the stream renders whole values
// itself (vitessJSON) and the copy, which SELECTs, and the binlog agree.

// vitessJSON replaces go-mysql's text of each whole JSON value in re's row images with
// Vitess's. data is the event's rows, past its header. An empty value (an invalid document
// MySQL writes for an empty string under a non-strict sql_mode) stays as go-mysql decodes it.
func vitessJSON(re *replication.RowsEvent, data []byte) error {
	cols, _ := FromTableMap(re.Table)
	pos := 0
	for img := 0; pos < len(data); img++ {
		if img >= len(re.Rows) {
			return errors.New("JSON value: more row images in the event than go-mysql decoded")
		}
		// An update's images alternate before (the first bitmap) and after (the second).
		bitmap := re.ColumnBitmap1
		if re.ColumnBitmap2 != nil && img%2 == 1 {
			bitmap = re.ColumnBitmap2
		}
		row := re.Rows[img]
		var err error
		pos, err = walkImage(cols, data, pos, bitmap, nil, func(col int, v []byte, _ bool) error {
			return printJSON(row, col, v)
		})
		if err != nil {
			return fmt.Errorf("JSON value: row image %d: %w", img+1, err)
		}
	}
	return nil
}

// MySQL's binary JSON value types.
const (
	jsonSmallObject = 0x0
	jsonLargeObject = 0x1
	jsonSmallArray  = 0x2
	jsonLargeArray  = 0x3
	jsonLiteral     = 0x4
	jsonInt16       = 0x5
	jsonUint16      = 0x6
	jsonInt32       = 0x7
	jsonUint32      = 0x8
	jsonInt64       = 0x9
	jsonUint64      = 0xa
	jsonDouble      = 0xb
	jsonString      = 0xc
	jsonOpaque      = 0xf
)

var errJSONShort = errors.New("binary JSON value ends early")

// appendVitessJSON appends the text Vitess prints for the binary JSON document doc.
func appendVitessJSON(dst, doc []byte) ([]byte, error) {
	if len(doc) == 0 {
		return append(dst, "null"...), nil
	}
	return appendJSONNode(dst, doc[0], doc[1:], 0)
}

// appendJSONNode appends the value of type typ that starts data (a container's offsets count
// from the start of its own value).
func appendJSONNode(dst []byte, typ byte, data []byte, depth int) ([]byte, error) {
	// MySQL nests documents 100 deep at most; a deeper one is not MySQL's.
	if depth > 150 {
		return dst, errors.New("binary JSON value nested too deep")
	}
	switch typ {
	case jsonSmallObject, jsonLargeObject, jsonSmallArray, jsonLargeArray:
		return appendJSONContainer(dst, typ, data, depth)
	case jsonLiteral:
		if len(data) < 1 {
			return dst, errJSONShort
		}
		switch data[0] {
		case 0:
			return append(dst, "null"...), nil
		case 1:
			return append(dst, "true"...), nil
		case 2:
			return append(dst, "false"...), nil
		}
		return dst, fmt.Errorf("binary JSON literal %d", data[0])
	case jsonInt16, jsonUint16, jsonInt32, jsonUint32, jsonInt64, jsonUint64, jsonDouble:
		size := 8
		switch typ {
		case jsonInt16, jsonUint16:
			size = 2
		case jsonInt32, jsonUint32:
			size = 4
		}
		if len(data) < size {
			return dst, errJSONShort
		}
		switch typ {
		case jsonInt16:
			return strconv.AppendInt(dst, int64(int16(binary.LittleEndian.Uint16(data))), 10), nil
		case jsonUint16:
			return strconv.AppendUint(dst, uint64(binary.LittleEndian.Uint16(data)), 10), nil
		case jsonInt32:
			return strconv.AppendInt(dst, int64(int32(binary.LittleEndian.Uint32(data))), 10), nil
		case jsonUint32:
			return strconv.AppendUint(dst, uint64(binary.LittleEndian.Uint32(data)), 10), nil
		case jsonInt64:
			return strconv.AppendInt(dst, int64(binary.LittleEndian.Uint64(data)), 10), nil
		case jsonUint64:
			return strconv.AppendUint(dst, binary.LittleEndian.Uint64(data), 10), nil
		}
		return appendJSONDouble(dst, math.Float64frombits(binary.LittleEndian.Uint64(data))), nil
	case jsonString:
		s, err := jsonVarBytes(data)
		if err != nil {
			return dst, err
		}
		return appendJSONString(dst, s), nil
	case jsonOpaque:
		return appendJSONOpaque(dst, data)
	}
	return dst, fmt.Errorf("binary JSON type %d", typ)
}

// appendJSONContainer appends an object or an array: a count and a size (2 bytes each in a
// small one, 4 in a large one), an object's key entries (offset, 2-byte length), then an
// entry per value: its type and its offset, or the value itself when it fits the entry.
func appendJSONContainer(dst []byte, typ byte, data []byte, depth int) ([]byte, error) {
	large := typ == jsonLargeObject || typ == jsonLargeArray
	object := typ == jsonSmallObject || typ == jsonLargeObject
	word := 2
	if large {
		word = 4
	}
	read := func(pos, n int) (int, error) {
		if pos < 0 || pos+n > len(data) {
			return 0, errJSONShort
		}
		if n == 2 {
			return int(binary.LittleEndian.Uint16(data[pos:])), nil
		}
		return int(binary.LittleEndian.Uint32(data[pos:])), nil
	}
	count, err := read(0, word)
	if err != nil {
		return dst, err
	}
	pos := 2 * word
	var keys [][]byte
	if object {
		keys = make([][]byte, count)
		for i := range keys {
			off, rerr := read(pos, word)
			if rerr != nil {
				return dst, rerr
			}
			n, rerr := read(pos+word, 2)
			if rerr != nil {
				return dst, rerr
			}
			if off+n > len(data) {
				return dst, errJSONShort
			}
			keys[i] = data[off : off+n]
			pos += word + 2
		}
		dst = append(dst, '{')
	} else {
		dst = append(dst, '[')
	}
	for i := 0; i < count; i++ {
		if i > 0 {
			dst = append(dst, ',', ' ')
		}
		if object {
			dst = appendJSONString(dst, keys[i])
			dst = append(dst, ':', ' ')
		}
		if pos >= len(data) {
			return dst, errJSONShort
		}
		vt := data[pos]
		inline := vt == jsonLiteral || vt == jsonInt16 || vt == jsonUint16 || (large && (vt == jsonInt32 || vt == jsonUint32))
		if inline {
			if pos+1+word > len(data) {
				return dst, errJSONShort
			}
			dst, err = appendJSONNode(dst, vt, data[pos+1:pos+1+word], depth+1)
		} else {
			var off int
			if off, err = read(pos+1, word); err != nil {
				return dst, err
			}
			if off >= len(data) {
				return dst, errJSONShort
			}
			dst, err = appendJSONNode(dst, vt, data[off:], depth+1)
		}
		if err != nil {
			return dst, err
		}
		pos += 1 + word
	}
	if object {
		return append(dst, '}'), nil
	}
	return append(dst, ']'), nil
}

// jsonVarBytes reads a string's length (7 bits a byte, low bits first) and its bytes.
func jsonVarBytes(data []byte) ([]byte, error) {
	n, pos := 0, 0
	for shift := 0; ; shift += 7 {
		if pos >= len(data) || shift > 28 {
			return nil, errJSONShort
		}
		b := data[pos]
		pos++
		n |= int(b&0x7f) << shift
		if b&0x80 == 0 {
			break
		}
	}
	if n > len(data)-pos {
		return nil, errJSONShort
	}
	return data[pos : pos+n], nil
}

// appendJSONDouble prints a double as Vitess does (its format.FormatFloat, as MySQL prints
// one): plain below 1e15 and from 1e-15, else in exponent form without the exponent's plus
// sign; a whole number keeps ".0".
func appendJSONDouble(dst []byte, f float64) []byte {
	format := byte('f')
	if f >= 1e15 || f <= -1e15 || (f < 1e-15 && f > -1e-15) {
		format = 'g'
	}
	start := len(dst)
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	num := dst[start:]
	if i := bytes.IndexByte(num, 'e'); i >= 0 && i+1 < len(num) && num[i+1] == '+' {
		dst = append(dst[:start+i+1], num[i+2:]...)
		num = dst[start:]
	}
	if bytes.IndexByte(num, '.') < 0 && bytes.IndexByte(num, 'e') < 0 {
		dst = append(dst, '.', '0')
	}
	return dst
}

// appendJSONString quotes s as Vitess does: invalid UTF-8 replaced, quotes, backslashes and
// control characters escaped, everything else as it is.
func appendJSONString(dst, s []byte) []byte {
	if !utf8.Valid(s) {
		s = []byte(string([]rune(string(s))))
	}
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for _, ch := range s {
		switch ch {
		case '"', '\\':
			dst = append(dst, '\\', ch)
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			if ch < 0x20 {
				dst = append(dst, '\\', 'u', '0', '0', hex[ch>>4], hex[ch&0xf])
				continue
			}
			dst = append(dst, ch)
		}
	}
	return append(dst, '"')
}

// appendJSONOpaque appends a value MySQL keeps with its column type: the type, then the
// value's bytes with their length. Vitess prints temporal values as strings, decimals as
// numbers, and any string or bit value as "base64:type15:<its bytes in base64>".
func appendJSONOpaque(dst, data []byte) ([]byte, error) {
	if len(data) < 1 {
		return dst, errJSONShort
	}
	ft := data[0]
	v, err := jsonVarBytes(data[1:])
	if err != nil {
		return dst, err
	}
	packed := func() (uint64, error) {
		if len(v) < 8 {
			return 0, fmt.Errorf("binary JSON opaque value of type %d: %d bytes", ft, len(v))
		}
		return binary.LittleEndian.Uint64(v), nil
	}
	switch ft {
	case mysql.MYSQL_TYPE_DATE, mysql.MYSQL_TYPE_DATETIME, mysql.MYSQL_TYPE_DATETIME2, mysql.MYSQL_TYPE_TIMESTAMP, mysql.MYSQL_TYPE_TIMESTAMP2:
		raw, err := packed()
		if err != nil {
			return dst, err
		}
		value := raw >> 24
		ym := (value >> 22) & 0x1ffff
		day := (value >> 17) & 0x1f
		if ft == mysql.MYSQL_TYPE_DATE {
			return fmt.Appendf(dst, `"%04d-%02d-%02d"`, ym/13, ym%13, day), nil
		}
		return fmt.Appendf(dst, `"%04d-%02d-%02d %02d:%02d:%02d.%06d"`, ym/13, ym%13, day,
			(value>>12)&0x1f, (value>>6)&0x3f, value&0x3f, raw&0xffffff), nil
	case mysql.MYSQL_TYPE_TIME, mysql.MYSQL_TYPE_TIME2:
		raw, err := packed()
		if err != nil {
			return dst, err
		}
		value := raw >> 24
		// Vitess prints hours modulo 32, as its JSON time values hold them.
		return fmt.Appendf(dst, `"%02d:%02d:%02d.%06d"`, ((value>>12)&0x3ff)%32, (value>>6)&0x3f, value&0x3f, raw&0xffffff), nil
	case mysql.MYSQL_TYPE_DECIMAL, mysql.MYSQL_TYPE_NEWDECIMAL:
		if len(v) < 2 {
			return dst, fmt.Errorf("binary JSON decimal of %d bytes", len(v))
		}
		c := Column{Type: mysql.MYSQL_TYPE_NEWDECIMAL, Meta: uint16(v[0])<<8 | uint16(v[1])}
		out, _, _, err := c.appendBinlogDecimal(dst, v[2:])
		return out, err
	case mysql.MYSQL_TYPE_VARCHAR, mysql.MYSQL_TYPE_VAR_STRING, mysql.MYSQL_TYPE_STRING, mysql.MYSQL_TYPE_BLOB,
		mysql.MYSQL_TYPE_TINY_BLOB, mysql.MYSQL_TYPE_MEDIUM_BLOB, mysql.MYSQL_TYPE_LONG_BLOB, mysql.MYSQL_TYPE_BIT:
		ft = mysql.MYSQL_TYPE_VARCHAR
	}
	// Vitess has no text for other opaque types; MySQL prints them as base64 with their type.
	dst = fmt.Appendf(dst, `"base64:type%d:`, ft)
	dst = base64.StdEncoding.AppendEncode(dst, v)
	return append(dst, '"'), nil
}
