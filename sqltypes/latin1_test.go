package sqltypes

import "testing"

func TestLatin1(t *testing.T) {
	for _, tc := range []struct {
		in       []byte
		iso, win string
	}{
		{[]byte{}, "", ""},
		{[]byte{0x41, 0xe9, 0x00}, "Aé\x00", "Aé\x00"},
		{[]byte{'c', 0x80, 0x9f}, "c\u0080\u009f", "c€Ÿ"},
		{[]byte{0x81, 0xff}, "\u0081ÿ", "\ufffdÿ"}, // 0x81 is unassigned in Windows-1252
	} {
		if got := string(AppendISOLatin1(nil, tc.in)); got != tc.iso {
			t.Errorf("AppendISOLatin1(% x) = %q, want %q", tc.in, got, tc.iso)
		}
		if got := string(AppendLatin1(nil, tc.in)); got != tc.win {
			t.Errorf("AppendLatin1(% x) = %q, want %q", tc.in, got, tc.win)
		}
	}
	for c := range 256 {
		if got := []rune(string(AppendISOLatin1(nil, []byte{byte(c)}))); len(got) != 1 || got[0] != rune(c) {
			t.Fatalf("AppendISOLatin1(%#x) = %q", c, got)
		}
	}
}
