// Package registry puts the sink's Avro records in a Confluent schema registry's frame: the
// stream's writer schemas are registered under TopicNameStrategy subjects (<topic>-key and
// <topic>-value, with the destination topic), and each record's key and value carry the id
// the registry gave their schema, so that Confluent's deserializers (Kafka Connect's
// AvroConverter, ksqlDB, Flink's avro-confluent format) read them.
//
// The avro format already frames records as Confluent's serializer does (0x00, a 4-byte
// big-endian schema id, the Avro datum), but with ids of its own stream, and announces each
// schema in a schema message before the first record that uses it (package
// server/encoder/avro). Register takes those messages: the schema is looked up under its
// subject and, when the registry does not hold it yet (a table's columns changed), checked
// against the subject's compatibility level and registered. Reframe then replaces the
// stream's id in a record's frame with the registry's: a map look-up, no registry call.
//
// A schema the subject's compatibility level refuses is an error naming the table, the
// subject, the level and what is incompatible, which stops the sink (sink.Permanent): its
// records would be unreadable by consumers of the subject. A registry that cannot be reached
// is an ordinary error, retried as broker errors are.
package registry

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	hamba "github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/vstream-cdc/vstream/sink"
)

// Options configure a Registry.
type Options struct {
	// URLs are the registry's base URLs (http:// or https://).
	URLs []string
	// TLS is the client TLS configuration for https URLs; nil uses the system's roots.
	TLS *tls.Config
	// User and Password are HTTP basic credentials (Confluent Cloud's API key and secret);
	// Token is a bearer token instead. Empty is none.
	User, Password, Token string
	// Timeout bounds each request; zero means 30s.
	Timeout time.Duration
	Logger  *slog.Logger
}

// Registry registers a stream's schemas and reframes its records; see the package comment.
// Register and Reframe are called from the sink's one goroutine.
type Registry struct {
	cl  *sr.Client
	log *slog.Logger

	// ids maps the stream's schema ids to the registry's. The stream announces an id before
	// any record uses it, and every new stream (a reconnect) announces its ids again, so an
	// entry is replaced before a record of the new stream can read it.
	ids map[int32]uint32
	// known holds the registry's id of each schema text registered or found under a subject,
	// so that a stream that starts again asks the registry nothing for schemas it has seen.
	known map[subjectSchema]uint32
	mu    sync.Mutex
}

type subjectSchema struct{ subject, text string }

// New makes a Registry; no request is made until the first schema.
func New(o Options) (*Registry, error) {
	if len(o.URLs) == 0 {
		return nil, errors.New("schema registry: no URL")
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = o.TLS
	opts := []sr.ClientOpt{sr.URLs(o.URLs...), sr.HTTPClient(&http.Client{Transport: tr, Timeout: o.Timeout}),
		sr.UserAgent("vstream-sink")}
	switch {
	case o.Token != "" && (o.User != "" || o.Password != ""):
		return nil, errors.New("schema registry: give a user and password or a token, not both")
	case o.Token != "":
		opts = append(opts, sr.BearerToken(o.Token))
	case o.User != "" || o.Password != "":
		opts = append(opts, sr.BasicAuth(o.User, o.Password))
	}
	cl, err := sr.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("schema registry: %w", err)
	}
	return &Registry{cl: cl, log: o.Logger, ids: map[int32]uint32{}, known: map[subjectSchema]uint32{}}, nil
}

// Subject is the TopicNameStrategy subject of a topic's keys or values.
func Subject(topic string, value bool) string {
	if value {
		return topic + "-value"
	}
	return topic + "-key"
}

// Register takes a schema message of the stream: the schema the stream frames with streamID,
// for the keys (value false) or values of the destination topic.
func (r *Registry) Register(ctx context.Context, topic string, value bool, streamID int32, schema []byte) error {
	subject, text := Subject(topic, value), string(schema)
	k := subjectSchema{subject, text}
	r.mu.Lock()
	id, ok := r.known[k]
	r.mu.Unlock()
	if !ok {
		var err error
		if id, err = r.register(ctx, subject, text); err != nil {
			return err
		}
		r.mu.Lock()
		r.known[k] = id
		r.mu.Unlock()
	}
	r.ids[streamID] = id
	return nil
}

// Reframe returns a copy of a framed Avro key or value with the registry's schema id in
// place of the stream's. The copy leaves the stream's buffer as it was.
func (r *Registry) Reframe(b []byte) ([]byte, error) {
	if len(b) == 0 {
		return b, nil
	}
	if len(b) < 5 || b[0] != 0 {
		return nil, errors.New("schema registry: the record is not in Confluent's Avro frame")
	}
	streamID := int32(binary.BigEndian.Uint32(b[1:5]))
	id, ok := r.ids[streamID]
	if !ok {
		return nil, fmt.Errorf("schema registry: the record's schema id %d was not announced by the stream", streamID)
	}
	out := make([]byte, len(b))
	copy(out, b)
	binary.BigEndian.PutUint32(out[1:5], id)
	return out, nil
}

// IncompatibleError is a schema the subject's compatibility level refuses.
type IncompatibleError struct {
	// Table names the table the subject's records are of ("db.table"), when the schema is
	// a table's; Schema is the schema's full name.
	Table, Schema string
	Subject       string
	// Level is the subject's compatibility level; 0 when the registry refused the
	// registration itself.
	Level sr.CompatibilityLevel
	// Version is the subject's version the schema was found incompatible with (0: the
	// registry refused the registration without saying which).
	Version int
	// Reasons say what is incompatible.
	Reasons []string
}

func (e *IncompatibleError) Error() string {
	var b strings.Builder
	b.WriteString("schema registry: ")
	if e.Table != "" {
		fmt.Fprintf(&b, "table %s: ", e.Table)
	}
	if e.Level == 0 {
		fmt.Fprintf(&b, "the registry refused the new schema %s of subject %s as incompatible", e.Schema, e.Subject)
	} else {
		fmt.Fprintf(&b, "the new schema %s of subject %s is not %s compatible", e.Schema, e.Subject, e.Level)
	}
	if e.Version > 0 {
		fmt.Fprintf(&b, " with version %d", e.Version)
	}
	if len(e.Reasons) > 0 {
		fmt.Fprintf(&b, ": %s", strings.Join(e.Reasons, "; "))
	}
	b.WriteString(" (the sink stops: its records would be unreadable to the subject's consumers)")
	return b.String()
}

// register returns the registry's id of text under subject, registering it when the subject
// does not hold it yet.
func (r *Registry) register(ctx context.Context, subject, text string) (uint32, error) {
	s := sr.Schema{Schema: text, Type: sr.TypeAvro}
	ss, err := r.cl.LookupSchema(ctx, subject, s)
	if err == nil {
		return uint32(ss.ID), nil
	}
	if !notFound(err) {
		return 0, fmt.Errorf("schema registry: look up %s: %w", subject, err)
	}
	if err = r.check(ctx, subject, text); err != nil {
		return 0, err
	}
	ss, err = r.cl.CreateSchema(ctx, subject, s)
	if err != nil {
		if re, ok := errors.AsType[*sr.ResponseError](err); ok && re.ErrorCode == sr.ErrIncompatibleSchema.Code {
			// The registry's own check refused what the sink's let through.
			ie := incompatible(subject, text, 0)
			ie.Reasons = []string{re.Message}
			return 0, sink.Permanent(ie)
		}
		return 0, fmt.Errorf("schema registry: register %s: %w", subject, err)
	}
	r.log.Info("schema registered", "subject", subject, "id", ss.ID, "version", ss.Version)
	return uint32(ss.ID), nil
}

// check holds a schema new to subject against the subject's compatibility level: the
// registry's own verdict (verbose, so that it says why), then the rules of the Avro
// specification's schema resolution checked here (hamba/avro), which also name the field, so
// that a registry whose check is lax cannot let through a schema that readers of the earlier
// versions cannot resolve.
func (r *Registry) check(ctx context.Context, subject, text string) error {
	res := r.cl.Compatibility(sr.WithParams(ctx, sr.DefaultToGlobal), subject)
	if len(res) != 1 || res[0].Err != nil {
		var err error
		if len(res) == 1 {
			err = res[0].Err
		}
		return fmt.Errorf("schema registry: compatibility level of %s: %w", subject, err)
	}
	level := res[0].Level
	if level == sr.CompatNone {
		return nil
	}
	versions, err := r.cl.Schemas(ctx, subject)
	if err != nil && !notFound(err) {
		return fmt.Errorf("schema registry: versions of %s: %w", subject, err)
	}
	if len(versions) == 0 {
		return nil
	}
	transitive := level == sr.CompatBackwardTransitive || level == sr.CompatForwardTransitive || level == sr.CompatFullTransitive
	against := -1
	if transitive {
		against = -2
	}
	verdict, err := r.cl.CheckCompatibility(sr.WithParams(ctx, sr.Verbose), subject, against, sr.Schema{Schema: text, Type: sr.TypeAvro})
	if err != nil && !notFound(err) {
		return fmt.Errorf("schema registry: check compatibility with %s: %w", subject, err)
	}
	if err == nil && !verdict.Is {
		ie := incompatible(subject, text, level)
		ie.Reasons = verdict.Messages
		return sink.Permanent(ie)
	}
	if !transitive {
		versions = versions[len(versions)-1:]
	}
	next, err := hamba.ParseWithCache(text, "", &hamba.SchemaCache{})
	if err != nil {
		return sink.Permanent(fmt.Errorf("schema registry: the schema of %s is not valid Avro: %w", subject, err))
	}
	backward := level == sr.CompatBackward || level == sr.CompatBackwardTransitive || level == sr.CompatFull || level == sr.CompatFullTransitive
	forward := level == sr.CompatForward || level == sr.CompatForwardTransitive || level == sr.CompatFull || level == sr.CompatFullTransitive
	for i := len(versions) - 1; i >= 0; i-- {
		v := versions[i]
		if v.Type != sr.TypeAvro {
			continue
		}
		old, err := hamba.ParseWithCache(v.Schema.Schema, "", &hamba.SchemaCache{})
		if err != nil {
			return fmt.Errorf("schema registry: version %d of %s: %w", v.Version, subject, err)
		}
		var reasons []string
		if backward {
			// Readers with the new schema must read what the old one wrote.
			if why := explain(next, old, ""); why != "" {
				reasons = append(reasons, "a reader with the new schema cannot read the old records: "+why)
			}
		}
		if forward {
			if why := explain(old, next, ""); why != "" {
				reasons = append(reasons, "a reader with the old schema cannot read the new records: "+why)
			}
		}
		if len(reasons) > 0 {
			ie := incompatible(subject, text, level)
			ie.Version, ie.Reasons = v.Version, reasons
			return sink.Permanent(ie)
		}
	}
	return nil
}

// explain returns why a reader of schema reader cannot resolve data written with writer,
// naming the field (path) where it fails; empty when it can.
func explain(reader, writer hamba.Schema, path string) string {
	if hamba.NewSchemaCompatibility().Compatible(reader, writer) == nil {
		return ""
	}
	reader, writer = deref(reader), deref(writer)
	rr, rok := recordOf(reader)
	wr, wok := recordOf(writer)
	if rok && wok {
		for _, f := range rr.Fields() {
			var wf *hamba.Field
			for _, g := range wr.Fields() {
				if g.Name() == f.Name() {
					wf = g
					break
				}
			}
			p := f.Name()
			if path != "" {
				p = path + "." + f.Name()
			}
			if wf == nil {
				if !f.HasDefault() {
					return fmt.Sprintf("field %s is missing from the writer's schema and has no default", p)
				}
				continue
			}
			if why := explain(f.Type(), wf.Type(), p); why != "" {
				return why
			}
		}
	}
	where := path
	if where == "" {
		where = "the schema"
	} else {
		where = "field " + where
	}
	return fmt.Sprintf("%s: %s cannot be read as %s", where, typeText(writer), typeText(reader))
}

func deref(s hamba.Schema) hamba.Schema {
	if r, ok := s.(*hamba.RefSchema); ok {
		return r.Schema()
	}
	return s
}

// recordOf returns the record of a record schema or of an optional one (["null", record]).
func recordOf(s hamba.Schema) (*hamba.RecordSchema, bool) {
	s = deref(s)
	if u, ok := s.(*hamba.UnionSchema); ok {
		for _, t := range u.Types() {
			if r, ok := deref(t).(*hamba.RecordSchema); ok {
				return r, true
			}
		}
		return nil, false
	}
	r, ok := s.(*hamba.RecordSchema)
	return r, ok
}

// typeText names a schema's type briefly: "int", "string", "[null, string]".
func typeText(s hamba.Schema) string {
	s = deref(s)
	switch t := s.(type) {
	case *hamba.UnionSchema:
		names := make([]string, 0, len(t.Types()))
		for _, u := range t.Types() {
			names = append(names, typeText(u))
		}
		return "[" + strings.Join(names, ", ") + "]"
	case hamba.NamedSchema:
		return string(s.Type()) + " " + t.FullName()
	default:
		return string(s.Type())
	}
}

// incompatible starts the error of a schema refused under subject, naming the table from
// the schema's namespace: Debezium names a table's key and envelope <prefix>.<db>.<table>.Key
// and .Envelope.
func incompatible(subject, text string, level sr.CompatibilityLevel) *IncompatibleError {
	e := &IncompatibleError{Subject: subject, Level: level}
	if s, err := hamba.ParseWithCache(text, "", &hamba.SchemaCache{}); err == nil {
		if n, ok := s.(hamba.NamedSchema); ok {
			e.Schema = n.FullName()
			if n.Name() == "Envelope" || n.Name() == "Key" {
				if parts := strings.Split(n.Namespace(), "."); len(parts) >= 2 {
					e.Table = strings.Join(parts[len(parts)-2:], ".")
				}
			}
		}
	}
	return e
}

// notFound reports whether the registry answered that the subject or schema does not exist.
func notFound(err error) bool {
	re, ok := errors.AsType[*sr.ResponseError](err)
	return ok && (re.StatusCode == http.StatusNotFound || re.ErrorCode/100 == 404)
}
