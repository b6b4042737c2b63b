package avro

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strconv"
	"testing"
	"time"

	hamba "github.com/hamba/avro/v2"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/server/encoder"
	"github.com/vstream-cdc/vstream/server/encoder/encodertest"
)

var pkFlags = uint32(query.MySqlFlag_NOT_NULL_FLAG | query.MySqlFlag_PRI_KEY_FLAG)

const testGTID = "3e11fa47-71ca-11e1-9e33-c80aa9429562:23"

func fixedClock() time.Time { return time.UnixMilli(1_700_000_000_123) }

// newEncoder builds an encoder with a fixed clock and keyspace ks unless p says otherwise,
// failing on unknown options.
func newEncoder(t testing.TB, p encoder.Params, opts map[string]string) *Encoder {
	t.Helper()
	if p.Clock == nil {
		p.Clock = fixedClock
	}
	if p.Keyspace == "" {
		p.Keyspace = "ks"
	}
	return encodertest.New(t, New, p, opts)
}

// row builds a query.Row from cells: a string is a value, nil is NULL.
var row = encodertest.Row

func encodeAll(t testing.TB, e encoder.Encoder, evs ...*binlogdata.VEvent) []*vstreamv1.EncodedMessage {
	t.Helper()
	return encodertest.Encode(t, e, evs...)
}

func fieldEvent(table string, fields ...*query.Field) *binlogdata.VEvent {
	return &binlogdata.VEvent{Type: binlogdata.VEventType_FIELD, FieldEvent: &binlogdata.FieldEvent{
		TableName: table, Fields: fields, EnumSetStringValues: true}}
}

// decoded is a record of the stream decoded with the schemas the stream sent.
type decoded struct {
	msg *vstreamv1.EncodedMessage
	// keyID and valueID are the ids in the frames; 0 for no key or a tombstone.
	keyID, valueID int
	key, value     any
	// keySchema and valueSchema are what key and value were decoded with.
	keySchema, valueSchema hamba.Schema
}

// registry is what a consumer of the stream keeps: the schemas of the schema messages, by id.
type registry struct {
	schemas map[int]hamba.Schema
	text    map[int]string
	// subjects are the ids announced per subject, in order.
	subjects map[string][]int
}

func newRegistry() *registry {
	return &registry{schemas: map[int]hamba.Schema{}, text: map[int]string{}, subjects: map[string][]int{}}
}

// isSchema reports schema messages, checking their form.
func isSchema(t testing.TB, m *vstreamv1.EncodedMessage) bool {
	t.Helper()
	if m.Headers[HeaderMessage] == "" {
		return false
	}
	if m.Headers[HeaderMessage] != MessageSchema || len(m.Key) != 0 || m.Tombstone {
		t.Errorf("malformed schema message: %v", m)
	}
	return true
}

// add reads a schema message.
func (r *registry) add(t testing.TB, m *vstreamv1.EncodedMessage) {
	t.Helper()
	id, err := strconv.Atoi(m.Headers[HeaderSchemaID])
	if err != nil || id <= 0 {
		t.Fatalf("schema message with id %q", m.Headers[HeaderSchemaID])
	}
	sub := m.Headers[HeaderSubject]
	if sub != m.Topic+"-key" && sub != m.Topic+"-value" {
		t.Errorf("schema message on topic %s for subject %s", m.Topic, sub)
	}
	if old, ok := r.text[id]; ok && old != string(m.Value) {
		t.Errorf("id %d names two schemas:\n%s\n%s", id, old, m.Value)
	}
	s, err := hamba.ParseWithCache(string(m.Value), "", &hamba.SchemaCache{})
	if err != nil {
		t.Fatalf("schema %d: %v\n%s", id, err, m.Value)
	}
	r.schemas[id], r.text[id] = s, string(m.Value)
	r.subjects[sub] = append(r.subjects[sub], id)
}

// datum decodes a framed Avro datum with the registry's schema of its id, which must have
// been announced for the subject before.
func (r *registry) datum(t testing.TB, b []byte, sub string) (int, any, hamba.Schema) {
	t.Helper()
	if len(b) < 5 || b[0] != 0 {
		t.Fatalf("not Confluent-framed: % x", b)
	}
	id := int(binary.BigEndian.Uint32(b[1:5]))
	s := r.schemas[id]
	if s == nil {
		t.Fatalf("schema %d used before its schema message", id)
	}
	ids := r.subjects[sub]
	if len(ids) == 0 || ids[len(ids)-1] != id {
		t.Errorf("subject %s uses id %d, last announced %v", sub, id, ids)
	}
	rd := hamba.NewReader(nil, 0).Reset(b[5:])
	v := rd.ReadNext(s)
	if rd.Error != nil {
		t.Fatalf("decode with schema %d: %v", id, rd.Error)
	}
	if rd.Peek(); rd.Error != io.EOF {
		t.Fatalf("bytes left after the datum of schema %d", id)
	}
	return id, v, s
}

// decodeStream decodes a stream's records, reading its schema messages as they come.
func decodeStream(t testing.TB, msgs []*vstreamv1.EncodedMessage) (*registry, []decoded) {
	t.Helper()
	reg := newRegistry()
	var out []decoded
	for _, m := range msgs {
		if m.Format != Name {
			t.Errorf("message of format %q", m.Format)
		}
		if isSchema(t, m) {
			reg.add(t, m)
			continue
		}
		d := decoded{msg: m}
		if len(m.Key) > 0 {
			d.keyID, d.key, d.keySchema = reg.datum(t, m.Key, m.Topic+"-key")
		}
		if m.Tombstone {
			if len(m.Value) != 0 {
				t.Errorf("tombstone with a value")
			}
		} else {
			d.valueID, d.value, d.valueSchema = reg.datum(t, m.Value, m.Topic+"-value")
		}
		out = append(out, d)
	}
	return reg, out
}

// parseJSON decodes JSON keeping number text.
func parseJSON(t testing.TB, b []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b)
	}
	return v
}

// diff lists the paths where two parsed JSON documents differ.
func diff(path string, got, want any) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: got %s, want an object", path, show(got))}
		}
		var out []string
		keys := make([]string, 0, len(w)+len(g))
		for k := range w {
			keys = append(keys, k)
		}
		for k := range g {
			if _, ok := w[k]; !ok {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			gv, gok := g[k]
			wv, wok := w[k]
			switch {
			case !gok:
				out = append(out, fmt.Sprintf("%s.%s: missing, want %s", path, k, show(wv)))
			case !wok:
				out = append(out, fmt.Sprintf("%s.%s: unexpected %s", path, k, show(gv)))
			default:
				out = append(out, diff(path+"."+k, gv, wv)...)
			}
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{fmt.Sprintf("%s: got %s, want %s", path, show(got), show(want))}
		}
		var out []string
		for i := range w {
			out = append(out, diff(fmt.Sprintf("%s[%d]", path, i), g[i], w[i])...)
		}
		return out
	}
	if !reflect.DeepEqual(got, want) {
		return []string{fmt.Sprintf("%s: got %s, want %s", path, show(got), show(want))}
	}
	return nil
}

func show(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 400 {
		return string(b[:400]) + "..."
	}
	return string(b)
}

func sameJSON(t testing.TB, what string, got, want any) {
	t.Helper()
	for _, d := range diff(what, got, want) {
		t.Error(d)
	}
}
