package rowcodec

import (
	"errors"
	"fmt"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/vstream-cdc/vstream/vstreamer/jsondiff"
)

// An update logged with binlog_row_value_options=PARTIAL_JSON holds, for a JSON column it
// changed with JSON_SET, JSON_REPLACE or JSON_REMOVE, a vector of diffs instead of the value.
// go-mysql v1.16.0 decodes the first diff of each vector only, so the vectors are read here
// from the event's bytes and applied to the before image's value: the after image then holds
// the whole value, printed as whole values are (vitessJSON), as if the update had been logged
// whole. A diff whose column the before
// image does not hold (binlog_row_image MINIMAL or NOBLOB) is left as go-mysql decoded it,
// for the stream to refuse.

// partialValueOptions is the bit of binlog_row_value_options that marks partial JSON.
const partialValueOptions = 1

// applyPartialJSON replaces the JSON diffs go-mysql left in re's after images with the values
// they give. data is the event's rows, past its header.
func applyPartialJSON(re *replication.RowsEvent, data []byte) error {
	if !isPartialUpdate(re) {
		return nil
	}
	cols, _ := FromTableMap(re.Table)
	jsonCols := 0
	for i := range cols {
		if cols[i].Type == mysql.MYSQL_TYPE_JSON {
			jsonCols++
		}
	}
	pos := 0
	for img := 0; pos < len(data); img += 2 {
		if img+1 >= len(re.Rows) {
			return errors.New("partial JSON update: more row images in the event than go-mysql decoded")
		}
		var err error
		before := re.Rows[img]
		if pos, err = walkImage(cols, data, pos, re.ColumnBitmap1, nil, func(col int, v []byte, _ bool) error {
			return printJSON(before, col, v)
		}); err != nil {
			return fmt.Errorf("partial JSON update: before image %d: %w", img/2+1, err)
		}
		opts, _, n := mysql.LengthEncodedInt(data[pos:])
		if n == 0 || pos+n > len(data) {
			return fmt.Errorf("partial JSON update: after image %d: %w", img/2+1, errShort)
		}
		pos += n
		var partial []byte
		if opts&partialValueOptions != 0 {
			size := (jsonCols + 7) / 8
			if pos+size > len(data) {
				return fmt.Errorf("partial JSON update: after image %d: %w", img/2+1, errShort)
			}
			partial, pos = data[pos:pos+size], pos+size
		}
		after := re.Rows[img+1]
		pos, err = walkImage(cols, data, pos, re.ColumnBitmap2, partial, func(col int, v []byte, isPartial bool) error {
			if !isPartial {
				return printJSON(after, col, v)
			}
			// A JSON column the update did not change is logged as an empty vector, which
			// go-mysql reads as an empty document: it too takes its value from the before
			// image.
			doc, ok := jsonValue(before[col])
			if !ok {
				// The before image does not hold it: the diff is left for the stream to
				// refuse, even an empty one.
				if _, isDiff := after[col].(*replication.JsonDiff); !isDiff {
					after[col] = &replication.JsonDiff{}
				}
				return nil
			}
			diffs, perr := jsondiff.Parse(v)
			if perr != nil {
				return fmt.Errorf("column %d: %w", col+1, perr)
			}
			text, perr := jsondiff.Apply(doc, diffs, printValue, appendJSONString)
			if perr != nil {
				return fmt.Errorf("column %d: %w", col+1, perr)
			}
			after[col] = text
			return nil
		})
		if err != nil {
			return fmt.Errorf("partial JSON update: after image %d: %w", img/2+1, err)
		}
	}
	return nil
}

// isPartialUpdate tells a PARTIAL_UPDATE_ROWS_EVENT, even one whose after images hold no
// diff go-mysql could see (a JSON column the update did not change is an empty vector). Its
// type is not exported; it is the one update event whose RowsEvent.Type() go-mysql v1.16.0
// does not know.
func isPartialUpdate(re *replication.RowsEvent) bool {
	return re.ColumnBitmap2 != nil && re.Type() == replication.EnumRowsEventTypeUnknown
}

// jsonValue is the text of a JSON column's value as go-mysql decodes it; false when the image
// does not hold one.
func jsonValue(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case []byte:
		return string(v), true // go-mysql's empty document
	}
	return "", false
}

// walkImage steps over one row image at data[pos:] whose columns are those set in bitmap, and
// calls json with the bytes of each JSON value it holds (NULLs aside): a binary JSON
// document, or a diff vector when partial (the after image's bitmap of partial JSON columns,
// one bit per JSON column) marks the column.
func walkImage(cols []Column, data []byte, pos int, bitmap, partial []byte, json func(col int, v []byte, isPartial bool) error) (int, error) {
	logged := 0
	for i := range cols {
		if bitSet(bitmap, i) {
			logged++
		}
	}
	nullLen := (logged + 7) / 8
	if pos+nullLen > len(data) {
		return pos, errShort
	}
	nulls := data[pos : pos+nullLen]
	pos += nullLen
	ni, ji := 0, 0
	var scratch []byte
	for i := range cols {
		c := &cols[i]
		isPartial := false
		if c.Type == mysql.MYSQL_TYPE_JSON {
			// The partial bitmap has a bit for every JSON column, logged or not.
			isPartial = partial != nil && bitSet(partial, ji)
			ji++
		}
		if !bitSet(bitmap, i) {
			continue
		}
		null := bitSet(nulls, ni)
		ni++
		if null {
			continue
		}
		if c.Type == mysql.MYSQL_TYPE_JSON {
			v, n, err := blob(data[pos:], c.Meta)
			if err != nil {
				return pos, &DecodeError{Column: i, Err: err}
			}
			if json != nil {
				if err := json(i, v, isPartial); err != nil {
					return pos, err
				}
			}
			pos += n
			continue
		}
		var n int
		var err error
		scratch, n, _, err = c.appendBinlog(scratch[:0], data[pos:])
		if err != nil {
			return pos, &DecodeError{Column: i, Err: err}
		}
		pos += n
	}
	return pos, nil
}

func bitSet(b []byte, i int) bool { return b[i>>3]&(1<<(i&7)) != 0 }

// printValue is the text the stream prints for a binary JSON value.
func printValue(b []byte) (string, error) {
	out, err := appendVitessJSON(nil, b)
	return string(out), err
}

// printJSON replaces go-mysql's text of a whole JSON value in row with the stream's (see
// vitessJSON). An empty value (an invalid document MySQL writes for an empty string under a
// non-strict sql_mode) stays as go-mysql decodes it.
func printJSON(row []any, col int, v []byte) error {
	if len(v) == 0 || col >= len(row) {
		return nil
	}
	text, err := appendVitessJSON(nil, v)
	if err != nil {
		return &DecodeError{Column: col, Err: err}
	}
	row[col] = string(text)
	return nil
}
