package server

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/internal/faults"
	"github.com/vstream-cdc/vstream/server/encoder"
	"github.com/vstream-cdc/vstream/server/encoder/avro"
	"github.com/vstream-cdc/vstream/server/encoder/canaljson"
	"github.com/vstream-cdc/vstream/server/encoder/canalproto"
	"github.com/vstream-cdc/vstream/server/encoder/debezium"
	"github.com/vstream-cdc/vstream/server/encoder/drs"
	"github.com/vstream-cdc/vstream/server/encoder/streamsets"
	"github.com/vstream-cdc/vstream/sqltypes"
	"github.com/vstream-cdc/vstream/vstreamer"
)

// nativeFormat is the stream's own VEvent batches.
const nativeFormat = "vevent"

// encoders maps a format name to the constructor of its encoder.
var encoders = map[string]func(encoder.Params) (encoder.Encoder, error){
	avro.Name:       func(p encoder.Params) (encoder.Encoder, error) { return avro.New(p) },
	canaljson.Name:  func(p encoder.Params) (encoder.Encoder, error) { return canaljson.New(p) },
	canalproto.Name: func(p encoder.Params) (encoder.Encoder, error) { return canalproto.New(p) },
	debezium.Name:   func(p encoder.Params) (encoder.Encoder, error) { return debezium.New(p) },
	drs.NameJSON:    func(p encoder.Params) (encoder.Encoder, error) { return drs.NewJSON(p) },
	drs.NameJSONC:   func(p encoder.Params) (encoder.Encoder, error) { return drs.NewJSONC(p) },
	streamsets.Name: func(p encoder.Params) (encoder.Encoder, error) { return streamsets.New(p) },
}

// Formats lists the output formats a stream may ask for.
var Formats = func() []string {
	out := []string{nativeFormat}
	for name := range encoders {
		out = append(out, name)
	}
	slices.Sort(out[1:])
	return out
}()

// newEncoder builds the encoder of a format, refusing unknown formats and options with
// InvalidArgument that lists what is valid. It returns nil for the native format.
// keyspaces are the stream's (none or empty: the configured one); a keyspace's database is
// the one the encoder names. A stream of several keyspaces gets an encoder per keyspace.
func (s *Server) newEncoder(ctx context.Context, format string, options map[string]string, keyspaces ...string) (encoder.Encoder, error) {
	if format == "" || format == nativeFormat {
		if len(options) > 0 {
			return nil, status.Error(codes.InvalidArgument, "format vevent takes no format_options")
		}
		return nil, nil
	}
	if encoders[format] == nil {
		return nil, status.Errorf(codes.InvalidArgument, "unknown format %q: valid formats are %s", format, strings.Join(Formats, ", "))
	}
	if s.engine.Config().Positions == vstreamer.PositionsFilePos && writesGTIDSet(format, options) {
		return nil, status.Errorf(codes.InvalidArgument,
			"format %s writes each transaction's GTID set, and this server streams file positions (vstreamd --positions filepos); use format %s, %s, %s, %s or %s with offset=file, or run vstreamd with --positions gtid",
			format, nativeFormat, avro.Name, canaljson.Name, debezium.Name, streamsets.Name)
	}
	if len(keyspaces) == 0 {
		keyspaces = []string{""}
	}
	mux := &keyspaceEncoders{}
	for _, keyspace := range keyspaces {
		eng := s.engine
		if s.opts.Cluster.Serves(keyspace) {
			// Every shard of a keyspace has its schema: the first one's server describes it.
			eng = s.opts.Cluster.Engine(keyspace)
		}
		desc, err := eng.Describe(ctx)
		if err != nil {
			return nil, toStatus(err)
		}
		database, err := eng.Database(keyspace)
		if err != nil {
			return nil, toStatus(err)
		}
		if keyspace == "" {
			keyspace = eng.Config().Keyspace
		}
		enc, err := NewEncoder(format, options, encoder.Params{Clock: time.Now, Database: database,
			Flavor: desc.Flavor, ServerVersion: desc.Version, Keyspace: keyspace,
			Zone: encoder.SourceZone(desc.TimeZone, desc.UTCOffset), Collations: sqltypes.NewCharsets(desc.Collations)})
		if err != nil {
			return nil, status.Error(codes.InvalidArgument, err.Error())
		}
		mux.keyspaces, mux.encoders = append(mux.keyspaces, keyspace), append(mux.encoders, enc)
	}
	if len(mux.encoders) == 1 {
		return mux.encoders[0], nil
	}
	return mux, nil
}

// writesGTIDSet reports a format whose messages carry the executed GTID set (canal's
// header.gtid, DRS's event id, StreamSets' default GTID offset): under file positions the
// stream has none to give it.
func writesGTIDSet(format string, options map[string]string) bool {
	switch format {
	case canalproto.Name, drs.NameJSON, drs.NameJSONC:
		return true
	case streamsets.Name:
		return options["offset"] != "file"
	}
	return false
}

// NewEncoder builds the encoder of a named format (not vevent) from its options, refusing
// unknown formats and options; p.Options is set from options. The encoder stops
// statement-based changes as the statement_dml option says (encoder.Statements).
func NewEncoder(format string, options map[string]string, p encoder.Params) (encoder.Encoder, error) {
	build := encoders[format]
	if build == nil {
		return nil, fmt.Errorf("unknown format %q: valid formats are %s", format, strings.Join(Formats, ", "))
	}
	p.Options = encoder.NewOptions(options)
	enc, err := build(p)
	var guarded *encoder.Statements
	if err == nil {
		guarded, err = encoder.GuardStatements(enc, format, p)
	}
	if err == nil {
		err = p.Options.Unknown()
	}
	if err != nil {
		return nil, fmt.Errorf("format %s: %w", format, err)
	}
	return guarded, nil
}

// reportSkips logs and counts each statement-based change a stream's encoder skips.
func (s *Server) reportSkips(enc encoder.Encoder, format string, log *slog.Logger) {
	if mux, ok := enc.(*keyspaceEncoders); ok {
		for _, e := range mux.encoders {
			s.reportSkips(e, format, log)
		}
		return
	}
	g, ok := enc.(*encoder.Statements)
	if !ok {
		return
	}
	g.OnSkip = func(sk encoder.Skipped) {
		s.stats.statementsSkipped.WithLabelValues(format).Inc()
		log.Warn("statement-based change skipped", "gtid", sk.GTID, "table", sk.Table, "statement", sk.Statement)
	}
}

// encodedBatch re-wraps a batch of events. Each message carries the last transaction boundary
// before it; the response carries the boundary the batch ends at, if it ends at one, and any
// heartbeats as native events.
type encodedBatch struct {
	enc encoder.Encoder
	// limit bounds the message bytes of one response (the stream's max batch bytes): encoded
	// rows are often many times the size of their VEvents, and gRPC clients refuse messages
	// over 4 MiB by default.
	limit int
	// last is the VGtid after the last transaction (or DDL, OTHER) seen.
	last *binlogdata.VGtid
	resp vstreamv1.StreamResponse
	msgs []*vstreamv1.EncodedMessage

	// failMode is what an event the encoder refuses does (vstreamer.FailStop, ...); skipped
	// hears of the ones skipped, log logs them.
	failMode string
	skipped  vstreamer.PoisonObserver
	log      *slog.Logger
	// cur is the event being encoded, failed the panic that broke the encoder.
	cur    *binlogdata.VEvent
	failed error
}

// messageOverhead approximates what a message costs in a response besides its key, value
// and headers: its format, position and framing.
const messageOverhead = 64

// send encodes a batch of events and sends it in as many responses as the limit needs. One
// event may become many messages (a rows event of a hundred rows), so a response may end
// between two messages of one event; each message carries its own resume position.
func (b *encodedBatch) send(events []*binlogdata.VEvent, send func(*vstreamv1.StreamResponse) error) (err error) {
	if b.failed != nil {
		return b.failed
	}
	defer b.catchEncode(&err)
	resp := &b.resp
	// msgs[from:] are encoded and not sent; size is their bytes.
	msgs, from, size := b.msgs[:0], 0, 0
	defer func() { clear(msgs); b.msgs = msgs[:0] }()
	// emit sends msgs[from:to] with the heartbeats and position gathered so far.
	emit := func(to int) error {
		if to == from && len(resp.Events) == 0 && resp.Position == nil {
			return nil
		}
		resp.Messages = msgs[from:to]
		err := send(resp)
		resp.Messages, resp.Events, resp.Position = nil, resp.Events[:0], nil
		from, size = to, 0
		if from == len(msgs) {
			// Everything encoded has gone out: its memory may be written again. SendMsg
			// has marshalled the messages into gRPC's own buffers by now; only a stats
			// handler or grpc.EnableTracing could keep them, and this server sets neither.
			clear(msgs) // nor keep large messages alive until overwritten
			msgs, from = msgs[:0], 0
			if r, ok := b.enc.(encoder.Recycler); ok && err == nil {
				r.Recycle()
			}
		}
		return err
	}
	terminal := false
	for _, ev := range events {
		switch ev.GetType() {
		case binlogdata.VEventType_COMMIT, binlogdata.VEventType_DDL, binlogdata.VEventType_OTHER:
			terminal = true
		case binlogdata.VEventType_VGTID:
			if terminal {
				b.last = ev.GetVgtid()
				resp.Position = b.last
				terminal = false
			}
			continue
		case binlogdata.VEventType_HEARTBEAT:
			// Heartbeats stay native: they carry no change to encode.
			resp.Events = append(resp.Events, ev)
			continue
		case binlogdata.VEventType_BEGIN, binlogdata.VEventType_ROW, binlogdata.VEventType_FIELD:
			resp.Position = nil
		default:
			// The other events neither end nor start a transaction's messages: they
			// leave the position as it is.
		}
		n := len(msgs)
		b.cur = ev
		if faults.Enabled() {
			faults.At(faults.Encode, eventTable(ev), ev)
		}
		var err error
		if msgs, err = b.enc.Encode(msgs, ev); err != nil {
			clear(msgs[n:])
			msgs = msgs[:n]
			if ferr := b.encodeFailed(ev, err); ferr != nil {
				return ferr
			}
			continue
		}
		for i := n; i < len(msgs); i++ {
			msgs[i].Position = b.last
			if size += messageSize(msgs[i]); size >= b.limit {
				if err := emit(i + 1); err != nil {
					return err
				}
			}
		}
	}
	return emit(len(msgs))
}

func messageSize(m *vstreamv1.EncodedMessage) int {
	n := messageOverhead + len(m.Topic) + len(m.Key) + len(m.Value)
	for k, v := range m.Headers {
		n += len(k) + len(v) + 8
	}
	return n
}
