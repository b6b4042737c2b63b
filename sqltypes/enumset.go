package sqltypes

import (
	"bytes"
	"cmp"
	"slices"
	"strings"
)

// Labels reads the members of an ENUM or SET column type as information_schema writes it,
// e.g. "enum('a','b')" or "set('x','y')" (a quote in a label doubled or escaped with a
// backslash); nil for any other type.
func Labels(columnType string) []string {
	open := strings.IndexByte(columnType, '(')
	if open < 0 {
		return nil
	}
	s := columnType[open+1:]
	var out []string
	for len(s) > 0 && s[0] == '\'' {
		s = s[1:]
		var b strings.Builder
		for len(s) > 0 {
			if s[0] == '\'' {
				if len(s) > 1 && s[1] == '\'' {
					b.WriteByte('\'')
					s = s[2:]
					continue
				}
				s = s[1:]
				break
			}
			if s[0] == '\\' && len(s) > 1 {
				b.WriteByte(s[1])
				s = s[2:]
				continue
			}
			b.WriteByte(s[0])
			s = s[1:]
		}
		out = append(out, b.String())
		if len(s) == 0 || s[0] != ',' {
			break
		}
		s = s[1:]
	}
	return out
}

// EnumIndex is the 1-based index of an ENUM cell's label among the members (0: the empty
// invalid value, or a label not among them).
func EnumIndex(labels []string, cell []byte) int {
	for j, l := range labels {
		if l == string(cell) {
			return j + 1
		}
	}
	return 0
}

// SetMask is the bitmask of a SET cell, its members' labels joined by commas, without
// allocating. Every piece between commas is a member, the empty one too: "x," holds 'x' and
// ”. The empty cell holds none.
func SetMask(labels []string, cell []byte) uint64 {
	if len(cell) == 0 {
		return 0
	}
	var mask uint64
	for {
		member := cell
		j := bytes.IndexByte(cell, ',')
		if j >= 0 {
			member = cell[:j]
		}
		for k, l := range labels {
			if l == string(member) {
				mask |= 1 << uint(k)
			}
		}
		if j < 0 {
			return mask
		}
		cell = cell[j+1:]
	}
}

// CompareEnum orders two ENUM cells as the server's ORDER BY does: by member number, not
// by label ("zebra" before "apple" in enum('zebra','apple')).
func CompareEnum(labels []string, a, b []byte) int {
	return cmp.Compare(EnumIndex(labels, a), EnumIndex(labels, b))
}

// CompareSet orders two SET cells as the server's ORDER BY does: by bitmask, each member
// its bit by definition order.
func CompareSet(labels []string, a, b []byte) int {
	return cmp.Compare(SetMask(labels, a), SetMask(labels, b))
}

// ValidSet reports whether every member of a SET cell is one of the labels.
func ValidSet(labels []string, cell []byte) bool {
	if len(cell) == 0 {
		return true
	}
	for {
		member := cell
		j := bytes.IndexByte(cell, ',')
		if j >= 0 {
			member = cell[:j]
		}
		if !slices.Contains(labels, string(member)) {
			return false
		}
		if j < 0 {
			return true
		}
		cell = cell[j+1:]
	}
}
