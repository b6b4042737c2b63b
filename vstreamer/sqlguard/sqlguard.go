// Package sqlguard decides whether a client's SQL may run on the source server: one read-only
// SELECT over the tables of one database. VStreamResults runs a query the client wrote, with
// the server's credentials; this is what keeps that from writing, locking, waiting, reading
// files or reading other databases. It is pure: it parses and never runs anything.
package sqlguard

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"

	// The parser needs a driver for literal values.
	_ "github.com/pingcap/tidb/pkg/parser/test_driver"
)

// ErrNotAllowed wraps every refusal.
var ErrNotAllowed = errors.New("query not allowed")

// blocked are functions a SELECT may call that act outside the query: they sleep or burn CPU,
// take locks, wait on replication, read server files, or advance sequences.
var blocked = map[string]bool{
	"sleep": true, "benchmark": true,
	"get_lock": true, "release_lock": true, "release_all_locks": true, "is_free_lock": true, "is_used_lock": true,
	"load_file":       true,
	"master_pos_wait": true, "source_pos_wait": true, "master_gtid_wait": true,
	"wait_for_executed_gtid_set": true, "wait_until_sql_thread_after_gtids": true,
	"nextval": true, "setval": true, "lastval": true,
}

// CheckSelect accepts sql when it is exactly one SELECT (UNIONs and subqueries included) that
// reads only tables of db, unqualified or qualified with db, with no INTO, no locking clause
// and no call of a blocked function. It returns the names of the tables read (common table
// expressions left out), sorted. The error says what was refused and what is allowed.
func CheckSelect(sql, db string) (tables []string, err error) {
	defer func() {
		// The parser's literal driver panics on some numbers (a decimal of more than 81
		// digits); a query it cannot read is refused, never a crash.
		if r := recover(); r != nil {
			tables, err = nil, fmt.Errorf("%w: the query could not be parsed (%v); %s", ErrNotAllowed, r, allowed(db))
		}
	}()
	if !utf8.ValidString(sql) {
		// The parser would read invalid bytes as "?" and check a query other than the one run.
		return nil, fmt.Errorf("%w: the query is not valid UTF-8; %s", ErrNotAllowed, allowed(db))
	}
	stmts, _, err := parser.New().ParseSQL(sql)
	if err != nil {
		return nil, fmt.Errorf("%w: %v; %s", ErrNotAllowed, err, allowed(db))
	}
	if len(stmts) != 1 {
		return nil, fmt.Errorf("%w: %d statements; %s", ErrNotAllowed, len(stmts), allowed(db))
	}
	switch stmts[0].(type) {
	case *ast.SelectStmt, *ast.SetOprStmt:
	default:
		return nil, fmt.Errorf("%w: not a SELECT; %s", ErrNotAllowed, allowed(db))
	}
	v := &visitor{db: db, ctes: map[string]bool{}, tables: map[string]bool{}}
	stmts[0].Accept(v)
	if v.err != nil {
		return nil, fmt.Errorf("%w: %v; %s", ErrNotAllowed, v.err, allowed(db))
	}
	for t := range v.tables {
		if !v.ctes[strings.ToLower(t)] {
			tables = append(tables, t)
		}
	}
	slices.Sort(tables)
	return tables, nil
}

func allowed(db string) string {
	return fmt.Sprintf("only one SELECT reading tables of %s is allowed, without INTO, FOR UPDATE, LOCK IN SHARE MODE or functions that sleep, lock, wait, read files or change sequences", db)
}

type visitor struct {
	db string
	// ctes are the names WITH clauses define; tables every table name read.
	ctes   map[string]bool
	tables map[string]bool
	err    error
}

func (v *visitor) Enter(n ast.Node) (ast.Node, bool) {
	if v.err != nil {
		return n, true
	}
	switch n := n.(type) {
	case *ast.SelectStmt:
		if n.SelectIntoOpt != nil {
			v.err = errors.New("SELECT ... INTO writes outside the result")
		} else if n.LockInfo != nil && n.LockInfo.LockType != ast.SelectLockNone {
			v.err = fmt.Errorf("a locking read (%s)", n.LockInfo.LockType)
		}
	case *ast.WithClause:
		for _, c := range n.CTEs {
			v.ctes[c.Name.L] = true
		}
	case *ast.TableName:
		if s := n.Schema.O; s != "" && !strings.EqualFold(s, v.db) {
			v.err = fmt.Errorf("table %s.%s is outside %s", s, n.Name.O, v.db)
		}
		v.tables[n.Name.O] = true
	case *ast.FuncCallExpr:
		if blocked[n.FnName.L] {
			v.err = fmt.Errorf("function %s", n.FnName.O)
		} else if s := n.Schema.O; s != "" && !strings.EqualFold(s, v.db) {
			v.err = fmt.Errorf("function %s.%s is outside %s", s, n.FnName.O, v.db)
		}
	}
	return n, v.err != nil
}

func (v *visitor) Leave(n ast.Node) (ast.Node, bool) { return n, v.err == nil }
