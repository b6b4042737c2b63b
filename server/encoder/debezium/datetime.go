package debezium

import "github.com/vstream-cdc/vstream/server/encoder"

// parseDateTime parses a DATE, DATETIME or TIMESTAMP cell as encoder.ParseDateTime does,
// reading the layouts the binlog reader writes ("YYYY-MM-DD", "YYYY-MM-DD HH:MM:SS[.f...]")
// at fixed offsets; any other text goes to encoder.ParseDateTime, whose error it returns.
func parseDateTime(cell []byte) (encoder.DateTime, error) {
	n := len(cell)
	if n != 10 && (n < 19 || n == 20 || n > 26) || cell[4] != '-' || cell[7] != '-' {
		return encoder.ParseDateTime(cell)
	}
	var d encoder.DateTime
	bad := digit(cell[0]) | digit(cell[1]) | digit(cell[2]) | digit(cell[3]) | digit(cell[5]) | digit(cell[6]) |
		digit(cell[8]) | digit(cell[9])
	d.Year = int(cell[0]-'0')*1000 + int(cell[1]-'0')*100 + int(cell[2]-'0')*10 + int(cell[3]-'0')
	d.Month = int(cell[5]-'0')*10 + int(cell[6]-'0')
	d.Day = int(cell[8]-'0')*10 + int(cell[9]-'0')
	if n > 10 {
		if cell[10] != ' ' || cell[13] != ':' || cell[16] != ':' || n > 19 && cell[19] != '.' {
			return encoder.ParseDateTime(cell)
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
	if bad != 0 {
		return encoder.ParseDateTime(cell)
	}
	return d, nil
}

// digit is 1 for a byte that is not an ASCII digit, 0 for a digit: ORed over the bytes, it
// tells whether any was not one, without a branch per byte.
func digit(c byte) uint { return (uint(c-'0') + 246) >> 8 }

// unixMicro is d.UnixMicro() without building a time.Time when the month and day are in
// range (the days are counted as time.Date counts them, which rolls February 31 over to March).
func unixMicro(d encoder.DateTime) int64 {
	if d.Month < 1 || d.Month > 12 || d.Day < 1 || d.Day > 31 {
		return d.UnixMicro()
	}
	secs := epochDays(d.Year, d.Month, d.Day)*86400 + int64(d.Hour)*3600 + int64(d.Minute)*60 + int64(d.Second)
	return secs*1e6 + int64(d.Micro)
}

// epochDay is d.EpochDay(), the same way.
func epochDay(d encoder.DateTime) int64 {
	if d.Month < 1 || d.Month > 12 || d.Day < 1 || d.Day > 31 {
		return d.EpochDay()
	}
	return epochDays(d.Year, d.Month, d.Day)
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
