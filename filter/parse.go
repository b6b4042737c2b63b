package filter

import (
	hexenc "encoding/hex"
	"fmt"
	"strings"

	"github.com/vstream-cdc/vstream/sqltext"
)

// The filter language is the select Vitess's vstreamer plans: a list of columns (or `*`, the
// literal 1, keyspace_id(), convert(col using charset)) from the rule's table, and a WHERE
// that is an AND of simple conditions, parenthesised or not. Parsing builds a small syntax
// tree first and judges it afterwards, so a statement that is not SQL gets a syntax error and
// SQL the vstreamer cannot evaluate gets the same "unsupported ..." words Vitess gives.

// selectStmt is a parsed rule filter: select <items> from <table> [where <conds>].
type selectStmt struct {
	star  bool
	items []selectItem
	table string
	conds []cond
}

type itemKind int

const (
	itemColumn itemKind = iota
	itemConvert
	itemKeyspaceID
	// itemOne is the literal 1, which Vitess accepts as a constant column (VReplication's
	// rollup workflows select it).
	itemOne
)

type selectItem struct {
	kind    itemKind
	column  string
	charset string // itemConvert: target character set
	// alias is accepted as Vitess accepts it; like Vitess, the FIELD keeps the column's name.
	alias string
}

type condOp int

const (
	opEq condOp = iota
	opNe
	opLt
	opLe
	opGt
	opGe
	opIn
	opNotIn
	opBetween
	opNotBetween
	opIsNull
	opIsNotNull
	opInKeyrange
)

// comparisonOps are the conditions of the comparison operators a filter takes. Vitess
// refuses NOT IN; it is kept here, where it has always worked.
var comparisonOps = map[string]condOp{
	"=": opEq, "!=": opNe, "<>": opNe, "<": opLt, "<=": opLe, ">": opGt, ">=": opGe,
	"in": opIn, "not in": opNotIn,
}

var opNames = map[condOp]string{
	opEq: "=", opNe: "!=", opLt: "<", opLe: "<=", opGt: ">", opGe: ">=",
	opIn: "IN", opNotIn: "NOT IN", opBetween: "BETWEEN", opNotBetween: "NOT BETWEEN",
	opIsNull: "IS NULL", opIsNotNull: "IS NOT NULL", opInKeyrange: "in_keyrange",
}

type cond struct {
	op     condOp
	column string
	// values are the literals: one for comparisons, the list for IN, two for BETWEEN.
	values []literal
	// in_keyrange: the columns (empty means the table's primary key), the vindex and the range.
	krColumns []string
	vindex    string
	keyrange  string
}

type literal struct {
	null bool
	str  bool // a quoted string, as opposed to a number
	// bin is a hexadecimal or bit literal (X'..', 0x.., b'..', 0b..): text holds its bytes,
	// which compare as a binary string with strings and as an unsigned number with numbers,
	// as in MySQL.
	bin    bool
	text   string
	source string // as written, for messages
}

// token kinds of the filter language.
type tokKind int

const (
	tkEOF tokKind = iota
	tkIdent
	tkString
	tkBinary // X'..', 0x.., b'..', 0b..: text holds the bytes
	tkNumber
	tkPunct
)

type token struct {
	kind   tokKind
	text   string // identifier (unquoted), string value, number, or punctuation
	quoted bool   // identifier was backquoted (never a keyword)
	pos    int    // offset of the first byte
	end    int    // offset just past the last byte
}

// syntaxError is reported the way Vitess's parser reports one: the 1-based position just
// past the offending token, and the token. hint says what was expected.
func syntaxError(src string, t token, hint string) error {
	pos := t.end + 1
	if t.kind == tkEOF {
		pos = len(src) + 1
	}
	msg := fmt.Sprintf("syntax error at position %d", pos)
	if t.kind == tkIdent || t.kind == tkNumber || t.kind == tkString {
		msg += fmt.Sprintf(" near '%s'", t.text)
	}
	if hint != "" {
		msg += " (" + hint + ")"
	}
	return fmt.Errorf("%s", msg)
}

// tokenize splits a filter into tokens, skipping spaces and comments; each kind of token
// that takes more than a byte or a name is read by a scan function of its own.
func tokenize(s string) ([]token, error) {
	var out []token
	i := 0
	for i < len(s) {
		c := s[i]
		var t token
		var err error
		switch {
		case sqltext.IsSpace(c):
			i++
			continue
		case c == '#' || c == '-' || c == '/':
			kind, n, closed := sqltext.Comment(s[i:])
			switch kind {
			case sqltext.NoComment:
				// Punctuation: '-' or '/'.
				t = token{kind: tkPunct, text: string(c), pos: i, end: i + 1}
			case sqltext.ExecutableComment:
				// MySQL (or MariaDB) runs what such a comment holds; a filter does not.
				return nil, syntaxError(s, token{kind: tkPunct, end: i + strings.IndexByte(s[i:], '!') + 1}, "executable comments are not supported")
			case sqltext.BlockComment:
				if !closed {
					return nil, syntaxError(s, token{kind: tkEOF}, "unterminated comment")
				}
				i += n
				continue
			case sqltext.LineComment:
				i += n
				continue
			}
		case c == '`':
			name, n, ok := sqltext.QuotedIdent(s[i:])
			if !ok {
				return nil, syntaxError(s, token{kind: tkEOF}, "unterminated `identifier")
			}
			t = token{kind: tkIdent, text: name, quoted: true, pos: i, end: i + n}
		case c == '\'' || c == '"':
			t, err = scanString(s, i)
		case (c == 'x' || c == 'X' || c == 'b' || c == 'B') && i+1 < len(s) && s[i+1] == '\'',
			c == '0' && i+2 < len(s) && (s[i+1] == 'x' || s[i+1] == 'b') && sqltext.IsIdentByte(s[i+2]):
			t, err = scanBinary(s, i)
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9':
			t, err = scanNumber(s, i)
		case sqltext.IsIdentByte(c):
			j := i
			for j < len(s) && sqltext.IsIdentByte(s[j]) {
				j++
			}
			t = token{kind: tkIdent, text: s[i:j], pos: i, end: j}
		default:
			t, err = scanPunct(s, i)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, t)
		i = t.end
	}
	return out, nil
}

// scanString reads the quoted string at s[i:], with its escapes and doubled quotes.
func scanString(s string, i int) (token, error) {
	start := i
	q := s[i]
	i++
	var b strings.Builder
	for {
		if i >= len(s) {
			return token{}, syntaxError(s, token{kind: tkEOF}, "unterminated string")
		}
		ch := s[i]
		if ch == '\\' && i+1 < len(s) {
			b.WriteByte(unescape(s[i+1]))
			i += 2
			continue
		}
		if ch == q {
			if i+1 < len(s) && s[i+1] == q {
				b.WriteByte(q)
				i += 2
				continue
			}
			i++
			break
		}
		b.WriteByte(ch)
		i++
	}
	return token{kind: tkString, text: b.String(), pos: start, end: i}, nil
}

// scanBinary reads the hexadecimal or bit literal at s[i:]: X'..', B'..', 0x.. or 0b...
func scanBinary(s string, i int) (token, error) {
	start, c := i, s[i]
	var digits string
	hex := c == 'x' || c == 'X' || s[i+1] == 'x'
	if c == '0' {
		j := i + 2
		for j < len(s) && sqltext.IsIdentByte(s[j]) {
			j++
		}
		digits, i = s[i+2:j], j
	} else {
		end := strings.IndexByte(s[i+2:], '\'')
		if end < 0 {
			return token{}, syntaxError(s, token{kind: tkEOF}, "unterminated string")
		}
		digits, i = s[i+2:i+2+end], i+2+end+1
	}
	b, ok := decodeBinary(digits, hex, c != '0')
	if !ok {
		return token{}, syntaxError(s, token{kind: tkNumber, text: s[start:i], end: i}, "malformed hexadecimal or bit literal")
	}
	return token{kind: tkBinary, text: b, pos: start, end: i}, nil
}

// scanNumber reads the number at s[i:], with its exponent; a number run into a name is
// malformed.
func scanNumber(s string, i int) (token, error) {
	start := i
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
		i++
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		j := i + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if j < len(s) && s[j] >= '0' && s[j] <= '9' {
			i = j
			for i < len(s) && s[i] >= '0' && s[i] <= '9' {
				i++
			}
		}
	}
	if i < len(s) && sqltext.IsIdentByte(s[i]) {
		for i < len(s) && sqltext.IsIdentByte(s[i]) {
			i++
		}
		return token{}, syntaxError(s, token{kind: tkNumber, text: s[start:i], end: i}, "malformed number")
	}
	return token{kind: tkNumber, text: s[start:i], pos: start, end: i}, nil
}

// scanPunct reads the operator or punctuation at s[i:], the longest first.
func scanPunct(s string, i int) (token, error) {
	if i+2 < len(s) && s[i:i+3] == "<=>" {
		return token{kind: tkPunct, text: "<=>", pos: i, end: i + 3}, nil
	}
	if i+1 < len(s) {
		switch two := s[i : i+2]; two {
		case "<=", ">=", "<>", "!=", "||", "&&", "<<", ">>":
			return token{kind: tkPunct, text: two, pos: i, end: i + 2}, nil
		}
	}
	switch c := s[i]; c {
	case '=', '<', '>', '(', ')', ',', '*', '-', '+', '.', ';', '/', '%', '!', '~', '^', '&', '|', ':', '@', '?':
		return token{kind: tkPunct, text: string(c), pos: i, end: i + 1}, nil
	default:
		return token{}, syntaxError(s, token{kind: tkPunct, end: i + 1}, fmt.Sprintf("unexpected character %q", c))
	}
}

// decodeBinary reads the digits of a hexadecimal or bit literal into bytes. X'..' needs an
// even number of hex digits; 0x.. and bit literals are padded on the left, as in MySQL.
func decodeBinary(digits string, hex, quoted bool) (string, bool) {
	if digits == "" {
		return "", quoted
	}
	var v []byte
	if hex {
		if len(digits)%2 == 1 {
			if quoted {
				return "", false
			}
			digits = "0" + digits
		}
		b, err := hexenc.DecodeString(digits)
		if err != nil {
			return "", false
		}
		return string(b), true
	}
	n := (len(digits) + 7) / 8
	v = make([]byte, n)
	for i := 0; i < len(digits); i++ {
		d := digits[len(digits)-1-i]
		if d != '0' && d != '1' {
			return "", false
		}
		if d == '1' {
			v[n-1-i/8] |= 1 << (i % 8)
		}
	}
	return string(v), true
}

func unescape(c byte) byte {
	switch c {
	case 'n':
		return '\n'
	case 't':
		return '\t'
	case 'r':
		return '\r'
	case '0':
		return 0
	}
	return c
}

// reserved words that cannot be bare names where the grammar takes a column or an alias.
var reserved = map[string]bool{"select": true, "from": true, "where": true, "and": true, "or": true, "not": true,
	"xor": true, "in": true, "between": true, "is": true, "null": true, "as": true, "using": true, "like": true,
	"regexp": true, "rlike": true, "join": true, "inner": true, "left": true, "right": true, "cross": true,
	"straight_join": true, "natural": true, "group": true, "order": true, "limit": true, "having": true,
	"union": true, "true": true, "false": true, "on": true, "div": true, "mod": true, "for": true, "into": true,
	"window": true, "lock": true, "distinct": true, "case": true, "when": true, "then": true, "else": true, "end": true,
	"interval": true, "escape": true, "sounds": true, "binary": true}

// statements Vitess parses but does not take as a filter ("unsupported: <statement>").
var statements = map[string]bool{"insert": true, "update": true, "delete": true, "replace": true, "create": true,
	"alter": true, "drop": true, "rename": true, "truncate": true, "set": true, "show": true, "use": true,
	"begin": true, "commit": true, "rollback": true, "explain": true, "describe": true, "desc": true,
	"analyze": true, "optimize": true, "with": true, "values": true}

// node is the syntax tree of an expression.
type nodeKind int

const (
	nCol nodeKind = iota
	nLit
	nNull
	nTuple
	nFunc
	nConvertUsing
	nCompare
	nIs
	nBetween
	nAnd
	nOr
	nXor
	nNot
	nOther // arithmetic and other expressions no filter evaluates
)

type node struct {
	kind nodeKind
	// span is the tokens the node covers, for messages.
	from, to int
	// nCol: qual and name. nFunc: name. nCompare/nIs: op, lower case ("=", "not in", "is not null").
	qual, name, op string
	lit            literal
	kids           []*node
	not            bool // nBetween
}

type parser struct {
	src  string
	toks []token
	i    int
}

// parseSelect parses a rule's filter text.
func parseSelect(s string) (*selectStmt, error) {
	toks, err := tokenize(s)
	if err != nil {
		return nil, err
	}
	p := &parser{src: s, toks: toks}
	return p.selectStmt()
}

func (p *parser) peek() token {
	if p.i < len(p.toks) {
		return p.toks[p.i]
	}
	return token{kind: tkEOF, pos: len(p.src), end: len(p.src)}
}

func (p *parser) peekAt(k int) token {
	if p.i+k < len(p.toks) {
		return p.toks[p.i+k]
	}
	return token{kind: tkEOF, pos: len(p.src), end: len(p.src)}
}

func (p *parser) isKeyword(kw string) bool {
	t := p.peek()
	return t.kind == tkIdent && !t.quoted && strings.EqualFold(t.text, kw)
}

func (p *parser) acceptKeyword(kw string) bool {
	if p.isKeyword(kw) {
		p.i++
		return true
	}
	return false
}

func (p *parser) isPunct(s string) bool {
	t := p.peek()
	return t.kind == tkPunct && t.text == s
}

func (p *parser) acceptPunct(s string) bool {
	if p.isPunct(s) {
		p.i++
		return true
	}
	return false
}

func (p *parser) syntax(hint string) error { return syntaxError(p.src, p.peek(), hint) }

func (p *parser) expectKeyword(kw string) error {
	if !p.acceptKeyword(kw) {
		return p.syntax("expected " + strings.ToUpper(kw))
	}
	return nil
}

func (p *parser) expectPunct(s string) error {
	if !p.acceptPunct(s) {
		return p.syntax(fmt.Sprintf("expected %q", s))
	}
	return nil
}

// isName reports a token usable as a column, table or alias name.
func isName(t token) bool {
	return t.kind == tkIdent && (t.quoted || !reserved[strings.ToLower(t.text)])
}

// render writes tokens [from, to) as SQL, the way Vitess prints an expression in its messages:
// keywords in lower case, one space between words, none inside parentheses or around dots.
func (p *parser) render(from, to int) string {
	var b strings.Builder
	for i := from; i < to && i < len(p.toks); i++ {
		t := p.toks[i]
		if i > from {
			prev := p.toks[i-1]
			glue := prev.kind == tkPunct && (prev.text == "(" || prev.text == ".") ||
				t.kind == tkPunct && (t.text == ")" || t.text == "," || t.text == ".") ||
				t.kind == tkPunct && t.text == "(" && prev.kind == tkIdent && !reserved[strings.ToLower(prev.text)]
			if prev.kind == tkPunct && (prev.text == "-" || prev.text == "+" || prev.text == "~" || prev.text == "!") {
				// A unary sign sticks to its operand.
				unary := i-1 == from || p.toks[i-2].kind == tkPunct && p.toks[i-2].text != ")" ||
					p.toks[i-2].kind == tkIdent && !p.toks[i-2].quoted && reserved[strings.ToLower(p.toks[i-2].text)]
				glue = glue || unary
			}
			if !glue {
				b.WriteByte(' ')
			}
		}
		switch t.kind {
		case tkString:
			b.WriteString("'" + strings.ReplaceAll(t.text, "'", "''") + "'")
		case tkBinary:
			b.WriteString(p.src[t.pos:t.end])
		case tkIdent:
			switch {
			case t.quoted && needsQuote(t.text):
				b.WriteString(QuoteIdent(t.text))
			case t.quoted:
				b.WriteString(t.text)
			case reserved[strings.ToLower(t.text)] || statements[strings.ToLower(t.text)]:
				b.WriteString(strings.ToLower(t.text))
			default:
				b.WriteString(t.text)
			}
		default:
			b.WriteString(t.text)
		}
	}
	return b.String()
}

func (p *parser) renderNode(n *node) string { return p.render(n.from, n.to) }

// needsQuote reports a name that must be backquoted to read as a name: a keyword, digits
// alone, or characters other than letters, digits, _ and $.
func needsQuote(name string) bool {
	if name == "" || reserved[strings.ToLower(name)] || statements[strings.ToLower(name)] || isInteger(name) {
		return true
	}
	for i := 0; i < len(name); i++ {
		if !sqltext.IsIdentByte(name[i]) {
			return true
		}
	}
	return false
}

func (p *parser) selectStmt() (*selectStmt, error) {
	first := p.peek()
	if !p.isKeyword("select") {
		if first.kind == tkIdent && !first.quoted && statements[strings.ToLower(first.text)] {
			return nil, fmt.Errorf("unsupported: %s", p.render(0, len(p.toks)))
		}
		return nil, p.syntax("a filter is a SELECT")
	}
	p.i++
	itemsFrom := p.i
	items, aliases, err := p.selectList()
	if err != nil {
		return nil, err
	}
	itemsTo := p.i
	if err = p.expectKeyword("from"); err != nil {
		return nil, err
	}
	t, qualified, err := p.fromTable()
	if err != nil {
		return nil, err
	}
	var where *node
	if p.acceptKeyword("where") {
		if where, err = p.expr(); err != nil {
			return nil, err
		}
	}
	if p.isKeyword("group") || p.isKeyword("order") || p.isKeyword("limit") || p.isKeyword("having") {
		return nil, fmt.Errorf("unsupported: %s: a filter takes no GROUP BY, HAVING, ORDER BY or LIMIT", p.render(p.i, len(p.toks)))
	}
	p.acceptPunct(";")
	if p.peek().kind != tkEOF {
		return nil, p.syntax("unexpected text after the statement")
	}
	if qualified {
		return nil, p.unsupported()
	}
	st := &selectStmt{table: t.text}

	// The statement is SQL; now judge it as the vstreamer does: WHERE first, then columns.
	if where != nil {
		var conjuncts []*node
		conjuncts = splitAnd(conjuncts, where)
		for _, c := range conjuncts {
			cd, err := p.condition(c)
			if err != nil {
				return nil, err
			}
			st.conds = append(st.conds, cd)
		}
	}
	if items[0] == nil {
		if len(items) > 1 {
			return nil, fmt.Errorf("unsupported: %s", p.render(itemsFrom, itemsTo))
		}
		st.star = true
		return st, nil
	}
	for i, n := range items {
		it, err := p.selectItem(n)
		if err != nil {
			return nil, err
		}
		it.alias = aliases[i]
		st.items = append(st.items, it)
	}
	return st, nil
}

// unsupported is the error of a statement the vstreamer does not take, which it names
// whole.
func (p *parser) unsupported() error {
	return fmt.Errorf("unsupported: %s", p.render(0, len(p.toks)))
}

// selectList parses the select list: its expressions and their aliases, a nil expression
// for * (or t.*).
func (p *parser) selectList() (items []*node, aliases []string, err error) {
	for {
		if p.acceptPunct("*") {
			items = append(items, nil)
			aliases = append(aliases, "")
		} else if isName(p.peek()) && p.peekAt(1).text == "." && p.peekAt(2).kind == tkPunct && p.peekAt(2).text == "*" {
			// t.*: Vitess takes it as *, whatever the qualifier.
			p.i += 3
			items = append(items, nil)
			aliases = append(aliases, "")
		} else {
			n, alias, err := p.aliasedExpr()
			if err != nil {
				return nil, nil, err
			}
			items = append(items, n)
			aliases = append(aliases, alias)
		}
		if !p.acceptPunct(",") {
			return items, aliases, nil
		}
		if p.isPunct("*") {
			// MySQL takes `*` only first in a select list.
			p.i++
			return nil, nil, syntaxError(p.src, p.toks[p.i-1], "`*` must be alone in the select list")
		}
	}
}

// aliasedExpr parses an expression of the select list and its alias, if any.
func (p *parser) aliasedExpr() (*node, string, error) {
	if p.isKeyword("from") || p.peek().kind == tkEOF {
		return nil, "", p.syntax("expected a column")
	}
	n, err := p.expr()
	if err != nil {
		return nil, "", err
	}
	if p.acceptKeyword("as") {
		t := p.peek()
		if !isName(t) && t.kind != tkString {
			return nil, "", p.syntax("expected an alias")
		}
		p.i++
		return n, t.text, nil
	}
	if t := p.peek(); isName(t) {
		p.i++
		return n, t.text, nil
	}
	return n, "", nil
}

// fromTable parses the table after FROM, with its alias; qualified says it was named
// db.table. Vitess streams one table per rule: more tables are refused.
func (p *parser) fromTable() (t token, qualified bool, err error) {
	t = p.peek()
	if !isName(t) {
		if p.isPunct("(") {
			return t, false, p.unsupported()
		}
		return t, false, p.syntax("expected a table name")
	}
	p.i++
	if p.acceptPunct(".") {
		if !isName(p.peek()) {
			return t, false, p.syntax("expected a table name")
		}
		p.i++
		qualified = true
	}
	if p.acceptKeyword("as") {
		if !isName(p.peek()) {
			return t, false, p.syntax("expected a table alias")
		}
		p.i++
	} else if isName(p.peek()) {
		p.i++
	}
	if p.isPunct(",") || p.isKeyword("join") || p.isKeyword("inner") || p.isKeyword("left") || p.isKeyword("right") ||
		p.isKeyword("cross") || p.isKeyword("straight_join") || p.isKeyword("natural") {
		return t, false, p.unsupported()
	}
	return t, qualified, nil
}

func splitAnd(out []*node, n *node) []*node {
	if n.kind == nAnd {
		out = splitAnd(out, n.kids[0])
		return splitAnd(out, n.kids[1])
	}
	return append(out, n)
}

// expr := xor { (OR | ||) xor }
func (p *parser) expr() (*node, error) {
	from := p.i
	left, err := p.xorExpr()
	if err != nil {
		return nil, err
	}
	for p.isKeyword("or") || p.isPunct("||") {
		p.i++
		right, err := p.xorExpr()
		if err != nil {
			return nil, err
		}
		left = &node{kind: nOr, from: from, to: p.i, kids: []*node{left, right}}
	}
	return left, nil
}

func (p *parser) xorExpr() (*node, error) {
	from := p.i
	left, err := p.andExpr()
	if err != nil {
		return nil, err
	}
	for p.acceptKeyword("xor") {
		right, err := p.andExpr()
		if err != nil {
			return nil, err
		}
		left = &node{kind: nXor, from: from, to: p.i, kids: []*node{left, right}}
	}
	return left, nil
}

func (p *parser) andExpr() (*node, error) {
	from := p.i
	left, err := p.notExpr()
	if err != nil {
		return nil, err
	}
	for p.isKeyword("and") || p.isPunct("&&") {
		p.i++
		right, err := p.notExpr()
		if err != nil {
			return nil, err
		}
		left = &node{kind: nAnd, from: from, to: p.i, kids: []*node{left, right}}
	}
	return left, nil
}

func (p *parser) notExpr() (*node, error) {
	from := p.i
	if p.isKeyword("not") || p.isPunct("!") {
		p.i++
		x, err := p.notExpr()
		if err != nil {
			return nil, err
		}
		return &node{kind: nNot, from: from, to: p.i, kids: []*node{x}}, nil
	}
	return p.predicate()
}

var compareOps = map[string]bool{"=": true, "!=": true, "<>": true, "<": true, "<=": true, ">": true, ">=": true, "<=>": true}

// predicate := operand [ cmp operand | IS [NOT] x | [NOT] IN (...) | [NOT] BETWEEN a AND b | [NOT] LIKE x | REGEXP x ]
func (p *parser) predicate() (*node, error) {
	from := p.i
	left, err := p.operand()
	if err != nil {
		return nil, err
	}
	t := p.peek()
	switch {
	case t.kind == tkPunct && compareOps[t.text]:
		p.i++
		right, err := p.operand()
		if err != nil {
			return nil, err
		}
		return &node{kind: nCompare, op: t.text, from: from, to: p.i, kids: []*node{left, right}}, nil
	case p.acceptKeyword("is"):
		return p.isTest(from, left)
	}
	not := false
	if p.isKeyword("not") && (p.peekAt(1).kind == tkIdent) {
		switch strings.ToLower(p.peekAt(1).text) {
		case "in", "between", "like", "regexp", "rlike":
			p.i++
			not = true
		}
	}
	switch {
	case p.acceptKeyword("in"):
		return p.inList(from, left, not)
	case p.acceptKeyword("between"):
		lo, err := p.operand()
		if err != nil {
			return nil, err
		}
		if err = p.expectKeyword("and"); err != nil {
			return nil, err
		}
		hi, err := p.operand()
		if err != nil {
			return nil, err
		}
		return &node{kind: nBetween, not: not, from: from, to: p.i, kids: []*node{left, lo, hi}}, nil
	case p.isKeyword("like") || p.isKeyword("regexp") || p.isKeyword("rlike"):
		op := strings.ToLower(p.peek().text)
		p.i++
		if not {
			op = "not " + op
		}
		right, err := p.operand()
		if err != nil {
			return nil, err
		}
		return &node{kind: nCompare, op: op, from: from, to: p.i, kids: []*node{left, right}}, nil
	}
	if not {
		return nil, p.syntax("")
	}
	return left, nil
}

var arithOps = map[string]bool{"+": true, "-": true, "*": true, "/": true, "%": true, "&": true, "|": true, "^": true, "<<": true, ">>": true}

// isTest parses what follows IS: [NOT] NULL, TRUE, FALSE or UNKNOWN.
func (p *parser) isTest(from int, left *node) (*node, error) {
	op := "is "
	if p.acceptKeyword("not") {
		op += "not "
	}
	w := p.peek()
	if w.kind != tkIdent || w.quoted {
		return nil, p.syntax("expected NULL, TRUE or FALSE after IS")
	}
	switch lw := strings.ToLower(w.text); lw {
	case "null", "true", "false", "unknown":
		p.i++
		return &node{kind: nIs, op: op + lw, from: from, to: p.i, kids: []*node{left}}, nil
	}
	return nil, p.syntax("expected NULL, TRUE or FALSE after IS")
}

// inList parses the list of [NOT] IN.
func (p *parser) inList(from int, left *node, not bool) (*node, error) {
	if !p.isPunct("(") {
		return nil, p.syntax("expected ( after IN")
	}
	lf := p.i
	p.i++
	list := &node{kind: nTuple, from: lf}
	for {
		v, err := p.expr()
		if err != nil {
			return nil, err
		}
		list.kids = append(list.kids, v)
		if !p.acceptPunct(",") {
			break
		}
	}
	if err := p.expectPunct(")"); err != nil {
		return nil, err
	}
	list.to = p.i
	op := "in"
	if not {
		op = "not in"
	}
	return &node{kind: nCompare, op: op, from: from, to: p.i, kids: []*node{left, list}}, nil
}

// operand := term { arith term }
func (p *parser) operand() (*node, error) {
	from := p.i
	left, err := p.term()
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		if !(t.kind == tkPunct && arithOps[t.text] || p.isKeyword("div") || p.isKeyword("mod")) {
			return left, nil
		}
		p.i++
		if _, err := p.term(); err != nil {
			return nil, err
		}
		left = &node{kind: nOther, from: from, to: p.i}
	}
}

// term is a literal, a column, a function call, or a parenthesised expression.
func (p *parser) term() (*node, error) {
	from := p.i
	t := p.peek()
	switch {
	case t.kind == tkString:
		p.i++
		return &node{kind: nLit, lit: literal{str: true, text: t.text, source: p.src[t.pos:t.end]}, from: from, to: p.i}, nil
	case t.kind == tkNumber:
		p.i++
		return &node{kind: nLit, lit: literal{text: t.text, source: t.text}, from: from, to: p.i}, nil
	case t.kind == tkBinary:
		p.i++
		return &node{kind: nLit, lit: literal{bin: true, text: t.text, source: p.src[t.pos:t.end]}, from: from, to: p.i}, nil
	case t.kind == tkPunct && (t.text == "-" || t.text == "+"):
		return p.signed(from, t)
	case t.kind == tkPunct && t.text == "~":
		p.i++
		if _, err := p.term(); err != nil {
			return nil, err
		}
		return &node{kind: nOther, from: from, to: p.i}, nil
	case t.kind == tkPunct && t.text == "(":
		return p.parenthesised(from)
	case t.kind == tkIdent && !t.quoted:
		switch strings.ToLower(t.text) {
		case "null":
			p.i++
			return &node{kind: nNull, lit: literal{null: true, source: "NULL"}, from: from, to: p.i}, nil
		case "true", "false":
			p.i++
			v := "0"
			if strings.EqualFold(t.text, "true") {
				v = "1"
			}
			return &node{kind: nLit, lit: literal{text: v, source: strings.ToLower(t.text)}, from: from, to: p.i}, nil
		}
	}
	return p.nameTerm(from, t)
}

// signed parses a term after a sign, t.
func (p *parser) signed(from int, t token) (*node, error) {
	p.i++
	if n := p.peek(); n.kind == tkNumber {
		// A signed number is one literal, as in Vitess's grammar.
		p.i++
		text := n.text
		if t.text == "-" {
			text = "-" + text
		}
		return &node{kind: nLit, lit: literal{text: text, source: text}, from: from, to: p.i}, nil
	}
	if _, err := p.term(); err != nil {
		return nil, err
	}
	return &node{kind: nOther, from: from, to: p.i}, nil
}

// parenthesised parses what follows an opening parenthesis: an expression, or a tuple.
func (p *parser) parenthesised(from int) (*node, error) {
	p.i++
	inner, err := p.expr()
	if err != nil {
		return nil, err
	}
	if p.isPunct(",") {
		tuple := &node{kind: nTuple, from: from, kids: []*node{inner}}
		for p.acceptPunct(",") {
			v, err := p.expr()
			if err != nil {
				return nil, err
			}
			tuple.kids = append(tuple.kids, v)
		}
		if err := p.expectPunct(")"); err != nil {
			return nil, err
		}
		tuple.to = p.i
		return tuple, nil
	}
	if err := p.expectPunct(")"); err != nil {
		return nil, err
	}
	// Parentheses group; the node keeps its own span so messages show what is inside.
	return inner, nil
}

// nameTerm parses a term that starts with a name, t: a function call or a column.
func (p *parser) nameTerm(from int, t token) (*node, error) {
	if t.kind != tkIdent || !t.quoted && reserved[strings.ToLower(t.text)] {
		return nil, p.syntax("expected a column, a literal or a function")
	}
	p.i++
	if p.isPunct("(") {
		return p.call(from, t.text)
	}
	if p.acceptPunct(".") {
		n := p.peek()
		if n.kind != tkIdent {
			return nil, p.syntax("expected a column name after the dot")
		}
		p.i++
		if p.isPunct(".") {
			return nil, p.syntax("a column is named by table.column at most")
		}
		return &node{kind: nCol, qual: t.text, name: n.text, from: from, to: p.i}, nil
	}
	return &node{kind: nCol, name: t.text, from: from, to: p.i}, nil
}

// call parses a function's arguments. convert(x using cs) has its own shape; cast(x as t)
// and convert(x, t) are read as SQL and left for the judging to refuse.
func (p *parser) call(from int, name string) (*node, error) {
	p.i++ // (
	n := &node{kind: nFunc, name: name, from: from}
	if p.acceptPunct(")") {
		n.to = p.i
		return n, nil
	}
	if p.acceptKeyword("distinct") {
		n.op = "distinct"
	}
	if p.isPunct("*") {
		// count(*)
		p.i++
		if err := p.expectPunct(")"); err != nil {
			return nil, err
		}
		n.to = p.i
		return n, nil
	}
	for {
		arg, err := p.expr()
		if err != nil {
			return nil, err
		}
		n.kids = append(n.kids, arg)
		if strings.EqualFold(name, "convert") && len(n.kids) == 1 && p.acceptKeyword("using") {
			cs := p.peek()
			if cs.kind != tkIdent {
				return nil, p.syntax("expected a character set after USING")
			}
			p.i++
			n.kind, n.op = nConvertUsing, strings.ToLower(cs.text)
			break
		}
		if strings.EqualFold(name, "cast") && len(n.kids) == 1 && p.acceptKeyword("as") {
			if err := p.skipType(); err != nil {
				return nil, err
			}
			break
		}
		if !p.acceptPunct(",") {
			break
		}
		if strings.EqualFold(name, "convert") && len(n.kids) == 1 {
			if err := p.skipType(); err != nil {
				return nil, err
			}
			break
		}
	}
	if err := p.expectPunct(")"); err != nil {
		return nil, err
	}
	n.to = p.i
	return n, nil
}

// skipType reads a type name such as char(10), signed or decimal(10, 2).
func (p *parser) skipType() error {
	if p.peek().kind != tkIdent {
		return p.syntax("expected a type")
	}
	for p.peek().kind == tkIdent && !p.isKeyword("using") {
		p.i++
	}
	if p.acceptPunct("(") {
		for !p.acceptPunct(")") {
			if p.peek().kind == tkEOF {
				return p.syntax("expected )")
			}
			p.i++
		}
	}
	if p.acceptKeyword("character") || p.acceptKeyword("charset") {
		p.acceptKeyword("set")
		if p.peek().kind != tkIdent {
			return p.syntax("expected a character set")
		}
		p.i++
	}
	return nil
}

// selectItem judges one select-list expression as Vitess's planner does.
func (p *parser) selectItem(n *node) (selectItem, error) {
	switch n.kind {
	case nCol:
		if n.qual != "" {
			return selectItem{}, fmt.Errorf("unsupported qualifier for column: %s", p.renderNode(n))
		}
		return selectItem{kind: itemColumn, column: n.name}, nil
	case nLit:
		if n.lit.str || n.lit.bin || !isInteger(n.lit.text) {
			return selectItem{}, fmt.Errorf("only integer literals are supported")
		}
		if n.lit.text != "1" {
			return selectItem{}, fmt.Errorf("only the integer literal 1 is supported")
		}
		return selectItem{kind: itemOne, column: "1"}, nil
	case nFunc:
		switch strings.ToLower(n.name) {
		case "keyspace_id":
			if len(n.kids) != 0 {
				return selectItem{}, fmt.Errorf("unexpected: %s", p.renderNode(n))
			}
			return selectItem{kind: itemKeyspaceID, column: "keyspace_id"}, nil
		case "convert_tz":
			// Vitess converts time zones only in its copy's SELECT and streams binlog rows
			// unconverted; a stream that changed values in one phase only is refused here.
			return selectItem{}, fmt.Errorf("unsupported function: %s: time zone conversion is not supported; convert on the consumer's side", p.renderNode(n))
		}
		return selectItem{}, fmt.Errorf("unsupported function: %s", p.renderNode(n))
	case nConvertUsing:
		col := n.kids[0]
		if col.kind != nCol {
			return selectItem{}, fmt.Errorf("unsupported: %s: convert(... using ...) takes a column", p.renderNode(n))
		}
		if col.qual != "" {
			return selectItem{}, fmt.Errorf("unsupported qualifier for column: %s", p.renderNode(col))
		}
		return selectItem{kind: itemConvert, column: col.name, charset: n.op}, nil
	default:
		// Any other expression is refused below.
	}
	return selectItem{}, fmt.Errorf("unsupported: %s", p.renderNode(n))
}

func isInteger(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// column returns the unqualified column name of a comparison's left side.
func (p *parser) column(whole, n *node) (string, error) {
	if n.kind != nCol {
		return "", fmt.Errorf("unexpected: %s", p.renderNode(whole))
	}
	if n.qual != "" {
		return "", fmt.Errorf("unsupported qualifier for column: %s", p.renderNode(n))
	}
	return n.name, nil
}

// value returns the literal of a comparison's right side.
func (p *parser) value(n *node) (literal, error) {
	if n.kind != nLit && n.kind != nNull {
		return literal{}, fmt.Errorf("unexpected: %s", p.renderNode(n))
	}
	return n.lit, nil
}

// condition judges one AND-ed condition of the WHERE as Vitess's planner does.
func (p *parser) condition(n *node) (cond, error) {
	switch n.kind {
	case nCompare:
		return p.comparison(n)
	case nIs:
		col, err := p.column(n, n.kids[0])
		if err != nil {
			return cond{}, err
		}
		switch n.op {
		case "is null":
			return cond{op: opIsNull, column: col}, nil
		case "is not null":
			return cond{op: opIsNotNull, column: col}, nil
		}
		return cond{}, fmt.Errorf("unsupported constraint: %s", p.renderNode(n))
	case nBetween:
		return p.between(n)
	case nFunc:
		if !strings.EqualFold(n.name, "in_keyrange") {
			return cond{}, fmt.Errorf("unsupported constraint: %s", p.renderNode(n))
		}
		return p.inKeyrange(n)
	default:
		// Any other constraint is refused below.
	}
	return cond{}, fmt.Errorf("unsupported constraint: %s", p.renderNode(n))
}

// comparison judges a comparison of a column with a value, or IN a list of values.
func (p *parser) comparison(n *node) (cond, error) {
	op, ok := comparisonOps[n.op]
	if !ok {
		return cond{}, fmt.Errorf("comparison operator %s not supported", n.op)
	}
	c := cond{op: op}
	col, err := p.column(n, n.kids[0])
	if err != nil {
		return cond{}, err
	}
	c.column = col
	right := n.kids[1]
	if c.op == opIn || c.op == opNotIn {
		if right.kind != nTuple {
			return cond{}, fmt.Errorf("unexpected: %s", p.renderNode(n))
		}
		for _, v := range right.kids {
			lit, verr := p.value(v)
			if verr != nil {
				return cond{}, verr
			}
			c.values = append(c.values, lit)
		}
		return c, nil
	}
	lit, err := p.value(right)
	if err != nil {
		return cond{}, err
	}
	c.values = []literal{lit}
	return c, nil
}

// between judges a column [NOT] BETWEEN two values.
func (p *parser) between(n *node) (cond, error) {
	col, err := p.column(n, n.kids[0])
	if err != nil {
		return cond{}, err
	}
	lo, err := p.value(n.kids[1])
	if err != nil {
		return cond{}, err
	}
	hi, err := p.value(n.kids[2])
	if err != nil {
		return cond{}, err
	}
	c := cond{op: opBetween, column: col, values: []literal{lo, hi}}
	if n.not {
		c.op = opNotBetween
	}
	return c, nil
}

// inKeyrange judges in_keyrange('-80') and in_keyrange(col[, col...], 'vindex', '-80').
func (p *parser) inKeyrange(n *node) (cond, error) {
	c := cond{op: opInKeyrange}
	args := n.kids
	str := func(a *node) (string, error) {
		if a.kind != nLit {
			return "", fmt.Errorf("unsupported: %s", p.renderNode(a))
		}
		return a.lit.text, nil
	}
	var krArg *node
	switch {
	case len(args) == 1:
		krArg = args[0]
	case len(args) >= 3:
		for _, a := range args[:len(args)-2] {
			if a.kind != nCol {
				return cond{}, fmt.Errorf("unexpected: in_keyrange takes column names before the vindex; %s is not one", p.renderNode(a))
			}
			if a.qual != "" {
				return cond{}, fmt.Errorf("unsupported qualifier for column: %s", p.renderNode(a))
			}
			c.krColumns = append(c.krColumns, a.name)
		}
		v, err := str(args[len(args)-2])
		if err != nil {
			return cond{}, err
		}
		c.vindex = v
		krArg = args[len(args)-1]
	default:
		return cond{}, fmt.Errorf("unexpected in_keyrange parameters: %s; it takes ('range') or (column, 'vindex', 'range')", p.renderNode(n))
	}
	kr, err := str(krArg)
	if err != nil {
		return cond{}, err
	}
	krs, err := ParseShardingSpec(kr)
	if err != nil {
		return cond{}, err
	}
	if len(krs) != 1 {
		return cond{}, fmt.Errorf("unexpected in_keyrange parameter: %s", p.renderNode(krArg))
	}
	c.keyrange = kr
	return c, nil
}
