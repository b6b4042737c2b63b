package filter

import (
	"bytes"
	"crypto/cipher"
	"crypto/des"
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/bits"
	"strconv"
	"strings"

	"github.com/cespare/xxhash/v2"
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

// vindexKind names one of Vitess's functional unique vindexes: those whose keyspace id is
// computed from the column's value alone.
type vindexKind int

const (
	vindexHash        vindexKind = iota // DES of the integer's 8 big-endian bytes, zero key
	vindexNumeric                       // the integer's 8 big-endian bytes
	vindexReverseBits                   // the integer's bits reversed, 8 big-endian bytes
	vindexBinary                        // the value's bytes
	vindexBinaryMD5                     // MD5 of the value's bytes
	vindexXXHash                        // xxHash64 of the value's bytes, 8 little-endian bytes
)

var vindexKinds = map[string]vindexKind{
	"hash": vindexHash, "numeric": vindexNumeric, "reverse_bits": vindexReverseBits,
	"binary": vindexBinary, "binary_md5": vindexBinaryMD5, "xxhash": vindexXXHash,
}

// vindexNames lists the supported vindexes for messages.
const vindexNames = "hash, numeric, reverse_bits, binary, binary_md5 or xxhash"

// nonUnique are Vitess vindexes a stream cannot split by, in Vitess's words.
var nonUnique = map[string]bool{"lookup": true, "lookup_hash": true, "consistent_lookup": true,
	"lookup_unicodeloosemd5_hash": true}

// vindex computes keyspace ids. It keeps a scratch buffer, so one plan's vindexes are used
// by one goroutine at a time.
type vindex struct {
	kind  vindexKind
	block cipher.Block
	// buf holds the plaintext and the keyspace id: buffers passed through the cipher
	// interface would escape to the heap on every row.
	buf *[24]byte
}

func newVindex(name string) (vindex, error) {
	kind, ok := vindexKinds[name]
	if !ok {
		if nonUnique[name] {
			return vindex{}, fmt.Errorf("vindex must be Unique to be used for VReplication: %s", name)
		}
		return vindex{}, fmt.Errorf("in_keyrange: vindex %q is not supported; use %s", name, vindexNames)
	}
	v := vindex{kind: kind, buf: new([24]byte)}
	if kind == vindexHash {
		b, err := des.NewCipher(make([]byte, 8))
		if err != nil {
			panic(err) // an 8-byte key is always valid
		}
		v.block = b
	}
	return v, nil
}

func newHashVindex() vindex {
	v, _ := newVindex("hash")
	return v
}

// integral reports a vindex that reads its column as an integer.
func (v vindex) integral() bool {
	return v.kind == vindexHash || v.kind == vindexNumeric || v.kind == vindexReverseBits
}

// keyspaceID returns the keyspace id of a non-NULL cell (integers as decimal text), or false
// when an integral vindex gets a cell that is not an integer. The result is valid until the
// next call.
func (v vindex) keyspaceID(cell []byte, unsigned bool) ([]byte, bool) {
	switch v.kind {
	case vindexBinary:
		return cell, true
	case vindexBinaryMD5:
		sum := md5.Sum(cell)
		copy(v.buf[:16], sum[:])
		return v.buf[:16], true
	case vindexXXHash:
		binary.LittleEndian.PutUint64(v.buf[:8], xxhash.Sum64(cell))
		return v.buf[:8], true
	default:
		// The integral vindexes (hash, numeric, reverse_bits) read the cell as an integer, below.
	}
	s := bytesString(cell)
	var u uint64
	if unsigned {
		x, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return nil, false
		}
		u = x
	} else {
		x, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, false
		}
		u = uint64(x)
	}
	return v.integer(u), true
}

// integer returns the keyspace id of an integer under an integral vindex.
func (v vindex) integer(u uint64) []byte {
	switch v.kind {
	case vindexNumeric:
		binary.BigEndian.PutUint64(v.buf[:8], u)
	case vindexReverseBits:
		binary.BigEndian.PutUint64(v.buf[:8], bits.Reverse64(u))
	default:
		binary.BigEndian.PutUint64(v.buf[:8], u)
		v.block.Encrypt(v.buf[8:16], v.buf[:8])
		return v.buf[8:16]
	}
	return v.buf[:8]
}
