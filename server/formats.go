package server

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/server/encoder"
	"github.com/vstream-cdc/vstream/server/encoder/avro"
	"github.com/vstream-cdc/vstream/server/encoder/canaljson"
	"github.com/vstream-cdc/vstream/server/encoder/canalproto"
	"github.com/vstream-cdc/vstream/server/encoder/debezium"
	"github.com/vstream-cdc/vstream/server/encoder/drs"
	"github.com/vstream-cdc/vstream/server/encoder/streamsets"
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
func (s *Server) newEncoder(ctx context.Context, format string, options map[string]string) (encoder.Encoder, error) {
	if format == "" || format == nativeFormat {
		if len(options) > 0 {
			return nil, status.Error(codes.InvalidArgument, "format vevent takes no format_options")
		}
		return nil, nil
	}
	if encoders[format] == nil {
		return nil, status.Errorf(codes.InvalidArgument, "unknown format %q: valid formats are %s", format, strings.Join(Formats, ", "))
	}
	desc, err := s.engine.Describe(ctx)
	if err != nil {
		return nil, toStatus(err)
	}
	cfg := s.engine.Config()
	enc, err := NewEncoder(format, options, encoder.Params{Clock: time.Now, Database: cfg.Database,
		Flavor: desc.Flavor, ServerVersion: desc.Version, Keyspace: cfg.Keyspace,
		Zone: encoder.SourceZone(desc.TimeZone, desc.UTCOffset)})
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	return enc, nil
}

// NewEncoder builds the encoder of a named format (not vevent) from its options, refusing
// unknown formats and options; p.Options is set from options.
func NewEncoder(format string, options map[string]string, p encoder.Params) (encoder.Encoder, error) {
	build := encoders[format]
	if build == nil {
		return nil, fmt.Errorf("unknown format %q: valid formats are %s", format, strings.Join(Formats, ", "))
	}
	p.Options = encoder.NewOptions(options)
	enc, err := build(p)
	if err == nil {
		err = p.Options.Unknown()
	}
	if err != nil {
		return nil, fmt.Errorf("format %s: %w", format, err)
	}
	return enc, nil
}

// encodedBatch re-wraps a batch of events. Each message carries the last transaction boundary
// before it; the response carries the boundary the batch ends at, if it ends at one, and any
// heartbeats as native events.
type encodedBatch struct {
	enc encoder.Encoder
	// last is the VGtid after the last transaction (or DDL, OTHER) seen.
	last *binlogdata.VGtid
}

func (b *encodedBatch) encode(resp *vstreamv1.StreamResponse, events []*binlogdata.VEvent) error {
	resp.Messages = resp.Messages[:0]
	resp.Events = resp.Events[:0]
	resp.Position = nil
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
		}
		n := len(resp.Messages)
		var err error
		if resp.Messages, err = b.enc.Encode(resp.Messages, ev); err != nil {
			return err
		}
		for _, m := range resp.Messages[n:] {
			m.Position = b.last
		}
	}
	return nil
}
