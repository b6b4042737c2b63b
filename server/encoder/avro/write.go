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
}

// writer writes Avro binary.
type writer struct {
	buf []byte
	// mark asks for the offset of the marked string's bytes, noted in markAt (-1: none).
	mark   bool
	markAt int
	// rows are the row images KindRow and KindKey values refer to; arena is scratch for
	// converting their cells.
	rows  *debezium.RowImages
	arena []byte
}

// value appends the Avro encoding of v, a value of the schema n was compiled from.
func (w *writer) value(n *node, v *debezium.Value) error {
	switch n.union {
	case nullFirst:
		if v.Kind == debezium.KindNull {
			w.buf = append(w.buf, 0)
			return nil
		}
		w.buf = append(w.buf, 2)
	case nullLast:
		if v.Kind == debezium.KindNull {
			w.buf = append(w.buf, 2)
			return nil
		}
		w.buf = append(w.buf, 0)
	}
	if n.kind == kRecord && (v.Kind == debezium.KindRow || v.Kind == debezium.KindKey) {
		return w.image(n, v)
	}
	if v.Kind != wantKind[n.kind] {
		return kindError(n, v)
	}
	switch n.kind {
	case kRecord:
		return w.fields(n, v.Fields)
	case kArray:
		// One block of all the items, then the empty block that ends the array.
		if len(v.Fields) > 0 {
			w.buf = appendLong(w.buf, int64(len(v.Fields)))
			for i := range v.Fields {
				if err := w.value(n.items, &v.Fields[i]); err != nil {
					return err
				}
			}
		}
		w.buf = append(w.buf, 0)
		return nil
	}
	return w.primitive(n, v)
}

// fields appends a record's fields. Primitive fields, most of them, are written here rather
// than through value: a row is mostly primitives, and the calls would cost more than the
// writes.
func (w *writer) fields(n *node, vals []debezium.Value) error {
	for i, f := range n.fields {
		v := &debezium.Null
		if i < len(vals) {
			v = &vals[i]
		}
		if err := w.field(f, v); err != nil {
			return fmt.Errorf("%s: %w", n.names[i], err)
		}
	}
	return nil
}

// field appends the value of one field of a record.
func (w *writer) field(f *node, v *debezium.Value) error {
	if f.kind == kRecord || f.kind == kArray {
		return w.value(f, v)
	}
	return w.scalar(f, v)
}

// scalar appends a value of a primitive node, or its null.
func (w *writer) scalar(f *node, v *debezium.Value) error {
	if f.kind == kRecord || f.kind == kArray {
		return kindError(f, v)
	}
	switch f.union {
	case nullFirst:
		if v.Kind == debezium.KindNull {
			w.buf = append(w.buf, 0)
			return nil
		}
		w.buf = append(w.buf, 2)
	case nullLast:
		if v.Kind == debezium.KindNull {
			w.buf = append(w.buf, 2)
			return nil
		}
		w.buf = append(w.buf, 0)
	}
	if v.Kind != wantKind[f.kind] {
		return kindError(f, v)
	}
	return w.primitive(f, v)
}

// image appends the row or key record of a row image, converting its cells one by one.
func (w *writer) image(n *node, v *debezium.Value) error {
	if w.rows == nil || w.rows.Fields(v) != len(n.fields) {
		return errors.New("a row image value without its record's row images")
	}
	t := w.rows.Table
	for i, f := range n.fields {
		col, cell, _ := w.rows.Column(v, i)
		var fv debezium.Value
		arena, err := t.Convert(&fv, col, w.arena[:0], cell)
		w.arena = arena
		if err != nil {
			return fmt.Errorf("table %s: %w", t.Table, err)
		}
		if f.kind == kRecord || f.kind == kArray {
			// Geometries and vectors; the copy keeps fv, which the other cells use, off the heap.
			c := fv
			err = w.value(f, &c)
		} else {
			err = w.scalar(f, &fv)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", n.names[i], err)
		}
	}
	return nil
}

// primitive appends a value of a primitive node whose kind matches it.
func (w *writer) primitive(n *node, v *debezium.Value) error {
	switch n.kind {
	case kString, kBytes:
		w.buf = appendLong(w.buf, int64(len(v.B)))
		if n.mark && w.mark {
			w.markAt = len(w.buf)
		}
		w.buf = append(w.buf, v.B...)
	case kLong:
		w.buf = appendLong(w.buf, v.I)
	case kInt:
		if v.I != int64(int32(v.I)) {
			return fmt.Errorf("%d does not fit an Avro int", v.I)
		}
		w.buf = appendLong(w.buf, v.I)
	case kFloat:
		w.buf = binary.LittleEndian.AppendUint32(w.buf, math.Float32bits(float32(v.F)))
	case kDouble:
		w.buf = binary.LittleEndian.AppendUint64(w.buf, math.Float64bits(v.F))
	case kBool:
		w.buf = append(w.buf, byte(v.I&1))
	}
	return nil
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
