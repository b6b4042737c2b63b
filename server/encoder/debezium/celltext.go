package debezium

import (
	"encoding/base64"
	"strconv"

	"github.com/vstream-cdc/vstream/server/encoder"
	"github.com/vstream-cdc/vstream/sqltypes"
)

// appendCellJSON appends the JSON of a cell of column c (not NULL) as convert and scalar
// would write it, but without making its value first, and reports whether it did: it leaves
// to them the cells it does not read in one pass (malformed ones, zero dates, padding, non-UTF-8
// and JSON text, numeric ENUM and SET, geometries...), which also report the errors.
//
// An integer column's cell in canonical decimal is copied. A FLOAT or DOUBLE column's cell,
// which the binlog reader writes in Go's shortest 'E' form (formats.md 1.3, strconv 'E' with
// precision -1 at the column's width), has the digits Java's Float.toString and
// Double.toString print: its text is only rearranged.
func appendCellJSON(dst []byte, c *column, cell []byte) ([]byte, bool) {
	switch c.kind {
	case kInt, kUint, kYear:
		if canonicalInt(cell) {
			return append(dst, cell...), true
		}
	case kFloat64:
		return appendJavaFromE(dst, cell, 17)
	case kFloat32:
		return appendJavaFromE(dst, cell, 9)
	case kDecimalBytes, kDecimalString:
		var buf [96]byte
		neg, digits, ok := decimalDigits(buf[:0], cell, c.scale)
		if !ok {
			return dst, false
		}
		dst = append(dst, '"')
		if c.kind == kDecimalString {
			dst = appendPlainDecimal(dst, neg, digits, c.scale)
		} else {
			var unscaled [40]byte
			dst = base64.StdEncoding.AppendEncode(dst, appendUnscaled(unscaled[:0], neg, digits))
		}
		return append(dst, '"'), true
	case kDate, kDateTimeMillis, kDateTimeMicros, kTimestamp:
		d, err := sqltypes.ParseDateTime(cell)
		if err != nil || d.IsZeroDate() {
			return dst, false
		}
		switch c.kind {
		case kDate:
			return strconv.AppendInt(dst, d.EpochDay(), 10), true
		case kDateTimeMillis:
			return strconv.AppendInt(dst, floorDiv(d.UnixMicro(), 1000), 10), true
		case kDateTimeMicros:
			return strconv.AppendInt(dst, d.UnixMicro(), 10), true
		default:
			// kTimestamp: a zoned string, below.
		}
		return append(appendZoned(append(dst, '"'), d, c.fsp), '"'), true
	case kTime:
		us, _, err := sqltypes.ParseTime(cell)
		if err != nil {
			return dst, false
		}
		return strconv.AppendInt(dst, us, 10), true
	case kText:
		if c.charset == nil {
			return encoder.AppendJSONString(dst, unsafeString(cell)), true
		}
	case kEnum, kSet:
		if !c.numeric {
			return encoder.AppendJSONString(dst, unsafeString(cell)), true
		}
	case kBit1:
		return strconv.AppendBool(dst, sqltypes.BitValue(cell) != 0), true
	case kBits:
		// Little-endian, padded to the column's bytes.
		var buf [8]byte
		if len(cell) > len(buf) || c.size > len(buf) {
			return dst, false
		}
		for i := range cell {
			buf[i] = cell[len(cell)-1-i]
		}
		dst = append(dst, '"')
		dst = base64.StdEncoding.AppendEncode(dst, buf[:max(len(cell), c.size)])
		return append(dst, '"'), true
	case kBinary:
		if len(cell) < c.size {
			return dst, false
		}
		// Bytes are written in base64, as the text of the base64 mode.
		mode := c.binary
		if mode == "bytes" {
			mode = "base64"
		}
		if b, ok := appendBinaryText(append(dst, '"'), mode, cell); ok {
			return append(b, '"'), true
		}
	default:
		// The other kinds are not written straight from their text: false, below.
	}
	return dst, false
}

// canonicalInt reports decimal integer text as strconv writes it ("0", "-12"), short enough
// to fit an int64 whatever its digits.
func canonicalInt(b []byte) bool {
	if len(b) > 0 && b[0] == '-' {
		b = b[1:]
		if len(b) > 0 && b[0] == '0' {
			return false
		}
	}
	if len(b) == 0 || len(b) > 18 || b[0] == '0' && len(b) > 1 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// appendJavaFromE appends, as Java prints the number (encoder.AppendJavaFloat), a number in
// Go's shortest 'E' form of at most maxDigits significant digits: "-4.115E+03" becomes
// "-4115.0", "1.2510357E+07" "1.2510357E7". Text in another form is refused.
func appendJavaFromE(dst, b []byte, maxDigits int) ([]byte, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	var digits [24]byte
	nd, x, ok := parseE(&digits, b, maxDigits)
	if !ok {
		return dst, false
	}
	if neg {
		dst = append(dst, '-')
	}
	if digits[0] == '0' {
		if nd != 1 || x != 0 {
			return dst, false
		}
		return append(dst, "0.0"...), true
	}
	return appendJavaDigits(dst, digits[:nd], x), true
}

// parseE reads an unsigned number in Go's shortest 'E' form of at most maxDigits
// significant digits, d[.ddd]E(+|-)dd[d], into its digits and exponent: the first digit is
// not 0 but for zero, the fraction has no trailing 0. Text in another form is refused.
func parseE(digits *[24]byte, b []byte, maxDigits int) (nd, x int, ok bool) {
	e := 0
	for e < len(b) && b[e] != 'E' {
		e++
	}
	if e == 0 || e > maxDigits+1 || e+4 > len(b) || e+5 < len(b) {
		return 0, 0, false
	}
	mant, exp := b[:e], b[e+1:]
	for i, c := range mant {
		switch {
		case i == 1 && c == '.' && len(mant) > 2 && mant[len(mant)-1] != '0':
		case c >= '0' && c <= '9' && (i == 0 || i > 1 && len(mant) > 2):
			digits[nd] = c
			nd++
		default:
			return 0, 0, false
		}
	}
	if exp[0] != '+' && exp[0] != '-' {
		return 0, 0, false
	}
	for _, c := range exp[1:] {
		if c < '0' || c > '9' {
			return 0, 0, false
		}
		x = x*10 + int(c-'0')
	}
	if exp[0] == '-' {
		x = -x
	}
	return nd, x, true
}

// appendJavaDigits appends the number of the significant digits ds (the first not 0) and
// decimal exponent x as Java prints it: plain from 1.0E-3 to below 1.0E7, with a fraction
// digit at least, and in E form, without a plus sign, outside.
func appendJavaDigits(dst, ds []byte, x int) []byte {
	nd := len(ds)
	switch {
	case x >= 0 && x <= 6:
		// Plain, at least one fraction digit.
		if nd <= x+1 {
			dst = append(dst, ds...)
			for i := nd; i <= x; i++ {
				dst = append(dst, '0')
			}
			return append(dst, ".0"...)
		}
		dst = append(dst, ds[:x+1]...)
		dst = append(dst, '.')
		return append(dst, ds[x+1:]...)
	case x < 0 && x >= -3:
		dst = append(dst, "0."...)
		for i := -1; i > x; i-- {
			dst = append(dst, '0')
		}
		return append(dst, ds...)
	}
	dst = append(dst, ds[0], '.')
	if nd == 1 {
		dst = append(dst, '0')
	} else {
		dst = append(dst, ds[1:]...)
	}
	dst = append(dst, 'E')
	if x < 0 {
		dst = append(dst, '-')
		x = -x
	}
	if x >= 100 {
		dst = append(dst, '0'+byte(x/100))
	}
	if x >= 10 {
		dst = append(dst, '0'+byte(x/10%10))
	}
	return append(dst, '0'+byte(x%10))
}
