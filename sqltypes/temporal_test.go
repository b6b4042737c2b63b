package sqltypes

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

func TestParseDateTime(t *testing.T) {
	for _, tc := range []struct {
		cell string
		want DateTime
		bad  bool
	}{
		{cell: "2024-02-29", want: DateTime{Year: 2024, Month: 2, Day: 29}},
		{cell: "0000-00-00", want: DateTime{}},
		{cell: "0000-00-00 00:00:00", want: DateTime{}},
		{cell: "2020-00-15", want: DateTime{Year: 2020, Day: 15}},
		{cell: "1969-12-31 23:59:59", want: DateTime{1969, 12, 31, 23, 59, 59, 0, 0}},
		{cell: "2024-01-02 03:04:05.1", want: DateTime{2024, 1, 2, 3, 4, 5, 100000, 1}},
		{cell: "2024-01-02 03:04:05.000120", want: DateTime{2024, 1, 2, 3, 4, 5, 120, 6}},
		{cell: "0000-00-00 00:00:00.000", want: DateTime{FracDigits: 3}},
		// Filter literals as people write them.
		{cell: "2024-01-02T03:04:05", want: DateTime{2024, 1, 2, 3, 4, 5, 0, 0}},
		{cell: "2024-01-02 3:04:05", want: DateTime{2024, 1, 2, 3, 4, 5, 0, 0}},
		{cell: "2024-01-02 03:04:05.", want: DateTime{2024, 1, 2, 3, 4, 5, 0, 0}},
		{cell: "", bad: true},
		{cell: "2024", bad: true},
		{cell: "2024/01/02", bad: true},
		{cell: "2024-01-02 ", bad: true},
		{cell: "2024-0a-02", bad: true},
		{cell: "-024-01-02", bad: true},
		{cell: "2024-13-01", bad: true},
		{cell: "2024-01-32", bad: true},
		{cell: "2024-01-02 24:00:00", bad: true},
		{cell: "2024-01-02 03:60:00", bad: true},
		{cell: "2024-01-02 03:04:60", bad: true},
		{cell: "2024-01-02 003:04:05", bad: true},
		{cell: "2024-01-02 -03:04:05", bad: true},
		{cell: "2024-01-02 03:04:05.1234567", bad: true},
		{cell: "2024-01-02 03:04:05,5", bad: true},
		{cell: "2024-01-02 03:04:05.12a", bad: true},
		{cell: "2024-01-02 03:04:5a", bad: true},
	} {
		got, err := ParseDateTime([]byte(tc.cell))
		if tc.bad {
			if err == nil {
				t.Errorf("%q: %+v, want an error", tc.cell, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: %+v %v, want %+v", tc.cell, got, err, tc.want)
		}
	}
}

func TestParseTime(t *testing.T) {
	for _, tc := range []struct {
		cell   string
		micros int64
		frac   int
		bad    bool
	}{
		{cell: "00:00:00"},
		{cell: "12:34:56", micros: 45296e6},
		{cell: "-12:34:56", micros: -45296e6},
		{cell: "838:59:59", micros: 3020399e6},
		{cell: "-838:59:59.000000", micros: -3020399e6, frac: 6},
		{cell: "-00:00:00.5", micros: -500000, frac: 1},
		{cell: "1:02:03.000004", micros: 3723000004, frac: 6},
		{cell: "01:02:03.", micros: 3723e6},
		{cell: "", bad: true},
		{cell: "-", bad: true},
		{cell: ":01:02", bad: true},
		{cell: "01:02", bad: true},
		{cell: "01:60:00", bad: true},
		{cell: "01:00:60", bad: true},
		{cell: "01:00:00.1234567", bad: true},
		{cell: "01:00:00x", bad: true},
		{cell: "--01:00:00", bad: true},
		{cell: "1234567890:00:00", bad: true},
	} {
		us, frac, err := ParseTime([]byte(tc.cell))
		if tc.bad {
			if err == nil {
				t.Errorf("%q: %d, want an error", tc.cell, us)
			}
			continue
		}
		if err != nil || us != tc.micros || frac != tc.frac {
			t.Errorf("%q: %d µs %d digits %v, want %d µs %d digits", tc.cell, us, frac, err, tc.micros, tc.frac)
		}
	}
}

// TestDateTimeFixedAgrees checks the fixed-offset reading against the part-at-a-time one and
// the day and microsecond counts against time.Date, for random cells: dates of every year,
// days past a month's end, zero and out-of-range parts, every fraction length, and corrupted
// bytes.
func TestDateTimeFixedAgrees(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for range 50000 {
		c := fmt.Sprintf("%04d-%02d-%02d", rng.IntN(10000), rng.IntN(14), rng.IntN(33))
		if rng.IntN(4) > 0 {
			c += fmt.Sprintf(" %02d:%02d:%02d", rng.IntN(25), rng.IntN(61), rng.IntN(61))
			if f := rng.IntN(7); f > 0 {
				c += fmt.Sprintf(".%0*d", f, rng.IntN(1_000_000)%pow10(f))
			}
		}
		if rng.IntN(50) == 0 {
			b := []byte(c)
			b[rng.IntN(len(b))] = byte(rng.IntN(256))
			c = string(b)
		}
		fixed, fok := parseDateTimeFixed([]byte(c))
		anyd, aok := parseDateTimeAny([]byte(c))
		if fok && (!aok || fixed != anyd) {
			t.Fatalf("%q: fixed %+v, part at a time %+v %v", c, fixed, anyd, aok)
		}
		if aok && len(c) >= 19 && c[10] == ' ' && c[12] != ':' && !fok {
			t.Fatalf("%q: the fixed reading refused a cell in the binlog layout", c)
		}
		if !aok || anyd.IsZeroDate() {
			continue
		}
		tm := time.Date(anyd.Year, time.Month(anyd.Month), anyd.Day, anyd.Hour, anyd.Minute, anyd.Second, 0, time.UTC)
		if got, want := anyd.UnixMicro(), tm.Unix()*1e6+int64(anyd.Micro); got != want {
			t.Fatalf("%q: %d µs, want %d", c, got, want)
		}
		if got, want := anyd.EpochDay(), time.Date(anyd.Year, time.Month(anyd.Month), anyd.Day, 0, 0, 0, 0, time.UTC).Unix()/86400; got != want {
			t.Fatalf("%q: day %d, want %d", c, got, want)
		}
	}
}

func TestParseAllocates(t *testing.T) {
	dt, tm := []byte("2024-01-02 03:04:05.123456"), []byte("-838:59:59.5")
	if n := testing.AllocsPerRun(100, func() {
		_, _ = ParseDateTime(dt)
		_, _, _ = ParseTime(tm)
	}); n != 0 {
		t.Fatalf("%v allocations per parse, want 0", n)
	}
}

// FuzzParseDateTime checks that no text crashes the parsers, that an accepted date-time is in
// range and prints back to a text that parses to the same parts, and that the two readings agree.
func FuzzParseDateTime(f *testing.F) {
	for _, s := range []string{"2024-01-02", "0000-00-00 00:00:00", "2024-01-02 03:04:05.123456",
		"2024-01-02T3:04:05.", "-838:59:59.000001", "12:00:00", "2024-13-01"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, _, _ = ParseTime([]byte(s))
		d, err := ParseDateTime([]byte(s))
		if err != nil {
			return
		}
		if !d.inRange() || d.Year > 9999 || d.Micro > 999999 || d.FracDigits > 6 {
			t.Fatalf("%q: %+v is out of range", s, d)
		}
		back := fmt.Sprintf("%04d-%02d-%02d %02d:%02d:%02d.%06d", d.Year, d.Month, d.Day, d.Hour, d.Minute, d.Second, d.Micro)
		again, err := ParseDateTime([]byte(back))
		d.FracDigits, again.FracDigits = 0, 0
		if err != nil || again != d {
			t.Fatalf("%q -> %q: %+v %v, want %+v", s, back, again, err, d)
		}
		if fixed, ok := parseDateTimeFixed([]byte(s)); ok {
			fixed.FracDigits = 0
			if fixed != d {
				t.Fatalf("%q: fixed %+v, want %+v", s, fixed, d)
			}
		}
	})
}

func pow10(n int) int {
	p := 1
	for range n {
		p *= 10
	}
	return p
}
