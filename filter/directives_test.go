package filter

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestParseDirectives(t *testing.T) {
	for _, c := range []struct {
		query string
		cols  []string
		force string
	}{
		{"select id, uk1, val from t1", nil, ""},
		// The cases of Vitess's TestRowStreamerQuery.
		{`select /*vt+ ukColumns="uk1" ukForce="uk2" */ id, uk1, val from t1`, []string{"uk1"}, "uk2"},
		{`select /*vt+ ukForce="uk2" */ id, uk1, val from t1`, nil, "uk2"},
		{`select /*vt+ ukColumns="uk1" */ id, uk1, val from t1`, []string{"uk1"}, ""},
		// Keys are matched without regard to case; values need not be quoted.
		{`SELECT /*vt+ UKCOLUMNS=a,b ukforce=idx */ * from t`, []string{"a", "b"}, "idx"},
		// Names are URL-unescaped: a comma inside a name is %2C.
		{`select /*vt+ ukColumns="a%2Cb,c" ukForce="my%20idx" */ * from t`, []string{"a,b", "c"}, "my idx"},
		// Several comments after SELECT are all read; other comments and directives ignored.
		{"select /* hello */ /*vt+ ukForce=\"k\" */\n/*vt+ ukColumns=\"x\" other=1 flag */ * from t", []string{"x"}, "k"},
		// A comment before the statement, and leading space, are not in the way.
		{"  /* lead */ select /*vt+ ukForce=k */ * from t", nil, "k"},
		// Line comments before the SELECT, "--" ended by a tab or a newline too (sqltext.Comment).
		{"# lead\n-- lead\n--\tlead\n--\nselect /*vt+ ukForce=k */ * from t", nil, "k"},
		// Only comments right after SELECT hold directives, as in Vitess's grammar.
		{`select * from t /*vt+ ukForce="k" */`, nil, ""},
		{`select id /*vt+ ukForce="k" */ from t`, nil, ""},
		{`/*vt+ ukForce="k" */ select * from t`, nil, ""},
		// A plain comment or an optimizer hint is no directive.
		{`select /*+ ukForce="k" */ * from t`, nil, ""},
		// Directives glued to the comment's ends are not read, as Vitess splits on space.
		{`select /*vt+ukForce=k*/ * from t`, nil, ""},
		{`select /*vt+*/ * from t`, nil, ""},
		// A later ukColumns replaces an earlier one.
		{`select /*vt+ ukColumns="a" ukColumns="b" */ * from t`, []string{"b"}, ""},
		{`select /*vt+ ukColumns="" */ * from t`, nil, ""},
		{"selectx /*vt+ ukForce=k */ * from t", nil, ""},
		{"", nil, ""},
	} {
		t.Run(c.query, func(t *testing.T) {
			d, err := ParseDirectives(c.query)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(d.UKColumns, c.cols) || d.UKForce != c.force {
				t.Errorf("got %q %q, want %q %q", d.UKColumns, d.UKForce, c.cols, c.force)
			}
			if d.Empty() != (len(c.cols) == 0 && c.force == "") {
				t.Errorf("Empty() = %v", d.Empty())
			}
		})
	}
}

func TestParseDirectivesErrors(t *testing.T) {
	for _, c := range []struct{ query, want string }{
		{`select /*vt+ ukColumns="a%zz" */ * from t`, "not URL-escaped"},
		{`select /*vt+ ukForce="a%" */ * from t`, "not URL-escaped"},
		{`select /*vt+ ukColumns="a,,b" */ * from t`, "empty column"},
		{`select /*vt+ ukForce="k" * from t`, "unterminated comment"},
	} {
		t.Run(c.query, func(t *testing.T) {
			_, err := ParseDirectives(c.query)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want an invalid filter error saying %q", err, c.want)
			}
		})
	}
}

// FuzzParseDirectives: any text is parsed without a panic, and what it yields holds no
// empty column name.
func FuzzParseDirectives(f *testing.F) {
	for _, s := range []string{
		`select /*vt+ ukColumns="uk1" ukForce="uk2" */ id from t1`,
		`select /*vt+ ukColumns=a%2Cb,c ukForce=x%20y */ * from t`,
		"/* a */ select /*vt+ */ /*vt+ k */ * from t",
		`select /*vt+ ukColumns="\x" */`,
		"select /*",
		"select",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		d, err := ParseDirectives(q)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("%q: error %v is not ErrInvalid", q, err)
			}
			return
		}
		if slices.Contains(d.UKColumns, "") {
			t.Fatalf("%q: empty column in %q", q, d.UKColumns)
		}
	})
}
