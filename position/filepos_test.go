package position

import (
	"errors"
	"strings"
	"testing"
)

func TestParseFilePos(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		file     string
		pos      uint64
	}{
		{"FilePos/mysql-bin.000003:1234", "FilePos/mysql-bin.000003:1234", "mysql-bin.000003", 1234},
		{"  FilePos/binlog.000001:4\n", "FilePos/binlog.000001:4", "binlog.000001", 4},
		{"FilePos/mysql-bin.000003:0001234", "FilePos/mysql-bin.000003:1234", "mysql-bin.000003", 1234},
		{"FilePos/relay.9:18446744073709551615", "FilePos/relay.9:18446744073709551615", "relay.9", 18446744073709551615},
		{"FilePos/noext:0", "FilePos/noext:0", "noext", 0},
	} {
		p, err := Parse(tc.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.in, err)
			continue
		}
		if got := p.String(); got != tc.want {
			t.Errorf("Parse(%q) = %q, want %q", tc.in, got, tc.want)
		}
		file, pos, ok := p.FilePos()
		if !ok || file != tc.file || pos != tc.pos || p.Flavor != FilePos {
			t.Errorf("Parse(%q).FilePos() = %q, %d, %v (flavor %q)", tc.in, file, pos, ok, p.Flavor)
		}
		if !p.Equal(NewFilePos(tc.file, tc.pos)) {
			t.Errorf("Parse(%q) is not NewFilePos(%q, %d)", tc.in, tc.file, tc.pos)
		}
	}
	if _, _, ok := mustParse(t, "MariaDB/0-1-1").FilePos(); ok {
		t.Error("a MariaDB position has a file position")
	}
}

func TestParseFilePosErrors(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
	}{
		{"FilePos/", "empty file position; want FilePos/<binlog file>:<offset>"},
		{"FilePos/mysql-bin.000003", "no ':' between file and offset"},
		{"FilePos/:4", "empty binlog file name"},
		{"FilePos/a:b:4", "more than one ':'"},
		{"FilePos/mysql-bin.000003:", `offset "" is not a number`},
		{"FilePos/mysql-bin.000003:0x10", `offset "0x10" is not a number`},
		{"FilePos/mysql-bin.000003:-4", `offset "-4" is not a number`},
		{"FilePos/mysql-bin.000003:+4", `offset "+4" is not a number`},
		{"FilePos/mysql-bin.000003:18446744073709551616", "not a number in range"},
		{"FilePos/my bin.1:4", `binlog file name "my bin.1" holds ' '`},
		{"FilePos/a,b.1:4", `holds ','`},
		{"FilePos/a\x00.1:4", `holds '\x00'`},
	} {
		p, err := Parse(tc.in)
		if err == nil {
			t.Errorf("Parse(%q) = %q, want error", tc.in, p)
			continue
		}
		if !errors.Is(err, ErrBadPosition) {
			t.Errorf("Parse(%q) error %v does not wrap ErrBadPosition", tc.in, err)
		}
		if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "position ") {
			t.Errorf("Parse(%q) error %q does not contain %q", tc.in, err, tc.want)
		}
	}
}

func TestCompareFiles(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"mysql-bin.000003", "mysql-bin.000003", 0},
		{"mysql-bin.000003", "mysql-bin.000004", -1},
		{"mysql-bin.000010", "mysql-bin.000009", 1},
		// The server widens the number past 999999: it still orders by number.
		{"mysql-bin.999999", "mysql-bin.1000000", -1},
		{"mysql-bin.1000000", "mysql-bin.999999", 1},
		// Same number written with another width: ordered, but not equal.
		{"mysql-bin.01", "mysql-bin.1", -1},
		// Other names, or names without a numeric extension, order as text.
		{"a-bin.000009", "b-bin.000001", -1},
		{"mysql-bin.x", "mysql-bin.y", -1},
		{"mysql-bin.", "mysql-bin.1", -1},
	} {
		if got := CompareFiles(tc.a, tc.b); got != tc.want {
			t.Errorf("CompareFiles(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
		if got := CompareFiles(tc.b, tc.a); got != -tc.want {
			t.Errorf("CompareFiles(%q, %q) = %d, want %d", tc.b, tc.a, got, -tc.want)
		}
	}
}

func TestFilePosContainsEqual(t *testing.T) {
	for _, tc := range []struct {
		p, o            string
		contains, equal bool
	}{
		{"FilePos/mysql-bin.000003:1234", "FilePos/mysql-bin.000003:1234", true, true},
		{"FilePos/mysql-bin.000003:1234", "FilePos/mysql-bin.000003:1000", true, false},
		{"FilePos/mysql-bin.000003:1000", "FilePos/mysql-bin.000003:1234", false, false},
		{"FilePos/mysql-bin.000004:4", "FilePos/mysql-bin.000003:99999", true, false},
		{"FilePos/mysql-bin.000003:99999", "FilePos/mysql-bin.000004:4", false, false},
		{"FilePos/mysql-bin.000010:4", "FilePos/mysql-bin.000009:4", true, false},
		// Positions of other flavors contain nothing of each other.
		{"FilePos/mysql-bin.000003:1234", "MariaDB/0-1-1", false, false},
		{"MariaDB/0-1-1", "FilePos/mysql-bin.000003:1234", false, false},
	} {
		p, o := mustParse(t, tc.p), mustParse(t, tc.o)
		if got := p.Contains(o); got != tc.contains {
			t.Errorf("%q.Contains(%q) = %v, want %v", tc.p, tc.o, got, tc.contains)
		}
		if got := p.Equal(o); got != tc.equal {
			t.Errorf("%q.Equal(%q) = %v, want %v", tc.p, tc.o, got, tc.equal)
		}
	}
	if !mustParse(t, "FilePos/b.1:4").Contains(Position{}) {
		t.Error("a file position does not contain the zero position")
	}
}

func TestFilePosUpdateClone(t *testing.T) {
	p := NewFilePos("mysql-bin.000003", 4)
	snap := p.Clone()
	if err := p.Update("mysql-bin.000004:120"); err != nil {
		t.Fatal(err)
	}
	if got := p.String(); got != "FilePos/mysql-bin.000004:120" {
		t.Errorf("after Update: %q", got)
	}
	if got := snap.String(); got != "FilePos/mysql-bin.000003:4" {
		t.Errorf("Clone shares the place: %q", got)
	}
	err := p.Update("0-1-5")
	if err == nil || !errors.Is(err, ErrBadPosition) || p.String() != "FilePos/mysql-bin.000004:120" {
		t.Errorf("Update with a GTID: %v, position %q", err, p)
	}
	if n := p.Normalized(); !n.Equal(p) {
		t.Errorf("Normalized = %q", n)
	}
}

func TestFilePosAheadMissing(t *testing.T) {
	for _, tc := range []struct {
		p, server, want string
	}{
		{"FilePos/mysql-bin.000003:1234", "FilePos/mysql-bin.000003:1234", ""},
		{"FilePos/mysql-bin.000002:99999", "FilePos/mysql-bin.000003:4", ""},
		{"FilePos/mysql-bin.000003:2000", "FilePos/mysql-bin.000003:1234", "file position mysql-bin.000003:2000 is past the server's mysql-bin.000003:1234"},
		{"FilePos/mysql-bin.000004:4", "FilePos/mysql-bin.000003:1234", "file position mysql-bin.000004:4 is past the server's mysql-bin.000003:1234"},
		{"FilePos/mysql-bin.000004:4", "MariaDB/0-1-1", "position flavor FilePos does not match server flavor MariaDB"},
	} {
		if got := Ahead(mustParse(t, tc.p), mustParse(t, tc.server)); got != tc.want {
			t.Errorf("Ahead(%q, %q) = %q, want %q", tc.p, tc.server, got, tc.want)
		}
	}
	for _, tc := range []struct {
		p, oldest, want string
	}{
		{"FilePos/mysql-bin.000003:1234", "FilePos/mysql-bin.000003:4", ""},
		{"FilePos/mysql-bin.000004:4", "FilePos/mysql-bin.000003:4", ""},
		{"FilePos/mysql-bin.000002:1234", "FilePos/mysql-bin.000003:4", "binlog mysql-bin.000002 is purged, the oldest binlog is mysql-bin.000003"},
	} {
		if got := Missing(mustParse(t, tc.p), mustParse(t, tc.oldest)); got != tc.want {
			t.Errorf("Missing(%q, %q) = %q, want %q", tc.p, tc.oldest, got, tc.want)
		}
	}
}
