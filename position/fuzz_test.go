package position

import (
	"errors"
	"testing"
)

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"",
		"MariaDB/",
		"MySQL56/",
		"MariaDB/0-1-100,1-1-7",
		"MariaDB/0-2-50,0-1-100,10-3-1",
		"MariaDB/0-0-0",
		"MariaDB/0-1-5,,",
		"MySQL56/" + u1 + ":1-5:7-9," + u2 + ":1-3",
		"MySQL56/" + u1 + ":1-5:tag:1-3",
		"MySQL56/" + u1 + ":1-5,\n" + u2 + ":6-9223372036854775806",
		"MySQL56/" + u1 + ":0",
		"0-1-5",
		"FilePos/mysql-bin.000003:1234",
		"FilePos/mysql-bin.000003:0x10",
		"FilePos/a:b:4",
		"FilePos/mysql-bin.3:18446744073709551615",
		"FilePos/:4",
		"FilePos/",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := Parse(s)
		if err != nil {
			if !errors.Is(err, ErrBadPosition) {
				t.Fatalf("Parse(%q) error %v does not wrap ErrBadPosition", s, err)
			}
			return
		}
		text := p.String()
		q, err := Parse(text)
		if err != nil {
			t.Fatalf("Parse(%q) gave %q, which does not parse: %v", s, text, err)
		}
		if !q.Equal(p) || !p.Equal(q) {
			t.Fatalf("Parse(%q) gave %q, which parses to %q", s, text, q)
		}
		if q.String() != text {
			t.Fatalf("String() is not canonical: %q then %q", text, q.String())
		}
		if !p.Contains(q) || Ahead(p, q) != "" || Missing(p, q) != "" {
			t.Fatalf("%q does not cover itself", text)
		}
		if n := p.Normalized(); !n.Equal(p) {
			t.Fatalf("Normalized(%q) = %q", text, n)
		}
	})
}
