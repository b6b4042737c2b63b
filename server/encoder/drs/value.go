package drs

import (
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/vstream-cdc/vstream/server/encoder"
	"github.com/vstream-cdc/vstream/sqltypes"
)

// appendValue writes a non-NULL cell as a JSON string.
func (e *Encoder) appendValue(b []byte, c *column, cell []byte) ([]byte, error) {
	switch c.kind {
	case kindPlain:
		b = append(b, '"')
		b = append(b, cell...)
		return append(b, '"'), nil
	case kindText:
		if c.charset != nil {
			e.text = c.charset.Append(e.text[:0], cell)
			cell = e.text
		}
		return appendString(b, cell), nil
	case kindFloat32, kindFloat64:
		bits := 64
		if c.kind == kindFloat32 {
			bits = 32
		}
		x, err := strconv.ParseFloat(string(cell), bits)
		if err != nil {
			return b, fmt.Errorf("%q is not a number", cell)
		}
		b = append(b, '"')
		b = encoder.AppendJavaFloat(b, x, bits)
		return append(b, '"'), nil
	case kindDecimal:
		b = append(b, '"')
		if len(cell) > 0 && cell[0] == '-' {
			b = append(b, '-')
			cell = cell[1:]
		}
		if len(cell) > 0 && cell[0] == '.' {
			b = append(b, '0')
		}
		b = append(b, cell...)
		return append(b, '"'), nil
	case kindTimestamp:
		return e.appendTimestamp(b, cell)
	case kindBytes:
		return appendByteArray(b, cell), nil
	case kindBinary:
		// The binlog keeps BINARY(n) without its zero padding and DRS prints it so (an empty
		// BINARY value is "[]" in its examples); copied rows arrive padded.
		n := len(cell)
		for n > 0 && cell[n-1] == 0 {
			n--
		}
		return appendByteArray(b, cell[:n]), nil
	case kindBit:
		b = append(b, '"')
		b = strconv.AppendUint(b, sqltypes.BitValue(cell), 10)
		return append(b, '"'), nil
	case kindEnum:
		if c.labelsInRows {
			return appendString(b, cell), nil
		}
		i, err := strconv.Atoi(string(cell))
		if err != nil {
			return b, fmt.Errorf("%q is not an ENUM index", cell)
		}
		label := ""
		if i > 0 && i <= len(c.labels) {
			label = c.labels[i-1]
		}
		return appendString(b, label), nil
	case kindSet:
		if c.labelsInRows {
			return appendString(b, cell), nil
		}
		mask, err := strconv.ParseUint(string(cell), 10, 64)
		if err != nil {
			return b, fmt.Errorf("%q is not a SET bitmask", cell)
		}
		var s []byte
		for j, l := range c.labels {
			if mask&(1<<uint(j)) != 0 {
				if len(s) > 0 {
					s = append(s, ',')
				}
				s = append(s, l...)
			}
		}
		return appendString(b, s), nil
	}
	return b, fmt.Errorf("unknown column kind %d", c.kind)
}

// appendTimestamp writes a TIMESTAMP cell (UTC text, fraction digits as the column's fsp):
// drs-json as epoch seconds with the same fraction digits, drs-json-c as wall-clock text in
// the render zone. The zero TIMESTAMP is epoch 0 in the binlog; drs-json prints that, and
// drs-json-c keeps the zero text.
func (e *Encoder) appendTimestamp(b []byte, cell []byte) ([]byte, error) {
	d, err := sqltypes.ParseDateTime(cell)
	if err != nil {
		return b, err
	}
	var frac []byte
	if d.FracDigits > 0 {
		frac = cell[len(cell)-d.FracDigits-1:]
	}
	b = append(b, '"')
	switch {
	case !e.jsonc:
		if d.IsZeroDate() {
			b = append(b, '0')
		} else {
			b = strconv.AppendInt(b, d.UnixMicro()/1e6, 10)
		}
		b = append(b, frac...)
	case e.zoneUTC || d.IsZeroDate():
		b = append(b, cell...)
	default:
		t := time.Date(d.Year, time.Month(d.Month), d.Day, d.Hour, d.Minute, d.Second, 0, time.UTC).In(e.zone)
		b = t.AppendFormat(b, time.DateTime)
		b = append(b, frac...)
	}
	return append(b, '"'), nil
}

// appendByteArray writes bytes the way Java's Arrays.toString(byte[]) prints them: signed
// values joined by ", " in brackets.
func appendByteArray(b, v []byte) []byte {
	b = append(b, '"', '[')
	for i, c := range v {
		if i > 0 {
			b = append(b, ',', ' ')
		}
		b = strconv.AppendInt(b, int64(int8(c)), 10)
	}
	return append(b, ']', '"')
}

// gsonEscape is what Gson's HTML-safe writer escapes among ASCII characters, and how.
var gsonEscape = func() (t [utf8.RuneSelf]string) {
	const hex = "0123456789abcdef"
	for c := range 0x20 {
		t[c] = `\u00` + string(hex[c>>4]) + string(hex[c&0xf])
	}
	t['\t'], t['\n'], t['\r'], t['\b'], t['\f'] = `\t`, `\n`, `\r`, `\b`, `\f`
	t['"'], t['\\'] = `\"`, `\\`
	t['<'], t['>'], t['&'], t['='], t['\''] = `\u003c`, `\u003e`, `\u0026`, `\u003d`, `\u0027`
	return t
}()

// appendString writes s as a JSON string the way Gson's HTML-safe writer does: the ASCII
// characters of gsonEscape and U+2028/U+2029 escaped, other non-ASCII raw UTF-8. Invalid
// UTF-8 becomes U+FFFD, as a Java decoder would make it.
func appendString[S ~string | ~[]byte](dst []byte, s S) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if esc := gsonEscape[c]; esc != "" {
				dst = append(dst, s[start:i]...)
				dst = append(dst, esc...)
				start = i + 1
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(string(s[i:min(i+utf8.UTFMax, len(s))]))
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, "\ufffd"...)
			start = i + 1
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			if r == '\u2028' {
				dst = append(dst, `\u2028`...)
			} else {
				dst = append(dst, `\u2029`...)
			}
			start = i + size
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
