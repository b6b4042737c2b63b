package rowcodec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strconv"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// Raw is the rows of a rows event that DecodeRows left undecoded: the event's bytes after its
// column bitmaps. A stream turns them into Vitess text with its own columns (Decode), in one
// pass and without go-mysql's []any rows, whose boxing and copies cost as much as the rest of
// the binlog path.
type Raw struct {
	data             []byte
	bitmap1, bitmap2 []byte
	columns          int
	// Decoded is go-mysql's decoding of the same rows, kept only by DecodeRowsVerified: tests
	// compare it with Decode's.
	Decoded [][]any
}

// RawOf is the undecoded rows DecodeRows left in e, or nil when go-mysql decoded them.
func RawOf(e *replication.RowsEvent) *Raw {
	if len(e.Rows) != 1 || len(e.Rows[0]) != 1 {
		return nil
	}
	r, _ := e.Rows[0][0].(*Raw)
	return r
}

// Data is the raw rows' bytes, which are the event's: they must not be written to.
func (r *Raw) Data() []byte { return r.data }

// Size is the byte size of the raw rows.
func (r *Raw) Size() int { return len(r.data) }

// WithData is r with other bytes for its rows, to spoil a stream's rows in fault tests.
func (r *Raw) WithData(data []byte) *Raw {
	c := *r
	c.data = data
	return &c
}

// Images is the rows of a rows event as Decode leaves them: image k (an update's before and
// after images are two) has its column values in Values[Starts[k]:Starts[k+1]] and their
// lengths, -1 for NULL, in Lengths[k*width:(k+1)*width].
type Images struct {
	Values  []byte
	Lengths []int64
	Starts  []int
}

// Count is the number of images.
func (im *Images) Count() int { return max(len(im.Starts)-1, 0) }

// Reset empties im, keeping its memory.
func (im *Images) Reset() {
	im.Values, im.Lengths, im.Starts = im.Values[:0], im.Lengths[:0], im.Starts[:0]
}

// DecodeError is a value of a raw rows event that cannot be decoded.
type DecodeError struct {
	// Column is the index of the column in the table.
	Column int
	Err    error
}

func (e *DecodeError) Error() string { return fmt.Sprintf("column %d: %v", e.Column+1, e.Err) }
func (e *DecodeError) Unwrap() error { return e.Err }

var errShort = errors.New("rows event ends inside a value")

// Decode appends the Vitess text of every row image of a rows event of type typ, which DecodeRows
// left raw, to im: each value as Column.Append renders go-mysql's decoding of it. A column an
// image leaves out (binlog_row_image MINIMAL or NOBLOB) reads NULL. cols are the table's
// columns in binlog order.
func (r *Raw) Decode(cols []Column, typ replication.EventType, im *Images) error {
	if len(cols) != r.columns {
		return fmt.Errorf("rows event has %d columns, the table %d", r.columns, len(cols))
	}
	data := r.data
	switch typ {
	case replication.MARIADB_WRITE_ROWS_COMPRESSED_EVENT_V1, replication.MARIADB_UPDATE_ROWS_COMPRESSED_EVENT_V1,
		replication.MARIADB_DELETE_ROWS_COMPRESSED_EVENT_V1:
		var err error
		if data, err = decompress(data); err != nil {
			return err
		}
	default:
		// The rows are stored as they are.
	}
	partialUpdate := typ == replication.PARTIAL_UPDATE_ROWS_EVENT
	var err error
	for pos := 0; pos < len(data); {
		im.Starts = append(im.Starts, len(im.Values))
		if pos, err = decodeImage(cols, data, pos, r.bitmap1, im); err != nil {
			return err
		}
		if r.bitmap2 == nil {
			continue
		}
		if partialUpdate {
			// binlog_row_value_options; DecodeRows leaves the rows of tables with JSON
			// columns to go-mysql, so there is no bitmap of partial JSON columns here.
			if pos, err = skipValueOptions(data, pos); err != nil {
				return err
			}
		}
		im.Starts = append(im.Starts, len(im.Values))
		if pos, err = decodeImage(cols, data, pos, r.bitmap2, im); err != nil {
			return err
		}
	}
	if len(im.Starts) > 0 {
		im.Starts = append(im.Starts, len(im.Values))
	}
	return nil
}

// decompress inflates the rows of a MariaDB compressed rows event, as go-mysql does.
func decompress(data []byte) (out []byte, err error) {
	defer func() {
		// go-mysql reads the event's header byte without looking at the length.
		if r := recover(); r != nil {
			err = fmt.Errorf("compressed rows event: %v", r)
		}
	}()
	return mysql.DecompressMariadbData(data)
}

// skipValueOptions skips the binlog_row_value_options (a length-encoded integer) before the
// after image of a PARTIAL_UPDATE_ROWS_EVENT. A table without JSON columns has no bitmap of
// partial JSON columns after them, whatever they say.
func skipValueOptions(data []byte, pos int) (int, error) {
	if pos >= len(data) {
		return pos, nil // go-mysql reads nothing; the image that follows fails
	}
	n := 1
	switch data[pos] {
	case 0xfc:
		n = 3
	case 0xfd:
		n = 4
	case 0xfe:
		n = 9
	}
	if pos+n > len(data) {
		return pos, errShort
	}
	return pos + n, nil
}

// decodeImage decodes one row image at data[pos:] whose columns are those set in bitmap.
func decodeImage(cols []Column, data []byte, pos int, bitmap []byte, im *Images) (int, error) {
	n := len(cols)
	logged := 0
	for i := 0; i < n/8; i++ {
		logged += bits.OnesCount8(bitmap[i])
	}
	if n%8 != 0 {
		logged += bits.OnesCount8(bitmap[n/8] & byte(1<<(n%8)-1))
	}
	nullLen := (logged + 7) / 8
	if pos+nullLen > len(data) {
		return pos, errShort
	}
	nulls := data[pos : pos+nullLen]
	pos += nullLen
	ni := 0
	values := im.Values
	for i := range cols {
		if bitmap[i>>3]&(1<<(i&7)) == 0 {
			im.Lengths = append(im.Lengths, -1)
			continue
		}
		isNull := nulls[ni>>3]&(1<<(ni&7)) != 0
		ni++
		if isNull {
			im.Lengths = append(im.Lengths, -1)
			continue
		}
		before := len(values)
		var used int
		var null bool
		var err error
		values, used, null, err = cols[i].appendBinlog(values, data[pos:])
		if err != nil {
			im.Values = values
			return pos, &DecodeError{Column: i, Err: err}
		}
		pos += used
		if null {
			values = values[:before]
			im.Lengths = append(im.Lengths, -1)
		} else {
			im.Lengths = append(im.Lengths, int64(len(values)-before))
		}
	}
	im.Values = values
	return pos, nil
}

// appendBinlog appends the Vitess text of the binlog value at the start of data, which has
// the column's binlog type and metadata, and tells how many bytes it took. Its rendering is
// Append's of the value go-mysql decodes from the same bytes.
func (c *Column) appendBinlog(dst, data []byte) (out []byte, n int, null bool, err error) {
	switch c.Type {
	case mysql.MYSQL_TYPE_TINY:
		if len(data) < 1 {
			return dst, 0, false, errShort
		}
		if c.Unsigned {
			return strconv.AppendUint(dst, uint64(data[0]), 10), 1, false, nil
		}
		return strconv.AppendInt(dst, int64(int8(data[0])), 10), 1, false, nil
	case mysql.MYSQL_TYPE_SHORT:
		if len(data) < 2 {
			return dst, 0, false, errShort
		}
		v := binary.LittleEndian.Uint16(data)
		if c.Unsigned {
			return strconv.AppendUint(dst, uint64(v), 10), 2, false, nil
		}
		return strconv.AppendInt(dst, int64(int16(v)), 10), 2, false, nil
	case mysql.MYSQL_TYPE_INT24:
		if len(data) < 3 {
			return dst, 0, false, errShort
		}
		v := uint32(data[0]) | uint32(data[1])<<8 | uint32(data[2])<<16
		if c.Unsigned {
			return strconv.AppendUint(dst, uint64(v), 10), 3, false, nil
		}
		return strconv.AppendInt(dst, int64(int32(v<<8)>>8), 10), 3, false, nil
	case mysql.MYSQL_TYPE_LONG:
		if len(data) < 4 {
			return dst, 0, false, errShort
		}
		v := binary.LittleEndian.Uint32(data)
		if c.Unsigned {
			return strconv.AppendUint(dst, uint64(v), 10), 4, false, nil
		}
		return strconv.AppendInt(dst, int64(int32(v)), 10), 4, false, nil
	case mysql.MYSQL_TYPE_LONGLONG:
		if len(data) < 8 {
			return dst, 0, false, errShort
		}
		v := binary.LittleEndian.Uint64(data)
		if c.Unsigned {
			return strconv.AppendUint(dst, v, 10), 8, false, nil
		}
		return strconv.AppendInt(dst, int64(v), 10), 8, false, nil
	case mysql.MYSQL_TYPE_FLOAT:
		if len(data) < 4 {
			return dst, 0, false, errShort
		}
		f := math.Float32frombits(binary.LittleEndian.Uint32(data))
		return strconv.AppendFloat(dst, float64(f), 'E', -1, 32), 4, false, nil
	case mysql.MYSQL_TYPE_DOUBLE:
		if len(data) < 8 {
			return dst, 0, false, errShort
		}
		f := math.Float64frombits(binary.LittleEndian.Uint64(data))
		return strconv.AppendFloat(dst, f, 'E', -1, 64), 8, false, nil
	case mysql.MYSQL_TYPE_NEWDECIMAL:
		return c.appendBinlogDecimal(dst, data)
	case mysql.MYSQL_TYPE_BIT:
		// go-mysql reads the bytes as a big-endian integer; Append writes them back.
		nbits := int(c.Meta>>8)*8 + int(c.Meta&0xff)
		n = (nbits + 7) / 8
		if n < 1 || n > 8 {
			return dst, 0, false, fmt.Errorf("invalid bit length %d", n)
		}
		if len(data) < n {
			return dst, 0, false, errShort
		}
		return append(dst, data[:n]...), n, false, nil
	case mysql.MYSQL_TYPE_TIMESTAMP:
		if len(data) < 4 {
			return dst, 0, false, errShort
		}
		sec := binary.LittleEndian.Uint32(data)
		if sec == 0 {
			return append(dst, "0000-00-00 00:00:00"...), 4, false, nil
		}
		return appendUnixTime(dst, int64(sec), 0, 0), 4, false, nil
	case mysql.MYSQL_TYPE_TIMESTAMP2:
		return appendTimestamp2(dst, data, int(c.Meta))
	case mysql.MYSQL_TYPE_DATETIME:
		if len(data) < 8 {
			return dst, 0, false, errShort
		}
		v := binary.LittleEndian.Uint64(data)
		if v == 0 {
			return append(dst, "0000-00-00 00:00:00"...), 8, false, nil
		}
		d, t := int64(v/1000000), int64(v%1000000)
		return appendDateTime(dst, d/10000, d%10000/100, d%100, t/10000, t%10000/100, t%100), 8, false, nil
	case mysql.MYSQL_TYPE_DATETIME2:
		return appendDatetime2(dst, data, int(c.Meta))
	case mysql.MYSQL_TYPE_TIME:
		if len(data) < 3 {
			return dst, 0, false, errShort
		}
		v := int64(data[0]) | int64(data[1])<<8 | int64(data[2])<<16
		start := len(dst)
		dst = appendClock(dst, "", v/10000, v%10000/100, v%100)
		return c.timeFraction(dst, start), 3, false, nil
	case mysql.MYSQL_TYPE_TIME2:
		start := len(dst)
		dst, n, err = appendTime2(dst, data, int(c.Meta))
		if err != nil {
			return dst, 0, false, err
		}
		return c.timeFraction(dst, start), n, false, nil
	case mysql.MYSQL_TYPE_DATE:
		if len(data) < 3 {
			return dst, 0, false, errShort
		}
		v := int64(data[0]) | int64(data[1])<<8 | int64(data[2])<<16
		if v == 0 {
			return append(dst, "0000-00-00"...), 3, false, nil
		}
		return appendDate(dst, v/(16*32), v/32%16, v%32), 3, false, nil
	case mysql.MYSQL_TYPE_YEAR:
		if len(data) < 1 {
			return dst, 0, false, errShort
		}
		y := int(data[0])
		if y != 0 {
			y += 1900
		}
		return appendYear(dst, y), 1, false, nil
	case mysql.MYSQL_TYPE_ENUM:
		switch c.Meta & 0xff {
		case 1:
			if len(data) < 1 {
				return dst, 0, false, errShort
			}
			dst, _, _ = c.appendInt64(dst, int64(data[0]))
			return dst, 1, false, nil
		case 2:
			if len(data) < 2 {
				return dst, 0, false, errShort
			}
			dst, _, _ = c.appendInt64(dst, int64(binary.LittleEndian.Uint16(data)))
			return dst, 2, false, nil
		}
		return dst, 0, false, fmt.Errorf("unknown ENUM packlen=%d", c.Meta&0xff)
	case mysql.MYSQL_TYPE_SET:
		n = int(c.Meta & 0xff)
		if n < 1 || n > 8 {
			return dst, 0, false, fmt.Errorf("invalid bit length %d", n)
		}
		if len(data) < n {
			return dst, 0, false, errShort
		}
		var v uint64
		for i := n - 1; i >= 0; i-- {
			v = v<<8 | uint64(data[i])
		}
		dst, _, _ = c.appendInt64(dst, int64(v))
		return dst, n, false, nil
	case mysql.MYSQL_TYPE_BLOB, mysql.MYSQL_TYPE_GEOMETRY, mysql.MYSQL_TYPE_VECTOR:
		b, n, err := blob(data, c.Meta)
		if err != nil {
			return dst, 0, false, err
		}
		return append(dst, b...), n, false, nil
	case mysql.MYSQL_TYPE_VARCHAR, mysql.MYSQL_TYPE_VAR_STRING:
		b, n, err := str(data, int(c.Meta))
		if err != nil {
			return dst, 0, false, err
		}
		return append(dst, b...), n, false, nil
	case mysql.MYSQL_TYPE_STRING:
		// The layout is the metadata's, as go-mysql reads it; Length only pads.
		rt, length := StringMeta(c.Meta)
		if rt != mysql.MYSQL_TYPE_STRING {
			return dst, 0, false, fmt.Errorf("CHAR column of binlog type %d", rt)
		}
		b, n, err := str(data, length)
		if err != nil {
			return dst, 0, false, err
		}
		return c.appendBytes(dst, b), n, false, nil
	case mysql.MYSQL_TYPE_NULL:
		return dst, 0, true, nil
	}
	return dst, 0, false, fmt.Errorf("unsupported binlog type %d", c.Type)
}

// blob is the value of a BLOB-like column whose length takes meta bytes.
func blob(data []byte, meta uint16) ([]byte, int, error) {
	if meta < 1 || meta > 4 {
		return nil, 0, fmt.Errorf("invalid blob packlen = %d", meta)
	}
	m := int(meta)
	if len(data) < m {
		return nil, 0, errShort
	}
	var l uint64
	for i := m - 1; i >= 0; i-- {
		l = l<<8 | uint64(data[i])
	}
	if l > uint64(len(data)-m) {
		return nil, 0, errShort
	}
	end := m + int(l)
	return data[m:end], end, nil
}

// str is the value of a CHAR or VARCHAR column of the given maximal byte length.
func str(data []byte, length int) ([]byte, int, error) {
	m := 1
	if length >= 256 {
		m = 2
	}
	if len(data) < m {
		return nil, 0, errShort
	}
	l := int(data[0])
	if m == 2 {
		l = int(binary.LittleEndian.Uint16(data))
	}
	if l > len(data)-m {
		return nil, 0, errShort
	}
	return data[m : m+l], m + l, nil
}

// appendPadded appends v in decimal, zero-padded to width digits (fmt's %0*d).
func appendPadded(dst []byte, v uint64, width int) []byte {
	// Dates and times are mostly two- and four-digit fields.
	switch {
	case width == 2 && v < 100:
		return append(dst, byte('0'+v/10), byte('0'+v%10))
	case width == 4 && v < 10000:
		return append(dst, byte('0'+v/1000), byte('0'+v/100%10), byte('0'+v/10%10), byte('0'+v%10))
	}
	var buf [20]byte
	i := len(buf)
	for v >= 10 {
		i--
		buf[i] = byte('0' + v%10)
		v /= 10
	}
	i--
	buf[i] = byte('0' + v)
	for n := len(buf) - i; n < width; n++ {
		dst = append(dst, '0')
	}
	return append(dst, buf[i:]...)
}

// appendPaddedInt is appendPadded of a signed value: a sign takes one of the width's places.
func appendPaddedInt(dst []byte, v int64, width int) []byte {
	if v >= 0 {
		return appendPadded(dst, uint64(v), width)
	}
	return appendPadded(append(dst, '-'), uint64(-v), width-1)
}

func appendDate(dst []byte, y, m, d int64) []byte {
	dst = appendPaddedInt(dst, y, 4)
	dst = append(dst, '-')
	dst = appendPaddedInt(dst, m, 2)
	dst = append(dst, '-')
	return appendPaddedInt(dst, d, 2)
}

func appendClock(dst []byte, sign string, h, m, s int64) []byte {
	dst = append(dst, sign...)
	dst = appendPaddedInt(dst, h, 2)
	dst = append(dst, ':')
	dst = appendPaddedInt(dst, m, 2)
	dst = append(dst, ':')
	return appendPaddedInt(dst, s, 2)
}

func appendDateTime(dst []byte, y, mo, d, h, mi, s int64) []byte {
	dst = appendDate(dst, y, mo, d)
	dst = append(dst, ' ')
	return appendClock(dst, "", h, mi, s)
}

// appendFrac appends go-mysql's fraction of dec digits: frac printed with at least six digits,
// then cut by 6-dec from the end.
func appendFrac(dst []byte, frac uint64, dec int) []byte {
	if dec == 0 {
		return dst
	}
	dst = append(dst, '.')
	dst = appendPadded(dst, frac, 6)
	return dst[:len(dst)-(6-dec)]
}

func appendZeroTime(dst []byte, frac uint64, dec int) []byte {
	return appendFrac(append(dst, "0000-00-00 00:00:00"...), frac, dec)
}

// appendUnixTime appends a TIMESTAMP as go-mysql prints it: the time in UTC, with dec digits
// of its fraction. sec is not negative (the binlog's are unsigned 32-bit); usec may exceed a
// second, and carries as time.Unix carries it.
func appendUnixTime(dst []byte, sec, usec int64, dec int) []byte {
	sec += usec / 1e6
	usec %= 1e6
	y, mo, d := civil(sec / 86400)
	clock := sec % 86400
	dst = appendDateTime(dst, y, mo, d, clock/3600, clock%3600/60, clock%60)
	return appendFrac(dst, uint64(usec), dec)
}

// civil is the proleptic Gregorian date of a day counted from 1970-01-01 (not before it),
// by Howard Hinnant's days-to-civil algorithm: what time.Time.Date gives, without its work.
func civil(days int64) (y, m, d int64) {
	z := days + 719468
	era := z / 146097
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = doy - (153*mp+2)/5 + 1
	m = mp + 3
	if mp >= 10 {
		m = mp - 9
	}
	y = yoe + era*400
	if m <= 2 {
		y++
	}
	return y, m, d
}

// errFsp is go-mysql's failure on a fractional-second precision above 6.
func errFsp(dec int) error { return fmt.Errorf("fractional-second precision %d", dec) }

func appendTimestamp2(dst, data []byte, dec int) ([]byte, int, bool, error) {
	n := 4 + (dec+1)/2
	if dec > 6 {
		return dst, 0, false, errFsp(dec)
	}
	if len(data) < n {
		return dst, 0, false, errShort
	}
	sec := int64(binary.BigEndian.Uint32(data))
	usec := int64(0)
	switch dec {
	case 1, 2:
		usec = int64(data[4]) * 10000
	case 3, 4:
		usec = int64(binary.BigEndian.Uint16(data[4:])) * 100
	case 5, 6:
		usec = int64(data[4])<<16 | int64(data[5])<<8 | int64(data[6])
	}
	if sec == 0 {
		return appendZeroTime(dst, uint64(usec), dec), n, false, nil
	}
	return appendUnixTime(dst, sec, usec, dec), n, false, nil
}

func appendDatetime2(dst, data []byte, dec int) ([]byte, int, bool, error) {
	n := 5 + (dec+1)/2
	if dec > 6 {
		return dst, 0, false, errFsp(dec)
	}
	if len(data) < n {
		return dst, 0, false, errShort
	}
	intPart := int64(beUint(data[:5])) - 0x8000000000
	var frac int64
	switch dec {
	case 1, 2:
		frac = int64(data[5]) * 10000
	case 3, 4:
		frac = int64(binary.BigEndian.Uint16(data[5:7])) * 100
	case 5, 6:
		frac = int64(beUint(data[5:8]))
	}
	if intPart == 0 {
		return appendZeroTime(dst, uint64(frac), dec), n, false, nil
	}
	tmp := intPart<<24 + frac
	if tmp < 0 {
		tmp = -tmp
	}
	ymdhms := tmp >> 24
	ymd := ymdhms >> 17
	ym := ymd >> 5
	hms := ymdhms % (1 << 17)
	// An intPart of -2^39 overflows tmp, which stays negative, as in go-mysql.
	dst = appendDateTime(dst, ym/13, ym%13, ymd%(1<<5), hms>>12, (hms>>6)%(1<<6), hms%(1<<6))
	return appendFrac(dst, uint64(frac), dec), n, false, nil
}

func beUint(b []byte) uint64 {
	var v uint64
	for _, x := range b {
		v = v<<8 | uint64(x)
	}
	return v
}

// appendTime2 appends a TIME(dec) as go-mysql prints it.
func appendTime2(dst, data []byte, dec int) ([]byte, int, error) {
	n := 3 + (dec+1)/2
	if len(data) < n {
		return dst, 0, errShort
	}
	const intOfs, ofs = int64(0x800000), int64(0x800000000000)
	var tmp, intPart, frac int64
	switch dec {
	case 1, 2:
		intPart = int64(beUint(data[:3])) - intOfs
		frac = int64(data[3])
		if intPart < 0 && frac != 0 {
			intPart++
			frac -= 0x100
		}
		tmp = intPart<<24 + frac*10000
	case 3, 4:
		intPart = int64(beUint(data[:3])) - intOfs
		frac = int64(binary.BigEndian.Uint16(data[3:5]))
		if intPart < 0 && frac != 0 {
			intPart++
			frac -= 0x10000
		}
		tmp = intPart<<24 + frac*100
	case 5, 6:
		return appendTimeOf(dst, int64(beUint(data[:6]))-ofs, dec), n, nil
	default:
		intPart = int64(beUint(data[:3])) - intOfs
		tmp = intPart << 24
	}
	if intPart == 0 && frac == 0 {
		return append(dst, "00:00:00"...), n, nil
	}
	return appendTimeOf(dst, tmp, dec), n, nil
}

func appendTimeOf(dst []byte, tmp int64, dec int) []byte {
	sign := ""
	if tmp < 0 {
		tmp = -tmp
		sign = "-"
	}
	hms := tmp >> 24
	dst = appendClock(dst, sign, (hms>>12)%(1<<10), (hms>>6)%(1<<6), hms%(1<<6))
	if secPart := tmp % (1 << 24); secPart != 0 {
		dst = append(dst, '.')
		dst = appendPadded(dst, uint64(secPart), 6)
		dst = dst[:len(dst)-(6-dec)]
	}
	return dst
}

var decimalBytes = [10]int{0, 1, 1, 2, 2, 3, 3, 4, 4, 4}

// appendBinlogDecimal appends a packed DECIMAL as Append renders go-mysql's text of it: that
// text is written, then trimmed in place.
func (c *Column) appendBinlogDecimal(dst, data []byte) ([]byte, int, bool, error) {
	precision, scale := int(c.Meta>>8), int(c.Meta&0xff)
	integral := precision - scale
	if integral < 0 {
		return dst, 0, false, fmt.Errorf("decimal(%d,%d)", precision, scale)
	}
	uncompInt, uncompFrac := integral/9, scale/9
	compInt, compFrac := integral-uncompInt*9, scale-uncompFrac*9
	size := uncompInt*4 + decimalBytes[compInt] + uncompFrac*4 + decimalBytes[compFrac]
	if size == 0 || len(data) < size {
		return dst, 0, false, errShort
	}
	start := len(dst)
	var mask uint32
	if data[0]&0x80 == 0 {
		mask = math.MaxUint32
		dst = append(dst, '-')
	}
	// The sign bit is flipped in the first byte only.
	word := func(pos, size int) uint32 {
		var v uint32
		for i := 0; i < size; i++ {
			b := data[pos+i]
			if pos+i == 0 {
				b ^= 0x80
			}
			v = v<<8 | uint32(b^byte(mask))
		}
		return v
	}
	pos := decimalBytes[compInt]
	leading := true
	if v := word(0, pos); v != 0 {
		leading = false
		dst = strconv.AppendUint(dst, uint64(v), 10)
	}
	for range uncompInt {
		v := word(pos, 4)
		pos += 4
		if leading {
			if v != 0 {
				leading = false
				dst = strconv.AppendUint(dst, uint64(v), 10)
			}
			continue
		}
		if v > 999999999 {
			return dst[:start], 0, false, fmt.Errorf("decimal word %d", v)
		}
		dst = appendPadded(dst, uint64(v), 9)
	}
	if leading {
		dst = append(dst, '0')
	}
	if pos < size {
		dst = append(dst, '.')
		for range uncompFrac {
			v := word(pos, 4)
			pos += 4
			if v > 999999999 {
				return dst[:start], 0, false, fmt.Errorf("decimal word %d", v)
			}
			dst = appendPadded(dst, uint64(v), 9)
		}
		if k := decimalBytes[compFrac]; k > 0 {
			dst = appendPadded(dst, uint64(word(pos, k)), compFrac)
		}
	}
	// The text is trimmed where it was written: copy moves overlapping bytes correctly.
	neg, digits := trimDecimal(dst[start:])
	out := dst[:start]
	if neg {
		out = append(out, '-')
	}
	n := copy(dst[len(out):], digits)
	return dst[:len(out)+n], size, false, nil
}
