package debezium

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"unsafe"

	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/server/encoder"
)

// JSONSerializer renders records the way Kafka's JsonConverter does: with schemas,
// {"schema": <Connect schema>, "payload": <value>}; without, the payload alone.
type JSONSerializer struct {
	// Schemas is the converter's schemas.enable.
	Schemas bool
	// Format names the messages' format.
	Format string

	plans map[*Schema]*jsonPlan
	// last holds the plans of the latest key and value schemas: rows of one table mostly
	// follow each other.
	last [2]*jsonPlan
	// slab holds the messages and their bytes; buf is where a header is written first.
	slab encoder.Slab
	buf  []byte
	// arena holds what converting a cell of a row image needs.
	arena []byte
	// markMsg and markAt locate the source.snapshot value of the latest snapshot read.
	markMsg *vstreamv1.EncodedMessage
	markAt  int
	// source is the latest source block written; ints the text of the envelope's latest
	// integer fields (its times), which stay the same for the records of a rows event.
	source sourceText
	ints   intTexts
}

// jsonPlan is how the documents of a schema are written: with schemas, their start,
// {"schema":<the schema's JSON>,"payload":; the size of the last document; the compiled
// value writer.
type jsonPlan struct {
	schema *Schema
	head   []byte
	hint   int
	root   *jsonNode
}

// jsonNode is a compiled schema: how one value is written.
type jsonNode struct {
	typ Type
	// keys are a struct's member names with what precedes them: `{"a":`, `,"b":`...;
	// fields the members' nodes. items is an array's element.
	keys   []string
	fields []*jsonNode
	items  *jsonNode
	// source marks a Debezium source block; row and snapshot are the indexes of its fields
	// row and snapshot (-1: none).
	source        bool
	row, snapshot int
	// envelope marks a struct with a source block, whose integer members are remembered.
	envelope bool
}

// sourceText is a source block as written, split around the value of its row field, for the
// records with the same Record.SourceID.
type sourceText struct {
	node *jsonNode
	id   uint64
	// snapshot is the offset of the snapshot value's text in prefix, or -1.
	snapshot       int
	prefix, suffix []byte
}

// intTexts remembers the text of the integer members of an envelope.
type intTexts struct {
	node  *jsonNode
	known []bool
	vals  []int64
	texts [][]byte
}

// maxCachedSchemas bounds the plans; schemas are rebuilt on every FIELD event.
const maxCachedSchemas = 1024

// plan returns the plan of a key (value false) or value schema.
func (j *JSONSerializer) plan(s *Schema, value bool) *jsonPlan {
	i := 0
	if value {
		i = 1
	}
	if p := j.last[i]; p != nil && p.schema == s {
		return p
	}
	if j.plans == nil || len(j.plans) > maxCachedSchemas {
		j.plans = map[*Schema]*jsonPlan{}
	}
	p := j.plans[s]
	if p == nil {
		p = &jsonPlan{schema: s, root: compileJSON(s, map[*Schema]*jsonNode{})}
		if j.Schemas {
			p.head = append(AppendSchemaJSON([]byte(`{"schema":`), s), `,"payload":`...)
		}
		j.plans[s] = p
	}
	j.last[i] = p
	return p
}

// compileJSON compiles a schema; done holds the nodes compiled already, so that a schema met
// twice (before and after) is compiled once.
func compileJSON(s *Schema, done map[*Schema]*jsonNode) *jsonNode {
	if n := done[s]; n != nil {
		return n
	}
	n := &jsonNode{typ: s.Type, row: -1, snapshot: -1}
	done[s] = n
	for i, f := range s.Fields {
		sep := ","
		if i == 0 {
			sep = "{"
		}
		n.keys = append(n.keys, string(append(encoder.AppendJSONString([]byte(sep), f.Name), ':')))
		n.fields = append(n.fields, compileJSON(f.Schema, done))
	}
	if s.Items != nil {
		n.items = compileJSON(s.Items, done)
	}
	if i := s.Field("source"); i >= 0 && s.Type == Struct && s.Fields[i].Schema.Type == Struct {
		n.envelope = true
		src, sn := s.Fields[i].Schema, n.fields[i]
		sn.source, sn.row, sn.snapshot = true, src.Field("row"), src.Field("snapshot")
	}
	return n
}

// Serialize implements Serializer.
func (j *JSONSerializer) Serialize(r *Record) (*vstreamv1.EncodedMessage, error) {
	m := j.slab.Message()
	m.Format, m.Topic, m.Database, m.Table = j.Format, r.Topic, r.Database, r.Table
	w := jsonWriter{markAt: -1, rows: r.Rows, arena: j.arena, source: &j.source, ints: &j.ints, sourceID: r.SourceID}
	if r.KeySchema != nil {
		m.Key = j.slabDocument(&w, j.plan(r.KeySchema, false), r.Key)
	}
	if r.ValueSchema == nil {
		m.Tombstone = true
	} else {
		m.Value = j.slabDocument(&w, j.plan(r.ValueSchema, true), r.Value)
		if r.Snapshot {
			j.markMsg, j.markAt = m, w.markAt
		}
	}
	if cap(w.arena) != cap(j.arena) {
		j.arena = w.arena
	}
	if w.err != nil {
		return nil, w.err
	}
	if len(r.Headers) > 0 {
		m.Headers = make(map[string]string, len(r.Headers))
		for _, h := range r.Headers {
			b := j.buf[:0]
			if j.Schemas {
				b = append(AppendSchemaJSON(append(b, `{"schema":`...), h.Schema), `,"payload":`...)
			}
			b = AppendValueJSON(b, h.Schema, h.Value)
			if j.Schemas {
				b = append(b, '}')
			}
			m.Headers[h.Key], j.buf = string(b), b
		}
	}
	return m, nil
}

// Recycle implements encoder.Recycler.
func (j *JSONSerializer) Recycle() { j.slab.Recycle() }

// MarkLast implements Serializer.
func (j *JSONSerializer) MarkLast(m *vstreamv1.EncodedMessage) error {
	if m != j.markMsg || j.markAt < 0 || string(m.Value[j.markAt:j.markAt+len(SnapshotTrue)]) != SnapshotTrue {
		return errors.New("debezium: the snapshot read to mark as last was not the latest")
	}
	copy(m.Value[j.markAt:], SnapshotLast)
	j.markMsg = nil
	return nil
}

// slabDocument writes a document straight into the slab.
func (j *JSONSerializer) slabDocument(w *jsonWriter, p *jsonPlan, v Value) []byte {
	b := j.slab.Buffer(p.hint + p.hint/8 + 64)
	b = append(b, p.head...)
	w.markAt = -1
	b = w.value(b, p.root, &v)
	if j.Schemas {
		b = append(b, '}')
	}
	b = j.slab.Commit(b)
	p.hint = len(b)
	return b
}

// AppendSchemaJSON appends a schema as Kafka's JsonConverter writes it.
func AppendSchemaJSON(dst []byte, s *Schema) []byte {
	return appendSchema(dst, s, "")
}

func appendSchema(dst []byte, s *Schema, field string) []byte {
	dst = append(dst, `{"type":"`...)
	dst = append(dst, s.Type.String()...)
	dst = append(dst, '"')
	switch s.Type {
	case Struct:
		dst = append(dst, `,"fields":[`...)
		for i, f := range s.Fields {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendSchema(dst, f.Schema, f.Name)
		}
		dst = append(dst, ']')
	case Array:
		dst = append(dst, `,"items":`...)
		dst = appendSchema(dst, s.Items, "")
	case Map:
		dst = append(dst, `,"keys":`...)
		dst = appendSchema(dst, s.Keys, "")
		dst = append(dst, `,"values":`...)
		dst = appendSchema(dst, s.Values, "")
	default:
		// Primitive schemas have no nested part.
	}
	dst = append(dst, `,"optional":`...)
	dst = strconv.AppendBool(dst, s.Optional)
	if s.Name != "" {
		dst = append(dst, `,"name":`...)
		dst = encoder.AppendJSONString(dst, s.Name)
	}
	if s.Version != 0 {
		dst = append(dst, `,"version":`...)
		dst = strconv.AppendInt(dst, int64(s.Version), 10)
	}
	if s.Doc != "" {
		dst = append(dst, `,"doc":`...)
		dst = encoder.AppendJSONString(dst, s.Doc)
	}
	if len(s.Parameters) > 0 {
		dst = AppendParams(append(dst, `,"parameters":`...), s.Parameters)
	}
	if s.Default != nil {
		dst = append(dst, `,"default":`...)
		dst = AppendValueJSON(dst, s, *s.Default)
	}
	if field != "" {
		dst = append(dst, `,"field":`...)
		dst = encoder.AppendJSONString(dst, field)
	}
	return append(dst, '}')
}

// AppendValueJSON appends a value of a schema as JsonConverter writes a payload: structs as
// objects in field order, int64 as integers, float and double in Java's text, bytes (and
// Decimal) as base64.
func AppendValueJSON(dst []byte, s *Schema, v Value) []byte {
	w := jsonWriter{markAt: -1}
	return w.value(dst, compileJSON(s, map[*Schema]*jsonNode{}), &v)
}

// jsonWriter writes payloads.
type jsonWriter struct {
	// markAt is the offset of the value of the latest source.snapshot written (-1: none).
	markAt int
	// rows are the row images KindRow and KindKey values refer to; arena is scratch for
	// converting their cells. err is the first cell that failed to convert.
	rows  *RowImages
	arena []byte
	err   error
	// source, when sourceID is not 0, is the text of the source blocks of record sourceID,
	// made by the first of its records, reused by the others; ints remembers the text of the
	// envelope's integers.
	source   *sourceText
	sourceID uint64
	ints     *intTexts
}

// scalar writes a value that is not a struct or an array.
func scalar(dst []byte, n *jsonNode, v *Value) []byte {
	switch v.Kind {
	case KindInt:
		return strconv.AppendInt(dst, v.I, 10)
	case KindFloat:
		bits := 64
		if n.typ == Float32 {
			bits = 32
		}
		return encoder.AppendJavaFloat(dst, v.F, bits)
	case KindBool:
		return strconv.AppendBool(dst, v.I != 0)
	case KindString:
		return encoder.AppendJSONString(dst, unsafeString(v.B))
	case KindBytes:
		dst = append(dst, '"')
		dst = base64.StdEncoding.AppendEncode(dst, v.B)
		return append(dst, '"')
	default:
		// KindNull. value writes the composite kinds and images itself; they never come here.
	}
	return append(dst, "null"...)
}

func (w *jsonWriter) value(dst []byte, n *jsonNode, v *Value) []byte {
	switch v.Kind {
	case KindNull, KindInt, KindFloat, KindBool, KindString, KindBytes:
		return scalar(dst, n, v)
	case KindArray:
		dst = append(dst, '[')
		for i := range v.Fields {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = w.value(dst, n.items, &v.Fields[i])
		}
		return append(dst, ']')
	case KindRow, KindKey:
		return w.image(dst, n, v)
	case KindStruct:
		if n.source && w.sourceID != 0 && w.source != nil {
			return w.sourceBlock(dst, n, v)
		}
		if n.envelope && w.ints != nil {
			return w.envelope(dst, n, v)
		}
		if len(n.keys) == 0 {
			return append(dst, "{}"...)
		}
		for i, key := range n.keys {
			dst = append(dst, key...)
			if i == n.snapshot && n.source {
				w.markAt = len(dst) + 1
			}
			if i < len(v.Fields) {
				dst = w.value(dst, n.fields[i], &v.Fields[i])
			} else {
				dst = append(dst, "null"...)
			}
		}
		return append(dst, '}')
	}
	return append(dst, "null"...)
}

// envelope writes a struct with a source block, taking the text of its integer members (the
// times, the same for all the records of a rows event) from the previous envelope when their
// values are the same.
func (w *jsonWriter) envelope(dst []byte, n *jsonNode, v *Value) []byte {
	m := w.ints
	if m.node != n {
		m.node = n
		if len(m.known) < len(n.keys) {
			m.known, m.vals, m.texts = make([]bool, len(n.keys)), make([]int64, len(n.keys)), make([][]byte, len(n.keys))
		}
		clear(m.known)
	}
	for i, key := range n.keys {
		dst = append(dst, key...)
		if i >= len(v.Fields) {
			dst = append(dst, "null"...)
			continue
		}
		f := &v.Fields[i]
		if f.Kind != KindInt {
			dst = w.value(dst, n.fields[i], f)
			continue
		}
		if !m.known[i] || m.vals[i] != f.I {
			m.texts[i] = strconv.AppendInt(m.texts[i][:0], f.I, 10)
			m.known[i], m.vals[i] = true, f.I
		}
		dst = append(dst, m.texts[i]...)
	}
	return append(dst, '}')
}

// image writes the row or key struct of a row image, converting its cells one by one.
func (w *jsonWriter) image(dst []byte, n *jsonNode, v *Value) []byte {
	if w.rows == nil || w.rows.Fields(v) != len(n.fields) {
		if w.err == nil {
			w.err = errors.New("debezium: a row image value without its record's row images")
		}
		return append(dst, "null"...)
	}
	if len(n.keys) == 0 {
		return append(dst, "{}"...)
	}
	t, arena := w.rows.Table, w.arena
	// A row's cells are read in order; a key's are picked.
	var vals []byte
	var lengths []int64
	if v.Kind == KindRow {
		vals, lengths = w.rows.Row(int(v.I & 1))
	}
	off := 0
	for i, key := range n.keys {
		dst = append(dst, key...)
		var col int
		var cell []byte
		if v.Kind == KindRow {
			col = i
			if i < len(lengths) {
				cell, off = NextCell(vals, lengths[i], off)
			}
		} else {
			col, cell = w.rows.Field(v, i)
		}
		if cell != nil {
			var ok bool
			if dst, ok = appendCellJSON(dst, &t.cols[col], cell); ok {
				continue
			}
		}
		var fv Value
		var err error
		if arena, err = t.Convert(&fv, col, arena[:0], cell); err != nil {
			if w.err == nil {
				w.err = fmt.Errorf("debezium: table %s: %w", t.Table, err)
			}
			dst = append(dst, "null"...)
			continue
		}
		if fv.Kind == KindStruct || fv.Kind == KindArray {
			// Geometries and vectors; the copy keeps fv, which the other cells use, off the heap.
			c := fv
			dst = w.value(dst, n.fields[i], &c)
		} else {
			dst = scalar(dst, n.fields[i], &fv)
		}
	}
	w.arena = arena
	return append(dst, '}')
}

// sourceBlock writes a source block: the text made for the first record of the same source
// around this record's row, or, for that first record, the block as any struct, keeping the
// text around the row for the next ones.
func (w *jsonWriter) sourceBlock(dst []byte, n *jsonNode, v *Value) []byte {
	c := w.source
	row := n.row
	if row < 0 || row >= len(v.Fields) || len(v.Fields) != len(n.keys) {
		id := w.sourceID
		w.sourceID = 0
		dst = w.value(dst, n, v)
		w.sourceID = id
		return dst
	}
	if c.node == n && c.id == w.sourceID {
		if c.snapshot >= 0 {
			w.markAt = len(dst) + c.snapshot
		}
		dst = append(dst, c.prefix...)
		dst = scalar(dst, n.fields[row], &v.Fields[row])
		return append(dst, c.suffix...)
	}
	start, rowEnd := len(dst), 0
	c.node, c.id, c.snapshot = n, w.sourceID, -1
	for i, key := range n.keys {
		dst = append(dst, key...)
		if i == n.snapshot {
			w.markAt = len(dst) + 1
			c.snapshot = w.markAt - start
		}
		if i == row {
			c.prefix = append(c.prefix[:0], dst[start:]...)
			dst = scalar(dst, n.fields[i], &v.Fields[i])
			rowEnd = len(dst)
			continue
		}
		dst = w.value(dst, n.fields[i], &v.Fields[i])
	}
	dst = append(dst, '}')
	c.suffix = append(c.suffix[:0], dst[rowEnd:]...)
	if c.snapshot >= len(c.prefix) {
		c.snapshot = -1
	}
	return dst
}

// unsafeString views bytes as a string for reading only.
func unsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}
