package debezium

import "github.com/vstream-cdc/vstream/sqltypes"

// decimalDigits reads DECIMAL text, "[-][int][.frac]", into its sign and the digits of its
// unscaled value at scale (the fraction padded with zeros or cut to scale), appended to buf.
func decimalDigits(buf, cell []byte, scale int) (neg bool, digits []byte, ok bool) {
	if len(cell) > 0 && (cell[0] == '-' || cell[0] == '+') {
		neg = cell[0] == '-'
		cell = cell[1:]
	}
	seen := false
	i := 0
	for ; i < len(cell) && cell[i] != '.'; i++ {
		if cell[i] < '0' || cell[i] > '9' {
			return false, nil, false
		}
		buf = append(buf, cell[i])
		seen = true
	}
	frac := 0
	if i < len(cell) {
		for _, c := range cell[i+1:] {
			if c < '0' || c > '9' {
				return false, nil, false
			}
			seen = true
			if frac < scale {
				buf = append(buf, c)
				frac++
			}
		}
	}
	for ; frac < scale; frac++ {
		buf = append(buf, '0')
	}
	if !seen {
		return false, nil, false
	}
	return neg, buf, true
}

// appendUnscaled appends the decimal integer given by its sign and ASCII digits as Java's
// BigInteger.toByteArray does: minimal big-endian two's complement, at least one byte.
func appendUnscaled(dst []byte, neg bool, digits []byte) []byte {
	if len(digits) <= 18 {
		// Fits an int64: most DECIMAL columns.
		var u int64
		for _, c := range digits {
			u = u*10 + int64(c-'0')
		}
		if neg {
			u = -u
		}
		// The fewest bytes whose sign bit is the value's sign.
		n := 1
		for n < 8 && (u>>(8*n-1) != 0 && u>>(8*n-1) != -1) {
			n++
		}
		for i := n - 1; i >= 0; i-- {
			dst = append(dst, byte(u>>(8*i)))
		}
		return dst
	}
	// 8 little-endian 32-bit limbs hold 256 bits, more than DECIMAL's 65 digits need.
	var limbs [8]uint32
	for _, c := range digits {
		carry := uint64(c - '0')
		for j := range limbs {
			v := uint64(limbs[j])*10 + carry
			limbs[j] = uint32(v)
			carry = v >> 32
		}
	}
	var b [32]byte
	zero := true
	for j, l := range limbs {
		o := 32 - 4*(j+1)
		b[o], b[o+1], b[o+2], b[o+3] = byte(l>>24), byte(l>>16), byte(l>>8), byte(l)
		if l != 0 {
			zero = false
		}
	}
	if neg && !zero {
		carry := 1
		for i := len(b) - 1; i >= 0; i-- {
			v := int(^b[i]) + carry
			b[i] = byte(v)
			carry = v >> 8
		}
	}
	s := b[:]
	if neg && !zero {
		for len(s) > 1 && s[0] == 0xff && s[1]&0x80 != 0 {
			s = s[1:]
		}
	} else {
		for len(s) > 1 && s[0] == 0 && s[1]&0x80 == 0 {
			s = s[1:]
		}
	}
	return append(dst, s...)
}

// appendPlainDecimal appends the decimal text of an unscaled value at scale: a leading 0 before
// the point, exactly scale fraction digits, no sign for zero.
func appendPlainDecimal(dst []byte, neg bool, digits []byte, scale int) []byte {
	for len(digits) > scale+1 && digits[0] == '0' {
		digits = digits[1:]
	}
	allZero := true
	for _, c := range digits {
		if c != '0' {
			allZero = false
			break
		}
	}
	if neg && !allZero {
		dst = append(dst, '-')
	}
	intPart := digits[:len(digits)-scale]
	if len(intPart) == 0 {
		dst = append(dst, '0')
	}
	dst = append(dst, intPart...)
	if scale > 0 {
		dst = append(dst, '.')
		dst = append(dst, digits[len(digits)-scale:]...)
	}
	return dst
}

// appendZoned appends a UTC date-time as ISO-8601 with 'Z' and exactly fsp fraction digits
// (io.debezium.time.ZonedTimestamp).
func appendZoned(dst []byte, d sqltypes.DateTime, fsp int) []byte {
	if uint(d.Year) > 9999 || uint(max(d.Month, d.Day, d.Hour, d.Minute, d.Second)) > 99 || uint(d.Micro) > 999999 {
		return appendZonedParts(dst, d, fsp)
	}
	// Parts of a parsed cell have fixed widths: written digit by digit.
	var b [32]byte
	b[0], b[1], b[2], b[3] = '0'+byte(d.Year/1000), '0'+byte(d.Year/100%10), '0'+byte(d.Year/10%10), '0'+byte(d.Year%10)
	b[4], b[7], b[10], b[13], b[16] = '-', '-', 'T', ':', ':'
	put2(b[5:], d.Month)
	put2(b[8:], d.Day)
	put2(b[11:], d.Hour)
	put2(b[14:], d.Minute)
	put2(b[17:], d.Second)
	n := 19
	if fsp > 0 {
		b[n] = '.'
		n++
		frac := d.Micro
		for i := 5; i >= 0; i-- {
			b[n+i] = '0' + byte(frac%10)
			frac /= 10
		}
		n += min(fsp, 6)
	}
	b[n] = 'Z'
	return append(dst, b[:n+1]...)
}

func put2(b []byte, n int) { b[0], b[1] = '0'+byte(n/10), '0'+byte(n%10) }

// appendZonedParts is appendZoned for parts of any size.
func appendZonedParts(dst []byte, d sqltypes.DateTime, fsp int) []byte {
	dst = appendPadded(dst, d.Year, 4)
	dst = append(dst, '-')
	dst = appendPadded(dst, d.Month, 2)
	dst = append(dst, '-')
	dst = appendPadded(dst, d.Day, 2)
	dst = append(dst, 'T')
	dst = appendPadded(dst, d.Hour, 2)
	dst = append(dst, ':')
	dst = appendPadded(dst, d.Minute, 2)
	dst = append(dst, ':')
	dst = appendPadded(dst, d.Second, 2)
	if fsp > 0 {
		frac := d.Micro
		for i := fsp; i < 6; i++ {
			frac /= 10
		}
		dst = append(dst, '.')
		dst = appendPadded(dst, frac, min(fsp, 6))
	}
	return append(dst, 'Z')
}

func appendPadded(dst []byte, n, width int) []byte {
	var buf [8]byte
	i := len(buf)
	for n > 0 || i > len(buf)-width {
		i--
		buf[i] = byte('0' + n%10)
		n /= 10
	}
	return append(dst, buf[i:]...)
}

// appendCompactJSON appends JSON text without the whitespace between its tokens.
func appendCompactJSON(dst, src []byte) []byte {
	inString, escaped := false, false
	for _, c := range src {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			continue
		}
		dst = append(dst, c)
	}
	return dst
}
