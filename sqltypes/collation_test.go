package sqltypes

import "testing"

func TestCharsetOf(t *testing.T) {
	for _, tc := range []struct {
		id   uint32
		want string
	}{
		{63, "binary"}, {8, "latin1"}, {47, "latin1"}, {1032, "latin1"}, // latin1_swedish_nopad_ci
		{33, "utf8mb3"}, {2048, "utf8mb3"}, {45, "utf8mb4"}, {255, "utf8mb4"}, {309, "utf8mb4"},
		{1069, "utf8mb4"}, {2304, "utf8mb4"}, {11, "ascii"}, {26, "cp1250"}, {2560, "ucs2"},
		{3327, "utf32"}, {0, ""}, {3328, ""}, {MaxCollation, ""}, {1 << 31, ""},
	} {
		if got := CharsetOf(tc.id); got != tc.want {
			t.Errorf("collation %d: %q, want %q", tc.id, got, tc.want)
		}
	}
}

func TestMaxCharLen(t *testing.T) {
	for cs, want := range map[string]int{"utf8mb4": 4, "utf8mb3": 3, "utf8": 3, "ucs2": 2, "latin1": 1, "binary": 1, "": 1, "nosuch": 1} {
		if got := MaxCharLen(cs); got != want {
			t.Errorf("%q: %d, want %d", cs, got, want)
		}
	}
}
