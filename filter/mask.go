package filter

import (
	"crypto/md5"  //nolint:gosec // MD5 is one of the digests Debezium's column.mask.hash offers, chosen by the user
	"crypto/sha1" //nolint:gosec // as MD5
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"hash"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"

	"github.com/vstream-cdc/vstream/gen/query"
	"github.com/vstream-cdc/vstream/sqltypes"
)

// Mask names a column whose values never leave the server in clear, and what replaces them,
// after Debezium's column.mask.with.N.chars, column.mask.hash.ALGO.with.salt.SALT and
// column.truncate.to.N.chars.
type Mask struct {
	// Table is a table name or /regex, as a rule's match.
	Table string
	// Column is the column's name (case-insensitive).
	Column string
	// Rule is "mask.with.N.chars" (N asterisks in place of any value), "mask.hash.ALGO.with.salt.SALT"
	// (the lower-case hex digest of SALT followed by the value; ALGO is MD5, SHA-1, SHA-256,
	// SHA-384 or SHA-512) or "truncate.to.N.chars" (the first N characters).
	Rule string
}

type maskKind int

const (
	maskChars maskKind = iota + 1
	maskHash
	maskTruncate
)

// compiledMask is a Mask checked and parsed.
type compiledMask struct {
	Mask
	re   *regexp.Regexp
	kind maskKind
	n    int
	// newHash makes the digest; salt goes before the value.
	newHash func() hash.Hash
	salt    []byte
	// hexLen is the length of the digest in hex.
	hexLen int
}

var hashes = map[string]func() hash.Hash{
	"MD5": md5.New, "SHA-1": sha1.New, "SHA-256": sha256.New, "SHA-384": sha512.New384, "SHA-512": sha512.New,
}

// compileMask checks a mask; errors name the mask and say what to fix.
func compileMask(i int, m Mask) (compiledMask, error) {
	c := compiledMask{Mask: m}
	what := fmt.Sprintf("column mask %d (table %q column %q rule %q)", i+1, m.Table, m.Column, m.Rule)
	if m.Table == "" || m.Column == "" {
		return c, fmt.Errorf("%w: %s: give a table (name or /regex) and a column", ErrInvalid, what)
	}
	if strings.HasPrefix(m.Table, "/") {
		re, err := regexp.Compile(m.Table[1:])
		if err != nil {
			return c, fmt.Errorf("%w: %s: bad table regex: %v", ErrInvalid, what, err)
		}
		c.re = re
	}
	num := func(s string) (int, error) {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 || n > 65535 {
			return 0, fmt.Errorf("%w: %s: %q is not a number of characters from 0 to 65535", ErrInvalid, what, s)
		}
		return n, nil
	}
	var err error
	switch r := m.Rule; {
	case strings.HasPrefix(r, "mask.with.") && strings.HasSuffix(r, ".chars") && len(r) > len("mask.with..chars"):
		c.kind = maskChars
		c.n, err = num(strings.TrimSuffix(strings.TrimPrefix(r, "mask.with."), ".chars"))
	case strings.HasPrefix(r, "truncate.to.") && strings.HasSuffix(r, ".chars") && len(r) > len("truncate.to..chars"):
		c.kind = maskTruncate
		c.n, err = num(strings.TrimSuffix(strings.TrimPrefix(r, "truncate.to."), ".chars"))
	case strings.HasPrefix(r, "mask.hash."):
		algo, salt, ok := strings.Cut(strings.TrimPrefix(r, "mask.hash."), ".with.salt.")
		nh := hashes[strings.ToUpper(algo)]
		if !ok || nh == nil {
			return c, fmt.Errorf("%w: %s: want mask.hash.ALGO.with.salt.SALT with ALGO one of MD5, SHA-1, SHA-256, SHA-384, SHA-512", ErrInvalid, what)
		}
		c.kind, c.newHash, c.salt = maskHash, nh, []byte(salt)
		c.hexLen = 2 * nh().Size()
	default:
		return c, fmt.Errorf("%w: %s: want mask.with.N.chars, mask.hash.ALGO.with.salt.SALT or truncate.to.N.chars", ErrInvalid, what)
	}
	return c, err
}

func (c *compiledMask) matches(table, column string) bool {
	if !strings.EqualFold(c.Column, column) {
		return false
	}
	if c.re != nil {
		return c.re.MatchString(table)
	}
	return c.Table == table
}

// WithMasks returns the filter with column masks applied to every plan it makes (the first
// mask that names a column wins). A mask's rule is checked here; its column when a table's
// plan is made: a column that is not text or binary, or is part of the primary key (its
// values travel in positions), is refused.
func (f *Filter) WithMasks(masks []Mask) (*Filter, error) {
	if len(masks) == 0 {
		return f, nil
	}
	out := *f
	out.masks = make([]compiledMask, 0, len(masks))
	for i, m := range masks {
		c, err := compileMask(i, m)
		if err != nil {
			return nil, err
		}
		out.masks = append(out.masks, c)
	}
	return &out, nil
}

// maskOf returns the mask of a table's column, nil when none.
func maskOf(masks []compiledMask, table, column string) *compiledMask {
	for i := range masks {
		if masks[i].matches(table, column) {
			return &masks[i]
		}
	}
	return nil
}

// applyMask checks that mask m fits column f of the table and returns the FIELD of the
// masked values: a masked or hashed column is VARCHAR (VARBINARY for binary columns) as long
// as its values; a truncated one keeps its type.
func applyMask(m *compiledMask, table string, f *query.Field, pk bool) (*query.Field, error) {
	what := fmt.Sprintf("column mask %q on %s.%s", m.Rule, table, f.Name)
	if pk {
		return nil, fmt.Errorf("%s: the column is part of the primary key, whose values travel in positions (table_p_ks) and keys: it cannot be masked", what)
	}
	binary := f.Type == query.Type_BINARY || f.Type == query.Type_VARBINARY || f.Type == query.Type_BLOB
	if f.Type == query.Type_ENUM || f.Type == query.Type_SET || (f.Type&query.Type(query.Flag_ISTEXT) == 0 && !binary) {
		return nil, fmt.Errorf("%s: the column is %s; only character and binary columns (CHAR, VARCHAR, TEXT, BINARY, VARBINARY, BLOB) can be masked", what, f.Type)
	}
	cs := sqltypes.CharsetOf(f.Charset)
	if m.kind == maskTruncate && !binary && f.Charset != 63 && !singleByte(cs) && cs != "utf8mb4" && cs != "utf8mb3" {
		return nil, fmt.Errorf("%s: truncation counts characters of utf8mb4, utf8mb3 and single-byte character sets; the column's is %s", what, cs)
	}
	m.n = max(m.n, 0)
	if m.kind == maskTruncate {
		return f, nil
	}
	out := proto.Clone(f).(*query.Field)
	length := m.n
	if m.kind == maskHash {
		length = m.hexLen
	}
	out.Flags &^= uint32(query.MySqlFlag_ENUM_FLAG | query.MySqlFlag_SET_FLAG | query.MySqlFlag_BLOB_FLAG)
	if binary || f.Charset == 63 {
		out.Type, out.Charset, out.ColumnLength = query.Type_VARBINARY, 63, uint32(length)
		out.ColumnType = fmt.Sprintf("varbinary(%d)", length)
		out.Flags |= uint32(query.MySqlFlag_BINARY_FLAG)
	} else {
		// Asterisks and hex digits: the same bytes in utf8mb4 as in ASCII.
		out.Type, out.Charset, out.ColumnLength = query.Type_VARCHAR, 45, uint32(length*4)
		out.ColumnType = fmt.Sprintf("varchar(%d)", length)
		out.Flags &^= uint32(query.MySqlFlag_BINARY_FLAG)
	}
	return out, nil
}

func singleByte(cs string) bool {
	switch cs {
	case "latin1", "latin2", "latin5", "latin7", "ascii", "cp1250", "cp1251", "cp1256", "cp1257", "cp850", "cp852", "cp866",
		"dec8", "greek", "hebrew", "hp8", "keybcs2", "koi8r", "koi8u", "macce", "macroman", "swe7", "armscii8", "geostd8", "tis620":
		return true
	}
	return false
}

// appendMasked appends the masked value of cell (not NULL) to values.
func (m *compiledMask) appendMasked(values, cell []byte, charset uint32) []byte {
	switch m.kind {
	case maskChars:
		for range m.n {
			values = append(values, '*')
		}
	case maskHash:
		h := m.newHash()
		h.Write(m.salt)
		h.Write(cell)
		var sum [64]byte
		values = hex.AppendEncode(values, h.Sum(sum[:0]))
	case maskTruncate:
		cs := sqltypes.CharsetOf(charset)
		if cs != "utf8mb4" && cs != "utf8mb3" {
			return append(values, cell[:min(len(cell), m.n)]...)
		}
		n, end := 0, 0
		for end < len(cell) && n < m.n {
			_, size := utf8.DecodeRune(cell[end:])
			end += size
			n++
		}
		values = append(values, cell[:end]...)
	}
	return values
}

// ParseMasks reads masks as flags give them, after Debezium's properties: entries separated
// by ";", each RULE=TABLE.COLUMN[,TABLE.COLUMN...] (the column is after the last dot of each
// name; the table may be /regex), e.g.
// "mask.hash.SHA-256.with.salt.pepper=customers.email;truncate.to.4.chars=/^cust.*.phone".
// A salt cannot hold "=", ";" or ",".
func ParseMasks(s string) ([]Mask, error) {
	var out []Mask
	for entry := range strings.SplitSeq(s, ";") {
		if entry = strings.TrimSpace(entry); entry == "" {
			continue
		}
		rule, cols, ok := strings.Cut(entry, "=")
		rule = strings.TrimSpace(rule)
		if !ok || rule == "" {
			return nil, fmt.Errorf("%w: column mask %q: want RULE=TABLE.COLUMN[,TABLE.COLUMN...]", ErrInvalid, entry)
		}
		for name := range strings.SplitSeq(cols, ",") {
			name = strings.TrimSpace(name)
			dot := strings.LastIndexByte(name, '.')
			if dot <= 0 || dot == len(name)-1 {
				return nil, fmt.Errorf("%w: column mask %q: %q is not TABLE.COLUMN", ErrInvalid, entry, name)
			}
			m := Mask{Table: name[:dot], Column: name[dot+1:], Rule: rule}
			if _, err := compileMask(len(out), m); err != nil {
				return nil, err
			}
			out = append(out, m)
		}
	}
	return out, nil
}
