package server

import (
	"slices"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/server/encoder"
)

// keyspaceEncoders encodes a stream of several keyspaces with one encoder per keyspace, each
// built for its keyspace's database, so that a message names the database of its own event
// (Debezium's and Canal's topics, schemas and sources). An event goes to the encoder of the
// keyspace it carries. A transaction goes to the encoder of each keyspace it changes: one
// whose first change is of another keyspace than its BEGIN is begun there too, and its GTID
// and COMMIT end it in every encoder it was begun in.
type keyspaceEncoders struct {
	keyspaces []string
	encoders  []encoder.Encoder
	// begin is the BEGIN of the transaction being encoded (nil between transactions), and
	// open the encoders it was begun in, or the one a GTID outside a transaction (a DDL's or
	// OTHER's) went to.
	begin *binlogdata.VEvent
	open  []encoder.Encoder
}

// of is the encoder of a keyspace; events with no keyspace (the final COPY_COMPLETED) go
// to the first.
func (k *keyspaceEncoders) of(keyspace string) encoder.Encoder {
	if i := slices.Index(k.keyspaces, keyspace); i >= 0 {
		return k.encoders[i]
	}
	return k.encoders[0]
}

func (k *keyspaceEncoders) Encode(out []*vstreamv1.EncodedMessage, ev *binlogdata.VEvent) ([]*vstreamv1.EncodedMessage, error) {
	e := k.of(ev.GetKeyspace())
	switch ev.GetType() {
	case binlogdata.VEventType_BEGIN:
		k.begin, k.open = ev, append(k.open[:0], e)
		return e.Encode(out, ev)
	case binlogdata.VEventType_GTID:
		if k.begin == nil {
			k.open = append(k.open[:0], e)
		}
		return k.all(out, ev)
	case binlogdata.VEventType_COMMIT, binlogdata.VEventType_DDL, binlogdata.VEventType_OTHER:
		if len(k.open) == 0 {
			k.open = append(k.open, e)
		}
		msgs, err := k.all(out, ev)
		k.begin, k.open = nil, k.open[:0]
		return msgs, err
	default:
		if k.begin != nil && !slices.Contains(k.open, e) {
			k.open = append(k.open, e)
			var err error
			if out, err = e.Encode(out, k.begin); err != nil {
				return out, err
			}
		}
		return e.Encode(out, ev)
	}
}

// all encodes ev in every encoder the transaction is open in.
func (k *keyspaceEncoders) all(out []*vstreamv1.EncodedMessage, ev *binlogdata.VEvent) ([]*vstreamv1.EncodedMessage, error) {
	for _, e := range k.open {
		var err error
		if out, err = e.Encode(out, ev); err != nil {
			return out, err
		}
	}
	return out, nil
}

// Recycle lets every encoder reuse its messages' memory (see encoder.Recycler).
func (k *keyspaceEncoders) Recycle() {
	for _, e := range k.encoders {
		if r, ok := e.(encoder.Recycler); ok {
			r.Recycle()
		}
	}
}
