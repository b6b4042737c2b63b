package sqltypes

import (
	"unicode/utf8"

	"golang.org/x/text/encoding/charmap"
)

// Two texts go by the name Latin-1, and the formats need both:
//   - ISO-8859-1, byte b as U+00bb: how the canal family and StreamSets print the bytes of a
//     binary column, so that a consumer gets them back with an ISO-8859-1 encoder;
//   - MySQL's latin1 character set, which is Windows-1252: how a latin1 column's text reads.

// AppendISOLatin1 appends bytes as ISO-8859-1 text in UTF-8: byte b becomes U+00bb.
func AppendISOLatin1(dst, b []byte) []byte {
	for _, c := range b {
		if c < utf8.RuneSelf {
			dst = append(dst, c)
		} else {
			dst = append(dst, 0xc0|c>>6, 0x80|c&0x3f)
		}
	}
	return dst
}

// latin1Runes maps each byte of MySQL's latin1 (Windows-1252) to its rune; the five bytes
// Windows-1252 leaves unassigned become U+FFFD, as Java's Cp1252 decoder makes them.
var latin1Runes = func() (t [256]rune) {
	for i := range t {
		t[i] = charmap.Windows1252.DecodeByte(byte(i))
	}
	return t
}()

// Latin1Rune is the rune of a byte of MySQL's latin1 character set (Windows-1252).
func Latin1Rune(c byte) rune { return latin1Runes[c] }

// AppendLatin1 appends text in MySQL's latin1 character set (Windows-1252) as UTF-8.
func AppendLatin1(dst, b []byte) []byte {
	for _, c := range b {
		if c < utf8.RuneSelf {
			dst = append(dst, c)
		} else {
			dst = utf8.AppendRune(dst, latin1Runes[c])
		}
	}
	return dst
}
