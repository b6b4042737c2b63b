package avro

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/vstream-cdc/vstream/server/encoder/debezium"
)

// kind is the Avro type a plan node writes.
type kind uint8

const (
	kInt kind = iota
	kLong
	kFloat
	kDouble
	kBool
	kString
	kBytes
	kRecord
	kArray
)

var kindNames = [...]string{kInt: "int", kLong: "long", kFloat: "float", kDouble: "double", kBool: "boolean",
	kString: "string", kBytes: "bytes", kRecord: "record", kArray: "array"}

// wantKind is the Connect value kind each node kind writes.
var wantKind = [...]debezium.Kind{kInt: debezium.KindInt, kLong: debezium.KindInt, kFloat: debezium.KindFloat,
	kDouble: debezium.KindFloat, kBool: debezium.KindBool, kString: debezium.KindString, kBytes: debezium.KindBytes,
	kRecord: debezium.KindStruct, kArray: debezium.KindArray}

// Where null sits in an optional schema's union.
const (
	required  = iota
	nullFirst // ["null", T]: null is branch 0
	nullLast  // [T, "null"]: T is branch 0
)

// node is a compiled schema: how one value is written.
type node struct {
	kind  kind
	union uint8
	// fields are a record's fields in order; items an array's element.
	fields []*node
	items  *node
	// names are a record's field names, for errors.
	names []string
	// mark is set on source.snapshot of a record's source block, whose text MarkLast rewrites.
	mark bool
	// source is set on a Debezium source block, whose field row is the index of source.row.
	source bool
	row    int
}

// writer writes Avro binary. Its methods take and return the bytes written so far rather than
// keep them in the writer: a slice kept in a struct on the heap would be stored back at every
// value, a pointer write the garbage collector's write barrier makes dear while it marks.
type writer struct {
	// markAt is the offset of the marked string's bytes (source.snapshot) in the bytes written,
	// -1 when none was written.
	markAt int
	// rows are the row images KindRow and KindKey values refer to; arena is scratch for
	// converting their cells.
	rows  *debezium.RowImages
	arena []byte
	// source, when sourceID is not 0, holds the bytes of the source blocks of record sourceID,
	// made by the first of its records, reused by the others.
	source   *sourceBytes
	sourceID uint64
}

// sourceBytes is a source block as written, split around its row field, for the records with
// the same debezium.Record.SourceID.
type sourceBytes struct {
	node *node
	id   uint64
	// snapshot is the offset of source.snapshot's bytes in prefix, or -1.
	snapshot       int
	prefix, suffix []byte
}

// value appends the Avro encoding of v, a value of the schema n was compiled from.
func (w *writer) value(b []byte, n *node, v *debezium.Value) ([]byte, error) {
	b, null := branch(b, n, v)
	if null {
		return b, nil
	}
	if n.kind == kRecord && (v.Kind == debezium.KindRow || v.Kind == debezium.KindKey) {
		return w.image(b, n, v)
	}
	if v.Kind != wantKind[n.kind] {
		return b, kindError(n, v)
	}
	switch n.kind {
	case kRecord:
		if n.source && w.sourceID != 0 {
			return w.sourceBlock(b, n, v.Fields)
		}
		return w.fields(b, n, v.Fields)
	case kArray:
		// One block of all the items, then the empty block that ends the array.
		if len(v.Fields) > 0 {
			b = appendLong(b, int64(len(v.Fields)))
			for i := range v.Fields {
				var err error
				if b, err = w.value(b, n.items, &v.Fields[i]); err != nil {
					return b, err
				}
			}
		}
		return append(b, 0), nil
	default:
		// The primitive kinds, below.
	}
	return w.primitive(b, n, v)
}

// fields appends a record's fields. Primitive fields, most of them, are written here rather
// than through value: a row is mostly primitives, and the calls would cost more than the
// writes.
func (w *writer) fields(b []byte, n *node, vals []debezium.Value) ([]byte, error) {
	return w.fieldRange(b, n, vals, 0, len(n.fields))
}

// fieldRange appends fields lo to hi-1 of a record.
func (w *writer) fieldRange(b []byte, n *node, vals []debezium.Value, lo, hi int) ([]byte, error) {
	for i := lo; i < hi; i++ {
		f := n.fields[i]
		v := &debezium.Null
		if i < len(vals) {
			v = &vals[i]
		}
		var err error
		if f.kind == kRecord || f.kind == kArray {
			b, err = w.value(b, f, v)
		} else {
			b, err = w.scalar(b, f, v)
		}
		if err != nil {
			return b, fmt.Errorf("%s: %w", n.names[i], err)
		}
	}
	return b, nil
}

// sourceBlock appends a source block: the bytes made for the first record of the same source
// around this record's row, or, for that first record, the block as any record, keeping the
// bytes around the row for the next ones.
func (w *writer) sourceBlock(b []byte, n *node, vals []debezium.Value) ([]byte, error) {
	c := w.source
	row := n.row
	if row < 0 || row >= len(vals) || n.fields[row].kind != kInt || n.fields[row].union != required {
		return w.fields(b, n, vals)
	}
	if c.node == n && c.id == w.sourceID {
		if c.snapshot >= 0 {
			w.markAt = len(b) + c.snapshot
		}
		b = append(b, c.prefix...)
		var err error
		if b, err = w.primitive(b, n.fields[row], &vals[row]); err != nil {
			return b, fmt.Errorf("%s: %w", n.names[row], err)
		}
		return append(b, c.suffix...), nil
	}
	start := len(b)
	w.markAt = -1
	b, err := w.fieldRange(b, n, vals, 0, row)
	if err != nil {
		return b, err
	}
	*c = sourceBytes{node: n, id: w.sourceID, snapshot: -1, prefix: append(c.prefix[:0], b[start:]...), suffix: c.suffix[:0]}
	if w.markAt >= 0 {
		c.snapshot = w.markAt - start
	}
	if b, err = w.primitive(b, n.fields[row], &vals[row]); err != nil {
		c.node = nil
		return b, fmt.Errorf("%s: %w", n.names[row], err)
	}
	rowEnd := len(b)
	if b, err = w.fieldRange(b, n, vals, row+1, len(n.fields)); err != nil {
		c.node = nil
		return b, err
	}
	c.suffix = append(c.suffix, b[rowEnd:]...)
	return b, nil
}

// branch appends the union branch of an optional node's value, and reports a null value,
// which is then written.
func branch(b []byte, n *node, v *debezium.Value) ([]byte, bool) {
	switch n.union {
	case nullFirst:
		if v.Kind == debezium.KindNull {
			return append(b, 0), true
		}
		return append(b, 2), false
	case nullLast:
		if v.Kind == debezium.KindNull {
			return append(b, 2), true
		}
		return append(b, 0), false
	}
	return b, false
}

// scalar appends a value of a primitive node, or its null.
func (w *writer) scalar(b []byte, f *node, v *debezium.Value) ([]byte, error) {
	b, null := branch(b, f, v)
	if null {
		return b, nil
	}
	if v.Kind != wantKind[f.kind] {
		return b, kindError(f, v)
	}
	return w.primitive(b, f, v)
}

// image appends the row or key record of a row image, converting its cells one by one.
func (w *writer) image(b []byte, n *node, v *debezium.Value) ([]byte, error) {
	if w.rows == nil || w.rows.Fields(v) != len(n.fields) {
		return b, errors.New("a row image value without its record's row images")
	}
	t, arena := w.rows.Table, w.arena
	// A row's cells are read in order; a key's are picked.
	var vals []byte
	var lengths []int64
	if v.Kind == debezium.KindRow {
		vals, lengths = w.rows.Row(int(v.I & 1))
	}
	off := 0
	var err error
	for i, f := range n.fields {
		var col int
		var cell []byte
		if v.Kind == debezium.KindRow {
			col = i
			if i < len(lengths) {
				cell, off = debezium.NextCell(vals, lengths[i], off)
			}
		} else {
			col, cell = w.rows.Field(v, i)
		}
		var fv debezium.Value
		if arena, err = t.Convert(&fv, col, arena[:0], cell); err != nil {
			err = fmt.Errorf("table %s: %w", t.Table, err)
			break
		}
		if f.kind == kRecord || f.kind == kArray {
			// Geometries and vectors; the copy keeps fv, which the other cells use, off the heap.
			c := fv
			b, err = w.value(b, f, &c)
		} else {
			b, err = w.scalar(b, f, &fv)
		}
		if err != nil {
			err = fmt.Errorf("%s: %w", n.names[i], err)
			break
		}
	}
	w.arena = arena
	return b, err
}

// primitive appends a value of a primitive node whose kind matches it.
func (w *writer) primitive(b []byte, n *node, v *debezium.Value) ([]byte, error) {
	switch n.kind {
	case kString, kBytes:
		b = appendLong(b, int64(len(v.B)))
		if n.mark {
			w.markAt = len(b)
		}
		b = append(b, v.B...)
	case kLong:
		b = appendLong(b, v.I)
	case kInt:
		if v.I != int64(int32(v.I)) {
			return b, fmt.Errorf("%d does not fit an Avro int", v.I)
		}
		b = appendLong(b, v.I)
	case kFloat:
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(v.F)))
	case kDouble:
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v.F))
	case kBool:
		b = append(b, byte(v.I&1))
	default:
		// kRecord and kArray are written by value and never come here; should one, an error
		// beats a message with the field missing.
		return b, fmt.Errorf("an Avro %s is not a primitive", kindNames[n.kind])
	}
	return b, nil
}

func kindError(n *node, v *debezium.Value) error {
	if v.Kind == debezium.KindNull {
		return fmt.Errorf("null for a required %s", kindNames[n.kind])
	}
	return fmt.Errorf("value of kind %d for an Avro %s", v.Kind, kindNames[n.kind])
}

// appendLong appends an Avro int or long: zigzag, then a little-endian base-128 varint.
func appendLong(b []byte, v int64) []byte {
	u := uint64(v<<1) ^ uint64(v>>63)
	for u >= 0x80 {
		b = append(b, byte(u)|0x80)
		u >>= 7
	}
	return append(b, byte(u))
}
