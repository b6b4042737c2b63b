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
	"strings"

	"github.com/cespare/xxhash/v2"
	"github.com/vstream-cdc/vstream/sqltypes"
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

// Overlaps reports whether the two ranges share a keyspace id.
func (kr KeyRange) Overlaps(o KeyRange) bool {
	// Each starts before the other ends (an empty End is unbounded).
	return (len(o.End) == 0 || bytes.Compare(kr.Start, o.End) < 0) &&
		(len(kr.End) == 0 || bytes.Compare(o.Start, kr.End) < 0)
}

// vindexKind names one of the vindexes whose keyspace id is computed from a row's values
// alone: Vitess's functional unique vindexes.
type vindexKind int

const (
	vindexHash        vindexKind = iota // DES of the integer's 8 big-endian bytes, zero key
	vindexNumeric                       // the integer's 8 big-endian bytes
	vindexReverseBits                   // the integer's bits reversed, 8 big-endian bytes
	vindexBinary                        // the value's bytes
	vindexBinaryMD5                     // MD5 of the value's bytes
	vindexXXHash                        // xxHash64 of the value's bytes, 8 little-endian bytes
	// vindexRegion is region_experimental over (region, id): the region's low region_bytes
	// bytes, big-endian, followed by the hash of id. Region and id are integers.
	vindexRegion
	// vindexLookup is a vindex whose keyspace ids live in a table (lookup, consistent_lookup
	// and their kin): a row alone does not give one.
	vindexLookup
	// vindexOther is a Vitess vindex vstreamd does not compute.
	vindexOther
)

// vindexType is what vstreamd knows of a Vitess vindex type.
type vindexType struct {
	kind vindexKind
	// unique: a value maps to one keyspace id. Vitess's primary vindexes are unique.
	unique bool
	// multi: the vindex reads several columns, and must be the table's primary vindex.
	multi bool
	// cost is Vitess's: of a table's vindexes a stream computes keyspace ids with the
	// cheapest unique one that needs no lookup, the first of equals.
	cost int
}

// vindexTypes are the vindex types of Vitess v0.24 by name.
var vindexTypes = map[string]vindexType{
	"hash":                {kind: vindexHash, unique: true, cost: 1},
	"numeric":             {kind: vindexNumeric, unique: true, cost: 0},
	"reverse_bits":        {kind: vindexReverseBits, unique: true, cost: 1},
	"binary":              {kind: vindexBinary, unique: true, cost: 0},
	"binary_md5":          {kind: vindexBinaryMD5, unique: true, cost: 1},
	"xxhash":              {kind: vindexXXHash, unique: true, cost: 1},
	"region_experimental": {kind: vindexRegion, unique: true, multi: true, cost: 1},

	"lookup":                             {kind: vindexLookup},
	"lookup_hash":                        {kind: vindexLookup},
	"consistent_lookup":                  {kind: vindexLookup},
	"lookup_unicodeloosemd5_hash":        {kind: vindexLookup},
	"lookup_unique":                      {kind: vindexLookup, unique: true},
	"lookup_hash_unique":                 {kind: vindexLookup, unique: true},
	"consistent_lookup_unique":           {kind: vindexLookup, unique: true},
	"lookup_unicodeloosemd5_hash_unique": {kind: vindexLookup, unique: true},

	"unicode_loose_md5":    {kind: vindexOther, unique: true, cost: 1},
	"unicode_loose_xxhash": {kind: vindexOther, unique: true, cost: 1},
	"numeric_static_map":   {kind: vindexOther, unique: true, cost: 1},
	"region_json":          {kind: vindexOther, unique: true, multi: true, cost: 1},
	"multicol":             {kind: vindexOther, unique: true, multi: true, cost: 1},
	"cfc":                  {kind: vindexOther, unique: true, cost: 1},
	"null":                 {kind: vindexOther, unique: true, cost: 100},
}

// vindexNames lists the vindexes vstreamd computes, for messages.
const vindexNames = "hash, numeric, reverse_bits, binary, binary_md5, xxhash or region_experimental"

// regionBytesParam is region_experimental's parameter: how many bytes of the region lead the
// keyspace id.
const regionBytesParam = "region_bytes"

// vindex computes keyspace ids. It keeps a scratch buffer, so one plan's vindexes are used
// by one goroutine at a time.
type vindex struct {
	kind vindexKind
	// name is the vindex's name in the VSchema, or its type, for messages.
	name        string
	regionBytes int
	block       cipher.Block
	// buf holds the plaintext and the keyspace id: buffers passed through the cipher
	// interface would escape to the heap on every row.
	buf *[24]byte
}

// newVindex makes a vindex of a type vstreamd computes; name labels its messages.
func newVindex(name, typ string, params map[string]string) (vindex, error) {
	vt, ok := vindexTypes[typ]
	switch {
	case (!ok || vt.kind == vindexOther) && !strings.EqualFold(name, typ):
		return vindex{}, fmt.Errorf("vindex %s: type %q is not supported; use %s", name, typ, vindexNames)
	case !ok, vt.kind == vindexOther:
		return vindex{}, fmt.Errorf("vindex %q is not supported; use %s", typ, vindexNames)
	case !vt.unique:
		return vindex{}, fmt.Errorf("vindex must be Unique to be used for VReplication: %s", name)
	case vt.kind == vindexLookup:
		return vindex{}, fmt.Errorf("vindex %s (%s) keeps its keyspace ids in a lookup table, which a stream does not read; use %s", name, typ, vindexNames)
	}
	v := vindex{kind: vt.kind, name: name, buf: new([24]byte)}
	switch vt.kind {
	case vindexHash, vindexRegion:
		b, err := des.NewCipher(make([]byte, 8))
		if err != nil {
			panic(err) // an 8-byte key is always valid
		}
		v.block = b
	default:
		// The other vindexes need no cipher.
	}
	if vt.kind == vindexRegion {
		rb, ok := params[regionBytesParam]
		if !ok {
			return vindex{}, fmt.Errorf("region_experimental missing %s param", regionBytesParam)
		}
		switch rb {
		case "1":
			v.regionBytes = 1
		case "2":
			v.regionBytes = 2
		default:
			return vindex{}, fmt.Errorf("region_bytes must be 1 or 2: %v", rb)
		}
	}
	return v, nil
}

func newHashVindex() vindex {
	v, _ := newVindex("hash", "hash", nil)
	return v
}

// columns is how many columns the vindex reads for a keyspace id.
func (v vindex) columns() int {
	if v.kind == vindexRegion {
		return 2
	}
	return 1
}

// idLength is the length of the vindex's keyspace ids, 0 when they vary (binary).
func (v vindex) idLength() int {
	switch v.kind {
	case vindexBinary:
		return 0
	case vindexBinaryMD5:
		return 16
	case vindexRegion:
		return v.regionBytes + 8
	default:
		return 8
	}
}

// integral reports a vindex that reads its column as an integer.
func (v vindex) integral() bool {
	return v.kind == vindexHash || v.kind == vindexNumeric || v.kind == vindexReverseBits || v.kind == vindexRegion
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
	u, ok := parseInteger(cell, unsigned)
	if !ok {
		return nil, false
	}
	return v.integer(u), true
}

// regionID returns region_experimental's keyspace id of a (region, id) pair of non-NULL
// integer cells, or false when one is not an integer. The region is cast to 16 bits, as
// Vitess casts it, and keeps its low region_bytes bytes. The result is valid until the next
// call.
func (v vindex) regionID(region, id []byte, regionUnsigned, idUnsigned bool) ([]byte, bool) {
	r, ok := parseInteger(region, regionUnsigned)
	if !ok {
		return nil, false
	}
	n, ok := parseInteger(id, idUnsigned)
	if !ok {
		return nil, false
	}
	v.integer(n) // the hash of id, in buf[8:16]
	binary.BigEndian.PutUint16(v.buf[6:8], uint16(r))
	return v.buf[8-v.regionBytes : 16], true
}

// parseInteger reads an integer cell (decimal text) as the 64 bits Vitess casts it to: a
// negative number is its two's complement.
func parseInteger(cell []byte, unsigned bool) (uint64, bool) {
	if unsigned {
		return sqltypes.ParseUint(cell)
	}
	x, ok := sqltypes.ParseInt(cell)
	return uint64(x), ok
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
