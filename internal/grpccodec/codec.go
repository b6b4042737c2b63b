// Package grpccodec replaces gRPC's "proto" codec, process-wide, with one that encodes and
// decodes through the reflection-free MarshalVT, UnmarshalVT and SizeVT methods generated
// for gen/ by vtprotobuf. The bytes on the wire are the same as with the default codec, so
// peers that use the default one (Vitess's clients, the Python and Node examples) see no
// difference; a message without the generated methods goes through proto.Marshal.
//
// Importing the package registers the codec (as gRPC's own encoding/proto does): the server
// and the client packages import it, so both ends of a vstreamd stream use it.
package grpccodec

import (
	"fmt"
	"math/bits"
	"sync"

	"google.golang.org/grpc/encoding"
	// Imported so that its init, which registers gRPC's default codec under the same
	// name, is sure to run before ours and not replace it.
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/protoadapt"
)

// Name is the codec's name: gRPC's default content-subtype, which this codec takes over.
const Name = grpcproto.Name

func init() {
	encoding.RegisterCodecV2(Codec{})
}

// vtMessage is what vtprotobuf generates for each message with the marshal, unmarshal and
// size features.
type vtMessage interface {
	SizeVT() int
	MarshalToSizedBufferVT(dAtA []byte) (int, error)
	UnmarshalVT(dAtA []byte) error
}

// Codec is the gRPC codec. It is exported for tests and for callers that want to name it
// in a dial or server option; importing the package is enough to use it everywhere.
type Codec struct{}

var _ encoding.CodecV2 = Codec{}

// Name implements encoding.CodecV2.
func (Codec) Name() string { return Name }

// Marshal implements encoding.CodecV2. Like gRPC's default codec, a message large enough
// for gRPC's buffer pool is written into a pooled buffer (Pool), which gRPC returns to
// the pool once the bytes are on the wire; small ones get a buffer of their own.
func (Codec) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(vtMessage)
	if !ok {
		return marshalReflect(v)
	}
	size := m.SizeVT()
	if mem.IsBelowBufferPoolingThreshold(size) {
		buf := make([]byte, size)
		if _, err := m.MarshalToSizedBufferVT(buf); err != nil {
			return nil, fmt.Errorf("grpccodec: marshal %T: %w", v, err)
		}
		return mem.BufferSlice{mem.SliceBuffer(buf)}, nil
	}
	// MarshalToSizedBufferVT fills the buffer from its end, so it must be exactly size long
	// (Get's length).
	buf := Pool.Get(size)
	if _, err := m.MarshalToSizedBufferVT(*buf); err != nil {
		Pool.Put(buf)
		return nil, fmt.Errorf("grpccodec: marshal %T: %w", v, err)
	}
	return mem.BufferSlice{mem.NewBuffer(buf, Pool)}, nil
}

// Unmarshal implements encoding.CodecV2. UnmarshalVT copies every string and bytes field
// out of data, so the message owns its memory and gRPC may reuse data's buffers at once.
func (Codec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(vtMessage)
	if !ok {
		return unmarshalReflect(data, v)
	}
	// UnmarshalVT merges into what is there; proto.Unmarshal, which callers of gRPC's
	// default codec rely on, resets first.
	if r, ok := v.(interface{ Reset() }); ok {
		r.Reset()
	}
	var err error
	if len(data) == 1 {
		// A message that arrived in one frame buffer is decoded in place, not copied.
		err = m.UnmarshalVT(data[0].ReadOnlyData())
	} else {
		// Materializing writes every byte of the buffer before UnmarshalVT reads one.
		buf := data.MaterializeToBuffer(Pool)
		err = m.UnmarshalVT(buf.ReadOnlyData())
		buf.Free()
	}
	if err != nil {
		return fmt.Errorf("grpccodec: unmarshal %T: %w", v, err)
	}
	return nil
}

// marshalReflect encodes a message without generated methods the way gRPC's default codec does.
func marshalReflect(v any) (mem.BufferSlice, error) {
	m := messageOf(v)
	if m == nil {
		return nil, fmt.Errorf("grpccodec: cannot marshal %T: not a proto.Message", v)
	}
	buf, err := proto.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("grpccodec: marshal %T: %w", v, err)
	}
	return mem.BufferSlice{mem.SliceBuffer(buf)}, nil
}

// unmarshalReflect decodes into a message without generated methods.
func unmarshalReflect(data mem.BufferSlice, v any) error {
	m := messageOf(v)
	if m == nil {
		return fmt.Errorf("grpccodec: cannot unmarshal into %T: not a proto.Message", v)
	}
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	if err := proto.Unmarshal(buf.ReadOnlyData(), m); err != nil {
		return fmt.Errorf("grpccodec: unmarshal %T: %w", v, err)
	}
	return nil
}

func messageOf(v any) proto.Message {
	switch v := v.(type) {
	case protoadapt.MessageV2:
		return v
	case protoadapt.MessageV1:
		return protoadapt.MessageV2Of(v)
	}
	return nil
}

// Pool holds the buffers messages are marshalled into and multi-frame messages are
// gathered into before decoding; a client or server may give it to gRPC as its buffer pool
// (experimental.WithBufferPool, experimental.BufferPool) for the frames it reads. Unlike
// gRPC's default pool it does not clear a buffer it hands out: each of these uses writes
// every byte it later reads (MarshalToSizedBufferVT the whole buffer, a frame read or a
// materialize the length it returns). The default pool clears each buffer's whole
// capacity, a 1 MiB tier for any message over 32 KiB: that was a twentieth of vstreamd's
// CPU while streaming, and as much of a client's.
var Pool mem.BufferPool = &dirtyPool{}

// dirtyPool hands out buffers of a power-of-two capacity, as they were left.
type dirtyPool struct {
	// classes[k] holds buffers of capacity 1<<k.
	classes [31]sync.Pool
}

// Get returns a buffer of length n (at least 1), its contents whatever they were.
func (p *dirtyPool) Get(n int) *[]byte {
	k := bits.Len(uint(n - 1))
	if k >= len(p.classes) {
		b := make([]byte, n)
		return &b
	}
	if b, ok := p.classes[k].Get().(*[]byte); ok {
		*b = (*b)[:n]
		return b
	}
	b := make([]byte, n, 1<<k)
	return &b
}

// Put keeps a buffer Get handed out for a later Get.
func (p *dirtyPool) Put(b *[]byte) {
	c := cap(*b)
	if c == 0 || c&(c-1) != 0 {
		// Not a size class: not one of Get's.
		return
	}
	if k := bits.Len(uint(c)) - 1; k < len(p.classes) {
		p.classes[k].Put(b)
	}
}
