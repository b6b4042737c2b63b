package vstreamer

import (
	"encoding/binary"
	"fmt"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// A copy chunk is read with the binary protocol (a prepared statement): the server sends
// numbers, dates and times as they are stored rather than printing each as text, which costs
// it about a third less CPU per row, and the copy need not parse numbers back. Every value
// is then given to the row encoder as the text protocol would have given it, so copied rows
// are encoded exactly as before (and as binlog rows are).
//
// go-mysql's binary decoder prints dates and times with fmt, an allocation each; the chunk
// has it hand their packed bytes over instead (they are laid out as a length-prefixed
// string) and prints them itself into buffers it reuses.

// binaryTemporal is a result column of a temporal type whose packed value the chunk prints.
type binaryTemporal struct {
	col int  // the result column
	typ byte // its type as the server sent it
	fsp int  // fractional-second digits
	// buf holds the printed value of the current row.
	buf []byte
}

// takeTemporals is a SELECT's per-result callback: it marks the result's temporal columns,
// whose values go-mysql then passes on as the bytes the server packed.
func (k *chunk) takeTemporals(res *mysql.Result) error {
	k.temporals = k.temporals[:0]
	for j, f := range res.Fields {
		switch f.Type {
		case mysql.MYSQL_TYPE_DATE, mysql.MYSQL_TYPE_NEWDATE, mysql.MYSQL_TYPE_DATETIME, mysql.MYSQL_TYPE_TIMESTAMP,
			mysql.MYSQL_TYPE_TIME:
			fsp := int(f.Decimal)
			if fsp > 6 && j < len(k.cols) {
				// Not a column's own precision (31: not fixed); the column's is.
				fsp = k.t.cols[k.cols[j]].Decimals
			}
			k.temporals = append(k.temporals, binaryTemporal{col: j, typ: f.Type, fsp: min(fsp, 6)})
			f.Type = mysql.MYSQL_TYPE_BLOB
		}
	}
	k.packed = make([]mysql.FieldValue, len(k.temporals))
	return nil
}

// printTemporals replaces the packed temporal values of row with their text, as the text
// protocol sends them. It returns the result column of a value that does not unpack.
func (k *chunk) printTemporals(row []mysql.FieldValue) (int, error) {
	for i := range k.temporals {
		bt := &k.temporals[i]
		fv := &row[bt.col]
		if fv.Type != mysql.FieldValueTypeString {
			continue
		}
		var err error
		if bt.buf, err = appendTemporal(bt.buf[:0], bt.typ, bt.fsp, fv.AsString()); err != nil {
			return bt.col, err
		}
		// go-mysql decodes the next row into the value's own buffer: it is put back once the
		// row is encoded (restoreTemporals).
		k.packed[i] = *fv
		*fv = mysql.NewFieldValue(mysql.FieldValueTypeString, 0, bt.buf)
	}
	return 0, nil
}

// restoreTemporals gives go-mysql back the buffers printTemporals took out of row.
func (k *chunk) restoreTemporals(row []mysql.FieldValue) {
	for i := range k.temporals {
		if k.packed[i].Type == mysql.FieldValueTypeString {
			row[k.temporals[i].col] = k.packed[i]
			k.packed[i] = mysql.FieldValue{}
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
	dst = appendDigits(dst, year, 4)
	dst = append(dst, '-')
	dst = appendDigits(dst, month, 2)
	dst = append(dst, '-')
	dst = appendDigits(dst, day, 2)
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
	dst = appendDigits(dst, hour, 2)
	dst = append(dst, ':')
	dst = appendDigits(dst, minute, 2)
	dst = append(dst, ':')
	dst = appendDigits(dst, second, 2)
	if fsp > 0 {
		dst = append(dst, '.')
		var frac [6]byte
		for i := 5; i >= 0; i-- {
			frac[i] = byte('0' + micro%10)
			micro /= 10
		}
		dst = append(dst, frac[:fsp]...)
	}
	return dst
}

// appendDigits prints n in decimal with at least width digits.
func appendDigits(dst []byte, n, width int) []byte {
	var tmp [20]byte
	i := len(tmp)
	for n >= 10 || width > 1 {
		i--
		tmp[i] = byte('0' + n%10)
		n /= 10
		width--
	}
	i--
	tmp[i] = byte('0' + n)
	return append(dst, tmp[i:]...)
}
