package sqltypes

import "bytes"

// CompareDecimal orders two numbers written in decimal text ("-12.50", "7", "0.5", "+3.")
// by value, as the server orders DECIMAL and integer values: "1.50" equals "1.5", "-0" equals
// "0". It does not allocate.
func CompareDecimal(a, b []byte) int {
	negA, intA, fracA := splitDecimal(a)
	negB, intB, fracB := splitDecimal(b)
	if len(intA) == 0 && len(fracA) == 0 {
		negA = false
	}
	if len(intB) == 0 && len(fracB) == 0 {
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
	for i := range n {
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

// IsDecimal reports plain decimal text: an optional sign, digits, an optional fraction.
func IsDecimal(s string) bool {
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

// BitValue reads a BIT cell (its bytes, big-endian) as the unsigned number the server
// compares; a cell is at most 8 bytes (BIT(64)).
func BitValue(b []byte) uint64 {
	var v uint64
	for _, c := range b {
		v = v<<8 | uint64(c)
	}
	return v
}

// DateTimeKey reads a DATE, DATETIME or TIMESTAMP cell or literal (ParseDateTime) into a
// number that orders as the server orders the values; a DATE is its midnight, as the server
// compares a DATE with a DATETIME. Zero dates are valid and order first.
func DateTimeKey(b []byte) (int64, bool) {
	d, err := ParseDateTime(b)
	if err != nil {
		return 0, false
	}
	days := (int64(d.Year)*13+int64(d.Month))*32 + int64(d.Day)
	secs := int64(d.Hour)*3600 + int64(d.Minute)*60 + int64(d.Second)
	return (days*86400+secs)*1_000_000 + int64(d.Micro), true
}

// TimeKey reads a TIME cell or literal (ParseTime) into signed microseconds.
func TimeKey(b []byte) (int64, bool) {
	us, _, err := ParseTime(b)
	return us, err == nil
}

// ParseUint reads unsigned decimal text without allocating (strconv takes a string), leading
// zeros allowed (ZEROFILL columns).
func ParseUint(b []byte) (uint64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if n > (1<<64-1-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

// ParseInt reads signed decimal text (an optional + or -) without allocating.
func ParseInt(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg || len(b) > 0 && b[0] == '+' {
		b = b[1:]
	}
	u, ok := ParseUint(b)
	switch {
	case !ok:
		return 0, false
	case neg && u <= 1<<63:
		return -int64(u-1) - 1, true
	case !neg && u < 1<<63:
		return int64(u), true
	}
	return 0, false
}
