package sqltypes

import "testing"

func TestParseInteger(t *testing.T) {
	for _, tc := range []struct {
		text string
		u    uint64
		uok  bool
		i    int64
		iok  bool
	}{
		{"0", 0, true, 0, true},
		{"00042", 42, true, 42, true}, // ZEROFILL
		{"+7", 0, false, 7, true},
		{"-7", 0, false, -7, true},
		{"18446744073709551615", 1<<64 - 1, true, 0, false},
		{"18446744073709551616", 0, false, 0, false},
		{"9223372036854775807", 1<<63 - 1, true, 1<<63 - 1, true},
		{"-9223372036854775808", 0, false, -1 << 63, true},
		{"-9223372036854775809", 0, false, 0, false},
		{"", 0, false, 0, false},
		{"-", 0, false, 0, false},
		{"1.5", 0, false, 0, false},
		{"1e3", 0, false, 0, false},
		{" 1", 0, false, 0, false},
	} {
		if u, ok := ParseUint([]byte(tc.text)); u != tc.u || ok != tc.uok {
			t.Errorf("ParseUint(%q) = %d, %v; want %d, %v", tc.text, u, ok, tc.u, tc.uok)
		}
		if i, ok := ParseInt([]byte(tc.text)); i != tc.i || ok != tc.iok {
			t.Errorf("ParseInt(%q) = %d, %v; want %d, %v", tc.text, i, ok, tc.i, tc.iok)
		}
	}
}
