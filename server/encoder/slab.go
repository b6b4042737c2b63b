package encoder

import vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"

// slabBlock is the size of the blocks a Slab carves: large enough that a batch of typical
// messages costs a handful of allocations, small enough that a block pinned by one slow
// message wastes little.
const slabBlock = 64 << 10

// Slab hands out message bytes and messages carved from larger blocks, so that a row's
// message costs a copy instead of its own allocations. Each slice it returns is capped at
// its length: appending to one reallocates instead of overwriting its neighbour.
type Slab struct {
	buf  []byte
	msgs []vstreamv1.EncodedMessage
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
		s.buf = make([]byte, 0, slabBlock)
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
