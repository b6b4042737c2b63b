package sqltypes

import (
	"reflect"
	"testing"
)

func TestLabels(t *testing.T) {
	cases := map[string][]string{
		"enum('a','b')":             {"a", "b"},
		"set('x','it''s','')":       {"x", "it's", ""},
		"enum('with,comma','z')":    {"with,comma", "z"},
		`enum('back\\slash','q\'')`: {`back\slash`, "q'"},
		"enum('')":                  {""},
		"int(11)":                   nil,
		"enum":                      nil,
	}
	for in, want := range cases {
		if got := Labels(in); !reflect.DeepEqual(got, want) {
			t.Errorf("Labels(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestEnumIndex(t *testing.T) {
	labels := []string{"small", "medium", "large"}
	for cell, want := range map[string]int{"small": 1, "large": 3, "": 0, "huge": 0, "Small": 0} {
		if got := EnumIndex(labels, []byte(cell)); got != want {
			t.Errorf("EnumIndex(%q) = %d, want %d", cell, got, want)
		}
	}
}

// TestSetMask reads SET cells into bitmasks. The StreamSets encoder kept its own reading,
// which dropped an empty member after the last comma ("x," of set('x',”) was 1, not 3).
func TestSetMask(t *testing.T) {
	labels := []string{"x", "y", "z"}
	for cell, want := range map[string]uint64{"": 0, "x": 1, "y,z": 6, "x,y,z": 7, "z,x": 5, "w": 0, "x,w": 1} {
		if got := SetMask(labels, []byte(cell)); got != want {
			t.Errorf("SetMask(%q) = %d, want %d", cell, got, want)
		}
	}
	withEmpty := []string{"x", ""}
	for cell, want := range map[string]uint64{"": 0, "x": 1, "x,": 3, ",": 2} {
		if got := SetMask(withEmpty, []byte(cell)); got != want {
			t.Errorf("set('x',''): SetMask(%q) = %d, want %d", cell, got, want)
		}
	}
	var top []string
	for i := range 64 {
		top = append(top, string(rune('A'+i)))
	}
	if got := SetMask(top, []byte(top[63])); got != 1<<63 {
		t.Errorf("64th member: %#x", got)
	}
	cell := []byte("x,z")
	if n := testing.AllocsPerRun(100, func() { SetMask(labels, cell) }); n != 0 {
		t.Errorf("%v allocations, want 0", n)
	}
}

// TestCompareEnumSet orders ENUM cells by member number and SET cells by bitmask, which is
// how the server's ORDER BY orders them, whatever the labels' alphabetical order.
func TestCompareEnumSet(t *testing.T) {
	labels := []string{"zebra", "apple", "mango"}
	for _, tc := range []struct {
		set  bool
		a, b string
		want int
	}{
		{false, "zebra", "apple", -1},
		{false, "mango", "apple", 1},
		{false, "apple", "apple", 0},
		{false, "", "zebra", -1},
		{true, "zebra", "apple", -1},
		{true, "zebra,apple", "mango", -1},
		{true, "apple,mango", "zebra,apple", 1},
		{true, "", "zebra", -1},
		{true, "zebra,mango", "zebra,mango", 0},
	} {
		f := CompareEnum
		if tc.set {
			f = CompareSet
		}
		if got := f(labels, []byte(tc.a), []byte(tc.b)); got != tc.want {
			t.Errorf("set %v: compare(%q, %q) = %d, want %d", tc.set, tc.a, tc.b, got, tc.want)
		}
	}
	for cell, want := range map[string]bool{"": true, "zebra": true, "apple,mango": true, "pear": false, "apple,": false, "Apple": false} {
		if got := ValidSet(labels, []byte(cell)); got != want {
			t.Errorf("ValidSet(%q) = %v, want %v", cell, got, want)
		}
	}
}
