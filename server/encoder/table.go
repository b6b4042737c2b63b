package encoder

import (
	"fmt"
	"strings"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	"github.com/vstream-cdc/vstream/vstreamer/ddl"
)

// Table is what a FIELD event said about a table, in the form encoders use.
type Table struct {
	Name   string
	Fields []*query.Field
	// PK holds the indexes of the primary-key columns, in key order (column order: MySQL
	// flags do not give the key's own order).
	PK []int
	// PKNames are the names of the PK columns.
	PKNames []string
	// Labels are the members of ENUM and SET columns (nil for other columns).
	Labels [][]string
	// Source is the FIELD event's source, when the stream carries sources.
	Source *binlogdata.EventSource
	// Version counts the FIELD events seen for this table name, starting at 1: a new value
	// means the columns may have changed.
	Version int
}

// NewTable builds a Table from a FIELD event.
func NewTable(fe *binlogdata.FieldEvent) *Table {
	t := &Table{Name: fe.GetTableName(), Fields: fe.GetFields(), Labels: make([][]string, len(fe.GetFields()))}
	for i, f := range t.Fields {
		if f.GetFlags()&uint32(query.MySqlFlag_PRI_KEY_FLAG) != 0 {
			t.PK = append(t.PK, i)
			t.PKNames = append(t.PKNames, f.GetName())
		}
		if f.GetType() == query.Type_ENUM || f.GetType() == query.Type_SET {
			t.Labels[i] = ddl.Labels(f.GetColumnType())
		}
	}
	return t
}

// Tables remembers the tables of a stream from its FIELD events.
type Tables map[string]*Table

// Field records a FIELD event and returns the table it describes.
func (ts Tables) Field(ev *binlogdata.VEvent) *Table {
	t := NewTable(ev.GetFieldEvent())
	t.Source = ev.GetSource()
	if prev := ts[t.Name]; prev != nil {
		t.Version = prev.Version + 1
	} else {
		t.Version = 1
	}
	ts[t.Name] = t
	return t
}

// Row returns the table of a ROW event, failing when no FIELD event came before it.
func (ts Tables) Row(ev *binlogdata.VEvent) (*Table, error) {
	name := ev.GetRowEvent().GetTableName()
	t := ts[name]
	if t == nil {
		return nil, fmt.Errorf("ROW for table %s before its FIELD event", name)
	}
	return t, nil
}

// Cells splits a row into its cells, appending to dst: a nil cell is NULL, a non-nil empty
// one is the empty value. Columns past the row's end are NULL. The cells alias the row.
func Cells(dst [][]byte, r *query.Row, width int) ([][]byte, error) {
	vals := r.GetValues()
	off := int64(0)
	for i, l := range r.GetLengths() {
		if i >= width {
			break
		}
		if l < 0 {
			dst = append(dst, nil)
			continue
		}
		if off+l > int64(len(vals)) {
			return dst, fmt.Errorf("row cell %d overruns the row's %d value bytes", i, len(vals))
		}
		if l == 0 {
			// A row of empty values may have no value bytes at all; slicing nil would read
			// as NULL.
			dst = append(dst, emptyCell)
			continue
		}
		dst = append(dst, vals[off:off+l:off+l])
		off += l
	}
	for len(dst) < width {
		dst = append(dst, nil)
	}
	return dst, nil
}

// emptyCell is the empty, non-NULL value.
var emptyCell = []byte{}

// EnumIndex is the 1-based index of an ENUM label among the members (0: the empty invalid
// value, or a label not among them).
func EnumIndex(labels []string, cell []byte) int {
	for j, l := range labels {
		if l == string(cell) {
			return j + 1
		}
	}
	return 0
}

// SetMask is the bitmask of a SET value given as comma-joined labels.
func SetMask(labels []string, cell []byte) uint64 {
	var mask uint64
	if len(cell) == 0 {
		return 0
	}
	for member := range strings.SplitSeq(string(cell), ",") {
		for j, l := range labels {
			if l == member {
				mask |= 1 << uint(j)
			}
		}
	}
	return mask
}

// BitValue is the unsigned value of a BIT cell (big-endian bytes).
func BitValue(cell []byte) uint64 {
	var v uint64
	for _, c := range cell {
		v = v<<8 | uint64(c)
	}
	return v
}

// Unsigned reports whether a column is of an unsigned integer type.
func Unsigned(f *query.Field) bool {
	switch f.GetType() {
	case query.Type_UINT8, query.Type_UINT16, query.Type_UINT24, query.Type_UINT32, query.Type_UINT64:
		return true
	default:
		// Signed and non-integer types.
	}
	return false
}

// Binary reports whether a column holds bytes rather than text (binary charset).
func Binary(f *query.Field) bool {
	switch f.GetType() {
	case query.Type_BINARY, query.Type_VARBINARY, query.Type_BLOB, query.Type_GEOMETRY, query.Type_BIT:
		return true
	default:
		// Text, numbers and temporal types.
	}
	return false
}
