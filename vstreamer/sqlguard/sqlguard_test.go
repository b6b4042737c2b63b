package sqlguard

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckSelectTables(t *testing.T) {
	got, err := CheckSelect("with c as (select id from t1) select * from c join app.t2 using (id) where x in (select x from T3)", "app")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, " ") != "T3 t1 t2" {
		t.Errorf("tables %v, want T3 t1 t2", got)
	}
}

func TestCheckSelect(t *testing.T) {
	cases := []struct {
		sql  string
		want string // "" accepted, else part of the refusal
	}{
		{"select id, val from t1 order by id", ""},
		{"SELECT * FROM app.t1 WHERE id IN (SELECT id FROM t2)", ""},
		{"select a from t1 union all select b from t2", ""},
		{"with c as (select id from t1) select * from c join t2 using (id)", ""},
		{"select count(*), max(v) from t1 group by k having count(*) > 1;", ""},
		{"select now(), concat(a, 'x'), json_extract(j, '$.a') from t1", ""},
		{"delete from t1", "not a SELECT"},
		{"insert into t1 select * from t2", "not a SELECT"},
		{"update t1 set a = 1", "not a SELECT"},
		{"drop table t1", "not a SELECT"},
		{"set global read_only = 0", "not a SELECT"},
		{"select 1; delete from t1", "2 statements"},
		{"select * from mysql.user", "table mysql.user is outside app"},
		{"select * from t1 join other.t2 using (id)", "table other.t2 is outside app"},
		{"select * from t1 where id in (select id from information_schema.tables)", "outside app"},
		{"select * from t1 into outfile '/tmp/x'", "INTO"},
		{"select id into @a from t1", "INTO"},
		{"select * from t1 for update", "locking read"},
		{"select * from t1 lock in share mode", "locking read"},
		{"select sleep(10)", "function sleep"},
		{"select * from t1 where benchmark(1000000000, md5('x'))", "function benchmark"},
		{"select load_file('/etc/passwd')", "function load_file"},
		{"select get_lock('x', 10)", "function get_lock"},
		{"select nextval(seq)", "function nextval"},
		{"select other.f(id) from t1", "function other.f is outside app"},
		{"select app.f(id) from t1", ""},
		{"select * from", "only one SELECT"},
		{"select * from t\xdf", "not valid UTF-8"},
		{"select " + strings.Repeat("9", 90) + " from t1", "could not be parsed"},
	}
	for _, c := range cases {
		_, err := CheckSelect(c.sql, "app")
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: refused: %v", c.sql, err)
		case c.want != "" && (err == nil || !errors.Is(err, ErrNotAllowed) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: got %v, want a refusal saying %q", c.sql, err, c.want)
		case err != nil && !strings.Contains(err.Error(), "only one SELECT reading tables of app is allowed"):
			t.Errorf("%s: %v does not say what is allowed", c.sql, err)
		}
	}
}

// FuzzCheckSelect: any text is accepted or refused with ErrNotAllowed, never a panic, and an
// accepted query reads only tables it names.
func FuzzCheckSelect(f *testing.F) {
	for _, s := range []string{
		"select id, val from t1 order by id", "select * from app.t1 where id in (select id from t2)",
		"with c as (select 1) select * from c", "select sleep(1)", "select * from t for update",
		"select 1; drop table t", "select * from mysql.user", "select load_file('/x') into outfile '/y'",
		"select (select max(a) from other.t) from t1", "", "select", "select 'a;b' from `t``q`",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		tables, err := CheckSelect(sql, "app")
		if err != nil {
			if !errors.Is(err, ErrNotAllowed) {
				t.Fatalf("%q: %v does not wrap ErrNotAllowed", sql, err)
			}
			return
		}
		for _, tb := range tables {
			// A backtick inside a quoted name is written twice.
			if !strings.Contains(strings.ToLower(sql), strings.ToLower(strings.ReplaceAll(tb, "`", "``"))) {
				t.Fatalf("%q: table %q is not in the query", sql, tb)
			}
		}
	})
}
