package sqltypes

import (
	"slices"
	"unicode/utf8"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/encoding/korean"
	"golang.org/x/text/encoding/simplifiedchinese"
	"golang.org/x/text/encoding/traditionalchinese"
	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/encoding/unicode/utf32"
	"golang.org/x/text/transform"

	"github.com/vstream-cdc/vstream/gen/query"
)

// Charset converts the bytes of a text column, as the binlog holds them in the column's
// character set, to UTF-8: the formats are JSON or protobuf strings, which the consumers'
// decoders (Java's among them) read as Unicode text. The nil *Charset is a character set
// whose bytes are UTF-8 already, or one this package cannot convert; its bytes pass through.
type Charset struct {
	name string
	// single maps each byte of a single-byte character set to its rune; enc decodes the
	// others. ascii says the character set writes ASCII as ASCII.
	single *[256]rune
	enc    encoding.Encoding
	ascii  bool
}

// Name is the character set's MySQL name.
func (c *Charset) Name() string {
	if c == nil {
		return "utf8mb4"
	}
	return c.name
}

// Append appends text in the character set to dst as UTF-8. Bytes that are not valid in the
// character set become U+FFFD, as Java's decoders make them.
func (c *Charset) Append(dst, text []byte) []byte {
	switch {
	case c == nil:
		return append(dst, text...)
	case c.single != nil:
		for _, b := range text {
			if b < utf8.RuneSelf {
				dst = append(dst, b)
			} else {
				dst = utf8.AppendRune(dst, c.single[b])
			}
		}
		return dst
	case c.ascii && isASCII(text):
		return append(dst, text...)
	}
	d := c.enc.NewDecoder()
	for {
		if room := cap(dst) - len(dst); room < 2*len(text)+utf8.UTFMax {
			dst = append(dst[:cap(dst)], make([]byte, 2*len(text)+utf8.UTFMax)...)[:len(dst)]
		}
		n, read, err := d.Transform(dst[len(dst):cap(dst)], text, true)
		dst, text = dst[:len(dst)+n], text[read:]
		if err != transform.ErrShortDst {
			return dst
		}
	}
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// charsets are the character sets that need converting, by MySQL name. utf8mb3, utf8mb4,
// ascii and binary need none; dec8, hp8, swe7, keybcs2, macce, armscii8 and geostd8 have no
// converter in golang.org/x/text and pass through.
var charsets = func() map[string]*Charset {
	m := map[string]*Charset{}
	single := func(name string, cm *charmap.Charmap) {
		t := new([256]rune)
		for i := range t {
			t[i] = cm.DecodeByte(byte(i))
		}
		m[name] = &Charset{name: name, single: t, ascii: true}
	}
	// MySQL's latin1 is Windows-1252 (latin1Runes). Its five unassigned bytes
	// become U+FFFD, as the Java decoder (Connector/J's Cp1252) that canal and Debezium read
	// them with makes them.
	latin1 := new([256]rune)
	for i := range latin1 {
		latin1[i] = latin1Runes[i]
	}
	m["latin1"] = &Charset{name: "latin1", single: latin1, ascii: true}
	single("latin2", charmap.ISO8859_2)
	single("latin5", charmap.ISO8859_9)
	single("latin7", charmap.ISO8859_13)
	single("greek", charmap.ISO8859_7)
	single("hebrew", charmap.ISO8859_8)
	single("cp1250", charmap.Windows1250)
	single("cp1251", charmap.Windows1251)
	single("cp1256", charmap.Windows1256)
	single("cp1257", charmap.Windows1257)
	single("cp850", charmap.CodePage850)
	single("cp852", charmap.CodePage852)
	single("cp866", charmap.CodePage866)
	single("koi8r", charmap.KOI8R)
	single("koi8u", charmap.KOI8U)
	single("macroman", charmap.Macintosh)
	single("tis620", charmap.Windows874)
	multi := func(name string, e encoding.Encoding, ascii bool) {
		m[name] = &Charset{name: name, enc: e, ascii: ascii}
	}
	multi("gbk", simplifiedchinese.GBK, true)
	multi("gb2312", simplifiedchinese.GBK, true) // GBK is a superset of EUC-CN
	multi("gb18030", simplifiedchinese.GB18030, true)
	multi("big5", traditionalchinese.Big5, true)
	multi("sjis", japanese.ShiftJIS, true)
	multi("cp932", japanese.ShiftJIS, true)
	multi("ujis", japanese.EUCJP, true)
	multi("eucjpms", japanese.EUCJP, true)
	multi("euckr", korean.EUCKR, true)
	multi("ucs2", unicode.UTF16(unicode.BigEndian, unicode.IgnoreBOM), false)
	multi("utf16", unicode.UTF16(unicode.BigEndian, unicode.IgnoreBOM), false)
	multi("utf16le", unicode.UTF16(unicode.LittleEndian, unicode.IgnoreBOM), false)
	multi("utf32", utf32.UTF32(utf32.BigEndian, utf32.IgnoreBOM), false)
	return m
}()

// Charsets maps collation ids, which the binlog's column metadata and query.Field.Charset
// carry, to character sets.
type Charsets struct {
	// ids and names are indexed by collation id: every id in use fits (MariaDB's go to
	// 3327), and a text cell's lookup is an index, not a hash.
	ids   []*Charset
	names []string
}

func (c *Charsets) set(id uint64, name string) {
	if id < MaxCollation {
		c.ids[id], c.names[id] = charsets[name], name
	}
}

// NewCharsets builds the map from a server's collation ids and character set names (its
// information_schema), on top of the default ids.
func NewCharsets(charsetOf map[uint32]string) *Charsets {
	c := &Charsets{ids: slices.Clone(DefaultCharsets.ids), names: slices.Clone(DefaultCharsets.names)}
	for id, name := range charsetOf {
		c.set(uint64(id), name)
	}
	return c
}

// Of returns the character set of a collation (nil: UTF-8 or not converted). The nil
// *Charsets is DefaultCharsets.
func (c *Charsets) Of(collation uint32) *Charset {
	if c == nil {
		c = DefaultCharsets
	}
	if collation < uint32(len(c.ids)) {
		return c.ids[collation]
	}
	return nil
}

// Name returns the name of a collation's character set, "" when unknown.
func (c *Charsets) Name(collation uint32) string {
	if c == nil {
		c = DefaultCharsets
	}
	if collation < uint32(len(c.names)) {
		return c.names[collation]
	}
	return ""
}

// Text returns the character set of a text column (CHAR, VARCHAR, TEXT); nil for the others,
// whose bytes are not text in a character set.
func (c *Charsets) Text(f *query.Field) *Charset {
	switch f.GetType() {
	case query.Type_CHAR, query.Type_VARCHAR, query.Type_TEXT:
		return c.Of(f.GetCharset())
	default:
		// The other types hold no text in a character set.
	}
	return nil
}

// DefaultCharsets maps the collation ids collationIDs lists; streams use the source server's
// own table (NewCharsets), which also knows ids added since.
var DefaultCharsets = func() *Charsets {
	c := &Charsets{ids: make([]*Charset, MaxCollation), names: make([]string, MaxCollation)}
	for id := range uint32(MaxCollation) {
		if name := CharsetOf(id); name != "" {
			c.set(uint64(id), name)
		}
	}
	return c
}()
