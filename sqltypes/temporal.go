package sqltypes

import (
	"fmt"
	"time"
)

// DateTime holds the parts of a DATE, DATETIME or TIMESTAMP cell in the text form the binlog
// reader and Vitess write: "YYYY-MM-DD" or "YYYY-MM-DD hh:mm:ss[.ffffff]" (TIMESTAMP in UTC).
// Zero dates and zero parts ("0000-00-00", "2020-00-00") are kept as they are.
type DateTime struct {
	Year, Month, Day     int
	Hour, Minute, Second int
	// Micro is the fraction in microseconds; FracDigits how many digits the text had.
	Micro, FracDigits int
}

// ParseDateTime parses a DATE, DATETIME or TIMESTAMP cell without allocating (unless it
// fails). Besides the form above it reads a 'T' between date and time, a one-digit hour and a
// bare '.', which people write in filter literals. Parts out of range (month 13, minute 60)
// are an error: no column holds them, and reading them would roll over into another date.
func ParseDateTime(cell []byte) (DateTime, error) {
	if d, ok := parseDateTimeFixed(cell); ok {
		return d, nil
	}
	if d, ok := parseDateTimeAny(cell); ok {
		return d, nil
	}
	return DateTime{}, fmt.Errorf("%q is not a date or date-time", cell)
}

// parseDateTimeFixed reads the layouts the binlog reader writes at fixed offsets, without a
// branch per digit; it reports false for anything else, which parseDateTimeAny then reads.
func parseDateTimeFixed(cell []byte) (DateTime, bool) {
	n := len(cell)
	if n != 10 && (n < 19 || n == 20 || n > 26) || cell[4] != '-' || cell[7] != '-' {
		return DateTime{}, false
	}
	var d DateTime
	bad := digit(cell[0]) | digit(cell[1]) | digit(cell[2]) | digit(cell[3]) | digit(cell[5]) | digit(cell[6]) |
		digit(cell[8]) | digit(cell[9])
	d.Year = int(cell[0]-'0')*1000 + int(cell[1]-'0')*100 + int(cell[2]-'0')*10 + int(cell[3]-'0')
	d.Month = int(cell[5]-'0')*10 + int(cell[6]-'0')
	d.Day = int(cell[8]-'0')*10 + int(cell[9]-'0')
	if n > 10 {
		if cell[10] != ' ' || cell[13] != ':' || cell[16] != ':' || n > 19 && cell[19] != '.' {
			return DateTime{}, false
		}
		bad |= digit(cell[11]) | digit(cell[12]) | digit(cell[14]) | digit(cell[15]) | digit(cell[17]) | digit(cell[18])
		d.Hour = int(cell[11]-'0')*10 + int(cell[12]-'0')
		d.Minute = int(cell[14]-'0')*10 + int(cell[15]-'0')
		d.Second = int(cell[17]-'0')*10 + int(cell[18]-'0')
		for _, c := range cell[min(n, 20):] {
			bad |= digit(c)
			d.Micro = d.Micro*10 + int(c-'0')
		}
		if n > 19 {
			d.FracDigits = n - 20
			for i := d.FracDigits; i < 6; i++ {
				d.Micro *= 10
			}
		}
	}
	if bad != 0 || !d.inRange() {
		return DateTime{}, false
	}
	return d, true
}

// parseDateTimeAny reads every form ParseDateTime accepts, a part at a time.
func parseDateTimeAny(b []byte) (DateTime, bool) {
	var d DateTime
	if len(b) < 10 || b[4] != '-' || b[7] != '-' {
		return d, false
	}
	y, ok1 := digits(b[0:4])
	m, ok2 := digits(b[5:7])
	day, ok3 := digits(b[8:10])
	if !ok1 || !ok2 || !ok3 {
		return d, false
	}
	d.Year, d.Month, d.Day = int(y), int(m), int(day)
	if len(b) > 10 {
		if b[10] != ' ' && b[10] != 'T' {
			return DateTime{}, false
		}
		h, mi, s, us, n, neg, ok := parseClock(b[11:], 2)
		if !ok || neg {
			return DateTime{}, false
		}
		d.Hour, d.Minute, d.Second, d.Micro, d.FracDigits = int(h), mi, s, us, n
	}
	if !d.inRange() {
		return DateTime{}, false
	}
	return d, true
}

func (d DateTime) inRange() bool {
	return d.Month <= 12 && d.Day <= 31 && d.Hour <= 23 && d.Minute <= 59 && d.Second <= 59
}

// IsZeroDate reports a date with a zero year, month or day, which no calendar instant has.
func (d DateTime) IsZeroDate() bool { return d.Year == 0 || d.Month == 0 || d.Day == 0 }

// EpochDay is the date's day number since 1970-01-01 (proleptic Gregorian). A day past the
// month's end rolls over as time.Date rolls it (February 31 is March 2 or 3).
func (d DateTime) EpochDay() int64 {
	if d.Month < 1 || d.Month > 12 || d.Day < 1 || d.Day > 31 {
		return time.Date(d.Year, time.Month(d.Month), d.Day, 0, 0, 0, 0, time.UTC).Unix() / 86400
	}
	return epochDays(d.Year, d.Month, d.Day)
}

// UnixMicro reads the parts as UTC wall-clock time and returns microseconds since the epoch.
func (d DateTime) UnixMicro() int64 {
	var secs int64
	if d.Month < 1 || d.Month > 12 || d.Day < 1 || d.Day > 31 {
		secs = time.Date(d.Year, time.Month(d.Month), d.Day, d.Hour, d.Minute, d.Second, 0, time.UTC).Unix()
	} else {
		secs = epochDays(d.Year, d.Month, d.Day)*86400 + int64(d.Hour)*3600 + int64(d.Minute)*60 + int64(d.Second)
	}
	return secs*1e6 + int64(d.Micro)
}

// epochDays counts the days from 1970-01-01 to a date of the proleptic Gregorian calendar
// (days_from_civil, in years starting March 1 so that the leap day comes last).
func epochDays(y, m, d int) int64 {
	if m <= 2 {
		y--
		m += 12
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era--
	}
	yoe := y - era*400
	doy := (153*(m-3)+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era)*146097 + int64(doe) - 719468
}

// ParseTime parses a TIME cell, "[-]h:mm:ss[.ffffff]" (hours may exceed 24; MySQL's range is
// -838:59:59 to 838:59:59), into signed microseconds and the number of fraction digits,
// without allocating unless it fails.
func ParseTime(cell []byte) (micros int64, fracDigits int, err error) {
	h, m, s, us, n, neg, ok := parseClock(cell, maxTimeHourDigits)
	if !ok {
		return 0, 0, fmt.Errorf("%q is not a time", cell)
	}
	micros = (h*3600+int64(m)*60+int64(s))*1e6 + int64(us)
	if neg {
		micros = -micros
	}
	return micros, n, nil
}

// maxTimeHourDigits bounds the hours of a TIME so that no text overflows the microseconds.
const maxTimeHourDigits = 9

// parseClock reads "[-]h:mm:ss[.ffffff]" with 1 to maxHour hour digits, minutes and seconds
// below 60 and 0 to 6 fraction digits.
func parseClock(b []byte, maxHour int) (h int64, m, s, micro, fracDigits int, neg, ok bool) {
	if len(b) > 0 && b[0] == '-' {
		neg = true
		b = b[1:]
	}
	c1 := -1
	for i, c := range b {
		if c == ':' {
			c1 = i
			break
		}
	}
	if c1 <= 0 || c1 > maxHour || len(b) < c1+6 || b[c1+3] != ':' {
		return 0, 0, 0, 0, 0, false, false
	}
	h, ok1 := digits(b[:c1])
	mm, ok2 := digits(b[c1+1 : c1+3])
	ss, ok3 := digits(b[c1+4 : c1+6])
	if !ok1 || !ok2 || !ok3 || mm > 59 || ss > 59 {
		return 0, 0, 0, 0, 0, false, false
	}
	rest := b[c1+6:]
	if len(rest) > 0 {
		if rest[0] != '.' || len(rest) > 7 {
			return 0, 0, 0, 0, 0, false, false
		}
		fracDigits = len(rest) - 1
		if fracDigits > 0 {
			f, okf := digits(rest[1:])
			if !okf {
				return 0, 0, 0, 0, 0, false, false
			}
			for i := fracDigits; i < 6; i++ {
				f *= 10
			}
			micro = int(f)
		}
	}
	return h, int(mm), int(ss), micro, fracDigits, neg, true
}

// digits reads the unsigned decimal digits of a date or time field; empty text or any other
// byte is false. The fields are at most 7 digits long, so the value fits.
func digits(b []byte) (int64, bool) {
	u, ok := ParseUint(b)
	return int64(u), ok
}

// digit is 1 for a byte that is not an ASCII digit, 0 for a digit: ORed over the bytes, it
// tells whether any was not one, without a branch per byte.
func digit(c byte) uint { return (uint(c-'0') + 246) >> 8 }
