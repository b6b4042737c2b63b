package sqltypes

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/dolthub/go-mysql-server/sql/encodings"
)

// ErrCollation is the error of a collation this package cannot compare exactly as the server
// does: its callers refuse to compare under it rather than compare approximately.
var ErrCollation = errors.New("collation not compared as the server compares it")

// A Collation orders the strings of one MySQL or MariaDB collation exactly as the server does
// (STRCMP, =, <, ORDER BY): byte by byte for binary, by the collation's weight of each
// character otherwise, with trailing spaces ignored under PAD SPACE. A Collation is
// immutable and safe for concurrent use.
type Collation struct {
	ID      uint32
	Name    string
	Charset string
	// Pad is PAD SPACE: a shorter string compares as if padded with spaces. MariaDB's
	// _nopad_ collations and MySQL's utf8mb4_0900_bin compare it as shorter.
	Pad  bool
	form form
	// w8 weighs each byte of a single-byte character set.
	w8 *[256]uint32
	// bmp weighs each character of Unicode's basic plane; rune weighs the others.
	bmp  []uint64
	rune func(rune) int32
	// mb3 refuses 4-byte characters (utf8mb3), as the server decodes them: as bad bytes.
	mb3 bool
}

type form uint8

const (
	formBinary form = iota // bytes, no padding
	form8bit               // one byte a character, a weight each
	formUTF8               // utf8mb3 or utf8mb4, a weight a character
)

// weightIllegal weighs a byte that starts no character: above every character, in byte
// order, as MariaDB's strcoll.inl (WEIGHT_ILSEQ) weighs it.
const weightIllegal = 1 << 40

// weightShift makes room between the library's weights of two neighbouring code points for
// the surrogates (U+D800 to U+DFFF), which MariaDB, unlike MySQL, stores in utf8 and weighs
// by code point between U+D7FF and U+E000; the library, made from MySQL, does not weigh them.
const weightShift = 12

// collationDef is one supported collation: the library function that weighs its characters.
type collationDef struct {
	name    string
	charset string
	pad     bool
	weight  func(rune) int32
}

// supported lists the collations compared exactly; each is checked against MariaDB in the
// engine's tests. Single-byte collations whose order needs more than a weight a character
// (latin1_german2_ci's ä = ae) and the UCA collations (unicode_ci, uca1400, 0900) are not
// here: they are refused.
var supported = map[uint32]collationDef{
	63: {"binary", "binary", false, nil},

	11:   {"ascii_general_ci", "ascii", true, encodings.Ascii_general_ci_RuneWeight},
	65:   {"ascii_bin", "ascii", true, encodings.Ascii_bin_RuneWeight},
	1035: {"ascii_general_nopad_ci", "ascii", false, encodings.Ascii_general_ci_RuneWeight},
	1089: {"ascii_nopad_bin", "ascii", false, encodings.Ascii_bin_RuneWeight},

	5:    {"latin1_german1_ci", "latin1", true, encodings.Latin1_german1_ci_RuneWeight},
	8:    {"latin1_swedish_ci", "latin1", true, encodings.Latin1_swedish_ci_RuneWeight},
	15:   {"latin1_danish_ci", "latin1", true, encodings.Latin1_danish_ci_RuneWeight},
	47:   {"latin1_bin", "latin1", true, encodings.Latin1_bin_RuneWeight},
	48:   {"latin1_general_ci", "latin1", true, encodings.Latin1_general_ci_RuneWeight},
	49:   {"latin1_general_cs", "latin1", true, encodings.Latin1_general_cs_RuneWeight},
	94:   {"latin1_spanish_ci", "latin1", true, encodings.Latin1_spanish_ci_RuneWeight},
	1032: {"latin1_swedish_nopad_ci", "latin1", false, encodings.Latin1_swedish_ci_RuneWeight},
	1071: {"latin1_nopad_bin", "latin1", false, encodings.Latin1_bin_RuneWeight},

	33:   {"utf8mb3_general_ci", "utf8mb3", true, encodings.Utf8mb3_general_ci_RuneWeight},
	83:   {"utf8mb3_bin", "utf8mb3", true, encodings.Utf8mb3_bin_RuneWeight},
	223:  {"utf8mb3_general_mysql500_ci", "utf8mb3", true, encodings.Utf8mb3_general_mysql500_ci_RuneWeight},
	1057: {"utf8mb3_general_nopad_ci", "utf8mb3", false, encodings.Utf8mb3_general_ci_RuneWeight},
	1107: {"utf8mb3_nopad_bin", "utf8mb3", false, encodings.Utf8mb3_bin_RuneWeight},

	45:   {"utf8mb4_general_ci", "utf8mb4", true, encodings.Utf8mb4_general_ci_RuneWeight},
	46:   {"utf8mb4_bin", "utf8mb4", true, encodings.Utf8mb4_bin_RuneWeight},
	1069: {"utf8mb4_general_nopad_ci", "utf8mb4", false, encodings.Utf8mb4_general_ci_RuneWeight},
	1070: {"utf8mb4_nopad_bin", "utf8mb4", false, encodings.Utf8mb4_bin_RuneWeight},
	// MySQL 8.0's: code point order, NO PAD.
	309: {"utf8mb4_0900_bin", "utf8mb4", false, encodings.Utf8mb4_bin_RuneWeight},
}

// refusedNames names the refused collations met most often, for the message that refuses
// them; the others are named by id and character set.
var refusedNames = map[uint32]string{
	31: "latin1_german2_ci", 192: "utf8mb3_unicode_ci", 224: "utf8mb4_unicode_ci",
	214: "utf8mb3_unicode_520_ci", 246: "utf8mb4_unicode_520_ci", 255: "utf8mb4_0900_ai_ci",
	2048: "utf8mb3_uca1400_ai_ci", 2304: "utf8mb4_uca1400_ai_ci",
}

var (
	collationsMu sync.Mutex
	// collations holds the collations built so far, read without a lock per cell.
	collations [MaxCollation]atomic.Pointer[Collation]
)

// CollationName names a collation id: its name where this package knows it, else its id and
// character set.
func CollationName(id uint32) string {
	if d, ok := supported[id]; ok {
		return d.name
	}
	if n, ok := refusedNames[id]; ok {
		return n
	}
	if cs := CharsetOf(id); cs != "" {
		return fmt.Sprintf("collation %d (%s)", id, cs)
	}
	return fmt.Sprintf("collation %d", id)
}

// CollationOf returns the collation of an id, or an error wrapping ErrCollation that names it
// when it is not one this package compares exactly. The first call for an id builds its
// weight tables (512 KiB for a utf8 collation); later calls share them.
func CollationOf(id uint32) (*Collation, error) {
	if c, ok := LookupCollation(id); ok {
		return c, nil
	}
	return nil, fmt.Errorf("%w: %s (supported: binary, ascii and latin1 collations but latin1_german2_ci, utf8mb3 and utf8mb4 _general_ci, _bin and their _nopad_ forms, utf8mb3_general_mysql500_ci)", ErrCollation, CollationName(id))
}

// LookupCollation is CollationOf without the error, for a caller that compares per cell: it
// does not allocate once the collation is built.
func LookupCollation(id uint32) (*Collation, bool) {
	if id >= MaxCollation {
		return nil, false
	}
	if c := collations[id].Load(); c != nil {
		return c, true
	}
	d, ok := supported[id]
	if !ok {
		return nil, false
	}
	collationsMu.Lock()
	defer collationsMu.Unlock()
	if c := collations[id].Load(); c != nil {
		return c, true
	}
	c := &Collation{ID: id, Name: d.name, Charset: d.charset, Pad: d.pad}
	switch d.charset {
	case "binary":
		c.form = formBinary
	case "ascii", "latin1":
		c.form = form8bit
		c.w8 = new([256]uint32)
		for b := range 256 {
			r, ok := byteRune(d.charset, byte(b))
			w := d.weight(r)
			if !ok || w < 0 || w == 1<<31-1 {
				// Not a character of the set: no column holds it; keep byte order.
				c.w8[b] = 1<<31 + uint32(b)
				continue
			}
			c.w8[b] = uint32(w)
		}
	default:
		c.form = formUTF8
		c.mb3 = d.charset == "utf8mb3"
		c.rune = d.weight
		c.bmp = make([]uint64, 0x10000)
		for r := range rune(0x10000) {
			c.bmp[r] = c.weigh(r)
		}
	}
	collations[id].Store(c)
	return c, true
}

// byteRune is the character of a byte of a single-byte character set; latin1 is MySQL's, that
// is Windows-1252 with its five unassigned bytes as the C1 controls of the same value.
func byteRune(charset string, b byte) (rune, bool) {
	if charset == "ascii" {
		return rune(b), b < utf8.RuneSelf
	}
	if r := Latin1Rune(b); r != utf8.RuneError {
		return r, true
	}
	return rune(b), true
}

func (c *Collation) weigh(r rune) uint64 {
	if r >= 0xd800 && r <= 0xdfff {
		return c.weigh(0xd7ff) + uint64(r-0xd7ff)
	}
	w := c.rune(r)
	if w < 0 || w == 1<<31-1 {
		// A code point the library does not weigh: after every character.
		return weightIllegal - 1
	}
	return uint64(w) << weightShift
}

// Compare orders a and b as the server orders them under the collation: -1, 0 or +1. It does
// not allocate.
func (c *Collation) Compare(a, b []byte) int {
	switch c.form {
	case formBinary:
		return bytes.Compare(a, b)
	case form8bit:
		return c.compare8bit(a, b)
	case formUTF8:
		return c.compareUTF8(a, b)
	}
	return bytes.Compare(a, b)
}

func (c *Collation) compare8bit(a, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		if wa, wb := c.w8[a[i]], c.w8[b[i]]; wa != wb {
			return cmp.Compare(wa, wb)
		}
	}
	rest, sign := a[n:], 1
	if len(b) > n {
		rest, sign = b[n:], -1
	}
	if len(rest) == 0 {
		return 0
	}
	if !c.Pad {
		return sign
	}
	space := c.w8[' ']
	for _, x := range rest {
		if w := c.w8[x]; w != space {
			return sign * cmp.Compare(w, space)
		}
	}
	return 0
}

func (c *Collation) compareUTF8(a, b []byte) int {
	for len(a) > 0 && len(b) > 0 {
		if x, y := a[0], b[0]; x|y < utf8.RuneSelf {
			// Two ASCII characters, most text: equal bytes weigh the same.
			if x != y {
				if wa, wb := c.bmp[x], c.bmp[y]; wa != wb {
					return cmp.Compare(wa, wb)
				}
			}
			a, b = a[1:], b[1:]
			continue
		}
		wa, na := c.next(a)
		wb, nb := c.next(b)
		if wa != wb {
			return cmp.Compare(wa, wb)
		}
		a, b = a[na:], b[nb:]
	}
	rest, sign := a, 1
	if len(b) > 0 {
		rest, sign = b, -1
	}
	if len(rest) == 0 {
		return 0
	}
	if !c.Pad {
		return sign
	}
	// MariaDB compares the longer string's tail with spaces byte by byte
	// (my_strnncollsp_padspace_bin): a tab sorts before the padding, any letter after.
	for _, x := range rest {
		if x != ' ' {
			if x < ' ' {
				return -sign
			}
			return sign
		}
	}
	return 0
}

// next weighs the first character of s and returns its length in bytes. It decodes UTF-8 as
// MariaDB does: no overlong forms, surrogates allowed, a bad byte weighed alone.
func (c *Collation) next(s []byte) (uint64, int) {
	b0 := s[0]
	if b0 < utf8.RuneSelf {
		return c.bmp[b0], 1
	}
	bad := weightIllegal + uint64(b0)
	switch {
	case b0 < 0xc2:
		return bad, 1
	case b0 < 0xe0:
		if len(s) < 2 || !cont(s[1]) {
			return bad, 1
		}
		return c.bmp[rune(b0&0x1f)<<6|rune(s[1]&0x3f)], 2
	case b0 < 0xf0:
		if len(s) < 3 || !cont(s[1]) || !cont(s[2]) || b0 == 0xe0 && s[1] < 0xa0 {
			return bad, 1
		}
		return c.bmp[rune(b0&0x0f)<<12|rune(s[1]&0x3f)<<6|rune(s[2]&0x3f)], 3
	case b0 < 0xf5 && !c.mb3:
		if len(s) < 4 || !cont(s[1]) || !cont(s[2]) || !cont(s[3]) ||
			b0 == 0xf0 && s[1] < 0x90 || b0 == 0xf4 && s[1] > 0x8f {
			return bad, 1
		}
		r := rune(b0&0x07)<<18 | rune(s[1]&0x3f)<<12 | rune(s[2]&0x3f)<<6 | rune(s[3]&0x3f)
		return c.weigh(r), 4
	}
	return bad, 1
}

func cont(b byte) bool { return b&0xc0 == 0x80 }

// FromUTF8 returns text written in UTF-8 (a filter's literal) in the collation's character
// set, as the server converts a literal to a column's character set before it compares; a
// character the set does not have is an error.
func (c *Collation) FromUTF8(s string) ([]byte, error) {
	switch c.Charset {
	case "binary", "utf8mb4":
		if c.Charset == "utf8mb4" && !utf8.ValidString(s) {
			return nil, fmt.Errorf("%q is not valid UTF-8", s)
		}
		return []byte(s), nil
	case "utf8mb3":
		for i, r := range s {
			if r == utf8.RuneError && !utf8.ValidString(s[i:]) {
				return nil, fmt.Errorf("%q is not valid UTF-8", s)
			}
			if r > 0xffff {
				return nil, fmt.Errorf("%q has %q, which utf8mb3 cannot hold", s, r)
			}
		}
		return []byte(s), nil
	}
	out := make([]byte, 0, len(s))
	for i, r := range s {
		if r == utf8.RuneError && !utf8.ValidString(s[i:]) {
			return nil, fmt.Errorf("%q is not valid UTF-8", s)
		}
		b, ok := runeByte(c.Charset, r)
		if !ok {
			return nil, fmt.Errorf("%q has %q, which %s cannot hold", s, r, c.Charset)
		}
		out = append(out, b)
	}
	return out, nil
}

func runeByte(charset string, r rune) (byte, bool) {
	if r < utf8.RuneSelf {
		return byte(r), true
	}
	for b := 0x80; b < 0x100; b++ {
		if br, ok := byteRune(charset, byte(b)); ok && br == r {
			return byte(b), true
		}
	}
	return 0, false
}

// Collations lists the ids of the collations CollationOf compares, in order.
func Collations() []uint32 {
	ids := make([]uint32, 0, len(supported))
	for id := range supported {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}
