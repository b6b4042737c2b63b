package filter

import (
	"bytes"
	"crypto/cipher"
	"crypto/des"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
)

// KeyRange is a half-open range of keyspace ids: Start inclusive, End exclusive; an empty End
// is unbounded.
type KeyRange struct {
	Start, End []byte
}

// ParseKeyRange reads Vitess's shard notation: "-80", "80-", "40-80"; "-", "0" and "" are the
// whole range.
func ParseKeyRange(s string) (KeyRange, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "-" || s == "0" {
		return KeyRange{}, nil
	}
	lo, hi, ok := strings.Cut(s, "-")
	if !ok {
		return KeyRange{}, fmt.Errorf("keyrange %q: want start-end in hex, e.g. -80, 80- or 40-80", s)
	}
	var kr KeyRange
	var err error
	if kr.Start, err = hex.DecodeString(lo); err != nil {
		return KeyRange{}, fmt.Errorf("keyrange %q: start %q is not hex", s, lo)
	}
	if kr.End, err = hex.DecodeString(hi); err != nil {
		return KeyRange{}, fmt.Errorf("keyrange %q: end %q is not hex", s, hi)
	}
	if len(kr.End) > 0 && bytes.Compare(kr.Start, kr.End) >= 0 {
		return KeyRange{}, fmt.Errorf("keyrange %q: start is not below end", s)
	}
	return kr, nil
}

// Contains reports whether the keyspace id is in the range.
func (kr KeyRange) Contains(id []byte) bool {
	return bytes.Compare(id, kr.Start) >= 0 && (len(kr.End) == 0 || bytes.Compare(id, kr.End) < 0)
}

// Full reports the whole range.
func (kr KeyRange) Full() bool { return len(kr.Start) == 0 && len(kr.End) == 0 }

// hashVindex is Vitess's "hash" vindex: the keyspace id of an integer is its big-endian
// 8 bytes encrypted with DES under an all-zero key.
type hashVindex struct {
	block cipher.Block
	// buf holds the plaintext and the keyspace id: buffers passed through the cipher
	// interface would escape to the heap on every row.
	buf *[16]byte
}

func newHashVindex() hashVindex {
	b, err := des.NewCipher(make([]byte, 8))
	if err != nil {
		panic(err) // an 8-byte key is always valid
	}
	return hashVindex{block: b, buf: new([16]byte)}
}

// keyspaceID returns the keyspace id of v. The result is valid until the next call.
func (h hashVindex) keyspaceID(v uint64) []byte {
	binary.BigEndian.PutUint64(h.buf[:8], v)
	h.block.Encrypt(h.buf[8:], h.buf[:8])
	return h.buf[8:]
}
