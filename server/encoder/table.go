package encoder

import (
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	"github.com/vstream-cdc/vstream/sqltypes"
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
	t := &Table{Name: fe.GetTableName(), Fields: ValueFields(fe.GetFields()), Labels: make([][]string, len(fe.GetFields()))}
	for i, f := range t.Fields {
		if f.GetFlags()&uint32(query.MySqlFlag_PRI_KEY_FLAG) != 0 {
			t.PK = append(t.PK, i)
			t.PKNames = append(t.PKNames, f.GetName())
		}
		if f.GetType() == query.Type_ENUM || f.GetType() == query.Type_SET {
			t.Labels[i] = sqltypes.Labels(f.GetColumnType())
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

// ValueType is the type of a column's values, as the formats write them. FIELD types a
// column as Vitess does, by the server's flags: a CHAR, ENUM or SET with a binary collation
// is BINARY, a VARCHAR VARBINARY, a TEXT BLOB, and MariaDB's UUID, INET4 and INET6 are
// BINARY. Their values are text all the same (UUID and INET values are the text SELECT
// prints), and the formats write them as their upstream connectors do for a MySQL or MariaDB
// source: as strings, which this type says.
func ValueType(f *query.Field) query.Type {
	typ := f.GetType()
	switch typ {
	case query.Type_BINARY, query.Type_VARBINARY, query.Type_BLOB:
	default:
		return typ
	}
	ct := strings.ToLower(f.GetColumnType())
	switch {
	case ct == "uuid" || ct == "inet4" || ct == "inet6":
		return query.Type_CHAR
	case !sqltypes.BinaryTypedText(typ, f.GetCharset()):
		return typ
	case strings.HasPrefix(ct, "enum("):
		return query.Type_ENUM
	case strings.HasPrefix(ct, "set("):
		return query.Type_SET
	case typ == query.Type_BINARY:
		return query.Type_CHAR
	case typ == query.Type_VARBINARY:
		return query.Type_VARCHAR
	}
	return query.Type_TEXT
}

// ValueFields returns the fields with the types of their values (ValueType), cloning only
// the fields whose type that changes.
func ValueFields(fields []*query.Field) []*query.Field {
	var out []*query.Field
	for i, f := range fields {
		vt := ValueType(f)
		if vt == f.GetType() {
			continue
		}
		if out == nil {
			out = slices.Clone(fields)
		}
		c := proto.CloneOf(f)
		c.Type = vt
		out[i] = c
	}
	if out == nil {
		return fields
	}
	return out
}

// Logged reports whether column i of a row change's after image was logged, by the row
// change's data_columns (binlog_row_image NOBLOB or MINIMAL leave columns out; they read
// NULL). With no bitmap every column was logged. The bitmap covers the source table's
// columns in table order, as Vitess sends it; a stream whose filter projects other columns
// cannot be mapped onto it (Vitess's own limit, vitessio/vitess#21075), and its columns count
// as logged.
func Logged(dc *binlogdata.RowChange_Bitmap, i, width int) bool {
	if dc.GetCount() == 0 || dc.GetCount() != int64(width) {
		return true
	}
	cols := dc.GetCols()
	return i/8 < len(cols) && cols[i/8]&(1<<(i%8)) != 0
}
