package encoder

import (
	"slices"
	"strconv"
	"strings"
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
	// MySQL's latin1 is Windows-1252. Its five unassigned bytes become U+FFFD, as the Java
	// decoder (Connector/J's Cp1252) that canal and Debezium read them with makes them.
	single("latin1", charmap.Windows1252)
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

// Collations maps collation ids, which the binlog's column metadata and query.Field.Charset
// carry, to character sets.
type Collations struct {
	// ids and names are indexed by collation id: every id in use fits (MariaDB's go to
	// 3327), and a text cell's lookup is an index, not a hash.
	ids   []*Charset
	names []string
}

// maxCollation bounds the ids Collations holds; a larger id converts nothing.
const maxCollation = 4096

func (c *Collations) set(id uint64, name string) {
	if id < maxCollation {
		c.ids[id], c.names[id] = charsets[name], name
	}
}

// NewCollations builds the map from a server's collation ids and character set names (its
// information_schema), on top of the default ids.
func NewCollations(charsetOf map[uint32]string) *Collations {
	c := &Collations{ids: slices.Clone(DefaultCollations.ids), names: slices.Clone(DefaultCollations.names)}
	for id, name := range charsetOf {
		c.set(uint64(id), name)
	}
	return c
}

// Of returns the character set of a collation (nil: UTF-8 or not converted). The nil
// *Collations is DefaultCollations.
func (c *Collations) Of(collation uint32) *Charset {
	if c == nil {
		c = DefaultCollations
	}
	if collation < uint32(len(c.ids)) {
		return c.ids[collation]
	}
	return nil
}

// Name returns the name of a collation's character set, "" when unknown.
func (c *Collations) Name(collation uint32) string {
	if c == nil {
		c = DefaultCollations
	}
	if collation < uint32(len(c.names)) {
		return c.names[collation]
	}
	return ""
}

// Text returns the character set of a text column (CHAR, VARCHAR, TEXT); nil for the others,
// whose bytes are not text in a character set.
func (c *Collations) Text(f *query.Field) *Charset {
	switch f.GetType() {
	case query.Type_CHAR, query.Type_VARCHAR, query.Type_TEXT:
		return c.Of(f.GetCharset())
	default:
		// The other types hold no text in a character set.
	}
	return nil
}

// defaultCollationIDs lists each character set's collation ids as MariaDB's
// information_schema has them. Below 256 MySQL has the same ids, and adds gb18030's and
// utf8mb4's 255 to 323; MariaDB's NO PAD collations (1024 and up) and UCA 14.0.0
// collations (2048 and up) are its own.
const defaultCollationIDs = `
ascii 11 65 1035 1089
binary 63
utf8mb3 33 76 83 192-215 223 576-578 1057 1107 1216 1238 2048-2303
utf8mb4 45 46 224-247 255-323 608-610 1069 1070 1248 1270 2304-2559
gb18030 248 249 250
big5 1 84 1025 1108
cp1250 26 34 44 66 99 1050 1090
cp1251 14 23 50 51 52 1074 1075
cp1256 57 67 1081 1091
cp1257 29 58 59 1082 1083
cp850 4 80 1028 1104
cp852 40 81 1064 1105
cp866 36 68 1060 1092
cp932 95 96 1119 1120
eucjpms 97 98 1121 1122
euckr 19 85 1043 1109
gb2312 24 86 1048 1110
gbk 28 87 1052 1111
greek 25 70 1049 1094
hebrew 16 71 1040 1095
koi8r 7 74 1031 1098
koi8u 22 75 1046 1099
latin1 5 8 15 31 47 48 49 94 1032 1071
latin2 2 9 21 27 77 1033 1101
latin5 30 78 1054 1102
latin7 20 41 42 79 1065 1103
macroman 39 53 1063 1077
sjis 13 88 1037 1112
tis620 18 89 1042 1113
ujis 12 91 1036 1115
utf16le 56 62 1080 1086
ucs2 35 90 128-151 159 640-642 1059 1114 1152 1174 2560-2815
utf16 54 55 101-124 672-674 1078 1079 1125 1147 2816-3071
utf32 60 61 160-183 736-738 1084 1085 1184 1206 3072-3327
`

// DefaultCollations maps the collation ids of defaultCollationIDs; streams use the source
// server's own table (NewCollations), which also knows ids added since.
var DefaultCollations = func() *Collations {
	c := &Collations{ids: make([]*Charset, maxCollation), names: make([]string, maxCollation)}
	for _, line := range strings.Split(strings.TrimSpace(defaultCollationIDs), "\n") {
		f := strings.Fields(line)
		for _, r := range f[1:] {
			lo, hi, _ := strings.Cut(r, "-")
			from, err1 := strconv.ParseUint(lo, 10, 32)
			to := from
			var err2 error
			if hi != "" {
				to, err2 = strconv.ParseUint(hi, 10, 32)
			}
			if err1 != nil || err2 != nil {
				panic("encoder: bad default collation line " + line)
			}
			for id := from; id <= to; id++ {
				c.set(id, f[0])
			}
		}
	}
	return c
}()
