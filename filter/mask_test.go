package filter

import (
	"errors"
	"strings"
	"testing"
)

func TestParseMasks(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []Mask
		err  string
	}{
		{in: ""},
		{in: "mask.with.4.chars=t.a,t.b; truncate.to.2.chars=/^cu.st.phone",
			want: []Mask{{"t", "a", "mask.with.4.chars"}, {"t", "b", "mask.with.4.chars"}, {"/^cu.st", "phone", "truncate.to.2.chars"}}},
		{in: "mask.hash.SHA-256.with.salt.a.b=t.c", want: []Mask{{"t", "c", "mask.hash.SHA-256.with.salt.a.b"}}},
		{in: "mask.with.4.chars", err: "want RULE=TABLE.COLUMN"},
		{in: "mask.with.4.chars=col", err: `"col" is not TABLE.COLUMN`},
		{in: "mask.with.-1.chars=t.c", err: "not a number of characters"},
		{in: "mask.hash.SHA-3.with.salt.x=t.c", err: "ALGO one of"},
		{in: "hide=t.c", err: "want mask.with.N.chars"},
	} {
		got, err := ParseMasks(tc.in)
		if tc.err != "" {
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseMasks(%q) = %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || len(got) != len(tc.want) {
			t.Fatalf("ParseMasks(%q) = %v, %v", tc.in, got, err)
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("ParseMasks(%q)[%d] = %v, want %v", tc.in, i, got[i], tc.want[i])
			}
		}
	}
}
