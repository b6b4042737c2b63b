package avro

import (
	"encoding/binary"
	"io"
	"strconv"
	"testing"
	"time"

	hamba "github.com/hamba/avro/v2"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/server/encoder"
	"github.com/vstream-cdc/vstream/server/encoder/debezium/debeziumtest"
	"github.com/vstream-cdc/vstream/server/encoder/encodertest"
)

var pkFlags = uint32(query.MySqlFlag_NOT_NULL_FLAG | query.MySqlFlag_PRI_KEY_FLAG)

const testGTID = debeziumtest.GTID

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

// fieldEvent is a FIELD event with ENUM/SET cells as labels.
var fieldEvent = debeziumtest.FieldEvent

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

// JSON comparisons: parseJSON keeps number text, so that they also check how numbers are
// written.
var (
	parseJSON = debeziumtest.Parse
	show      = debeziumtest.Show
	sameJSON  = debeziumtest.SameJSON
)
