package encoder

import (
	"fmt"
	"time"
)

// DateTime holds the parts of a DATE, DATETIME or TIMESTAMP cell as the binlog reader writes
// it: "YYYY-MM-DD" or "YYYY-MM-DD HH:MM:SS[.ffffff]" (TIMESTAMP in UTC). Zero dates and
// zero parts ("2020-00-00") are kept as they are.
type DateTime struct {
	Year, Month, Day     int
	Hour, Minute, Second int
	// Micro is the fraction in microseconds; FracDigits how many digits the text had.
	Micro, FracDigits int
}

// ParseDateTime parses a DATE, DATETIME or TIMESTAMP cell without allocating.
func ParseDateTime(cell []byte) (DateTime, error) {
	var d DateTime
	ok := len(cell) >= 10 && cell[4] == '-' && cell[7] == '-'
	if ok {
		d.Year, ok = digits(cell[0:4])
	}
	if ok {
		d.Month, ok = digits(cell[5:7])
	}
	if ok {
		d.Day, ok = digits(cell[8:10])
	}
	if ok && len(cell) > 10 {
		ok = len(cell) >= 19 && cell[10] == ' ' && cell[13] == ':' && cell[16] == ':'
		if ok {
			d.Hour, ok = digits(cell[11:13])
		}
		if ok {
			d.Minute, ok = digits(cell[14:16])
		}
		if ok {
			d.Second, ok = digits(cell[17:19])
		}
		if ok && len(cell) > 19 {
			d.Micro, d.FracDigits, ok = fraction(cell[19:])
		}
	}
	if !ok {
		return DateTime{}, fmt.Errorf("%q is not a date or date-time", cell)
	}
	return d, nil
}

// IsZeroDate reports a date with a zero year, month or day, which no calendar instant has.
func (d DateTime) IsZeroDate() bool { return d.Year == 0 || d.Month == 0 || d.Day == 0 }

// EpochDay is the date's day number since 1970-01-01 (proleptic Gregorian).
func (d DateTime) EpochDay() int64 {
	return time.Date(d.Year, time.Month(d.Month), d.Day, 0, 0, 0, 0, time.UTC).Unix() / 86400
}

// UnixMicro reads the parts as UTC wall-clock time and returns microseconds since the epoch.
func (d DateTime) UnixMicro() int64 {
	return time.Date(d.Year, time.Month(d.Month), d.Day, d.Hour, d.Minute, d.Second, 0, time.UTC).Unix()*1e6 + int64(d.Micro)
}

// ParseTime parses a TIME cell, "[-]H+:MM:SS[.ffffff]", into signed microseconds and the
// number of fraction digits.
func ParseTime(cell []byte) (micros int64, fracDigits int, err error) {
	neg := len(cell) > 0 && cell[0] == '-'
	b := cell
	if neg {
		b = b[1:]
	}
	c1 := -1
	for i, c := range b {
		if c == ':' {
			c1 = i
			break
		}
	}
	ok := c1 > 0 && len(b) >= c1+6 && b[c1+3] == ':'
	var h, m, s, us int
	if ok {
		h, ok = digits(b[:c1])
	}
	if ok {
		m, ok = digits(b[c1+1 : c1+3])
	}
	if ok {
		s, ok = digits(b[c1+4 : c1+6])
	}
	if ok && len(b) > c1+6 {
		us, fracDigits, ok = fraction(b[c1+6:])
	}
	if !ok {
		return 0, 0, fmt.Errorf("%q is not a time", cell)
	}
	micros = (int64(h)*3600+int64(m)*60+int64(s))*1e6 + int64(us)
	if neg {
		micros = -micros
	}
	return micros, fracDigits, nil
}

func digits(b []byte) (int, bool) {
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, len(b) > 0
}

// fraction reads ".ffffff" (1 to 6 digits) as microseconds.
func fraction(b []byte) (micro, n int, ok bool) {
	if len(b) < 2 || len(b) > 7 || b[0] != '.' {
		return 0, 0, false
	}
	v, ok := digits(b[1:])
	n = len(b) - 1
	for i := n; i < 6; i++ {
		v *= 10
	}
	return v, n, ok
}
