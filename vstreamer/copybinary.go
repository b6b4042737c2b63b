package vstreamer

import (
	"encoding/binary"
	"fmt"
	"strconv"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// A copy chunk is read with the binary protocol (a prepared statement): the server sends
// numbers, dates and times as they are stored rather than printing each as text, which costs
// it about 40% less CPU per row (BenchmarkCopy), and the copy need not parse numbers back. Every value
// is then given to the row encoder as the text protocol would have given it, so copied rows
// are encoded exactly as before (and as binlog rows are).
//
// go-mysql's binary decoder prints dates and times with fmt, an allocation each; the chunk
// has it hand their packed bytes over instead (they are laid out as a length-prefixed
// string) and prints them itself: straight into the encoded row for a table copied whole,
// else into buffers it reuses, which stand in the row's values while the row is filtered.

// binaryTemporal is a result column of a temporal type whose packed value the chunk prints.
type binaryTemporal struct {
	col int  // the result column
	typ byte // its type as the server sent it
	fsp int  // fractional-second digits
	// buf holds the printed value of the current row.
	buf []byte
}

// binaryTemporals are a chunk's result columns of temporal types, whose packed values it
// prints (see above).
type binaryTemporals struct {
	cols []binaryTemporal
	// packed keeps their values as go-mysql decoded them while the row holds their text.
	packed []mysql.FieldValue
	// at is the index in cols of each result column, -1 for the others.
	at []int
}

// takeTemporals is a SELECT's per-result callback: it marks the result's temporal columns,
// whose values go-mysql then passes on as the bytes the server packed.
func (k *chunk) takeTemporals(res *mysql.Result) error {
	bts := &k.temps
	bts.cols = bts.cols[:0]
	bts.at = bts.at[:0]
	for j, f := range res.Fields {
		bts.at = append(bts.at, -1)
		switch f.Type {
		case mysql.MYSQL_TYPE_DATE, mysql.MYSQL_TYPE_NEWDATE, mysql.MYSQL_TYPE_DATETIME, mysql.MYSQL_TYPE_TIMESTAMP,
			mysql.MYSQL_TYPE_TIME:
			fsp := int(f.Decimal)
			if fsp > 6 && j < len(k.cols) {
				// Not a column's own precision (31: not fixed); the column's is.
				fsp = k.t.cols[k.cols[j]].Decimals
			}
			bts.at[j] = len(bts.cols)
			bts.cols = append(bts.cols, binaryTemporal{col: j, typ: f.Type, fsp: min(fsp, 6)})
			f.Type = mysql.MYSQL_TYPE_BLOB
		}
	}
	bts.packed = make([]mysql.FieldValue, len(bts.cols))
	return nil
}

// packedAt is the temporal column j of the result, or nil when it is not one.
func (bts *binaryTemporals) packedAt(j int) *binaryTemporal {
	if j >= len(bts.at) || bts.at[j] < 0 {
		return nil
	}
	return &bts.cols[bts.at[j]]
}

// print replaces the packed temporal values of row with their text, as the text
// protocol sends them. It returns the result column of a value that does not unpack.
func (bts *binaryTemporals) print(row []mysql.FieldValue) (int, error) {
	for i := range bts.cols {
		bt := &bts.cols[i]
		fv := &row[bt.col]
		if fv.Type != mysql.FieldValueTypeString {
			continue
		}
		var err error
		if bt.buf, err = appendTemporal(bt.buf[:0], bt.typ, bt.fsp, fv.AsString()); err != nil {
			return bt.col, err
		}
		// go-mysql decodes the next row into the value's own buffer: it is put back once the
		// row is encoded (restore).
		bts.packed[i] = *fv
		*fv = mysql.NewFieldValue(mysql.FieldValueTypeString, 0, bt.buf)
	}
	return 0, nil
}

// restore gives go-mysql back the buffers print took out of row.
func (bts *binaryTemporals) restore(row []mysql.FieldValue) {
	for i := range bts.cols {
		if bts.packed[i].Type == mysql.FieldValueTypeString {
			row[bts.cols[i].col] = bts.packed[i]
			bts.packed[i] = mysql.FieldValue{}
		}
	}
}

// appendTemporal prints a packed binary-protocol DATE, DATETIME, TIMESTAMP or TIME value as
// the server prints it, with fsp fractional digits.
func appendTemporal(dst []byte, typ byte, fsp int, b []byte) ([]byte, error) {
	if typ == mysql.MYSQL_TYPE_TIME {
		return appendPackedTime(dst, fsp, b)
	}
	var year, month, day, hour, minute, second, micro int
	switch len(b) {
	case 11:
		micro = int(binary.LittleEndian.Uint32(b[7:11]))
		fallthrough
	case 7:
		hour, minute, second = int(b[4]), int(b[5]), int(b[6])
		fallthrough
	case 4:
		year, month, day = int(binary.LittleEndian.Uint16(b[:2])), int(b[2]), int(b[3])
	case 0:
	default:
		return dst, fmt.Errorf("packed date of %d bytes", len(b))
	}
	dst = appendDate(dst, year, month, day)
	if typ == mysql.MYSQL_TYPE_DATE || typ == mysql.MYSQL_TYPE_NEWDATE {
		return dst, nil
	}
	dst = append(dst, ' ')
	return appendClock(dst, hour, minute, second, micro, fsp), nil
}

// appendPackedTime prints a packed TIME: sign, days, hours, minutes, seconds, microseconds;
// the server prints days as hours.
func appendPackedTime(dst []byte, fsp int, b []byte) ([]byte, error) {
	var neg bool
	var hours, minute, second, micro int
	switch len(b) {
	case 12:
		micro = int(binary.LittleEndian.Uint32(b[8:12]))
		fallthrough
	case 8:
		neg = b[0] == 1
		hours = int(binary.LittleEndian.Uint32(b[1:5]))*24 + int(b[5])
		minute, second = int(b[6]), int(b[7])
	case 0:
	default:
		return dst, fmt.Errorf("packed time of %d bytes", len(b))
	}
	if neg {
		dst = append(dst, '-')
	}
	return appendClock(dst, hours, minute, second, micro, fsp), nil
}

// appendClock prints hh:mm:ss and, with fsp digits, the fraction.
func appendClock(dst []byte, hour, minute, second, micro, fsp int) []byte {
	if hour < 100 {
		dst = append(dst, byte('0'+hour/10), byte('0'+hour%10))
	} else {
		dst = strconv.AppendInt(dst, int64(hour), 10)
	}
	dst = append(dst, ':', byte('0'+minute/10), byte('0'+minute%10), ':', byte('0'+second/10), byte('0'+second%10))
	if fsp > 0 {
		var frac [7]byte
		frac[0] = '.'
		for i := 6; i > 0; i-- {
			frac[i] = byte('0' + micro%10)
			micro /= 10
		}
		dst = append(dst, frac[:fsp+1]...)
	}
	return dst
}

// appendDate prints yyyy-mm-dd.
func appendDate(dst []byte, year, month, day int) []byte {
	return append(dst, byte('0'+year/1000%10), byte('0'+year/100%10), byte('0'+year/10%10), byte('0'+year%10), '-',
		byte('0'+month/10%10), byte('0'+month%10), '-', byte('0'+day/10%10), byte('0'+day%10))
}
