// Package filter turns a Vitess binlogdata.Filter into decisions about tables: which rule, if
// any, selects a table, and what of it is streamed. A keyspace VSchema (Vitess's JSON), when
// given, says which vindex gives a table's keyspace ids. It is pure: no I/O, so the binlog
// stream and the table copy read rules the same way.
package filter

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
)

// ErrInvalid wraps every error about a malformed filter.
var ErrInvalid = errors.New("invalid filter")

// ExcludeFilter is the filter text that keeps a matching table out of the stream.
const ExcludeFilter = "exclude"

// Rule is one compiled rule.
type Rule struct {
	// Index is the rule's position in the request, from 0.
	Index int
	Match string
	// Filter is the rule's filter text as given.
	Filter  string
	re      *regexp.Regexp
	exclude bool
	// stmt is the parsed select of a named rule; nil streams every column and row.
	stmt *selectStmt
	// keyrange limits rows to those whose keyspace id is in it.
	keyrange *KeyRange
}

// Exclude reports a rule that keeps its tables out of the stream.
func (r *Rule) Exclude() bool { return r.exclude }

// NeedsColumns reports a rule whose meaning depends on the table's columns (a select or a
// keyrange), so it can only be checked against a table definition.
func (r *Rule) NeedsColumns() bool { return r.stmt != nil || r.keyrange != nil }

// IsRegex reports a "/regex" rule.
func (r *Rule) IsRegex() bool { return r.re != nil }

// Matches reports whether the rule's match fits the table.
func (r *Rule) Matches(table string) bool {
	if r.re != nil {
		return r.re.MatchString(table)
	}
	return r.Match == table
}

// Filter is a compiled, validated filter.
type Filter struct {
	rules      []Rule
	bestEffort bool
	// vschema, when set, gives tables their keyspace ids.
	vschema *VSchema
	// masks replace the values of the columns they name (WithMasks).
	masks []compiledMask
}

// WithVSchema returns the filter with tables' keyspace ids taken from vs (nil: from the hash
// of a primary key of one integer column).
func (f *Filter) WithVSchema(vs *VSchema) *Filter {
	out := *f
	out.vschema = vs
	return &out
}

// All streams every table, the behaviour of an empty filter.
func All() *Filter {
	f, _ := New(nil)
	return f
}

// New compiles f. A nil or empty filter streams every table.
func New(f *binlogdata.Filter) (*Filter, error) {
	if f == nil || len(f.GetRules()) == 0 {
		out := &Filter{rules: []Rule{{Match: "/.*", re: regexp.MustCompile(".*")}}}
		if f != nil {
			out.bestEffort = f.GetFieldEventMode() == binlogdata.Filter_BEST_EFFORT
		}
		return out, nil
	}
	out := &Filter{
		rules:      make([]Rule, 0, len(f.Rules)),
		bestEffort: f.GetFieldEventMode() == binlogdata.Filter_BEST_EFFORT,
	}
	for i, r := range f.Rules {
		rule, err := compile(i, r)
		if err != nil {
			return nil, err
		}
		out.rules = append(out.rules, rule)
	}
	return out, nil
}

func compile(i int, r *binlogdata.Rule) (Rule, error) {
	rule := Rule{Index: i, Match: r.GetMatch(), Filter: strings.TrimSpace(r.GetFilter())}
	where := fmt.Sprintf("rule %d (match %q)", i+1, rule.Match)
	if rule.Match == "" {
		return rule, fmt.Errorf("%w: %s: match is empty; give a table name or /regex", ErrInvalid, where)
	}
	if strings.HasPrefix(rule.Match, "/") {
		expr := strings.Trim(rule.Match, "/")
		re, err := regexp.Compile(expr)
		if err != nil {
			return rule, fmt.Errorf("%w: %s: bad regular expression: %v", ErrInvalid, where, err)
		}
		rule.re = re
	}
	switch {
	case rule.Filter == "":
	case strings.EqualFold(rule.Filter, ExcludeFilter):
		rule.exclude = true
	case isKeyRange(rule.Filter):
		kr, err := ParseKeyRange(rule.Filter)
		if err != nil {
			return rule, fmt.Errorf("%w: %s: %v", ErrInvalid, where, err)
		}
		if !kr.Full() {
			rule.keyrange = &kr
		}
	default:
		if rule.re != nil {
			return rule, fmt.Errorf("%w: %s: a /regex rule takes \"\", a keyrange (-80, 80-, 40-80) or %q as filter, not %q",
				ErrInvalid, where, ExcludeFilter, rule.Filter)
		}
		st, err := parseSelect(rule.Filter)
		if err != nil {
			return rule, fmt.Errorf("%w: %s: filter %q: %v", ErrInvalid, where, rule.Filter, err)
		}
		if st.table != rule.Match {
			return rule, fmt.Errorf("%w: %s: unsupported: select expression table %s does not match the table entry name %s", ErrInvalid, where, st.table, rule.Match)
		}
		rule.stmt = st
	}
	return rule, nil
}

// isKeyRange reports filter text in shard notation rather than a select.
func isKeyRange(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// BestEffort reports FieldEventMode BEST_EFFORT: rows that do not fit the known schema are
// streamed with columns named @1, @2, ... instead of failing the stream.
func (f *Filter) BestEffort() bool { return f.bestEffort }

// Table returns the rule that streams table, or nil when the table is not streamed (no rule
// matches, or the first matching rule excludes it).
func (f *Filter) Table(table string) *Rule {
	for i := range f.rules {
		r := &f.rules[i]
		if r.Matches(table) {
			if r.exclude {
				return nil
			}
			return r
		}
	}
	return nil
}

// Rules returns the compiled rules in order.
func (f *Filter) Rules() []Rule { return f.rules }
