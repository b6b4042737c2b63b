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

	cache map[*Schema]*cachedSchema
	names map[*Schema][]string
	// slab holds the messages and their bytes; buf is where a document is written first.
	slab encoder.Slab
	buf  []byte
	// arena holds what converting a cell of a row image needs.
	arena []byte
	// markMsg and markAt locate the source.snapshot value of the latest snapshot read.
	markMsg *vstreamv1.EncodedMessage
	markAt  int
	// source is the latest source block written.
	source sourceText
}

// cachedSchema is a schema's JSON and the size of the last document that used it; for an
// envelope, its source field's schema.
type cachedSchema struct {
	json   []byte
	hint   int
	source *Schema
}

// sourceText is a source block as written, split around the value of its row field, for the
// records with the same Record.SourceID.
type sourceText struct {
	schema *Schema
	id     uint64
	// row is the index of the row field; snapshot the offset of the snapshot value's text in
	// prefix, or -1.
	row, snapshot  int
	prefix, suffix []byte
}

// maxCachedSchemas bounds the cache; schemas are rebuilt on every FIELD event.
const maxCachedSchemas = 1024

// Serialize implements Serializer.
func (j *JSONSerializer) Serialize(r *Record) (*vstreamv1.EncodedMessage, error) {
	m := j.slab.Message()
	m.Format, m.Topic = j.Format, r.Topic
	if r.KeySchema != nil {
		w := jsonWriter{keys: j.keys(), markAt: -1, rows: r.Rows, arena: j.arena}
		m.Key = j.slabDocument(&w, r.KeySchema, r.Key)
		if j.arena = w.arena; w.err != nil {
			return nil, w.err
		}
	}
	if r.ValueSchema == nil {
		m.Tombstone = true
	} else {
		source := j.schema(r.ValueSchema).source
		var mark *Schema
		if r.Snapshot {
			mark = source
		}
		w := jsonWriter{keys: j.keys(), mark: mark, markAt: -1, rows: r.Rows, arena: j.arena}
		if r.SourceID != 0 {
			w.source, w.sourceID = &j.source, r.SourceID
			if j.source.schema != source || j.source.id != r.SourceID {
				j.source = sourceText{schema: source, id: r.SourceID, row: -1, snapshot: -1,
					prefix: j.source.prefix[:0], suffix: j.source.suffix[:0]}
				if source != nil {
					j.source.row = source.Field("row")
				}
			}
		}
		m.Value = j.slabDocument(&w, r.ValueSchema, r.Value)
		if j.arena = w.arena; w.err != nil {
			return nil, w.err
		}
		if r.Snapshot {
			j.markMsg, j.markAt = m, w.markAt
		}
	}
	if len(r.Headers) > 0 {
		m.Headers = make(map[string]string, len(r.Headers))
		for _, h := range r.Headers {
			m.Headers[h.Key] = string(j.document(h.Schema, h.Value))
		}
	}
	return m, nil
}

// MarkLast implements Serializer.
func (j *JSONSerializer) MarkLast(m *vstreamv1.EncodedMessage) error {
	if m != j.markMsg || j.markAt < 0 || string(m.Value[j.markAt:j.markAt+len(SnapshotTrue)]) != SnapshotTrue {
		return errors.New("debezium: the snapshot read to mark as last was not the latest")
	}
	copy(m.Value[j.markAt:], SnapshotLast)
	j.markMsg = nil
	return nil
}

func (j *JSONSerializer) document(s *Schema, v Value) []byte {
	w := jsonWriter{keys: j.keys(), markAt: -1}
	j.buf = j.documentWith(j.buf[:0], &w, s, v)
	return j.buf
}

// slabDocument writes a document straight into the slab.
func (j *JSONSerializer) slabDocument(w *jsonWriter, s *Schema, v Value) []byte {
	c := j.schema(s)
	b := j.slab.Commit(j.documentWith(j.slab.Buffer(c.hint+c.hint/8+64), w, s, v))
	c.hint = len(b)
	return b
}

// keys returns the member-name cache, emptied with the schema cache.
func (j *JSONSerializer) keys() map[*Schema][]string {
	if j.names == nil || len(j.names) > maxCachedSchemas {
		j.names = map[*Schema][]string{}
	}
	return j.names
}

func (j *JSONSerializer) schema(s *Schema) *cachedSchema {
	if j.cache == nil || len(j.cache) > maxCachedSchemas {
		j.cache = map[*Schema]*cachedSchema{}
	}
	c := j.cache[s]
	if c == nil {
		c = &cachedSchema{}
		if j.Schemas {
			c.json = AppendSchemaJSON(nil, s)
		}
		if i := s.Field("source"); i >= 0 && s.Type == Struct && s.Fields[i].Schema.Type == Struct {
			c.source = s.Fields[i].Schema
		}
		j.cache[s] = c
	}
	return c
}

// documentWith appends a document to b.
func (j *JSONSerializer) documentWith(b []byte, w *jsonWriter, s *Schema, v Value) []byte {
	c := j.schema(s)
	if j.Schemas {
		b = append(b, `{"schema":`...)
		b = append(b, c.json...)
		b = append(b, `,"payload":`...)
	}
	b = w.value(b, s, &v)
	if j.Schemas {
		b = append(b, '}')
	}
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
		w := jsonWriter{markAt: -1}
		dst = w.value(dst, s, s.Default)
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
	return w.value(dst, s, &v)
}

// jsonWriter writes payloads; it notes where the snapshot field of struct mark is written.
type jsonWriter struct {
	// keys caches the quoted member names ("name":) of struct schemas.
	keys   map[*Schema][]string
	mark   *Schema
	markAt int
	// source, when set, is the text of the source blocks of record sourceID, made by the
	// first of its records that writes its source.schema struct, reused by the others.
	source   *sourceText
	sourceID uint64
	// rows are the row images KindRow and KindKey values refer to; arena is scratch for
	// converting their cells. err is the first cell that failed to convert.
	rows  *RowImages
	arena []byte
	err   error
}

func (w *jsonWriter) memberKeys(s *Schema) []string {
	if k, ok := w.keys[s]; ok {
		return k
	}
	k := make([]string, len(s.Fields))
	for i, f := range s.Fields {
		k[i] = string(append(encoder.AppendJSONString(nil, f.Name), ':'))
	}
	if w.keys != nil {
		w.keys[s] = k
	}
	return k
}

// scalar writes a value that is not a struct or an array.
func scalar(dst []byte, s *Schema, v *Value) []byte {
	switch v.Kind {
	case KindInt:
		return strconv.AppendInt(dst, v.I, 10)
	case KindFloat:
		bits := 64
		if s.Type == Float32 {
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
	}
	return append(dst, "null"...)
}

func (w *jsonWriter) value(dst []byte, s *Schema, v *Value) []byte {
	switch v.Kind {
	case KindNull, KindInt, KindFloat, KindBool, KindString, KindBytes:
		return scalar(dst, s, v)
	case KindArray:
		dst = append(dst, '[')
		for i := range v.Fields {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = w.value(dst, s.Items, &v.Fields[i])
		}
		return append(dst, ']')
	case KindRow, KindKey:
		return w.image(dst, s, v)
	case KindStruct:
		if w.source != nil && s == w.source.schema {
			return w.sourceBlock(dst, s, v)
		}
		dst = append(dst, '{')
		keys := w.memberKeys(s)
		for i := range s.Fields {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, keys[i]...)
			if s == w.mark && s.Fields[i].Name == "snapshot" {
				w.markAt = len(dst) + 1
			}
			if i < len(v.Fields) {
				dst = w.value(dst, s.Fields[i].Schema, &v.Fields[i])
			} else {
				dst = append(dst, "null"...)
			}
		}
		return append(dst, '}')
	}
	return append(dst, "null"...)
}

// image writes the row or key struct of a row image, converting its cells one by one.
func (w *jsonWriter) image(dst []byte, s *Schema, v *Value) []byte {
	if w.rows == nil || w.rows.Fields(v) != len(s.Fields) {
		if w.err == nil {
			w.err = errors.New("debezium: a row image value without its record's row images")
		}
		return append(dst, "null"...)
	}
	t, arena := w.rows.Table, w.arena
	dst = append(dst, '{')
	keys := w.memberKeys(s)
	for i := range s.Fields {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, keys[i]...)
		col, cell := w.rows.Field(v, i)
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
			dst = w.value(dst, s.Fields[i].Schema, &c)
		} else {
			dst = scalar(dst, s.Fields[i].Schema, &fv)
		}
	}
	w.arena = arena
	return append(dst, '}')
}

// sourceBlock writes a source block: the text made for the first record of the same source
// around this record's row, or, for that first record, the block as any struct, keeping the
// text around the row for the next ones.
func (w *jsonWriter) sourceBlock(dst []byte, s *Schema, v *Value) []byte {
	c := w.source
	row := c.row
	if row < 0 || row >= len(v.Fields) {
		w.source = nil
		dst = w.value(dst, s, v)
		w.source = c
		return dst
	}
	if len(c.prefix) > 0 {
		if s == w.mark && c.snapshot >= 0 {
			w.markAt = len(dst) + c.snapshot
		}
		dst = append(dst, c.prefix...)
		dst = w.value(dst, s.Fields[row].Schema, &v.Fields[row])
		return append(dst, c.suffix...)
	}
	start := len(dst)
	dst = append(dst, '{')
	keys := w.memberKeys(s)
	rowEnd := 0
	for i := range s.Fields {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, keys[i]...)
		if s.Fields[i].Name == "snapshot" {
			c.snapshot = len(dst) + 1 - start
			if s == w.mark {
				w.markAt = len(dst) + 1
			}
		}
		if i == row {
			c.prefix = append(c.prefix[:0], dst[start:]...)
		}
		if i < len(v.Fields) {
			dst = w.value(dst, s.Fields[i].Schema, &v.Fields[i])
		} else {
			dst = append(dst, "null"...)
		}
		if i == row {
			rowEnd = len(dst)
		}
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
