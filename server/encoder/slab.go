package encoder

import (
	"unsafe"

	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
)

// slabBlock is the size of the blocks a Slab carves: large enough that a batch of typical
// messages costs a handful of allocations, small enough that a block pinned by one slow
// message wastes little.
const slabBlock = 64 << 10

// Slab hands out message bytes and messages carved from larger blocks, so that a row's
// message costs a copy instead of its own allocations. Each slice it returns is capped at
// its length: appending to one reallocates instead of overwriting its neighbour.
type Slab struct {
	buf []byte
	// used are the blocks filled since the last Recycle; free are blocks Recycle gave back.
	used, free [][]byte
	msgs       []vstreamv1.EncodedMessage
}

// maxFreeBlocks bounds the blocks a Slab keeps for reuse: what one response of the default
// size needs, with room to spare; a burst beyond it is left to the collector.
const maxFreeBlocks = 64

// block makes a fresh or recycled block the current one.
func (s *Slab) block() {
	if cap(s.buf) > 0 {
		s.used = append(s.used, s.buf[:0])
	}
	if n := len(s.free); n > 0 {
		s.buf, s.free[n-1] = s.free[n-1], nil
		s.free = s.free[:n-1]
		return
	}
	s.buf = make([]byte, 0, slabBlock)
}

// Recycle makes the bytes of every message handed out so far free for reuse: the caller has
// sent them and keeps none. The message structs themselves are not reused, so a pointer to
// one stays valid; its bytes must be copied first if it is still needed.
func (s *Slab) Recycle() {
	for _, b := range s.used {
		if len(s.free) < maxFreeBlocks {
			s.free = append(s.free, b)
		}
	}
	clear(s.used)
	s.used = s.used[:0]
	s.buf = s.buf[:0]
}

// Bytes returns a copy of b.
func (s *Slab) Bytes(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	if len(b) > cap(s.buf)-len(s.buf) {
		if len(b) > slabBlock/4 {
			// Large messages get their own allocation rather than wasting a block's tail.
			return append([]byte(nil), b...)
		}
		s.block()
	}
	start := len(s.buf)
	s.buf = append(s.buf, b...)
	return s.buf[start:len(s.buf):len(s.buf)]
}

// Message returns a new, empty message.
func (s *Slab) Message() *vstreamv1.EncodedMessage {
	if len(s.msgs) == 0 {
		s.msgs = make([]vstreamv1.EncodedMessage, 64)
	}
	m := &s.msgs[0]
	s.msgs = s.msgs[1:]
	return m
}

// Buffer returns an empty slice to append a message of about hint bytes to, in place in the
// current block when it has room. Pass the result to Commit.
func (s *Slab) Buffer(hint int) []byte {
	if hint > cap(s.buf)-len(s.buf) {
		if hint > slabBlock/4 {
			return make([]byte, 0, hint+hint/8)
		}
		s.block()
	}
	return s.buf[len(s.buf):len(s.buf)]
}

// Commit takes back a slice from Buffer, now holding a message, and returns it capped. A
// message that outgrew the block's room was moved by append and keeps its own array.
func (s *Slab) Commit(b []byte) []byte {
	free := s.buf[len(s.buf):cap(s.buf)]
	if len(b) > 0 && len(free) > 0 && unsafe.SliceData(b) == unsafe.SliceData(free) {
		s.buf = s.buf[:len(s.buf)+len(b)]
	}
	return b[:len(b):len(b)]
}
