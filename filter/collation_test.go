package filter

import (
	"errors"
	"strings"
	"testing"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
)

// TestWhereCollations: a string condition compares under the column's collation, with the
// literal in the column's character set; a collation the filter cannot compare exactly is an
// invalid filter naming the column and the collation.
func TestWhereCollations(t *testing.T) {
	for _, tc := range []struct {
		charset uint32
		typ     query.Type
		cell    string
		where   string
		want    bool
		err     string
	}{
		{45, query.Type_VARCHAR, "Ñewton", "v = 'newton'", true, ""},
		{45, query.Type_VARCHAR, "neẅton", "v = 'newton'", true, ""},
		{45, query.Type_VARCHAR, "newton", "v = X'4E6577746F6E'", false, ""}, // a hex literal compares bytes
		{45, query.Type_VARCHAR, "newton", "v in ('x', 0x6E6577746F6E)", true, ""},
		{46, query.Type_VARBINARY, "Newton", "v = 'newton'", false, ""}, // utf8mb4_bin, typed VARBINARY
		{46, query.Type_VARBINARY, "newton  ", "v = 'newton'", true, ""},
		{1070, query.Type_VARBINARY, "newton  ", "v = 'newton'", false, ""},
		{8, query.Type_VARCHAR, "\xc4rger", "v = 'ärger'", true, ""}, // latin1 cell, UTF-8 literal
		{8, query.Type_VARCHAR, "z", "v < 'ärger'", true, ""},        // swedish: ä after z
		{5, query.Type_VARCHAR, "z", "v < 'ärger'", false, ""},       // german1: ä = a
		{8, query.Type_VARCHAR, "x", "v = 'ĉ'", false, "latin1 cannot hold"},
		{33, query.Type_VARCHAR, "x", "v = '😀'", false, "utf8mb3 cannot hold"},
		{45, query.Type_ENUM, "Paid", "v in ('new', 'paid')", true, ""},
		{224, query.Type_VARCHAR, "x", "v = 'x'", false, "column v cannot be compared in a filter: collation not compared as the server compares it: utf8mb4_unicode_ci"},
		{2304, query.Type_VARCHAR, "x", "v > 'x'", false, "utf8mb4_uca1400_ai_ci"},
		{31, query.Type_VARCHAR, "x", "v in ('x')", false, "latin1_german2_ci"},
	} {
		f, err := New(&binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "t", Filter: "select * from t where " + tc.where}}})
		if err != nil {
			t.Fatal(err)
		}
		p, err := f.Plan("t", []*query.Field{{Name: "v", Type: tc.typ, Charset: tc.charset}}, nil)
		if tc.err != "" {
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%d %s: %v, want an invalid filter saying %q", tc.charset, tc.where, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%d %s: %v", tc.charset, tc.where, err)
			continue
		}
		if got := p.Match([][]byte{[]byte(tc.cell)}); got != tc.want {
			t.Errorf("%d %q %s: %v, want %v", tc.charset, tc.cell, tc.where, got, tc.want)
		}
	}
	// A refused collation is refused only where the filter compares: projecting is fine.
	f, _ := New(&binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "t", Filter: "select v from t where v is not null"}}})
	if _, err := f.Plan("t", []*query.Field{{Name: "v", Type: query.Type_VARCHAR, Charset: 224}}, nil); err != nil {
		t.Errorf("projecting a utf8mb4_unicode_ci column: %v", err)
	}
}

func TestCompareField(t *testing.T) {
	for _, tc := range []struct {
		f    *query.Field
		a, b string
		want int
		ok   bool
	}{
		{&query.Field{Type: query.Type_VARCHAR, Charset: 45}, "Ñ", "n", 0, true},
		{&query.Field{Type: query.Type_DECIMAL}, "10.0", "9.50", 1, true},
		{&query.Field{Type: query.Type_DATE}, "2020-01-02", "2020-01-10", -1, true},
		{&query.Field{Type: query.Type_TIME}, "-00:00:01", "00:00:00", -1, true},
		{&query.Field{Type: query.Type_BIT}, "\x01\x00", "\xff", 1, true},
		{&query.Field{Type: query.Type_VARBINARY}, "a ", "a", 1, true},
		// Collations sqltypes does not compare exactly are left to the server: no guess.
		{&query.Field{Type: query.Type_VARCHAR, Charset: 224}, "ä", "b", 0, false},   // utf8mb4_unicode_ci
		{&query.Field{Type: query.Type_VARCHAR, Charset: 2304}, "ß", "st", 0, false}, // utf8mb4_uca1400_ai_ci
		{&query.Field{Type: query.Type_CHAR, Charset: 31}, "ä", "af", 0, false},      // latin1_german2_ci
		{&query.Field{Type: query.Type_JSON}, "1", "2", 0, false},
	} {
		got, ok := Compare(tc.f, []byte(tc.a), []byte(tc.b))
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s/%d %q vs %q: %d %v, want %d %v", tc.f.Type, tc.f.Charset, tc.a, tc.b, got, ok, tc.want, tc.ok)
		}
	}
}

// TestCompareFieldAllocs: the copy compares keys per row; a collated key allocates nothing,
// nor does one of a refused collation (which only says so).
func TestCompareFieldAllocs(t *testing.T) {
	a, b := []byte("Ñewton"), []byte("newton")
	for _, f := range []*query.Field{{Type: query.Type_VARCHAR, Charset: 45}, {Type: query.Type_VARCHAR, Charset: 224}, {Type: query.Type_DECIMAL}} {
		if n := testing.AllocsPerRun(100, func() { Compare(f, a, b) }); n != 0 {
			t.Errorf("charset %d: %v allocations", f.Charset, n)
		}
	}
}
