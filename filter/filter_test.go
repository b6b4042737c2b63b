package filter

import (
	"errors"
	"strings"
	"testing"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
)

func TestTable(t *testing.T) {
	f, err := New(&binlogdata.Filter{Rules: []*binlogdata.Rule{
		{Match: "secret", Filter: "exclude"},
		{Match: "/^sec"},
		{Match: "orders"},
		{Match: "/log$/", Filter: "EXCLUDE"},
		{Match: "/t"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]bool{"secret": false, "second": true, "orders": true, "applog": false, "cat": true, "xyz": false}
	for table, want := range cases {
		if got := f.Table(table) != nil; got != want {
			t.Errorf("Table(%q) streamed = %v, want %v", table, got, want)
		}
	}
	if all := All(); all.Table("anything") == nil {
		t.Error("an empty filter must stream every table")
	}
}

func TestInvalid(t *testing.T) {
	cases := []struct {
		rule *binlogdata.Rule
		msg  string
	}{
		{&binlogdata.Rule{}, "match is empty"},
		{&binlogdata.Rule{Match: "/a(("}, "bad regular expression"},
		{&binlogdata.Rule{Match: "t", Filter: "select a from t where"}, "syntax error at position 22"},
		{&binlogdata.Rule{Match: "t", Filter: "select a from t where a = 1 or b = 2"}, "unsupported constraint: a = 1 or b = 2"},
		{&binlogdata.Rule{Match: "t", Filter: "select a from u"}, "unsupported: select expression table u does not match the table entry name t"},
		{&binlogdata.Rule{Match: "/t", Filter: "select a from t"}, "a /regex rule takes"},
		{&binlogdata.Rule{Match: "/t", Filter: "80-40"}, `malformed spec: shard limits should be in order: "80-40"`},
	}
	for _, c := range cases {
		_, err := New(&binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "ok"}, c.rule}})
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.msg) || !strings.Contains(err.Error(), "rule 2") {
			t.Errorf("rule %v: err = %v, want ErrInvalid naming rule 2 and %q", c.rule, err, c.msg)
		}
	}
}

func TestBestEffort(t *testing.T) {
	f, _ := New(&binlogdata.Filter{FieldEventMode: binlogdata.Filter_BEST_EFFORT})
	if !f.BestEffort() {
		t.Error("BEST_EFFORT lost")
	}
}
