package canalproto

import "google.golang.org/protobuf/encoding/protowire"

// The writers below append protobuf fields in field-number order, as protobuf's Java runtime
// (canal's) writes them, and leave out proto3 zero values. Fields inside a *_present oneof are
// written even when zero: that is what makes them present.

// All field numbers of the canal messages are below 16, so a tag is one byte.
func tag(num protowire.Number, typ protowire.Type) byte { return byte(num)<<3 | byte(typ) }

func appendVarint(b []byte, num protowire.Number, v uint64) []byte {
	if v < 0x80 {
		return append(b, tag(num, protowire.VarintType), byte(v))
	}
	return protowire.AppendVarint(append(b, tag(num, protowire.VarintType)), v)
}

// appendInt writes a non-zero int64 or int32 (negative values take ten bytes, as protobuf
// encodes int32 sign-extended).
func appendInt(b []byte, num protowire.Number, v int64) []byte {
	if v == 0 {
		return b
	}
	return appendVarint(b, num, uint64(v))
}

func appendBool(b []byte, num protowire.Number, v bool) []byte {
	if !v {
		return b
	}
	return appendVarint(b, num, 1)
}

func appendString(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	if len(s) < 0x80 {
		b = append(b, tag(num, protowire.BytesType), byte(len(s)))
		return append(b, s...)
	}
	return protowire.AppendString(append(b, tag(num, protowire.BytesType)), s)
}

func appendBytes(b []byte, num protowire.Number, v []byte) []byte {
	if len(v) == 0 {
		return b
	}
	if len(v) < 0x80 {
		b = append(b, tag(num, protowire.BytesType), byte(len(v)))
		return append(b, v...)
	}
	return protowire.AppendBytes(append(b, tag(num, protowire.BytesType)), v)
}

// open starts a length-delimited field (a nested message) whose content the caller appends
// next; it returns where the content starts, for end. One byte is reserved for the length,
// which is enough for content under 128 bytes; end moves longer content.
func open(b []byte, num protowire.Number) ([]byte, int) {
	b = append(b, tag(num, protowire.BytesType), 0)
	return b, len(b)
}

// end writes the length of the field open started at start.
func end(b []byte, start int) []byte {
	n := len(b) - start
	if n < 0x80 {
		b[start-1] = byte(n)
		return b
	}
	extra := protowire.SizeVarint(uint64(n)) - 1
	b = append(b, make([]byte, extra)...)
	copy(b[start+extra:], b[start:start+n])
	protowire.AppendVarint(b[:start-1], uint64(n))
	return b
}

// endOmitEmpty is end for a bytes field, which proto3 leaves out when empty.
func endOmitEmpty(b []byte, start int, num protowire.Number) []byte {
	if len(b) == start {
		return b[:start-2]
	}
	return end(b, start)
}
