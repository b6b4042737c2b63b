package sqltypes

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func mustCollation(t testing.TB, id uint32) *Collation {
	t.Helper()
	c, err := CollationOf(id)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCollationCompare(t *testing.T) {
	for _, tc := range []struct {
		id   uint32
		a, b string
		want int
	}{
		{45, "newton", "Ñewton", 0},
		{45, "newton", "neẅton", 0},
		{45, "newton", "nEwton", 0},
		{45, "newton", "newtons", -1},
		{45, "a", "a  ", 0},                      // PAD SPACE
		{45, "a\t", "a", -1},                     // a tab sorts before the padding
		{45, "a", "aé", -1},                      // a letter after it
		{45, "😀", "😺", 0},                        // outside the basic plane: one weight
		{45, "ß", "s", 0},                        // general_ci: ß = s
		{45, "\xed\x9f\xbf", "\xed\xa0\x80", -1}, // a surrogate (MariaDB stores them) after U+D7FF
		{45, "\xed\xa0\x80", "\xee\x80\x80", -1}, // and before U+E000
		{45, "\xed\xa0\x80", "\xed\xa0\x81", -1},
		{46, "a", "A", 1},       // _bin: code points
		{46, "a ", "a", 0},      // utf8mb4_bin pads
		{1070, "a ", "a", 1},    // utf8mb4_nopad_bin does not
		{1069, "A ", "a", 1},    // nor general_nopad_ci
		{1069, "A", "a", 0},     //
		{33, "Ä", "a", 0},       //
		{63, "a ", "a", 1},      // binary: bytes
		{63, "A", "a", -1},      //
		{8, "\xe4", "a", 1},     // latin1_swedish_ci: ä after z
		{8, "\xe4", "\xc4", 0},  // ä = Ä
		{5, "\xe4", "a", 0},     // latin1_german1_ci: ä = a
		{47, "\xe4", "\xc4", 1}, // latin1_bin
		{11, "abc", "ABC ", 0},  // ascii_general_ci
		{1035, "abc", "ABC ", -1},
	} {
		c := mustCollation(t, tc.id)
		a, err := c.FromUTF8(tc.a)
		if err != nil || c.Charset == "latin1" {
			a = []byte(tc.a)
		}
		b, err := c.FromUTF8(tc.b)
		if err != nil || c.Charset == "latin1" {
			b = []byte(tc.b)
		}
		if got := c.Compare(a, b); got != tc.want {
			t.Errorf("%s: compare(%q, %q) = %d, want %d", c.Name, tc.a, tc.b, got, tc.want)
		}
		if got := c.Compare(b, a); got != -tc.want {
			t.Errorf("%s: compare(%q, %q) = %d, want %d", c.Name, tc.b, tc.a, got, -tc.want)
		}
	}
}

func TestCollationRefused(t *testing.T) {
	for id, name := range map[uint32]string{224: "utf8mb4_unicode_ci", 31: "latin1_german2_ci", 2305: "collation 2305 (utf8mb4)", 9999: "collation 9999"} {
		_, err := CollationOf(id)
		if !errors.Is(err, ErrCollation) || !strings.Contains(err.Error(), name) {
			t.Errorf("collation %d: %v, want ErrCollation naming %s", id, err, name)
		}
	}
}

func TestFromUTF8(t *testing.T) {
	for _, tc := range []struct {
		id   uint32
		in   string
		want string
		ok   bool
	}{
		{8, "é€", "\xe9\x80", true},
		{8, "ĉ", "", false},
		{11, "é", "", false},
		{33, "😀", "", false},
		{45, "😀", "😀", true},
		{45, "\xff", "", false},
		{63, "\xff", "\xff", true},
	} {
		got, err := mustCollation(t, tc.id).FromUTF8(tc.in)
		if (err == nil) != tc.ok || tc.ok && string(got) != tc.want {
			t.Errorf("collation %d: FromUTF8(%q) = %q, %v", tc.id, tc.in, got, err)
		}
	}
}

func TestCompareAllocs(t *testing.T) {
	pairs := [][2]string{{"Ñewton  ", "newton"}, {"😀a", "😺A\xff"}, {"abc", "abd"}}
	for id := range supported {
		c := mustCollation(t, id)
		if n := testing.AllocsPerRun(100, func() {
			for _, p := range pairs {
				c.Compare([]byte(p[0]), []byte(p[1]))
			}
		}); n != 0 {
			t.Errorf("%s: %v allocations a run", c.Name, n)
		}
	}
}

func TestCompareDecimal(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"1.50", "1.5", 0}, {"-0", "0", 0}, {"-0.00", "+0", 0}, {"10", "9.99", 1}, {"-10", "-9", -1},
		{"007", "7.0", 0}, {"0.001", "0.01", -1}, {"-1.5", "1", -1}, {"123456789012345678901234567890", "123456789012345678901234567891", -1},
	} {
		if got := CompareDecimal([]byte(tc.a), []byte(tc.b)); got != tc.want {
			t.Errorf("CompareDecimal(%s, %s) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestTemporalKeys(t *testing.T) {
	date, _ := DateTimeKey([]byte("2020-01-02"))
	midnight, _ := DateTimeKey([]byte("2020-01-02 00:00:00"))
	later, _ := DateTimeKey([]byte("2020-01-02 00:00:00.000001"))
	zero, _ := DateTimeKey([]byte("0000-00-00"))
	if date != midnight || later <= midnight || zero >= date {
		t.Errorf("keys: date %d midnight %d later %d zero %d", date, midnight, later, zero)
	}
	neg, _ := TimeKey([]byte("-838:59:59"))
	pos, _ := TimeKey([]byte("12:00:00.5"))
	if neg >= pos {
		t.Errorf("time keys %d >= %d", neg, pos)
	}
	if BitValue([]byte{1, 0}) != 256 {
		t.Error("BitValue")
	}
}

// FuzzCollationCompare checks that every supported collation is an order on any bytes:
// antisymmetric, equal to itself, never panicking, and that binary is bytes.Compare.
func FuzzCollationCompare(f *testing.F) {
	f.Add([]byte("newton"), []byte("Ñewton "), []byte("a\t"))
	f.Add([]byte("\xf0\x9f\x98"), []byte("\xed\xa0\x80"), []byte("\xe4"))
	ids := make([]uint32, 0, len(supported))
	for id := range supported {
		ids = append(ids, id)
	}
	f.Fuzz(func(t *testing.T, a, b, c []byte) {
		for _, id := range ids {
			coll := mustCollation(t, id)
			ab, ba := coll.Compare(a, b), coll.Compare(b, a)
			if ab != -ba || coll.Compare(a, a) != 0 {
				t.Fatalf("%s: %q vs %q: %d and %d", coll.Name, a, b, ab, ba)
			}
			if ab <= 0 && coll.Compare(b, c) <= 0 && coll.Compare(a, c) > 0 {
				t.Fatalf("%s: not transitive: %q <= %q <= %q", coll.Name, a, b, c)
			}
			if id == 63 && ab != bytes.Compare(a, b) {
				t.Fatalf("binary: %q vs %q", a, b)
			}
		}
	})
}

func BenchmarkCollationCompare(b *testing.B) {
	x, y := []byte("Ñewton lives at 12, Rue de l'Université  "), []byte("newton lives at 12, rue de l'universite")
	for _, id := range []uint32{63, 8, 45, 46} {
		c := mustCollation(b, id)
		b.Run(c.Name, func(b *testing.B) {
			for b.Loop() {
				c.Compare(x, y)
			}
		})
	}
}
