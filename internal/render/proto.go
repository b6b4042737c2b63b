package render

import (
	"bytes"
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
)

// protoRenderer prints every VEvent and encoded message as its protojson on one line.
type protoRenderer struct{}

func (protoRenderer) Events(events []*binlogdata.VEvent, emit Emit) error {
	for _, ev := range events {
		if err := emitProto(ev, emit); err != nil {
			return fmt.Errorf("encode %s event: %w", ev.GetType(), err)
		}
	}
	return nil
}

// Messages prints each message whole (format, topic, key, value, tombstone, headers and
// position), so nothing a consumer needs of it is lost.
func (protoRenderer) Messages(msgs []*vstreamv1.EncodedMessage, emit Emit) error {
	for _, m := range msgs {
		if err := emitProto(m, emit); err != nil {
			return fmt.Errorf("encode message: %w", err)
		}
	}
	return nil
}

func emitProto(m proto.Message, emit Emit) error {
	b, err := compactProto(nil, m)
	if err != nil {
		return err
	}
	return emit(b)
}

// compactProto appends m's protojson without spaces: protojson deliberately varies its
// spacing between runs, and compact lines compare stably in scripts.
func compactProto(dst []byte, m proto.Message) ([]byte, error) {
	b, err := protojson.Marshal(m)
	if err != nil {
		return nil, err
	}
	buf := bytes.NewBuffer(dst)
	if err := json.Compact(buf, b); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
