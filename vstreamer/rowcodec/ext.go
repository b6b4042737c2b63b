package rowcodec

import (
	"encoding/hex"
	"net/netip"
	"strconv"
)

// Ext names the MariaDB data types that the binlog carries as fixed-length binary strings
// (a TABLE_MAP says BINARY(16) or BINARY(4)) while SELECT returns them as text. Rows carry the
// text in both the copy and the binlog phase, so a value reads the same whichever phase
// delivered it.
type Ext uint8

const (
	ExtNone Ext = iota
	// ExtUUID is MariaDB's UUID: 16 bytes in the binlog, 8-4-4-4-12 lowercase hex as text.
	ExtUUID
	// ExtINET4 is MariaDB's INET4: 4 bytes, dotted decimal.
	ExtINET4
	// ExtINET6 is MariaDB's INET6: 16 bytes, the shortest IPv6 text MariaDB prints.
	ExtINET6
)

// ExtOf is the Ext of an information_schema DATA_TYPE, ExtNone for other types.
func ExtOf(dataType string) Ext {
	switch dataType {
	case "uuid":
		return ExtUUID
	case "inet4":
		return ExtINET4
	case "inet6":
		return ExtINET6
	}
	return ExtNone
}

// Size is the byte length of the type's binary form.
func (e Ext) Size() int {
	if e == ExtINET4 {
		return 4
	}
	return 16
}

const hexDigits = "0123456789abcdef"

// appendExt appends the text form of the binary value raw. The binlog drops trailing zero
// bytes of a fixed-length binary string, so raw may be shorter than the type's size.
func appendExt[T string | []byte](dst []byte, e Ext, raw T) []byte {
	var b [16]byte
	copy(b[:], raw)
	switch e {
	case ExtUUID:
		for i := 0; i < 16; i++ {
			if i == 4 || i == 6 || i == 8 || i == 10 {
				dst = append(dst, '-')
			}
			dst = append(dst, hexDigits[b[i]>>4], hexDigits[b[i]&0xf])
		}
		return dst
	case ExtINET4:
		return appendIPv4(dst, b[:4])
	default:
		// INET6 (callers pass only extension types).
		return appendIPv6(dst, &b)
	}
}

func appendIPv4(dst, b []byte) []byte {
	for i := 0; i < 4; i++ {
		if i > 0 {
			dst = append(dst, '.')
		}
		dst = strconv.AppendUint(dst, uint64(b[i]), 10)
	}
	return dst
}

// appendIPv6 prints an address as MariaDB's INET6 does: lowercase hex groups without leading
// zeros, the longest run of zero groups (the first of equal runs, even a single group) as
// "::", and the last 32 bits dotted when the address is IPv4-compatible or IPv4-mapped.
func appendIPv6(dst []byte, b *[16]byte) []byte {
	var w [8]uint16
	for i := range w {
		w[i] = uint16(b[2*i])<<8 | uint16(b[2*i+1])
	}
	best, bestLen := -1, 0
	for i := 0; i < 8; {
		if w[i] != 0 {
			i++
			continue
		}
		j := i
		for j < 8 && w[j] == 0 {
			j++
		}
		if j-i > bestLen {
			best, bestLen = i, j-i
		}
		i = j
	}
	embedded := best == 0 && (bestLen == 6 || bestLen == 5 && w[5] == 0xffff)
	for i := 0; i < 8; i++ {
		if i == best {
			dst = append(dst, ':')
			if i+bestLen == 8 {
				dst = append(dst, ':')
			}
			i += bestLen - 1
			continue
		}
		if i > 0 {
			dst = append(dst, ':')
		}
		if embedded && i == 6 {
			return appendIPv4(dst, b[12:16])
		}
		dst = strconv.AppendUint(dst, uint64(w[i]), 16)
	}
	return dst
}

// CompareExt orders two values of an Ext type, given as their text, as the server orders
// them (so a copy's key ranges and a binlog row's key agree): INET4 and INET6 by their bytes,
// UUID by MariaDB's index-friendly form, where a time-based (version 1 to 5, RFC 4122
// variant) UUID's groups are compared last group first. Text that does not parse orders by
// its bytes after every value that does.
func CompareExt(e Ext, a, b []byte) int {
	ka, okA := extKey(e, a)
	kb, okB := extKey(e, b)
	switch {
	case okA && okB:
		return bytesCompare(ka[:e.Size()], kb[:e.Size()])
	case okA:
		return -1
	case okB:
		return 1
	}
	return bytesCompare(a, b)
}

func bytesCompare(a, b []byte) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			if a[i] < b[i] {
				return -1
			}
			return 1
		}
	}
	return len(a) - len(b)
}

// extKey is the byte form the server compares a value of e by.
func extKey(e Ext, text []byte) (k [16]byte, ok bool) {
	switch e {
	case ExtUUID:
		var digits [32]byte
		n := 0
		for _, c := range text {
			if c == '-' {
				continue
			}
			if n == len(digits) {
				return k, false
			}
			digits[n] = c
			n++
		}
		var raw [16]byte
		if n != len(digits) {
			return k, false
		}
		if _, err := hex.Decode(raw[:], digits[:]); err != nil {
			return k, false
		}
		if v := raw[6] >> 4; v >= 1 && v <= 5 && raw[8]&0x80 != 0 {
			// node, clock_seq, time_hi_and_version, time_mid, time_low
			copy(k[0:6], raw[10:16])
			copy(k[6:8], raw[8:10])
			copy(k[8:10], raw[6:8])
			copy(k[10:12], raw[4:6])
			copy(k[12:16], raw[0:4])
			return k, true
		}
		return raw, true
	case ExtINET4:
		a, err := netip.ParseAddr(string(text))
		if err != nil || !a.Is4() {
			return k, false
		}
		b := a.As4()
		copy(k[:], b[:])
		return k, true
	case ExtINET6:
		a, err := netip.ParseAddr(string(text))
		if err != nil {
			return k, false
		}
		return a.As16(), true
	default:
		// Not an extension type: no byte form.
		return k, false
	}
}
