package avro

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	hamba "github.com/hamba/avro/v2"

	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/server/encoder"
	"github.com/vstream-cdc/vstream/server/encoder/debezium"
)

// Serializer renders Debezium records as Confluent's AvroConverter does, and keeps the stream's
// schema registry: the ids it gave schemas and the subjects it announced. The schema messages
// a record needs are not returned by Serialize (it returns one message) but held until Place
// puts them in front of the record.
type Serializer struct {
	format     string
	fieldNames bool

	// plans holds the plan of each Connect schema seen; byText the plan of each distinct Avro
	// schema, which is the registry: its plans carry the ids.
	plans  map[*debezium.Schema]*plan
	byText map[string]*plan
	nextID int32
	// announced is the id each subject's records use now.
	announced map[subject]int32
	// pending are schema messages waiting for the record they precede to be sent.
	pending []pendingSchemas

	// last remembers, for keys and values, the schema and topic of the latest record and the
	// plan they were found to use, announced: rows of one table mostly follow each other.
	last [2]lastUse

	w writer
	// source is the latest source block written, which w reuses.
	source sourceBytes
	// slab holds the messages and their bytes; hint is the size of the latest record.
	slab encoder.Slab
	hint int
	// markMsg and markAt locate the source.snapshot text of the latest snapshot read.
	markMsg *vstreamv1.EncodedMessage
	markAt  int
}

type lastUse struct {
	schema *debezium.Schema
	topic  string
	plan   *plan
}

// plan is one Avro schema of the stream.
type plan struct {
	id   int32
	text string
	root *node
}

// subject is a topic's key or value subject.
type subject struct {
	topic string
	value bool
}

func (s subject) String() string {
	if s.value {
		return s.topic + "-value"
	}
	return s.topic + "-key"
}

type pendingSchemas struct {
	record *vstreamv1.EncodedMessage
	msgs   []*vstreamv1.EncodedMessage
}

// maxCachedPlans bounds plans: every FIELD event makes new Connect schemas, mostly equal to
// earlier ones, whose plans are found again through their text.
const maxCachedPlans = 1024

// NewSerializer makes the serializer of a stream whose messages are of format; fieldNames
// makes field names Avro-safe.
func NewSerializer(format string, fieldNames bool) *Serializer {
	s := &Serializer{format: format, fieldNames: fieldNames, plans: map[*debezium.Schema]*plan{},
		byText: map[string]*plan{}, announced: map[subject]int32{}}
	s.w.source = &s.source
	return s
}

// plan returns the plan of a Connect schema, giving its Avro schema an id when it is new.
func (s *Serializer) plan(cs *debezium.Schema) (*plan, error) {
	if p := s.plans[cs]; p != nil {
		return p, nil
	}
	text, root, err := convert(cs, s.fieldNames)
	if err != nil {
		return nil, fmt.Errorf("avro: schema %s: %w", cs.Name, err)
	}
	p := s.byText[text]
	if p == nil {
		if err := check(text); err != nil {
			return nil, fmt.Errorf("avro: schema %s is not valid Avro: %w", cs.Name, err)
		}
		markSource(cs, root)
		s.nextID++
		p = &plan{id: s.nextID, text: text, root: root}
		s.byText[text] = p
	}
	if len(s.plans) >= maxCachedPlans {
		clear(s.plans)
	}
	s.plans[cs] = p
	return p, nil
}

// checked holds the schema texts found valid, for all streams: parsing a schema costs about a
// millisecond, which every stream of the same tables would otherwise pay again when it starts.
var checked struct {
	sync.Mutex
	texts map[string]bool
}

// maxChecked bounds checked; past it, it starts again empty.
const maxChecked = 4096

// check parses an Avro schema text, with a cache of its own so that names of other schemas
// (or earlier versions of this one) play no part.
func check(text string) error {
	checked.Lock()
	ok := checked.texts[text]
	checked.Unlock()
	if ok {
		return nil
	}
	if _, err := hamba.ParseWithCache(text, "", &hamba.SchemaCache{}); err != nil {
		return err
	}
	checked.Lock()
	if checked.texts == nil || len(checked.texts) >= maxChecked {
		checked.texts = map[string]bool{}
	}
	checked.texts[text] = true
	checked.Unlock()
	return nil
}

// markSource marks the source block of a struct with one, and its source.snapshot.
func markSource(cs *debezium.Schema, root *node) {
	if cs.Type != debezium.Struct {
		return
	}
	i := cs.Field("source")
	if i < 0 || cs.Fields[i].Schema.Type != debezium.Struct || root.fields[i].kind != kRecord {
		return
	}
	src, n := cs.Fields[i].Schema, root.fields[i]
	n.source, n.row = true, src.Field("row")
	if j := src.Field("snapshot"); j >= 0 && n.fields[j].kind == kString {
		n.fields[j].mark = true
	}
}

// use returns the plan of a record's key (value false) or value schema, and appends to msgs
// the schema message of its subject when the subject's records did not use that plan yet.
func (s *Serializer) use(msgs []*vstreamv1.EncodedMessage, cs *debezium.Schema, topic string, value bool) (*plan, []*vstreamv1.EncodedMessage, error) {
	l := &s.last[0]
	if value {
		l = &s.last[1]
	}
	if l.schema == cs && l.topic == topic {
		return l.plan, msgs, nil
	}
	p, err := s.plan(cs)
	if err != nil {
		return nil, msgs, err
	}
	sub := subject{topic, value}
	if id, ok := s.announced[sub]; !ok || id != p.id {
		s.announced[sub] = p.id
		// A subject's plan changed: what last remembers may be stale.
		s.last = [2]lastUse{}
		msgs = append(msgs, &vstreamv1.EncodedMessage{Format: s.format, Topic: topic, Value: []byte(p.text),
			Headers: map[string]string{HeaderMessage: MessageSchema, HeaderSchemaID: strconv.Itoa(int(p.id)), HeaderSubject: sub.String()}})
	}
	*l = lastUse{schema: cs, topic: topic, plan: p}
	return p, msgs, nil
}

// frame appends the Confluent wire header: magic byte 0, then the schema id.
func frame(b []byte, id int32) []byte {
	return append(b, 0, byte(id>>24), byte(id>>16), byte(id>>8), byte(id))
}

// Serialize implements debezium.Serializer.
func (s *Serializer) Serialize(r *debezium.Record) (*vstreamv1.EncodedMessage, error) {
	m, schemas, err := s.serialize(r)
	if err != nil {
		// The schema messages of a record that failed are not sent: their subjects must be
		// announced again by the next record that uses them.
		for _, sm := range schemas {
			delete(s.announced, subject{sm.Topic, strings.HasSuffix(sm.Headers[HeaderSubject], "-value")})
		}
		s.last = [2]lastUse{}
		return nil, err
	}
	if len(schemas) > 0 {
		s.pending = append(s.pending, pendingSchemas{record: m, msgs: schemas})
	}
	return m, nil
}

func (s *Serializer) serialize(r *debezium.Record) (*vstreamv1.EncodedMessage, []*vstreamv1.EncodedMessage, error) {
	var schemas []*vstreamv1.EncodedMessage
	w := &s.w
	if w.rows != r.Rows {
		w.rows = r.Rows
	}
	w.sourceID = r.SourceID
	b := s.slab.Buffer(s.hint)
	keyLen := 0
	if r.KeySchema != nil {
		p, msgs, err := s.use(schemas, r.KeySchema, r.Topic, false)
		schemas = msgs
		if err != nil {
			return nil, schemas, err
		}
		if b, err = w.value(frame(b, p.id), p.root, &r.Key); err != nil {
			return nil, schemas, fmt.Errorf("avro: key of %s: %w", r.Topic, err)
		}
		keyLen = len(b)
	}
	w.markAt = -1
	if r.ValueSchema != nil {
		p, msgs, err := s.use(schemas, r.ValueSchema, r.Topic, true)
		schemas = msgs
		if err != nil {
			return nil, schemas, err
		}
		if b, err = w.value(frame(b, p.id), p.root, &r.Value); err != nil {
			return nil, schemas, fmt.Errorf("avro: value of %s: %w", r.Topic, err)
		}
	}
	// Key and value share the bytes written in place in the slab.
	b = s.slab.Commit(b)
	s.hint = len(b) + len(b)/8
	m := s.slab.Message()
	m.Format, m.Topic, m.Database, m.Table = s.format, r.Topic, r.Database, r.Table
	// A table's schema messages go where its records go.
	for _, sm := range schemas {
		sm.Database, sm.Table = r.Database, r.Table
	}
	if keyLen > 0 {
		m.Key = b[:keyLen:keyLen]
	}
	if r.ValueSchema == nil {
		m.Tombstone = true
	} else {
		m.Value = b[keyLen:]
	}
	if r.Snapshot {
		s.markMsg, s.markAt = m, -1
		if w.markAt >= 0 {
			s.markAt = w.markAt - keyLen
		}
	}
	if len(r.Headers) > 0 {
		m.Headers = make(map[string]string, len(r.Headers))
		for _, h := range r.Headers {
			m.Headers[h.Key] = string(debezium.AppendValueJSON(nil, h.Schema, h.Value))
		}
	}
	return m, schemas, nil
}

// Recycle implements encoder.Recycler.
func (s *Serializer) Recycle() { s.slab.Recycle() }

// MarkLast implements debezium.Serializer: the snapshot marker "true" becomes "last", which
// has the same length.
func (s *Serializer) MarkLast(m *vstreamv1.EncodedMessage) error {
	const n = len(debezium.SnapshotTrue)
	if m != s.markMsg || s.markAt < 0 || s.markAt+n > len(m.Value) || string(m.Value[s.markAt:s.markAt+n]) != debezium.SnapshotTrue {
		return errors.New("avro: the snapshot read to mark as last was not the latest")
	}
	copy(m.Value[s.markAt:], debezium.SnapshotLast)
	s.markMsg = nil
	return nil
}

// Place puts the schema messages of the records in out[n:] in front of them. Records hold
// back the latest snapshot read until they know whether it was the last, so its schema
// messages wait with it.
func (s *Serializer) Place(out []*vstreamv1.EncodedMessage, n int) []*vstreamv1.EncodedMessage {
	if len(s.pending) == 0 {
		return out
	}
	extra := 0
	for _, m := range out[n:] {
		if i := s.pendingFor(m); i >= 0 {
			extra += len(s.pending[i].msgs)
		}
	}
	if extra == 0 {
		return out
	}
	tail := make([]*vstreamv1.EncodedMessage, 0, len(out)-n+extra)
	for _, m := range out[n:] {
		if i := s.pendingFor(m); i >= 0 {
			tail = append(tail, s.pending[i].msgs...)
			s.pending = slices.Delete(s.pending, i, i+1)
		}
		tail = append(tail, m)
	}
	return append(out[:n], tail...)
}

func (s *Serializer) pendingFor(m *vstreamv1.EncodedMessage) int {
	for i := range s.pending {
		if s.pending[i].record == m {
			return i
		}
	}
	return -1
}
