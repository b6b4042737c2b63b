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

// ParseShardingSpec reads Vitess's shard notation, as Vitess does: "-80", "80-", "40-80",
// or a list of adjacent ranges such as "-40-80-" (three ranges); "-" and "0" are the whole
// range. Its errors are Vitess's.
func ParseShardingSpec(spec string) ([]KeyRange, error) {
	parts := strings.Split(spec, "-")
	if len(parts) == 1 {
		if spec != "0" {
			return nil, fmt.Errorf("malformed spec: doesn't define a range: %q", spec)
		}
		parts = []string{"", ""}
	}
	out := make([]KeyRange, 0, len(parts)-1)
	prev := parts[0]
	for i, p := range parts[1:] {
		if p == "" && i != len(parts)-2 {
			return nil, fmt.Errorf("malformed spec: MinKey/MaxKey cannot be in the middle of the spec: %q", spec)
		}
		// Vitess compares the hex text, so "80-100" is out of order as it is there.
		if p != "" && p <= prev {
			return nil, fmt.Errorf("malformed spec: shard limits should be in order: %q", spec)
		}
		start, err := hex.DecodeString(prev)
		if err != nil {
			return nil, fmt.Errorf("keyrange %q: %q is not hex: %w", spec, prev, err)
		}
		end, err := hex.DecodeString(p)
		if err != nil {
			return nil, fmt.Errorf("keyrange %q: %q is not hex: %w", spec, p, err)
		}
		out = append(out, KeyRange{Start: start, End: end})
		prev = p
	}
	return out, nil
}

// ParseKeyRange reads one range in shard notation: "-80", "80-", "40-80"; "-", "0" and ""
// are the whole range.
func ParseKeyRange(s string) (KeyRange, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return KeyRange{}, nil
	}
	krs, err := ParseShardingSpec(s)
	if err != nil {
		return KeyRange{}, err
	}
	if len(krs) != 1 {
		return KeyRange{}, fmt.Errorf("error parsing keyrange: %s", s)
	}
	kr := krs[0]
	if len(kr.Start) == 0 {
		kr.Start = nil
	}
	if len(kr.End) == 0 {
		kr.End = nil
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
