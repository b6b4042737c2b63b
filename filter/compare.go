package filter

import (
	"bytes"
	"strconv"
	"unicode"
	"unicode/utf8"
	"unsafe"

	"github.com/vstream-cdc/vstream/sqltypes"
)

// valueKind is how cells of a column compare, following SQL for the column's type.
type valueKind int

const (
	kindDecimal  valueKind = iota // integers, DECIMAL, YEAR: exact numeric text
	kindFloat                     // FLOAT, DOUBLE
	kindDateTime                  // DATE, DATETIME, TIMESTAMP
	kindTime                      // TIME
	kindString                    // character columns, ENUM, SET: by collation
	kindBytes                     // binary strings: bytewise
	kindBit                       // BIT: as an unsigned number
)

// cmpDecimal compares two numbers written in decimal text ("-12.50", "7", "0.5").
func cmpDecimal(a, b []byte) int {
	negA, intA, fracA := splitDecimal(a)
	negB, intB, fracB := splitDecimal(b)
	zeroA := len(intA) == 0 && len(fracA) == 0
	zeroB := len(intB) == 0 && len(fracB) == 0
	if zeroA {
		negA = false
	}
	if zeroB {
		negB = false
	}
	if negA != negB {
		if negA {
			return -1
		}
		return 1
	}
	c := cmpMagnitude(intA, fracA, intB, fracB)
	if negA {
		return -c
	}
	return c
}

// splitDecimal returns the sign, the integer digits without leading zeros and the fraction
// digits without trailing zeros.
func splitDecimal(s []byte) (neg bool, intPart, frac []byte) {
	if len(s) > 0 && (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-'
		s = s[1:]
	}
	intPart = s
	if dot := bytes.IndexByte(s, '.'); dot >= 0 {
		intPart, frac = s[:dot], s[dot+1:]
	}
	for len(intPart) > 0 && intPart[0] == '0' {
		intPart = intPart[1:]
	}
	for len(frac) > 0 && frac[len(frac)-1] == '0' {
		frac = frac[:len(frac)-1]
	}
	return neg, intPart, frac
}

func cmpMagnitude(intA, fracA, intB, fracB []byte) int {
	if len(intA) != len(intB) {
		if len(intA) < len(intB) {
			return -1
		}
		return 1
	}
	if c := bytes.Compare(intA, intB); c != 0 {
		return c
	}
	n := max(len(fracA), len(fracB))
	for i := 0; i < n; i++ {
		da, db := byte('0'), byte('0')
		if i < len(fracA) {
			da = fracA[i]
		}
		if i < len(fracB) {
			db = fracB[i]
		}
		if da != db {
			if da < db {
				return -1
			}
			return 1
		}
	}
	return 0
}

// isDecimal reports plain decimal text: an optional sign, digits, an optional fraction.
func isDecimal(s string) bool {
	if len(s) > 0 && (s[0] == '-' || s[0] == '+') {
		s = s[1:]
	}
	digits, dot := 0, false
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] >= '0' && s[i] <= '9':
			digits++
		case s[i] == '.' && !dot:
			dot = true
		default:
			return false
		}
	}
	return digits > 0
}

// bytesString views b as a string without copying; the string must not outlive b.
func bytesString(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}

func parseFloat(b []byte) (float64, bool) {
	f, err := strconv.ParseFloat(bytesString(b), 64)
	return f, err == nil
}

// parseDateTime reads a DATE, DATETIME or TIMESTAMP cell or literal (sqltypes.ParseDateTime)
// into a key that orders like the value; zero dates are valid.
func parseDateTime(b []byte) (int64, bool) {
	d, err := sqltypes.ParseDateTime(b)
	if err != nil {
		return 0, false
	}
	days := (int64(d.Year)*13+int64(d.Month))*32 + int64(d.Day)
	secs := int64(d.Hour)*3600 + int64(d.Minute)*60 + int64(d.Second)
	return (days*86400+secs)*1_000_000 + int64(d.Micro), true
}

// parseTime reads a TIME cell or literal (sqltypes.ParseTime) into signed microseconds.
func parseTime(b []byte) (int64, bool) {
	us, _, err := sqltypes.ParseTime(b)
	return us, err == nil
}

// cmpString compares character strings: case-insensitively for _ci collations, and with
// trailing spaces ignored (PAD SPACE) for every non-binary collation.
func cmpString(a, b []byte, ci bool) int {
	a = bytes.TrimRight(a, " ")
	b = bytes.TrimRight(b, " ")
	if !ci {
		return bytes.Compare(a, b)
	}
	for len(a) > 0 && len(b) > 0 {
		ra, na := utf8.DecodeRune(a)
		rb, nb := utf8.DecodeRune(b)
		if ra != rb {
			la, lb := unicode.ToLower(ra), unicode.ToLower(rb)
			if la != lb {
				if la < lb {
					return -1
				}
				return 1
			}
		}
		a, b = a[na:], b[nb:]
	}
	switch {
	case len(a) == len(b):
		return 0
	case len(a) == 0:
		return -1
	}
	return 1
}

// bitValue reads a BIT cell (big-endian bytes) as a number.
func bitValue(b []byte) uint64 {
	var v uint64
	for _, c := range b {
		v = v<<8 | uint64(c)
	}
	return v
}
