package filter

import (
	"fmt"
	"strings"
)

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
)

type selectItem struct {
	kind    itemKind
	column  string
	charset string // itemConvert: target character set
	alias   string
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
	null   bool
	str    bool // a quoted string, as opposed to a number
	text   string
	source string // as written, for messages
}

// token kinds of the filter language.
type tokKind int

const (
	tkEOF tokKind = iota
	tkIdent
	tkString
	tkNumber
	tkPunct
)

type token struct {
	kind   tokKind
	text   string // identifier (unquoted), string value, number, or punctuation
	quoted bool   // identifier was backquoted (never a keyword)
	pos    int
}

type parser struct {
	src  string
	toks []token
	i    int
}

func tokenize(s string) ([]token, error) {
	var out []token
	i := 0
	for i < len(s) {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '`':
			start := i
			i++
			var b strings.Builder
			for {
				if i >= len(s) {
					return nil, fmt.Errorf("unterminated `identifier at offset %d", start)
				}
				if s[i] == '`' {
					if i+1 < len(s) && s[i+1] == '`' {
						b.WriteByte('`')
						i += 2
						continue
					}
					i++
					break
				}
				b.WriteByte(s[i])
				i++
			}
			out = append(out, token{kind: tkIdent, text: b.String(), quoted: true, pos: start})
		case c == '\'' || c == '"':
			start := i
			q := c
			i++
			var b strings.Builder
			for {
				if i >= len(s) {
					return nil, fmt.Errorf("unterminated string at offset %d", start)
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
			out = append(out, token{kind: tkString, text: b.String(), pos: start})
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9':
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
			if i < len(s) && isIdentByte(s[i]) {
				return nil, fmt.Errorf("malformed number at offset %d", start)
			}
			out = append(out, token{kind: tkNumber, text: s[start:i], pos: start})
		case isIdentByte(c):
			start := i
			for i < len(s) && isIdentByte(s[i]) {
				i++
			}
			out = append(out, token{kind: tkIdent, text: s[start:i], pos: start})
		default:
			start := i
			two := ""
			if i+1 < len(s) {
				two = s[i : i+2]
			}
			switch two {
			case "<=", ">=", "<>", "!=":
				out = append(out, token{kind: tkPunct, text: two, pos: start})
				i += 2
				continue
			}
			switch c {
			case '=', '<', '>', '(', ')', ',', '*', '-', '+', '.', ';':
				out = append(out, token{kind: tkPunct, text: string(c), pos: start})
				i++
			default:
				return nil, fmt.Errorf("unexpected character %q at offset %d", c, start)
			}
		}
	}
	return out, nil
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

func isIdentByte(c byte) bool {
	return c == '_' || c == '$' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
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
	return token{kind: tkEOF, pos: len(p.src)}
}

func (p *parser) next() token {
	t := p.peek()
	if p.i < len(p.toks) {
		p.i++
	}
	return t
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

func (p *parser) expectKeyword(kw string) error {
	if !p.acceptKeyword(kw) {
		return p.errorf("expected %s", strings.ToUpper(kw))
	}
	return nil
}

func (p *parser) acceptPunct(s string) bool {
	t := p.peek()
	if t.kind == tkPunct && t.text == s {
		p.i++
		return true
	}
	return false
}

func (p *parser) expectPunct(s string) error {
	if !p.acceptPunct(s) {
		return p.errorf("expected %q", s)
	}
	return nil
}

func (p *parser) errorf(format string, args ...any) error {
	t := p.peek()
	near := "end of text"
	if t.kind != tkEOF {
		near = fmt.Sprintf("%q", p.src[t.pos:min(len(p.src), t.pos+20)])
	}
	return fmt.Errorf("%s near %s", fmt.Sprintf(format, args...), near)
}

// reserved words that cannot be bare column names in the positions we parse.
var reserved = map[string]bool{"select": true, "from": true, "where": true, "and": true, "or": true, "not": true,
	"in": true, "between": true, "is": true, "null": true, "as": true, "using": true}

func (p *parser) ident(what string) (string, error) {
	t := p.peek()
	if t.kind != tkIdent || !t.quoted && reserved[strings.ToLower(t.text)] {
		return "", p.errorf("expected %s", what)
	}
	p.i++
	// A qualified name (t.col) is not supported: the table is the rule's.
	if p.peek().kind == tkPunct && p.peek().text == "." {
		return "", p.errorf("qualified names are not supported; write the bare column name")
	}
	return t.text, nil
}

func (p *parser) selectStmt() (*selectStmt, error) {
	if err := p.expectKeyword("select"); err != nil {
		return nil, err
	}
	st := &selectStmt{}
	if p.acceptPunct("*") {
		st.star = true
	} else {
		for {
			item, err := p.selectItem()
			if err != nil {
				return nil, err
			}
			st.items = append(st.items, item)
			if !p.acceptPunct(",") {
				break
			}
		}
	}
	if t := p.peek(); t.kind == tkPunct && !p.isKeyword("from") {
		return nil, p.errorf("unsupported expression in the select list; use plain column names, convert(col using charset) or keyspace_id()")
	}
	if err := p.expectKeyword("from"); err != nil {
		return nil, err
	}
	t := p.peek()
	if t.kind != tkIdent {
		return nil, p.errorf("expected a table name")
	}
	p.i++
	if p.acceptPunct(".") {
		return nil, p.errorf("qualified table names are not supported; the keyspace is the server's database")
	}
	st.table = t.text
	if p.acceptKeyword("where") {
		for {
			c, err := p.cond()
			if err != nil {
				return nil, err
			}
			st.conds = append(st.conds, c)
			if p.acceptKeyword("and") {
				continue
			}
			if p.isKeyword("or") {
				return nil, p.errorf("OR is not supported; a WHERE is an AND of conditions")
			}
			break
		}
	}
	p.acceptPunct(";")
	if p.peek().kind != tkEOF {
		return nil, p.errorf("unexpected text")
	}
	return st, nil
}

func (p *parser) alias(item *selectItem) error {
	if p.acceptKeyword("as") {
		a, err := p.ident("an alias")
		if err != nil {
			return err
		}
		item.alias = a
	}
	return nil
}

func (p *parser) selectItem() (selectItem, error) {
	switch {
	case p.isKeyword("convert") && p.i+1 < len(p.toks) && p.toks[p.i+1].text == "(":
		p.i += 2
		col, err := p.ident("a column name in convert()")
		if err != nil {
			return selectItem{}, err
		}
		if err := p.expectKeyword("using"); err != nil {
			return selectItem{}, err
		}
		cs, err := p.ident("a character set in convert()")
		if err != nil {
			return selectItem{}, err
		}
		if err := p.expectPunct(")"); err != nil {
			return selectItem{}, err
		}
		item := selectItem{kind: itemConvert, column: col, charset: strings.ToLower(cs)}
		return item, p.alias(&item)
	case p.isKeyword("keyspace_id") && p.i+1 < len(p.toks) && p.toks[p.i+1].text == "(":
		p.i += 2
		if err := p.expectPunct(")"); err != nil {
			return selectItem{}, err
		}
		item := selectItem{kind: itemKeyspaceID, column: "keyspace_id"}
		return item, p.alias(&item)
	}
	t := p.peek()
	if t.kind == tkIdent && p.i+1 < len(p.toks) && p.toks[p.i+1].text == "(" {
		return selectItem{}, p.errorf("unsupported function %s(); the select list takes columns, convert(col using charset) and keyspace_id()", t.text)
	}
	if t.kind != tkIdent {
		return selectItem{}, p.errorf("unsupported expression in the select list; use plain column names")
	}
	col, err := p.ident("a column name")
	if err != nil {
		return selectItem{}, err
	}
	item := selectItem{kind: itemColumn, column: col}
	return item, p.alias(&item)
}

func (p *parser) literal() (literal, error) {
	t := p.peek()
	switch {
	case t.kind == tkString:
		p.i++
		return literal{str: true, text: t.text, source: p.src[t.pos:p.endOf(t)]}, nil
	case t.kind == tkNumber:
		p.i++
		return literal{text: t.text, source: t.text}, nil
	case t.kind == tkPunct && (t.text == "-" || t.text == "+"):
		p.i++
		n := p.peek()
		if n.kind != tkNumber {
			return literal{}, p.errorf("expected a number after %q", t.text)
		}
		p.i++
		text := n.text
		if t.text == "-" {
			text = "-" + text
		}
		return literal{text: text, source: text}, nil
	case t.kind == tkIdent && !t.quoted && strings.EqualFold(t.text, "null"):
		p.i++
		return literal{null: true, source: "NULL"}, nil
	case t.kind == tkIdent && !t.quoted && (strings.EqualFold(t.text, "true") || strings.EqualFold(t.text, "false")):
		p.i++
		v := "0"
		if strings.EqualFold(t.text, "true") {
			v = "1"
		}
		return literal{text: v, source: t.text}, nil
	}
	return literal{}, p.errorf("expected a literal (a number or a quoted string); the right side of a condition must be a constant")
}

// endOf returns the offset just past a string token in the source.
func (p *parser) endOf(t token) int {
	if p.i < len(p.toks) {
		end := p.toks[p.i].pos
		return strings.LastIndexAny(p.src[:end], "'\"") + 1
	}
	return len(strings.TrimRight(p.src, " \t\r\n;"))
}

func (p *parser) cond() (cond, error) {
	if p.isKeyword("in_keyrange") {
		return p.inKeyrange()
	}
	if p.isKeyword("not") {
		return cond{}, p.errorf("NOT before a condition is not supported; use !=, NOT IN, NOT BETWEEN or IS NOT NULL")
	}
	if p.acceptPunct("(") {
		return cond{}, p.errorf("parentheses are not supported; a WHERE is an AND of conditions")
	}
	t := p.peek()
	if t.kind != tkIdent {
		return cond{}, p.errorf("expected a column name on the left of a condition")
	}
	if p.i+1 < len(p.toks) && p.toks[p.i+1].text == "(" {
		return cond{}, p.errorf("unsupported function %s() in WHERE", t.text)
	}
	col, err := p.ident("a column name")
	if err != nil {
		return cond{}, err
	}
	c := cond{column: col}
	op := p.peek()
	switch {
	case op.kind == tkPunct:
		switch op.text {
		case "=":
			c.op = opEq
		case "!=", "<>":
			c.op = opNe
		case "<":
			c.op = opLt
		case "<=":
			c.op = opLe
		case ">":
			c.op = opGt
		case ">=":
			c.op = opGe
		default:
			return cond{}, p.errorf("expected a comparison operator")
		}
		p.i++
		lit, err := p.literal()
		if err != nil {
			return cond{}, err
		}
		c.values = []literal{lit}
		return c, nil
	case p.acceptKeyword("is"):
		c.op = opIsNull
		if p.acceptKeyword("not") {
			c.op = opIsNotNull
		}
		return c, p.expectKeyword("null")
	}
	not := p.acceptKeyword("not")
	switch {
	case p.acceptKeyword("in"):
		c.op = opIn
		if not {
			c.op = opNotIn
		}
		if err := p.expectPunct("("); err != nil {
			return cond{}, err
		}
		for {
			lit, err := p.literal()
			if err != nil {
				return cond{}, err
			}
			c.values = append(c.values, lit)
			if !p.acceptPunct(",") {
				break
			}
		}
		return c, p.expectPunct(")")
	case p.acceptKeyword("between"):
		c.op = opBetween
		if not {
			c.op = opNotBetween
		}
		lo, err := p.literal()
		if err != nil {
			return cond{}, err
		}
		if err := p.expectKeyword("and"); err != nil {
			return cond{}, err
		}
		hi, err := p.literal()
		if err != nil {
			return cond{}, err
		}
		c.values = []literal{lo, hi}
		return c, nil
	}
	return cond{}, p.errorf("expected an operator (=, !=, <, <=, >, >=, IN, BETWEEN, IS NULL)")
}

// inKeyrange parses in_keyrange('-80') or in_keyrange(col[, col...], 'vindex', '-80').
func (p *parser) inKeyrange() (cond, error) {
	p.i++
	if err := p.expectPunct("("); err != nil {
		return cond{}, err
	}
	c := cond{op: opInKeyrange}
	var args []token
	for {
		t := p.next()
		if t.kind != tkString && t.kind != tkIdent {
			return cond{}, p.errorf("in_keyrange takes ('range') or (column, 'vindex', 'range')")
		}
		args = append(args, t)
		if !p.acceptPunct(",") {
			break
		}
	}
	if err := p.expectPunct(")"); err != nil {
		return cond{}, err
	}
	switch {
	case len(args) == 1 && args[0].kind == tkString:
		c.keyrange = args[0].text
	case len(args) >= 3 && args[len(args)-1].kind == tkString && args[len(args)-2].kind == tkString:
		for _, a := range args[:len(args)-2] {
			if a.kind != tkIdent {
				return cond{}, fmt.Errorf("in_keyrange: %q is not a column name", a.text)
			}
			c.krColumns = append(c.krColumns, a.text)
		}
		c.vindex = strings.ToLower(args[len(args)-2].text)
		c.keyrange = args[len(args)-1].text
	default:
		return cond{}, fmt.Errorf("in_keyrange takes ('range') or (column, 'vindex', 'range')")
	}
	return c, nil
}
