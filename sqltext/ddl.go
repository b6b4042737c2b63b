// Package sqltext reads SQL text: what a binlog QUERY event's statement means for a change
// stream (a transaction boundary, a savepoint, a DDL or a statement-based INSERT, UPDATE,
// DELETE or REPLACE and the tables it names, or something else). It is just enough of a MySQL
// lexer for that; statements it cannot read are reported as such.
package sqltext

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
	// Insert, Update, Delete and Replace are DML logged as a statement (binlog_format
	// STATEMENT or MIXED) instead of row images. Their tables are the ones the statement
	// writes; for multi-table forms, every table it names.
	Insert
	Update
	Delete
	Replace
	// Load is LOAD DATA or LOAD XML, logged as a statement with the file's bytes in the
	// binlog; its table is the one loaded.
	Load
	// Executable is a statement held wholly in an executable comment, such as mysqldump's
	// "/*!40000 ALTER TABLE t DISABLE KEYS */". Vitess streams it as OTHER; its tables are
	// those of the DDL inside, if it is one, whose schema may have changed.
	Executable
)

// Table is a possibly qualified table named by a statement; DB is empty when unqualified.
type Table struct {
	DB, Name string
}

// IsBegin reports whether a binlog query event's text is the BEGIN a server logs to open a
// transaction (Classify's Begin for it), read as the event holds it: every MySQL transaction
// has one, and its readers need not make the text a string.
func IsBegin(q []byte) bool { return string(q) == "BEGIN" }

// Classify reads the kind of a statement and, for DDL and DML, the tables it names. ok is
// false when a DDL's or DML's tables could not be read; callers then treat it as touching
// every table.
func Classify(sql string) (kind Kind, tables []Table, ok bool) {
	if executableComment(sql) {
		// The lexer reads an executable comment's body as SQL. A change it holds is a
		// change like any other (Vitess would send it as OTHER and lose it).
		switch k, t, ok := classify(sql); k {
		case DDL:
			return Executable, t, ok
		case Insert, Update, Delete, Replace, Load:
			return k, t, ok
		default:
			// Anything else an executable comment holds is run as is: Executable, below.
		}
		return Executable, nil, true
	}
	return classify(sql)
}

func classify(sql string) (kind Kind, tables []Table, ok bool) {
	l := lexer{s: sql}
	first := l.keyword()
	switch first {
	case "INSERT", "REPLACE":
		return insertTables(first, &l)
	case "LOAD":
		return loadTables(&l)
	case "UPDATE":
		for l.skipWords("LOW_PRIORITY", "IGNORE") {
		}
		tables, ok = l.tableRefs()
		return Update, tables, ok
	case "DELETE":
		return deleteTables(&l)
	case "WITH":
		// MySQL 8's WITH ... UPDATE / DELETE: the kind is the first statement keyword outside
		// the common table expressions; their tables are not read.
		if k := l.afterCTEs(); k != Other {
			return k, nil, false
		}
		return Other, nil, true
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
		return xaKind(&l), nil, true
	case "ROLLBACK":
		return rollbackKind(&l), nil, true
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

// insertTables reads the table of an INSERT or REPLACE (first).
func insertTables(first string, l *lexer) (Kind, []Table, bool) {
	kind := Insert
	if first == "REPLACE" {
		kind = Replace
	}
	for l.skipWords("LOW_PRIORITY", "DELAYED", "HIGH_PRIORITY", "IGNORE", "INTO") {
	}
	t, found := l.table()
	if !found {
		return kind, nil, false
	}
	return kind, []Table{t}, true
}

// loadTables reads the table of LOAD DATA|XML [LOW_PRIORITY|CONCURRENT] [LOCAL] INFILE
// 'file' [REPLACE|IGNORE] INTO TABLE t.
func loadTables(l *lexer) (Kind, []Table, bool) {
	if kw := l.keyword(); kw != "DATA" && kw != "XML" {
		return Other, nil, true
	}
	for l.skipWords("LOW_PRIORITY", "CONCURRENT", "LOCAL") {
	}
	if l.keyword() != "INFILE" {
		return Load, nil, false
	}
	l.skip()
	for l.skipWords("REPLACE", "IGNORE") {
	}
	if l.keyword() != "INTO" || l.keyword() != "TABLE" {
		return Load, nil, false
	}
	t, found := l.table()
	if !found {
		return Load, nil, false
	}
	return Load, []Table{t}, true
}

// xaKind is the kind of an XA statement.
func xaKind(l *lexer) Kind {
	switch l.keyword() {
	case "START", "BEGIN":
		// An XA transaction's rows follow, and its XA_PREPARE_LOG_EVENT or
		// XA COMMIT ... ONE PHASE ends it.
		return Begin
	case "COMMIT":
		return Commit
	}
	return Other
}

// rollbackKind tells ROLLBACK [WORK] from ROLLBACK [WORK] TO SAVEPOINT.
func rollbackKind(l *lexer) Kind {
	kw := l.keyword()
	if kw == "WORK" {
		kw = l.keyword()
	}
	if kw == "TO" {
		return Savepoint
	}
	return Rollback
}

// SavepointOp is what a savepoint statement does.
type SavepointOp int

const (
	NotSavepoint SavepointOp = iota
	// SetSavepoint is SAVEPOINT name.
	SetSavepoint
	// RollbackToSavepoint is ROLLBACK [WORK] TO [SAVEPOINT] name.
	RollbackToSavepoint
	// ReleaseSavepoint is RELEASE SAVEPOINT name.
	ReleaseSavepoint
)

// ReadSavepoint reads a statement Classify calls a Savepoint: what it does and the
// savepoint's name.
func ReadSavepoint(sql string) (SavepointOp, string) {
	l := lexer{s: sql}
	var op SavepointOp
	switch l.keyword() {
	case "SAVEPOINT":
		op = SetSavepoint
	case "ROLLBACK":
		if l.peekKeyword() == "WORK" {
			l.keyword()
		}
		if l.keyword() != "TO" {
			return NotSavepoint, ""
		}
		if l.peekKeyword() == "SAVEPOINT" {
			l.keyword()
		}
		op = RollbackToSavepoint
	case "RELEASE":
		if l.keyword() != "SAVEPOINT" {
			return NotSavepoint, ""
		}
		op = ReleaseSavepoint
	default:
		return NotSavepoint, ""
	}
	name, ok := l.ident()
	if !ok {
		return NotSavepoint, ""
	}
	return op, name
}

// deleteTables reads the tables of DELETE [LOW_PRIORITY] [QUICK] [IGNORE] FROM t ..., or of
// the multi-table forms DELETE t1, t2 FROM refs and DELETE FROM t1, t2 USING refs, which
// name the tables deleted from (or their aliases) and the tables joined.
func deleteTables(l *lexer) (Kind, []Table, bool) {
	for l.skipWords("LOW_PRIORITY", "QUICK", "IGNORE") {
	}
	var targets []Table
	if l.peekKeyword() != "FROM" {
		var ok bool
		if targets, ok = l.targetList(); !ok || l.keyword() != "FROM" {
			return Delete, nil, false
		}
	} else {
		l.keyword()
		// DELETE FROM t1.*, t2 USING refs names its targets after FROM.
		save := l.pos
		if t, ok := l.targetList(); ok && l.peekKeyword() == "USING" {
			targets = t
		} else {
			l.pos = save
		}
	}
	var refs []Table
	if targets == nil || l.peekKeyword() != "USING" {
		var ok bool
		if refs, ok = l.tableRefs(); !ok {
			return Delete, nil, false
		}
	}
	if l.peekKeyword() == "USING" {
		l.keyword()
		more, ok := l.tableRefs()
		if !ok {
			return Delete, nil, false
		}
		refs = append(refs, more...)
	}
	return Delete, append(targets, refs...), true
}

// executableComment reports a statement that, past ordinary comments, starts with an
// executable comment (/*!NNNNN ... */ or MariaDB's /*M!NNNNN ... */).
func executableComment(sql string) bool {
	for {
		sql = strings.TrimLeft(sql, " \t\r\n")
		switch kind, n, closed := Comment(sql); kind {
		case ExecutableComment:
			return true
		case LineComment, BlockComment:
			if !closed || n == len(sql) {
				return false
			}
			sql = sql[n:]
		default:
			return false
		}
	}
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
		return renameTables(l)
	case "DROP":
		return dropTables(l)
	case "ALTER":
		return alterTables(l)
	case "CREATE":
		return createTables(l)
	}
	return nil, true
}

// renameTables reads RENAME TABLE a TO b [, c TO d]: both names of each pair.
func renameTables(l *lexer) ([]Table, bool) {
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
}

// dropTables reads DROP [TEMPORARY] TABLE [IF EXISTS] a, b | DROP INDEX i ON t.
func dropTables(l *lexer) ([]Table, bool) {
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
}

// alterTables reads ALTER [ONLINE] [IGNORE] TABLE t ... [RENAME [TO|AS] t2]: the table
// and the name it is renamed to.
func alterTables(l *lexer) ([]Table, bool) {
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
}

// createTables reads the table of
//
//	CREATE [OR REPLACE] [TEMPORARY] TABLE [IF NOT EXISTS] t ... [LIKE t2]
//	CREATE [UNIQUE|FULLTEXT|SPATIAL] INDEX i ON t
func createTables(l *lexer) ([]Table, bool) {
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

// lexer is just enough of a MySQL tokenizer to read the table names of DDL statements.
type lexer struct {
	s   string
	pos int
}

func (l *lexer) space() {
	for l.pos < len(l.s) {
		c := l.s[l.pos]
		if IsSpace(c) {
			l.pos++
			continue
		}
		if c == '*' && strings.HasPrefix(l.s[l.pos:], "*/") {
			// The end of an executable comment, whose body was read as SQL.
			l.pos += 2
			continue
		}
		// Executable comments (/*!50100 ... */) hold SQL: their body is read as SQL.
		kind, n, _ := Comment(l.s[l.pos:])
		if kind == NoComment {
			return
		}
		l.pos += n
	}
}

func (l *lexer) done() bool {
	l.space()
	return l.pos >= len(l.s)
}

// keyword reads a bare word, upper-cased; "" when the next token is not a bare word.
func (l *lexer) keyword() string {
	l.space()
	start := l.pos
	for l.pos < len(l.s) && IsIdentByte(l.s[l.pos]) {
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
		name, n, ok := QuotedIdent(l.s[l.pos:])
		l.pos += n
		return name, ok
	}
	start := l.pos
	for l.pos < len(l.s) && IsIdentByte(l.s[l.pos]) {
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

// skipWords moves past the next bare word when it is one of words.
func (l *lexer) skipWords(words ...string) bool {
	for _, w := range words {
		if l.peekKeyword() == w {
			l.keyword()
			return true
		}
	}
	return false
}

// refEnd are the words that end a list of table references (or start a join's condition).
var refEnd = map[string]bool{"SET": true, "WHERE": true, "ORDER": true, "LIMIT": true, "USING": true,
	"RETURNING": true, "FROM": true, "ON": true, "PARTITION": true}

// joinWords may stand between two table references.
var joinWords = map[string]bool{"JOIN": true, "INNER": true, "CROSS": true, "LEFT": true, "RIGHT": true,
	"OUTER": true, "NATURAL": true, "STRAIGHT_JOIN": true}

// tableRefs reads a list of table references (t [AS a], joins with ON or USING conditions)
// up to the clause that follows them, returning every table named. A derived table or a
// parenthesised join is not read (ok is false).
func (l *lexer) tableRefs() ([]Table, bool) {
	var out []Table
	for {
		if l.punct('(') {
			return out, false
		}
		t, ok := l.table()
		if !ok {
			return out, false
		}
		out = append(out, t)
		// [AS] alias, index hints and PARTITION (...) are skipped.
		if l.peekKeyword() == "AS" {
			l.keyword()
			l.ident()
		} else if kw := l.peekKeyword(); kw != "" && !refEnd[kw] && !joinWords[kw] && !hintWords[kw] {
			l.ident()
		} else if kw == "" && l.peekByte() == '`' {
			l.ident()
		}
		if !l.skipHints() {
			return out, false
		}
		// A join condition: ON expr or USING (cols).
		switch l.peekKeyword() {
		case "ON":
			l.keyword()
			if !l.skipExpr() {
				return out, false
			}
		case "USING":
			if len(out) > 1 && l.peekAfterKeyword() == '(' {
				l.keyword()
				if !l.skipParens() {
					return out, false
				}
			}
		}
		switch {
		case l.punct(','):
			continue
		case joinWords[l.peekKeyword()]:
			for joinWords[l.peekKeyword()] {
				l.keyword()
			}
			continue
		}
		return out, true
	}
}

// hintWords start index hints (USE INDEX (...), FORCE KEY FOR JOIN (...), ...).
var hintWords = map[string]bool{"USE": true, "IGNORE": true, "FORCE": true}

// skipHints moves past PARTITION (...) and index hints; false when they are malformed.
func (l *lexer) skipHints() bool {
	for {
		kw := l.peekKeyword()
		if kw != "PARTITION" && !hintWords[kw] {
			return true
		}
		l.keyword()
		for !l.done() && l.peekByte() != '(' {
			if l.keyword() == "" {
				return false
			}
		}
		if !l.skipParens() {
			return false
		}
	}
}

// skipExpr moves past a join condition: tokens up to a comma, join word or clause word at
// depth zero. A word followed by "(" is a function (LEFT(...)), not a join.
func (l *lexer) skipExpr() bool {
	for !l.done() {
		switch l.peekByte() {
		case '(':
			if !l.skipParens() {
				return false
			}
			continue
		case ',':
			return true
		}
		if kw := l.peekKeyword(); kw != "" && (joinWords[kw] || refEnd[kw]) && l.peekAfterKeyword() != '(' {
			return true
		}
		l.skip()
	}
	return true
}

// skipParens moves past a parenthesised group, quotes included; false when it is not closed.
func (l *lexer) skipParens() bool {
	if !l.punct('(') {
		return false
	}
	for depth := 1; depth > 0; {
		if l.done() {
			return false
		}
		switch l.peekByte() {
		case '(':
			depth++
		case ')':
			depth--
		}
		l.skip()
	}
	return true
}

// targetList reads the tables named before FROM in a multi-table DELETE: t1, t2.*, db.t3.*.
func (l *lexer) targetList() ([]Table, bool) {
	var out []Table
	for {
		first, ok := l.ident()
		if !ok {
			return out, false
		}
		t := Table{Name: first}
		if l.punct('.') && !l.punct('*') {
			if t.Name, ok = l.ident(); !ok {
				return out, false
			}
			t.DB = first
			if l.punct('.') && !l.punct('*') {
				return out, false
			}
		}
		out = append(out, t)
		if !l.punct(',') {
			return out, true
		}
	}
}

// afterCTEs moves past WITH [RECURSIVE] name [(cols)] AS (...), ... and returns the kind of
// the statement that follows.
func (l *lexer) afterCTEs() Kind {
	for !l.done() {
		if l.peekByte() == '(' {
			if !l.skipParens() {
				return Other
			}
			continue
		}
		switch l.keyword() {
		case "UPDATE":
			return Update
		case "DELETE":
			return Delete
		case "INSERT":
			return Insert
		case "REPLACE":
			return Replace
		case "SELECT":
			return Other
		case "":
			l.skip()
		}
	}
	return Other
}

func (l *lexer) peekByte() byte {
	l.space()
	if l.pos >= len(l.s) {
		return 0
	}
	return l.s[l.pos]
}

// peekAfterKeyword is the byte after the next bare word and the space that follows it.
func (l *lexer) peekAfterKeyword() byte {
	save := l.pos
	l.keyword()
	c := l.peekByte()
	l.pos = save
	return c
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
	case IsIdentByte(c):
		for l.pos < len(l.s) && IsIdentByte(l.s[l.pos]) {
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
