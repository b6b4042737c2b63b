package position

import (
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/google/uuid"
)

const (
	u1 = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
	u2 = "8c3e1a2b-0000-11ef-8000-000000000001"
	u3 = "f0000000-0000-0000-0000-000000000000"
)

func mustParse(t testing.TB, s string) Position {
	t.Helper()
	p, err := Parse(s)
	if err != nil {
		t.Fatalf("Parse(%q): %v", s, err)
	}
	return p
}

func TestFlavor(t *testing.T) {
	for _, tc := range []struct {
		f    Flavor
		name string
	}{
		{MariaDB, "mariadb"},
		{MySQL56, "mysql"},
	} {
		if got := tc.f.GoMySQL(); got != tc.name {
			t.Errorf("%s.GoMySQL() = %q, want %q", tc.f, got, tc.name)
		}
		got, err := FlavorFromGoMySQL(tc.name)
		if err != nil || got != tc.f {
			t.Errorf("FlavorFromGoMySQL(%q) = %q, %v; want %q", tc.name, got, err, tc.f)
		}
	}
	if got := Flavor("FilePos").GoMySQL(); got != "" {
		t.Errorf("unknown flavor GoMySQL() = %q, want empty", got)
	}
	if _, err := FlavorFromGoMySQL("postgres"); err == nil || !strings.Contains(err.Error(), `"postgres"`) {
		t.Errorf("FlavorFromGoMySQL(postgres) error = %v, want one naming the input", err)
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in, want string
	}{
		{"MariaDB/0-1-100", "MariaDB/0-1-100"},
		{"MariaDB/", "MariaDB/"},
		{"MariaDB/1-1-7,0-1-100", "MariaDB/0-1-100,1-1-7"},
		// Domains sort as numbers, not as text.
		{"MariaDB/10-1-5,2-1-3,1-1-9", "MariaDB/1-1-9,2-1-3,10-1-5"},
		// Several server ids in one domain, as @@gtid_binlog_state lists
		// them: the highest sequence number wins whatever the order.
		{"MariaDB/0-1-100,0-2-50", "MariaDB/0-1-100"},
		{"MariaDB/0-2-50,0-1-100", "MariaDB/0-1-100"},
		{"MariaDB/0-2-50,1-3-4,0-1-100,1-4-2", "MariaDB/0-1-100,1-3-4"},
		{"MariaDB/0-1-5,0-2-5", "MariaDB/0-1-5"},
		{"MariaDB/0-0-0", "MariaDB/0-0-0"},
		{"MariaDB/0-0-0,1-1-1", "MariaDB/0-0-0,1-1-1"},
		{"MariaDB/007-01-0100", "MariaDB/7-1-100"},
		{"MariaDB/4294967295-4294967295-18446744073709551615", "MariaDB/4294967295-4294967295-18446744073709551615"},
		{"  MariaDB/0-1-1,\n\t1-1-2 \n", "MariaDB/0-1-1,1-1-2"},

		{"MySQL56/", "MySQL56/"},
		{"MySQL56/" + u1 + ":1-5:7-9", "MySQL56/" + u1 + ":1-5:7-9"},
		{"MySQL56/" + u1 + ":7-9:1-5", "MySQL56/" + u1 + ":1-5:7-9"},
		{"MySQL56/" + u1 + ":1-5:6-9", "MySQL56/" + u1 + ":1-9"},
		{"MySQL56/" + u1 + ":1:2:3:5", "MySQL56/" + u1 + ":1-3:5"},
		{"MySQL56/" + u1 + ":1-5," + u1 + ":3-8", "MySQL56/" + u1 + ":1-8"},
		{"MySQL56/" + u1 + ":3", "MySQL56/" + u1 + ":3"},
		{"MySQL56/" + strings.ToUpper(u1) + ":1-5", "MySQL56/" + u1 + ":1-5"},
		{"MySQL56/" + u3 + ":1," + u2 + ":1-3," + u1 + ":1-5", "MySQL56/" + u1 + ":1-5," + u2 + ":1-3," + u3 + ":1"},
		{"MySQL56/" + u1 + ":1-5,\n" + u2 + ":1-3", "MySQL56/" + u1 + ":1-5," + u2 + ":1-3"},
		{"MySQL56/" + u1 + ":1-5:Blue:1-3:7", "MySQL56/" + u1 + ":1-5:blue:1-3:7"},
		{"MySQL56/" + u1 + ":red:4," + u1 + ":blue:2:1", "MySQL56/" + u1 + ":blue:1-2:red:4"},
		{"MySQL56/" + u1 + ":1-9223372036854775806", "MySQL56/" + u1 + ":1-9223372036854775806"},
	} {
		p, err := Parse(tc.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.in, err)
			continue
		}
		if got := p.String(); got != tc.want {
			t.Errorf("Parse(%q).String() = %q, want %q", tc.in, got, tc.want)
		}
		q, err := Parse(p.String())
		if err != nil || !q.Equal(p) || q.String() != p.String() {
			t.Errorf("round trip of %q: got %q, %v", tc.in, q, err)
		}
		if p.IsZero() {
			t.Errorf("Parse(%q).IsZero() = true", tc.in)
		}
	}
}

func TestParseErrors(t *testing.T) {
	long := "MariaDB/" + strings.Repeat("0-1-1,", 100) + "x"
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"", []string{"empty position", "want MariaDB/"}},
		{"0-1-5", []string{`position "0-1-5": missing flavor prefix; want MariaDB/<domain>-<server>-<seq>[,...], MySQL56/<uuid>:<interval>[,...] or FilePos/<binlog file>:<offset>`}},
		{u1 + ":1-5", []string{"missing flavor prefix", "MySQL56/<uuid>"}},
		{"mariadb/0-1-5", []string{`unknown flavor "mariadb"`, "want MariaDB/"}},
		{"MySQL/" + u1 + ":1", []string{`unknown flavor "MySQL"`}},
		{"filepos/binlog.000001:4", []string{`unknown flavor "filepos"`}},
		{"MariaDB/0-1", []string{`position "MariaDB/0-1"`, `GTID "0-1"`, "domain-server-sequence"}},
		{"MariaDB/0-1-x", []string{`GTID "0-1-x"`, "Sequence number (x)"}},
		{"MariaDB/0-1-2-3", []string{`GTID "0-1-2-3"`}},
		{"MariaDB/-1-1-1", []string{`GTID "-1-1-1"`}},
		{"MariaDB/0-1-+5", []string{`GTID "0-1-+5"`}},
		{"MariaDB/4294967296-1-1", []string{"Domain ID (4294967296)"}},
		{"MariaDB/0-4294967296-1", []string{"Server ID (4294967296)"}},
		{"MariaDB/0-1-18446744073709551616", []string{"Sequence number (18446744073709551616)"}},
		{"MariaDB/0-1-5,,1-1-1", []string{"GTID number 2 in the list is empty"}},
		{"MariaDB/0-1-5,", []string{"GTID number 2 in the list is empty"}},
		{"MariaDB/,", []string{"GTID number 1 in the list is empty"}},
		{"MariaDB/" + u1 + ":1-5", []string{"GTID"}},
		{long, []string{`"...: `, `GTID "x"`}},
		{"MySQL56/0-1-5", []string{`element "0-1-5": want <uuid>:<interval>`}},
		{"MySQL56/" + u1, []string{"want <uuid>:<interval>"}},
		{"MySQL56/" + u1 + ":", []string{`element "` + u1 + `:"`}},
		{"MySQL56/" + u1 + ":1x", []string{`element "` + u1 + `:1x"`, "not numeric"}},
		{"MySQL56/" + u1 + ":1-5:x", []string{`element "` + u1 + `:1-5:x"`}},
		{"MySQL56/" + u1 + ":-5", []string{`element "` + u1 + `:-5"`}},
		{"MySQL56/" + u1 + ":5-3", []string{`element "` + u1 + `:5-3"`, "end must >= start"}},
		{"MySQL56/" + u1 + ":0-5", []string{"uuid " + u1, "transaction number 0", "start at 1"}},
		{"MySQL56/" + u1 + ":0", []string{"transaction number 0"}},
		{"MySQL56/" + u1 + ":1-9223372036854775807", []string{"end must >= start"}},
		{"MySQL56/" + u1 + ":1-2-3", []string{"n[-n]"}},
		{"MySQL56/" + u1 + ":tag", []string{"missing interval for tag"}},
		{"MySQL56/" + u1 + ":1," + u1 + ":tag", []string{`element "` + u1 + `:tag"`, "missing interval for tag"}},
		{"MySQL56/" + u1 + ":1,," + u2 + ":1", []string{"empty element"}},
		{"MySQL56/" + u1 + ":1,", []string{"empty element"}},
		{"MySQL56/{" + u1 + "}:1", []string{`uuid "{` + u1 + `}" is not of the form`}},
		{"MySQL56/" + strings.ReplaceAll(u1, "-", "") + ":1", []string{"is not of the form"}},
		{"MySQL56/" + strings.Replace(u1, "3", "z", 1) + ":1", []string{"invalid UUID format"}},
		{"MySQL56/" + strings.Replace(u1, "-", "x", 1) + ":1", []string{"invalid UUID format"}},
	} {
		p, err := Parse(tc.in)
		if err == nil {
			t.Errorf("Parse(%q) = %q, want error", tc.in, p)
			continue
		}
		if !errors.Is(err, ErrBadPosition) {
			t.Errorf("Parse(%q) error %v does not wrap ErrBadPosition", tc.in, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("Parse(%q) error %q does not contain %q", tc.in, err, w)
			}
		}
		if len(err.Error()) > 500 {
			t.Errorf("Parse(%q) error is %d bytes long", tc.in, len(err.Error()))
		}
	}
}

func TestParseBody(t *testing.T) {
	for _, tc := range []struct {
		f        Flavor
		in, want string
	}{
		{MariaDB, "", "MariaDB/"},
		{MariaDB, "0-1-100,1-1-7", "MariaDB/0-1-100,1-1-7"},
		{MariaDB, "0-1-100, 1-1-7\n", "MariaDB/0-1-100,1-1-7"},
		{MySQL56, "", "MySQL56/"},
		{MySQL56, "\n", "MySQL56/"},
		{MySQL56, u2 + ":1-3,\n" + u1 + ":1-5:7-9\n", "MySQL56/" + u1 + ":1-5:7-9," + u2 + ":1-3"},
		{MySQL56, u1 + ":1-5,\r\n" + u2 + ":1-3", "MySQL56/" + u1 + ":1-5," + u2 + ":1-3"},
	} {
		p, err := ParseBody(tc.f, tc.in)
		if err != nil {
			t.Errorf("ParseBody(%s, %q): %v", tc.f, tc.in, err)
			continue
		}
		if p.Flavor != tc.f || p.String() != tc.want {
			t.Errorf("ParseBody(%s, %q) = %q, want %q", tc.f, tc.in, p, tc.want)
		}
	}

	for _, tc := range []struct {
		f    Flavor
		in   string
		want []string
	}{
		{"Oracle", "1", []string{`unknown flavor "Oracle"`, `"MariaDB"`, `"MySQL56"`}},
		{"", "0-1-1", []string{`unknown flavor ""`}},
		{MariaDB, "0-1-1,x", []string{`MariaDB GTID set "0-1-1,x"`, `GTID "x"`}},
		{MariaDB, "MariaDB/0-1-1", []string{`GTID "MariaDB/0-1-1"`}},
		{MySQL56, u1 + ":0", []string{"MySQL56 GTID set", "transaction number 0"}},
		{MySQL56, "MySQL56/" + u1 + ":1", []string{"MySQL56 GTID set", "is not of the form"}},
	} {
		_, err := ParseBody(tc.f, tc.in)
		if err == nil || !errors.Is(err, ErrBadPosition) {
			t.Errorf("ParseBody(%q, %q) error = %v, want one wrapping ErrBadPosition", tc.f, tc.in, err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("ParseBody(%q, %q) error %q does not contain %q", tc.f, tc.in, err, w)
			}
		}
	}
}

// The formatter is written for speed; it must agree with go-mysql's own.
func TestStringMatchesGoMySQL(t *testing.T) {
	for _, body := range []string{
		"",
		u1 + ":1-5:7-9",
		u1 + ":1-5," + u2 + ":3," + u3 + ":1-2:4-9223372036854775806",
		u1 + ":1-5:a:1:b_c:3-4," + u2 + ":x:2",
		u1 + ":b:1:a:2",
	} {
		p, err := ParseBody(MySQL56, body)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := p.String(), "MySQL56/"+p.GTIDSet.String(); got != want {
			t.Errorf("String() = %q, go-mysql says %q", got, want)
		}
	}
	p := mustParse(t, "MariaDB/3-1-4")
	if got, want := p.String(), "MariaDB/"+p.GTIDSet.String(); got != want {
		t.Errorf("String() = %q, go-mysql says %q", got, want)
	}
}

func TestZeroAndEmpty(t *testing.T) {
	var zero Position
	if !zero.IsZero() || zero.String() != "" {
		t.Errorf("zero Position: IsZero %v, String %q", zero.IsZero(), zero.String())
	}
	if c := zero.Clone(); !c.IsZero() {
		t.Errorf("zero.Clone() = %#v", c)
	}
	if got := (Position{Flavor: MariaDB}).String(); got != "MariaDB/" {
		t.Errorf("flavor-only position String() = %q", got)
	}
	if got := (Position{Flavor: MySQL56}).String(); got != "MySQL56/" {
		t.Errorf("flavor-only position String() = %q", got)
	}
	for _, s := range []string{"MariaDB/", "MySQL56/"} {
		empty := mustParse(t, s)
		if empty.IsZero() {
			t.Errorf("Parse(%q).IsZero() = true; an explicit empty set is not zero", s)
		}
		if !empty.Equal(zero) || !zero.Equal(empty) {
			t.Errorf("Parse(%q) and the zero Position are not Equal", s)
		}
		if !empty.Equal(Position{Flavor: empty.Flavor}) {
			t.Errorf("Parse(%q) is not Equal to a nil set of its flavor", s)
		}
		if !zero.Contains(empty) || !empty.Contains(zero) {
			t.Errorf("zero and Parse(%q) do not contain each other", s)
		}
	}
	if mustParse(t, "MariaDB/").Equal(mustParse(t, "MySQL56/")) {
		t.Error("empty positions of different flavors are Equal")
	}
}

func TestClone(t *testing.T) {
	for _, s := range []string{"MariaDB/0-1-5,1-1-3", "MySQL56/" + u1 + ":1-5"} {
		p := mustParse(t, s)
		c := p.Clone()
		alias := p
		gtid := "0-1-6"
		if p.Flavor == MySQL56 {
			gtid = u1 + ":6"
		}
		if err := c.Update(gtid); err != nil {
			t.Fatal(err)
		}
		if p.String() != s {
			t.Errorf("updating a clone changed the original to %q", p)
		}
		if err := p.Update(gtid); err != nil {
			t.Fatal(err)
		}
		if !alias.Equal(p) {
			t.Errorf("a plain copy does not share the set: %q vs %q", alias, p)
		}
		if !c.Equal(p) {
			t.Errorf("clone %q and original %q diverged", c, p)
		}
	}
}

func TestContainsEqual(t *testing.T) {
	for _, tc := range []struct {
		p, o            string
		contains, equal bool
	}{
		{"MariaDB/0-1-100", "MariaDB/0-1-100", true, true},
		{"MariaDB/0-1-100", "MariaDB/0-1-99", true, false},
		{"MariaDB/0-1-99", "MariaDB/0-1-100", false, false},
		// Server ids take no part in containment but do in equality.
		{"MariaDB/0-1-100", "MariaDB/0-2-100", true, false},
		{"MariaDB/0-1-100", "MariaDB/0-2-50", true, false},
		{"MariaDB/0-1-100,1-1-5", "MariaDB/0-1-100", true, false},
		{"MariaDB/0-1-100", "MariaDB/0-1-100,1-1-5", false, false},
		{"MariaDB/0-1-100,1-1-5", "MariaDB/1-1-5,0-1-7", true, false},
		{"MariaDB/0-1-100,1-1-5", "MariaDB/1-1-6,0-1-7", false, false},
		{"MariaDB/0-1-100", "MariaDB/1-1-0", false, false},
		{"MariaDB/0-1-100", "MariaDB/", true, false},
		{"MariaDB/", "MariaDB/", true, true},
		{"MariaDB/", "MariaDB/0-1-1", false, false},

		{"MySQL56/" + u1 + ":1-10", "MySQL56/" + u1 + ":3-5", true, false},
		{"MySQL56/" + u1 + ":1-10", "MySQL56/" + u1 + ":1-10", true, true},
		{"MySQL56/" + u1 + ":1-5:7-9", "MySQL56/" + u1 + ":5-7", false, false},
		{"MySQL56/" + u1 + ":1-5:7-9", "MySQL56/" + u1 + ":2:8-9", true, false},
		{"MySQL56/" + u1 + ":1-5:7-9", "MySQL56/" + u1 + ":1-5:7-9", true, true},
		{"MySQL56/" + u1 + ":1-5," + u2 + ":1-3", "MySQL56/" + u2 + ":1-3", true, false},
		{"MySQL56/" + u1 + ":1-5", "MySQL56/" + u1 + ":1-5," + u2 + ":1", false, false},
		{"MySQL56/" + u1 + ":1-5:t:1", "MySQL56/" + u1 + ":t:1", true, false},
		{"MySQL56/" + u1 + ":1-5", "MySQL56/" + u1 + ":t:1", false, false},
		{"MySQL56/" + u1 + ":1-5", "MySQL56/", true, false},

		{"MariaDB/0-1-100", "MySQL56/" + u1 + ":1", false, false},
		{"MySQL56/" + u1 + ":1", "MariaDB/0-1-1", false, false},
		{"MySQL56/", "MariaDB/", false, false},
	} {
		p, o := mustParse(t, tc.p), mustParse(t, tc.o)
		if got := p.Contains(o); got != tc.contains {
			t.Errorf("%q.Contains(%q) = %v, want %v", tc.p, tc.o, got, tc.contains)
		}
		if got := p.Equal(o); got != tc.equal {
			t.Errorf("%q.Equal(%q) = %v, want %v", tc.p, tc.o, got, tc.equal)
		}
		if got := o.Equal(p); got != tc.equal {
			t.Errorf("%q.Equal(%q) = %v, want %v", tc.o, tc.p, got, tc.equal)
		}
		if !p.Contains(p) || !p.Equal(p) {
			t.Errorf("%q does not contain or equal itself", tc.p)
		}
		if !p.Contains(Position{}) {
			t.Errorf("%q does not contain the zero Position", tc.p)
		}
	}
}

func TestUpdate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		start string
		gtids []string
		want  string
	}{
		{"mariadb next", "MariaDB/0-1-100", []string{"0-1-101", "0-1-102"}, "MariaDB/0-1-102"},
		{"mariadb domains", "MariaDB/0-1-100,1-1-7", []string{"1-1-8", "0-1-101", "2-3-1", "1-1-9"}, "MariaDB/0-1-101,1-1-9,2-3-1"},
		{"mariadb new primary", "MariaDB/0-1-100", []string{"0-2-101"}, "MariaDB/0-2-101"},
		{"mariadb lower sequence ignored", "MariaDB/0-1-100", []string{"0-2-90", "0-1-100"}, "MariaDB/0-1-100"},
		{"mariadb from empty", "MariaDB/", []string{"5-1-1", "0-1-3"}, "MariaDB/0-1-3,5-1-1"},
		{"mariadb from nil set", "", []string{"0-1-1"}, "MariaDB/0-1-1"},
		{"mariadb zero-seq domain", "MariaDB/0-0-0", []string{"0-1-1"}, "MariaDB/0-1-1"},

		{"mysql next", "MySQL56/" + u1 + ":1-5", []string{u1 + ":6", u1 + ":7"}, "MySQL56/" + u1 + ":1-7"},
		{"mysql gap", "MySQL56/" + u1 + ":1-5", []string{u1 + ":8"}, "MySQL56/" + u1 + ":1-5:8"},
		{"mysql fill gap", "MySQL56/" + u1 + ":1-5:7-9", []string{u1 + ":6"}, "MySQL56/" + u1 + ":1-9"},
		{"mysql before first", "MySQL56/" + u1 + ":5-9", []string{u1 + ":1", u1 + ":4"}, "MySQL56/" + u1 + ":1:4-9"},
		{"mysql already there", "MySQL56/" + u1 + ":1-5:7-9", []string{u1 + ":3", u1 + ":8", u1 + ":9"}, "MySQL56/" + u1 + ":1-5:7-9"},
		{"mysql uuids", "MySQL56/" + u1 + ":1-5", []string{u2 + ":1", u1 + ":6", u2 + ":2", u3 + ":10"}, "MySQL56/" + u1 + ":1-6," + u2 + ":1-2," + u3 + ":10"},
		{"mysql uppercase uuid", "MySQL56/" + u1 + ":1-5", []string{strings.ToUpper(u1) + ":6"}, "MySQL56/" + u1 + ":1-6"},
		{"mysql tagged", "MySQL56/" + u1 + ":1-5", []string{u1 + ":Tag:1", u1 + ":tag:2", u1 + ":6"}, "MySQL56/" + u1 + ":1-6:tag:1-2"},
		{"mysql from empty", "MySQL56/", []string{u1 + ":1"}, "MySQL56/" + u1 + ":1"},
		{"mysql from nil set", "", []string{u2 + ":3", u1 + ":1"}, "MySQL56/" + u1 + ":1," + u2 + ":3"},
		{"mysql largest", "MySQL56/" + u1 + ":1", []string{u1 + ":9223372036854775806"}, "MySQL56/" + u1 + ":1:9223372036854775806"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p Position
			if tc.start != "" {
				p = mustParse(t, tc.start)
			}
			for _, g := range tc.gtids {
				if err := p.Update(g); err != nil {
					t.Fatalf("Update(%q): %v", g, err)
				}
				one := Position{}
				if err := one.Update(g); err != nil {
					t.Fatal(err)
				}
				if !p.Contains(one) {
					t.Errorf("after Update(%q), %q does not contain it", g, p)
				}
			}
			if got := p.String(); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
			if q := mustParse(t, p.String()); !q.Equal(p) {
				t.Errorf("updated position %q does not round trip", p)
			}
		})
	}
}

// TestAddMariaDB: adding a GTID event's GTID does what Update does with its text, keeps
// clones apart, and allocates nothing once the domain is there.
func TestAddMariaDB(t *testing.T) {
	for _, tc := range []struct {
		start string
		gtids []string
	}{
		{"MariaDB/0-1-100", []string{"0-1-101", "0-1-102"}},
		{"MariaDB/0-1-100,1-1-7", []string{"1-1-8", "0-1-101", "2-3-1", "1-1-9"}},
		{"MariaDB/0-1-100", []string{"0-2-101"}},
		{"MariaDB/0-1-100", []string{"0-2-90", "0-1-100"}},
		{"MariaDB/", []string{"5-1-1", "0-1-3"}},
		{"", []string{"0-1-1"}},
		{"MariaDB/0-0-0", []string{"0-1-1"}},
	} {
		var byText, byEvent Position
		if tc.start != "" {
			byText, byEvent = mustParse(t, tc.start), mustParse(t, tc.start)
		}
		for _, g := range tc.gtids {
			if err := byText.Update(g); err != nil {
				t.Fatal(err)
			}
			gtid, err := mysql.ParseMariadbGTID(g)
			if err != nil {
				t.Fatal(err)
			}
			if err := byEvent.AddMariaDB(*gtid); err != nil {
				t.Fatalf("%q: AddMariaDB(%s): %v", tc.start, g, err)
			}
			if !byEvent.Equal(byText) || byEvent.String() != byText.String() || byEvent.Flavor != byText.Flavor {
				t.Errorf("%q + %s: AddMariaDB gives %q, Update %q", tc.start, g, byEvent, byText)
			}
		}
	}

	p := mustParse(t, "MariaDB/0-1-5,1-1-3")
	c := p.Clone()
	if err := c.AddMariaDB(mysql.MariadbGTID{DomainID: 0, ServerID: 1, SequenceNumber: 6}); err != nil {
		t.Fatal(err)
	}
	if p.String() != "MariaDB/0-1-5,1-1-3" || c.String() != "MariaDB/0-1-6,1-1-3" {
		t.Errorf("adding to a clone: original %q, clone %q", p, c)
	}

	seq := uint64(10)
	if n := testing.AllocsPerRun(100, func() {
		seq++
		if err := p.AddMariaDB(mysql.MariadbGTID{DomainID: 1, ServerID: 2, SequenceNumber: seq}); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("AddMariaDB allocates %v times per GTID", n)
	}
	if want := "MariaDB/0-1-5,1-2-" + strconv.FormatUint(seq, 10); p.String() != want {
		t.Errorf("after the additions %q, want %q", p, want)
	}

	for _, start := range []string{"MySQL56/" + u1 + ":1", "FilePos/binlog.000001:4"} {
		q := mustParse(t, start)
		if err := q.AddMariaDB(mysql.MariadbGTID{SequenceNumber: 1}); !errors.Is(err, ErrBadPosition) || q.String() != start {
			t.Errorf("AddMariaDB to %q: %v, position now %q", start, err, q)
		}
	}
}

// TestAddMySQL: adding a GTID event's source uuid, tag and number does what Update does with
// its text, and allocates nothing for the next number of a uuid.
func TestAddMySQL(t *testing.T) {
	type gtid struct {
		u   string
		tag string
		gno int64
	}
	for _, tc := range []struct {
		start string
		gtids []gtid
	}{
		{"MySQL56/" + u1 + ":1-5", []gtid{{u1, "", 6}, {u1, "", 7}}},
		{"MySQL56/" + u1 + ":1-5", []gtid{{u1, "", 8}}},
		{"MySQL56/" + u1 + ":1-5:7-9", []gtid{{u1, "", 6}, {u1, "", 3}}},
		{"MySQL56/" + u1 + ":1-5", []gtid{{u2, "", 1}, {u1, "", 6}, {u3, "", 10}}},
		{"MySQL56/" + u1 + ":1-5", []gtid{{u1, "tag", 1}, {u1, "tag", 2}, {u1, "", 6}}},
		{"MySQL56/", []gtid{{u1, "", 1}}},
		{"", []gtid{{u2, "", 3}, {u1, "", 1}}},
	} {
		var byText, byEvent Position
		if tc.start != "" {
			byText, byEvent = mustParse(t, tc.start), mustParse(t, tc.start)
		}
		for _, g := range tc.gtids {
			text := g.u + ":" + strconv.FormatInt(g.gno, 10)
			if g.tag != "" {
				text = g.u + ":" + g.tag + ":" + strconv.FormatInt(g.gno, 10)
			}
			if err := byText.Update(text); err != nil {
				t.Fatal(err)
			}
			if err := byEvent.AddMySQL(uuid.MustParse(g.u), mysql.NewTag(g.tag), g.gno); err != nil {
				t.Fatalf("%q: AddMySQL(%s): %v", tc.start, text, err)
			}
			if !byEvent.Equal(byText) || byEvent.String() != byText.String() || byEvent.Flavor != byText.Flavor {
				t.Errorf("%q + %s: AddMySQL gives %q, Update %q", tc.start, text, byEvent, byText)
			}
		}
	}

	p := mustParse(t, "MySQL56/"+u1+":1-5")
	id := uuid.MustParse(u1)
	gno := int64(5)
	if n := testing.AllocsPerRun(100, func() {
		gno++
		if err := p.AddMySQL(id, mysql.Tag{}, gno); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("AddMySQL allocates %v times per GTID", n)
	}
	if want := "MySQL56/" + u1 + ":1-" + strconv.FormatInt(gno, 10); p.String() != want {
		t.Errorf("after the additions %q, want %q", p, want)
	}

	for _, tc := range []struct {
		start string
		gno   int64
	}{{"MariaDB/0-1-1", 1}, {"MySQL56/" + u1 + ":1", 0}, {"MySQL56/" + u1 + ":1", math.MaxInt64}} {
		q := mustParse(t, tc.start)
		if err := q.AddMySQL(id, mysql.Tag{}, tc.gno); !errors.Is(err, ErrBadPosition) || q.String() != tc.start {
			t.Errorf("AddMySQL(%d) to %q: %v, position now %q", tc.gno, tc.start, err, q)
		}
	}
}

func TestUpdateErrors(t *testing.T) {
	for _, tc := range []struct {
		start, gtid string
		want        []string
	}{
		{"MariaDB/0-1-1", "", []string{"empty GTID"}},
		{"MariaDB/0-1-1", "0-1", []string{`MariaDB GTID "0-1"`}},
		{"MariaDB/0-1-1", "0-1-x", []string{"Sequence number (x)"}},
		{"MariaDB/0-1-1", "0-1-2,1-1-1", []string{`GTID "0-1-2,1-1-1"`}},
		{"MariaDB/0-1-1", u1 + ":5", []string{"MariaDB GTID"}},
		{"MySQL56/" + u1 + ":1", "0-1-2", []string{`MySQL56 GTID "0-1-2"`, "want <uuid>:<number>"}},
		{"MySQL56/" + u1 + ":1", u1 + ":0", []string{"transaction number 0 out of range"}},
		{"MySQL56/" + u1 + ":1", u1 + ":+5", []string{`"+5"`}},
		{"MySQL56/" + u1 + ":1", u1 + ":-5", []string{`"-5"`}},
		{"MySQL56/" + u1 + ":1", u1 + ":5-6", []string{`"5-6"`}},
		{"MySQL56/" + u1 + ":1", u1 + ":9223372036854775807", []string{"out of range"}},
		{"MySQL56/" + u1 + ":1", u1 + ":9223372036854775808", []string{"not a number in range"}},
		{"MySQL56/" + u1 + ":1", u1 + ":", []string{`""`}},
		{"MySQL56/" + u1 + ":1", strings.Replace(u1, "3", "z", 1) + ":5", []string{"invalid UUID format"}},
		{"MySQL56/" + u1 + ":1", "{" + u1[1:35] + "}:5", []string{"invalid UUID format"}},
		{"MySQL56/" + u1 + ":1", u1 + ":t:1:2", []string{"single transaction"}},
		{"MySQL56/" + u1 + ":1", u1 + ":t:0", []string{"out of range"}},
		{"MySQL56/" + u1 + ":1", u1 + ":t:1x", []string{"not numeric"}},
		{"", "nonsense", []string{`MariaDB GTID "nonsense"`}},
	} {
		var p Position
		if tc.start != "" {
			p = mustParse(t, tc.start)
		}
		before := p.String()
		err := p.Update(tc.gtid)
		if err == nil || !errors.Is(err, ErrBadPosition) {
			t.Errorf("%q.Update(%q) error = %v, want one wrapping ErrBadPosition", tc.start, tc.gtid, err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q.Update(%q) error %q does not contain %q", tc.start, tc.gtid, err, w)
			}
		}
		if p.String() != before {
			t.Errorf("failed Update(%q) changed %q to %q", tc.gtid, before, p)
		}
	}

	p := Position{Flavor: MariaDB, GTIDSet: &mysql.MysqlGTIDSet{}}
	if err := p.Update("0-1-1"); err == nil || !strings.Contains(err.Error(), "not a MariaDB GTID set") {
		t.Errorf("Update on a mismatched set: %v", err)
	}
}

func TestNormalized(t *testing.T) {
	p := mustParse(t, "MariaDB/0-2-50,0-1-100,1-1-3")
	n := p.Normalized()
	if n.String() != "MariaDB/0-1-100,1-1-3" || !n.Equal(p) {
		t.Errorf("Normalized() = %q", n)
	}
	if err := n.Update("1-1-4"); err != nil {
		t.Fatal(err)
	}
	if p.String() != "MariaDB/0-1-100,1-1-3" {
		t.Errorf("Normalized() shares its set with the original")
	}

	// A set assembled by hand may file a GTID under the wrong domain.
	hand := Position{Flavor: MariaDB, GTIDSet: &mysql.MariadbGTIDSet{Sets: map[uint32]*mysql.MariadbGTID{
		0: {DomainID: 0, ServerID: 1, SequenceNumber: 100},
		7: {DomainID: 0, ServerID: 2, SequenceNumber: 120},
		3: {DomainID: 3, ServerID: 9, SequenceNumber: 1},
		4: nil,
	}}}
	if got := hand.Normalized().String(); got != "MariaDB/0-2-120,3-9-1" {
		t.Errorf("Normalized() of a hand-built set = %q", got)
	}

	m := mustParse(t, "MySQL56/"+u1+":1-5")
	if got := m.Normalized(); got.GTIDSet != m.GTIDSet || got.Flavor != MySQL56 {
		t.Errorf("Normalized() of a MySQL56 position = %#v", got)
	}
	if got := (Position{}).Normalized(); !got.IsZero() {
		t.Errorf("Normalized() of the zero Position = %#v", got)
	}
}

func TestAhead(t *testing.T) {
	for _, tc := range []struct {
		p, server, want string
	}{
		{"MariaDB/0-1-100", "MariaDB/0-1-100", ""},
		{"MariaDB/0-1-100", "MariaDB/0-2-120", ""},
		{"MariaDB/0-1-120", "MariaDB/0-1-100", "domain 0 at sequence 120, server at 100"},
		{"MariaDB/0-1-120,1-1-5,2-1-9", "MariaDB/0-1-100,1-1-6", "domain 0 at sequence 120, server at 100; domain 2 at sequence 9, server has no GTID in that domain"},
		{"MariaDB/", "MariaDB/0-1-1", ""},
		{"MariaDB/0-1-1", "", "domain 0 at sequence 1, server has no GTID in that domain"},

		{"MySQL56/" + u1 + ":1-100", "MySQL56/" + u1 + ":1-120", ""},
		{"MySQL56/" + u1 + ":1-120", "MySQL56/" + u1 + ":1-100", "uuid " + u1 + ":101-120"},
		{"MySQL56/" + u1 + ":1-120," + u2 + ":1-3", "MySQL56/" + u1 + ":1-100:105", "uuid " + u1 + ":101-104:106-120; uuid " + u2 + ":1-3"},
		{"MySQL56/" + u1 + ":1-5:t:1-2", "MySQL56/" + u1 + ":1-5", "uuid " + u1 + ":t:1-2"},
		{"MySQL56/", "MySQL56/" + u1 + ":1", ""},

		{"MariaDB/0-1-1", "MySQL56/" + u1 + ":1", "position flavor MariaDB does not match server flavor MySQL56"},
	} {
		var p, server Position
		p = mustParse(t, tc.p)
		if tc.server != "" {
			server = mustParse(t, tc.server)
		}
		if got := Ahead(p, server); got != tc.want {
			t.Errorf("Ahead(%q, %q) = %q, want %q", tc.p, tc.server, got, tc.want)
		}
	}
}

func TestMissing(t *testing.T) {
	for _, tc := range []struct {
		p, purged, want string
	}{
		{"MariaDB/0-1-100", "MariaDB/0-1-40", ""},
		{"MariaDB/0-1-40", "MariaDB/0-1-40", ""},
		{"MariaDB/0-1-5", "MariaDB/0-1-40", "domain 0: position has sequence 5, oldest binlog starts at 0-1-40"},
		{"MariaDB/0-1-5,1-1-9", "MariaDB/0-2-40,1-1-3,2-1-7,3-1-0", "domain 0: position has sequence 5, oldest binlog starts at 0-2-40; domain 2: position has no GTID in it, oldest binlog starts at 2-1-7"},
		{"MariaDB/0-1-5", "MariaDB/", ""},
		{"MariaDB/0-1-5", "", ""},
		{"MariaDB/", "MariaDB/0-0-0", ""},

		{"MySQL56/" + u1 + ":1-100", "MySQL56/" + u1 + ":1-40", ""},
		{"MySQL56/" + u1 + ":50-100", "MySQL56/" + u1 + ":1-40", u1 + ":1-40"},
		{"MySQL56/" + u1 + ":1-10:20-100", "MySQL56/" + u1 + ":1-40," + u2 + ":1-2", u1 + ":11-19," + u2 + ":1-2"},
		{"MySQL56/", "MySQL56/" + u1 + ":1-3", u1 + ":1-3"},

		{"MySQL56/" + u1 + ":1", "MariaDB/0-1-1", "position flavor MySQL56 does not match server flavor MariaDB"},
	} {
		var purged Position
		p := mustParse(t, tc.p)
		if tc.purged != "" {
			purged = mustParse(t, tc.purged)
		}
		if got := Missing(p, purged); got != tc.want {
			t.Errorf("Missing(%q, %q) = %q, want %q", tc.p, tc.purged, got, tc.want)
		}
	}
	if got := Missing(Position{}, mustParse(t, "MariaDB/0-1-3")); got != "domain 0: position has no GTID in it, oldest binlog starts at 0-1-3" {
		t.Errorf("Missing(zero, ...) = %q", got)
	}
}

func TestSubtractIntervals(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	random := func() (mysql.IntervalSlice, map[int64]bool) {
		var s mysql.IntervalSlice
		in := map[int64]bool{}
		for range r.IntN(5) {
			a := 1 + r.Int64N(40)
			b := a + 1 + r.Int64N(6)
			s = append(s, mysql.Interval{Start: a, Stop: b})
			for x := a; x < b; x++ {
				in[x] = true
			}
		}
		return s.Normalize(), in
	}
	for range 5000 {
		a, ina := random()
		b, inb := random()
		got := subtractIntervals(a, b)
		for x := int64(0); x < 60; x++ {
			want := ina[x] && !inb[x]
			if got.Contain(mysql.IntervalSlice{{Start: x, Stop: x + 1}}) != want {
				t.Fatalf("%v minus %v = %v, wrong at %d", a, b, got, x)
			}
		}
		if n := got.Normalize(); !n.Equal(got) && len(got) > 0 {
			t.Fatalf("%v minus %v = %v, not normalized", a, b, got)
		}
	}
}

func BenchmarkUpdateString(b *testing.B) {
	const ring = 1 << 14
	for _, tc := range []struct {
		name  string
		start string
		gtid  func(i int) string
	}{
		{"MariaDB", "MariaDB/0-1-1000,1-1-5,2-1-9", func(i int) string {
			return "0-1-" + strconv.Itoa(1001+i)
		}},
		{"MySQL56", "MySQL56/" + u1 + ":1-1000," + u2 + ":1-5," + u3 + ":1-9", func(i int) string {
			return u1 + ":" + strconv.Itoa(1001+i)
		}},
	} {
		gtids := make([]string, ring)
		for i := range gtids {
			gtids[i] = tc.gtid(i)
		}
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			p := mustParse(b, tc.start)
			for i := 0; i < b.N; i++ {
				if i%ring == 0 && i > 0 {
					b.StopTimer()
					p = mustParse(b, tc.start)
					b.StartTimer()
				}
				if err := p.Update(gtids[i%ring]); err != nil {
					b.Fatal(err)
				}
				if p.String() == "" {
					b.Fatal("empty")
				}
			}
		})
	}
}

func TestCut(t *testing.T) {
	for _, tc := range []struct {
		in, body string
		flavor   Flavor
		ok       bool
	}{
		{"MariaDB/0-1-5", "0-1-5", MariaDB, true},
		{"MySQL56/3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5", "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5", MySQL56, true},
		{"FilePos/binlog.000003:1234", "binlog.000003:1234", FilePos, true},
		{"MariaDB/", "", MariaDB, true},
		{"0-1-5", "0-1-5", "", false},
		{"Postgres/0/1", "Postgres/0/1", "", false},
		{"MariaDB", "MariaDB", "", false},
		{"", "", "", false},
	} {
		f, body, ok := Cut(tc.in)
		if f != tc.flavor || body != tc.body || ok != tc.ok {
			t.Errorf("Cut(%q) = %q, %q, %v; want %q, %q, %v", tc.in, f, body, ok, tc.flavor, tc.body, tc.ok)
		}
		if got := Bare(tc.in); got != tc.body {
			t.Errorf("Bare(%q) = %q, want %q", tc.in, got, tc.body)
		}
	}
}
