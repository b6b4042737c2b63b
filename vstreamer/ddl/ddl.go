// Package ddl reads what a binlog QUERY event's statement means for a change stream: a
// transaction boundary, a savepoint, a DDL and the tables it names, or something else. It is
// just enough of a MySQL lexer for that; statements it cannot read are reported as such.
package ddl

import "strings"

// Kind is what a binlog QUERY event means for a stream.
type Kind int

const (
	Other Kind = iota
	Begin
	Commit
	Rollback
	Savepoint
	DDL
)

// Table is a possibly qualified table named by a statement; DB is empty when unqualified.
type Table struct {
	DB, Name string
}

// Classify reads the kind of a statement and, for DDL, the tables it names. ok is false when
// a DDL's tables could not be read; callers then treat it as touching every table.
func Classify(sql string) (kind Kind, tables []Table, ok bool) {
	l := lexer{s: sql}
	first := l.keyword()
	switch first {
	case "BEGIN":
		return Begin, nil, true
	case "START":
		if l.keyword() == "TRANSACTION" {
			return Begin, nil, true
		}
		return Other, nil, true
	case "COMMIT":
		return Commit, nil, true
	case "XA":
		switch l.keyword() {
		case "START", "BEGIN":
			// An XA transaction's rows follow, and its XA_PREPARE_LOG_EVENT or
			// XA COMMIT ... ONE PHASE ends it.
			return Begin, nil, true
		case "COMMIT":
			return Commit, nil, true
		}
		return Other, nil, true
	case "ROLLBACK":
		if l.keyword() == "TO" {
			return Savepoint, nil, true
		}
		return Rollback, nil, true
	case "SAVEPOINT", "RELEASE":
		return Savepoint, nil, true
	case "CREATE", "ALTER", "DROP", "RENAME", "TRUNCATE":
		tables, ok = ddlTables(first, &l)
		if tables == nil && ok {
			// CREATE DATABASE, CREATE USER, DROP VIEW...: not about a table.
			return Other, nil, true
		}
		return DDL, tables, ok
	}
	return Other, nil, true
}

// CommitsPrepared reports whether sql is XA COMMIT of a transaction prepared earlier, not
// XA COMMIT ... ONE PHASE: the rows it commits were logged before it, at its XA PREPARE.
func CommitsPrepared(sql string) bool {
	l := lexer{s: sql}
	if l.keyword() != "XA" || l.keyword() != "COMMIT" {
		return false
	}
	for !l.done() {
		if l.peekKeyword() == "ONE" {
			l.keyword()
			if l.keyword() == "PHASE" {
				return false
			}
			continue
		}
		l.skip()
	}
	return true
}

func ddlTables(verb string, l *lexer) ([]Table, bool) {
	switch verb {
	case "TRUNCATE":
		if l.peekKeyword() == "TABLE" {
			l.keyword()
		}
		t, ok := l.table()
		return []Table{t}, ok
	case "RENAME":
		if l.keyword() != "TABLE" {
			return nil, true
		}
		var out []Table
		for {
			from, ok := l.table()
			if !ok || l.keyword() != "TO" {
				return out, false
			}
			to, ok := l.table()
			if !ok {
				return out, false
			}
			out = append(out, from, to)
			if !l.punct(',') {
				return out, true
			}
		}
	case "DROP":
		// DROP [TEMPORARY] TABLE [IF EXISTS] a, b | DROP INDEX i ON t
		kw := l.keyword()
		if kw == "TEMPORARY" {
			kw = l.keyword()
		}
		switch kw {
		case "TABLE":
			l.ifExists()
			var out []Table
			for {
				t, ok := l.table()
				if !ok {
					return out, false
				}
				out = append(out, t)
				if !l.punct(',') {
					return out, true
				}
			}
		case "INDEX":
			l.keyword() // ONLINE/OFFLINE are rare; the index name follows
			return l.onTable()
		}
		return nil, true
	case "ALTER":
		// ALTER [ONLINE] [IGNORE] TABLE t ... [RENAME [TO|AS] t2]
		kw := l.keyword()
		for kw == "ONLINE" || kw == "IGNORE" {
			kw = l.keyword()
		}
		if kw != "TABLE" {
			return nil, true
		}
		l.ifExists()
		t, ok := l.table()
		if !ok {
			return nil, false
		}
		out := []Table{t}
		for !l.done() {
			if l.peekKeyword() == "RENAME" {
				l.keyword()
				switch l.peekKeyword() {
				case "TO", "AS":
					l.keyword()
				case "COLUMN", "INDEX", "KEY":
					continue
				}
				if to, ok := l.table(); ok {
					out = append(out, to)
				}
				continue
			}
			l.skip()
		}
		return out, true
	case "CREATE":
		// CREATE [OR REPLACE] [TEMPORARY] TABLE [IF NOT EXISTS] t ... [LIKE t2]
		// CREATE [UNIQUE|FULLTEXT|SPATIAL] INDEX i ON t
		kw := l.keyword()
		if kw == "OR" {
			l.keyword()
			kw = l.keyword()
		}
		for kw == "TEMPORARY" || kw == "UNIQUE" || kw == "FULLTEXT" || kw == "SPATIAL" || kw == "ONLINE" || kw == "OFFLINE" {
			kw = l.keyword()
		}
		switch kw {
		case "TABLE":
			l.ifNotExists()
			t, ok := l.table()
			return []Table{t}, ok
		case "INDEX":
			l.ifNotExists()
			return l.onTable()
		}
		return nil, true
	}
	return nil, true
}

// lexer is just enough of a MySQL tokenizer to read the table names of DDL statements.
type lexer struct {
	s   string
	pos int
}

func (l *lexer) space() {
	for l.pos < len(l.s) {
		c := l.s[l.pos]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			l.pos++
		case c == '#' || (c == '-' && strings.HasPrefix(l.s[l.pos:], "-- ")):
			for l.pos < len(l.s) && l.s[l.pos] != '\n' {
				l.pos++
			}
		case c == '/' && strings.HasPrefix(l.s[l.pos:], "/*"):
			// Executable comments (/*!50100 ... */) hold SQL: read their body as SQL.
			if strings.HasPrefix(l.s[l.pos:], "/*!") || strings.HasPrefix(l.s[l.pos:], "/*M!") {
				l.pos += 3
				if l.pos < len(l.s) && l.s[l.pos-1] == 'M' {
					l.pos++
				}
				for l.pos < len(l.s) && l.s[l.pos] >= '0' && l.s[l.pos] <= '9' {
					l.pos++
				}
				continue
			}
			end := strings.Index(l.s[l.pos+2:], "*/")
			if end < 0 {
				l.pos = len(l.s)
			} else {
				l.pos += end + 4
			}
		case c == '*' && strings.HasPrefix(l.s[l.pos:], "*/"):
			l.pos += 2
		default:
			return
		}
	}
}

func (l *lexer) done() bool {
	l.space()
	return l.pos >= len(l.s)
}

func isIdent(c byte) bool {
	return c == '_' || c == '$' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// keyword reads a bare word, upper-cased; "" when the next token is not a bare word.
func (l *lexer) keyword() string {
	l.space()
	start := l.pos
	for l.pos < len(l.s) && isIdent(l.s[l.pos]) {
		l.pos++
	}
	return strings.ToUpper(l.s[start:l.pos])
}

func (l *lexer) peekKeyword() string {
	save := l.pos
	kw := l.keyword()
	l.pos = save
	return kw
}

func (l *lexer) punct(c byte) bool {
	l.space()
	if l.pos < len(l.s) && l.s[l.pos] == c {
		l.pos++
		return true
	}
	return false
}

// ident reads a bare or backquoted identifier.
func (l *lexer) ident() (string, bool) {
	l.space()
	if l.pos >= len(l.s) {
		return "", false
	}
	if l.s[l.pos] == '`' {
		var b strings.Builder
		l.pos++
		for l.pos < len(l.s) {
			c := l.s[l.pos]
			if c == '`' {
				if l.pos+1 < len(l.s) && l.s[l.pos+1] == '`' {
					b.WriteByte('`')
					l.pos += 2
					continue
				}
				l.pos++
				return b.String(), true
			}
			b.WriteByte(c)
			l.pos++
		}
		return "", false
	}
	start := l.pos
	for l.pos < len(l.s) && isIdent(l.s[l.pos]) {
		l.pos++
	}
	if start == l.pos {
		return "", false
	}
	return l.s[start:l.pos], true
}

func (l *lexer) table() (Table, bool) {
	name, ok := l.ident()
	if !ok {
		return Table{}, false
	}
	if l.punct('.') {
		t, ok := l.ident()
		return Table{DB: name, Name: t}, ok
	}
	return Table{Name: name}, true
}

func (l *lexer) onTable() ([]Table, bool) {
	for !l.done() {
		switch l.keyword() {
		case "ON":
			t, ok := l.table()
			return []Table{t}, ok
		case "":
			l.skip()
		}
	}
	return nil, false
}

func (l *lexer) ifExists() {
	save := l.pos
	if l.keyword() == "IF" && l.keyword() == "EXISTS" {
		return
	}
	l.pos = save
}

func (l *lexer) ifNotExists() {
	save := l.pos
	if l.keyword() == "IF" && l.keyword() == "NOT" && l.keyword() == "EXISTS" {
		return
	}
	l.pos = save
}

// skip moves past one token: a word, a quoted string or identifier, or one other character.
func (l *lexer) skip() {
	l.space()
	if l.pos >= len(l.s) {
		return
	}
	c := l.s[l.pos]
	switch {
	case c == '\'' || c == '"':
		l.pos++
		for l.pos < len(l.s) {
			if l.s[l.pos] == '\\' {
				l.pos += 2
				continue
			}
			if l.s[l.pos] == c {
				if l.pos+1 < len(l.s) && l.s[l.pos+1] == c {
					l.pos += 2
					continue
				}
				l.pos++
				return
			}
			l.pos++
		}
	case c == '`':
		l.ident()
	case isIdent(c):
		for l.pos < len(l.s) && isIdent(l.s[l.pos]) {
			l.pos++
		}
	default:
		l.pos++
	}
}

// Keywords returns up to max bare words of a statement, upper-cased, with comments, quoted
// strings and punctuation left out: enough to tell kinds of DDL apart.
func Keywords(sql string, max int) []string {
	l := lexer{s: sql}
	var out []string
	for len(out) < max && !l.done() {
		if kw := l.keyword(); kw != "" {
			out = append(out, kw)
			continue
		}
		l.skip()
	}
	return out
}

// Labels reads the members of an ENUM or SET column type as information_schema writes it,
// e.g. "enum('a','it”s')" or "set('x','y')".
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
