package nats

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/nats-io/nats.go"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/sink"
)

// walMagic starts a write-ahead log object and names its layout: the position (as
// sink.MarshalPosition writes it), the checkpoint revision it follows, then each message's
// subject, headers and data, every field length-prefixed with a uvarint.
const walMagic = "vstream-sink-wal/1\n"

// walEntry is one commit's write-ahead log.
type walEntry struct {
	pos  *binlogdata.VGtid
	rev  uint64
	msgs []*nats.Msg
}

func encodeWAL(w walEntry) ([]byte, error) {
	pos, err := sink.MarshalPosition(w.pos)
	if err != nil {
		return nil, err
	}
	size := len(walMagic) + len(pos) + 32
	for _, m := range w.msgs {
		size += len(m.Subject) + len(m.Data) + 16
		for k, vs := range m.Header {
			for _, v := range vs {
				size += len(k) + len(v) + 8
			}
		}
	}
	b := make([]byte, 0, size)
	b = append(b, walMagic...)
	b = appendBytes(b, pos)
	b = binary.AppendUvarint(b, w.rev)
	b = binary.AppendUvarint(b, uint64(len(w.msgs)))
	for _, m := range w.msgs {
		b = appendBytes(b, []byte(m.Subject))
		n := 0
		for _, vs := range m.Header {
			n += len(vs)
		}
		b = binary.AppendUvarint(b, uint64(n))
		// Sorted, so that the same messages always make the same bytes.
		keys := make([]string, 0, len(m.Header))
		for k := range m.Header {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			for _, v := range m.Header[k] {
				b = appendBytes(b, []byte(k))
				b = appendBytes(b, []byte(v))
			}
		}
		b = appendBytes(b, m.Data)
	}
	return b, nil
}

func appendBytes(b, v []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

var errWALTruncated = errors.New("truncated")

// walReader reads the fields encodeWAL wrote.
type walReader struct {
	b   []byte
	err error
}

func (r *walReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errWALTruncated
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *walReader) bytes() []byte {
	n := r.uvarint()
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)) {
		r.err = errWALTruncated
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

func decodeWAL(data []byte) (walEntry, error) {
	var w walEntry
	if len(data) < len(walMagic) || string(data[:len(walMagic)]) != walMagic {
		return w, errors.New("not a write-ahead log of this version")
	}
	r := &walReader{b: data[len(walMagic):]}
	pos := r.bytes()
	w.rev = r.uvarint()
	n := r.uvarint()
	if r.err == nil && n > uint64(len(r.b)) {
		r.err = errWALTruncated
	}
	for i := uint64(0); i < n && r.err == nil; i++ {
		m := nats.NewMsg(string(r.bytes()))
		headers := r.uvarint()
		for j := uint64(0); j < headers && r.err == nil; j++ {
			k, v := r.bytes(), r.bytes()
			m.Header.Add(string(k), string(v))
		}
		m.Data = r.bytes()
		w.msgs = append(w.msgs, m)
	}
	if r.err != nil {
		return w, r.err
	}
	if len(r.b) != 0 {
		return w, fmt.Errorf("%d bytes after the last message", len(r.b))
	}
	var err error
	w.pos, err = sink.UnmarshalPosition(pos)
	return w, err
}
