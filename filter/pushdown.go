package filter

import (
	"cmp"
	"encoding/hex"
	"slices"
	"strings"

	"github.com/vstream-cdc/vstream/gen/query"
	"github.com/vstream-cdc/vstream/sqltypes"
)

// sql renders a literal as SQL text.
func (l literal) sql() string {
	switch {
	case l.null:
		return "NULL"
	case l.bin:
		return "X'" + hex.EncodeToString([]byte(l.text)) + "'"
	case !l.str:
		return l.text
	}
	return QuoteString(l.text)
}

// QuoteString renders s as a quoted SQL string literal. It escapes with backslashes, so the
// session must not run with NO_BACKSLASH_ESCAPES.
func QuoteString(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('\'')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\'', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case 0:
			b.WriteString(`\0`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case 0x1a:
			b.WriteString(`\Z`)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('\'')
	return b.String()
}

// QuoteIdent renders a backquoted identifier.
func QuoteIdent(s string) string {
	return "`" + strings.ReplaceAll(s, "`", "``") + "`"
}

// WhereSQL renders the plan's conditions that the server can evaluate as an SQL boolean
// expression over the table's columns, or "" when there are none. Keyrange conditions need
// a vindex and stay with Match, which callers apply to every row as well.
func (p *TablePlan) WhereSQL(fields []*query.Field) string {
	var parts []string
	for i := range p.preds {
		pr := &p.preds[i]
		if pr.op == opInKeyrange {
			continue
		}
		col := QuoteIdent(fields[pr.col].Name)
		switch pr.op {
		case opIsNull, opIsNotNull:
			parts = append(parts, col+" "+opNames[pr.op])
		case opIn, opNotIn:
			parts = append(parts, col+" "+opNames[pr.op]+" ("+strings.Join(pr.sql, ", ")+")")
		case opBetween, opNotBetween:
			parts = append(parts, col+" "+opNames[pr.op]+" "+pr.sql[0]+" AND "+pr.sql[1])
		default:
			parts = append(parts, col+" "+opNames[pr.op]+" "+pr.sql[0])
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "(" + strings.Join(parts, ") AND (") + ")"
}

// PushedDown reports whether WhereSQL renders every condition of the plan: it does not
// when one is an in_keyrange, which only Match evaluates.
func (p *TablePlan) PushedDown() bool {
	for i := range p.preds {
		if p.preds[i].op == opInKeyrange {
			return false
		}
	}
	return true
}

// UsedColumns lists, in table order, the columns the plan reads: those it projects, those
// its conditions test, and the key of keyspace ids.
func (p *TablePlan) UsedColumns() []int {
	used := map[int]bool{}
	for _, o := range p.out {
		if o.src >= 0 {
			used[o.src] = true
		} else if o.kid != nil {
			for _, c := range o.kid.cols {
				used[c] = true
			}
		}
	}
	for i := range p.preds {
		if p.preds[i].op == opInKeyrange {
			for _, c := range p.preds[i].kid.cols {
				used[c] = true
			}
		} else {
			used[p.preds[i].col] = true
		}
	}
	out := make([]int, 0, len(used))
	for i := range used {
		out = append(out, i)
	}
	slices.Sort(out)
	return out
}

// ConditionColumns lists, in table order, the columns the plan's conditions test (a
// keyrange's column among them): a row image must hold them for Match to judge it.
func (p *TablePlan) ConditionColumns() []int {
	var out []int
	for i := range p.preds {
		cols := []int{p.preds[i].col}
		if p.preds[i].op == opInKeyrange {
			cols = p.preds[i].kid.cols
		}
		for _, c := range cols {
			if !slices.Contains(out, c) {
				out = append(out, c)
			}
		}
	}
	slices.Sort(out)
	return out
}

// Compare orders two non-NULL cells of a column the way the server orders them: by number,
// date or time, and strings by their collation (sqltypes.Collation). It never approximates:
// ok is false when it cannot order the cells as the server does (a string column of a
// collation sqltypes refuses, such as the UCA ones, an ENUM or SET, whose order needs its
// members, or a type it does not model), and the caller then orders them otherwise.
// Exact orders cost nothing more than the comparison.
func Compare(f *query.Field, a, b []byte) (c int, ok bool) {
	kind, err := kindOf(f)
	if err != nil {
		return 0, false
	}
	switch kind {
	case kindDecimal:
		return sqltypes.CompareDecimal(a, b), true
	case kindFloat:
		x, _ := parseFloat(a)
		y, _ := parseFloat(b)
		return cmp.Compare(x, y), true
	case kindDateTime:
		x, _ := sqltypes.DateTimeKey(a)
		y, _ := sqltypes.DateTimeKey(b)
		return cmp.Compare(x, y), true
	case kindTime:
		x, _ := sqltypes.TimeKey(a)
		y, _ := sqltypes.TimeKey(b)
		return cmp.Compare(x, y), true
	case kindBit:
		return cmp.Compare(sqltypes.BitValue(a), sqltypes.BitValue(b)), true
	case kindString:
		if f.Type == query.Type_ENUM || f.Type == query.Type_SET {
			// The server orders these by member number or bitmask, which takes the
			// column's members (sqltypes.CompareEnum, CompareSet); labels as strings would not.
			return 0, false
		}
		coll, found := sqltypes.LookupCollation(collationID(f))
		if !found {
			return 0, false
		}
		return coll.Compare(a, b), true
	}
	return 0, false
}
