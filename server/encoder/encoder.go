// Package encoder defines how a stream's VEvents are re-wrapped in foreign formats: the small
// interface every format implements, the options and parameters it is built with, and the
// rendering rules several formats share (Java number text, JSON strings, binary as text). One
// sub-package per format implements it; the registry of format names sits above, in server.
// Encoders are pure: no I/O, the clock injected, the output a function of the input.
package encoder

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/sqltypes"
)

// Encoder re-wraps the VEvents of one stream. It keeps what it learns from FIELD events and
// is used by one goroutine.
type Encoder interface {
	// Encode appends the messages one event becomes (often none) to out.
	Encode(out []*vstreamv1.EncodedMessage, ev *binlogdata.VEvent) ([]*vstreamv1.EncodedMessage, error)
}

// Recycler is an Encoder that can reuse the memory of the messages it returned once they
// have been sent. The server calls Recycle after each response has gone out (gRPC has copied
// the messages into its frames by then), so that a stream's messages are written over the
// same few blocks instead of fresh memory. Messages an encoder still holds back are not
// affected.
type Recycler interface {
	Recycle()
}

// Params are what every encoder is built with.
type Params struct {
	// Options are the stream's format options; encoders read them through Options.
	Options *Options
	// Clock gives the encode time (injected so that tests are deterministic).
	Clock func() time.Time
	// Database is the schema the stream's tables belong to.
	Database string
	// Flavor of the source server: "mysql" or "mariadb".
	Flavor string
	// ServerVersion is the source server's VERSION().
	ServerVersion string
	// Keyspace is the name the server gives its source (vstreamd --keyspace); formats that
	// name a logical server (Debezium's topic prefix) default to it.
	Keyspace string
	// Zone is the source server's time zone, where its SELECTs print TIMESTAMP values; nil
	// is UTC.
	Zone *time.Location
	// Collations maps the collation ids of text columns to their character sets, to convert
	// their text to UTF-8; nil means sqltypes.DefaultCharsets.
	Collations *sqltypes.Charsets
}

// RenderZone reads the render_zone option of the formats that print TIMESTAMP values as
// wall-clock text: an IANA zone name, UTC, or an offset such as +03:00. The default is the
// source server's zone, so that the text equals what SELECT prints there.
func RenderZone(p Params) (*time.Location, error) {
	def := "UTC"
	if p.Zone != nil {
		def = p.Zone.String()
	}
	name, err := p.Options.String("render_zone", def)
	if err != nil {
		return nil, err
	}
	if name == def && p.Zone != nil {
		return p.Zone, nil
	}
	if loc, ok := ParseOffsetZone(name); ok {
		return loc, nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("format option render_zone=%q: want an IANA zone name, UTC or an offset like +03:00: %v", name, err)
	}
	return loc, nil
}

// SourceZone is the location of a source server's time zone: its name (an IANA name or
// an offset) when Go knows it, else a fixed zone at the server's current offset (zone names
// only the server knows, such as abbreviations; their daylight-saving changes are not
// followed).
func SourceZone(name string, utcOffset int) *time.Location {
	if loc, ok := ParseOffsetZone(name); ok {
		return loc
	}
	if name != "" && !strings.ContainsAny(name, "/") && name != "UTC" {
		// Abbreviations ("CET", "EST") load in Go but may not mean what the server means.
		return time.FixedZone(name, utcOffset)
	}
	if loc, err := time.LoadLocation(name); err == nil && name != "" {
		return loc
	}
	if utcOffset == 0 {
		return time.UTC
	}
	return time.FixedZone(name, utcOffset)
}

// ParseOffsetZone reads a fixed offset zone written as MySQL writes one, [+-]hh:mm.
func ParseOffsetZone(s string) (*time.Location, bool) {
	if len(s) != 6 || (s[0] != '+' && s[0] != '-') || s[3] != ':' {
		return nil, false
	}
	h, okH := twoDigits(s[1:3])
	m, okM := twoDigits(s[4:6])
	if !okH || !okM || h > 14 || m > 59 {
		return nil, false
	}
	off := h*3600 + m*60
	if s[0] == '-' {
		off = -off
	}
	if off == 0 {
		return time.UTC, true
	}
	return time.FixedZone(s, off), true
}

// twoDigits reads two ASCII digits.
func twoDigits(s string) (int, bool) {
	if s[0] < '0' || s[0] > '9' || s[1] < '0' || s[1] > '9' {
		return 0, false
	}
	return int(s[0]-'0')*10 + int(s[1]-'0'), true
}

// Options reads a stream's format options and remembers which were read, so that the rest can
// be refused as unknown.
type Options struct {
	m    map[string]string
	used map[string]bool
}

// NewOptions wraps the options of a request.
func NewOptions(m map[string]string) *Options {
	return &Options{m: m, used: map[string]bool{}}
}

// String reads a string option; when allowed is not empty the value must be one of them.
func (o *Options) String(name, def string, allowed ...string) (string, error) {
	o.used[name] = true
	v, ok := o.m[name]
	if !ok {
		return def, nil
	}
	if len(allowed) > 0 && !slices.Contains(allowed, v) {
		return "", fmt.Errorf("format option %s=%q: want one of %s", name, v, strings.Join(allowed, ", "))
	}
	return v, nil
}

// Bool reads a true/false option.
func (o *Options) Bool(name string, def bool) (bool, error) {
	o.used[name] = true
	v, ok := o.m[name]
	if !ok {
		return def, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("format option %s=%q: want true or false", name, v)
	}
	return b, nil
}

// Unknown reports the options no one read, listing the valid ones.
func (o *Options) Unknown() error {
	var bad, valid []string
	for k := range o.m {
		if !o.used[k] {
			bad = append(bad, k)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	for k := range o.used {
		valid = append(valid, k)
	}
	sort.Strings(bad)
	sort.Strings(valid)
	return fmt.Errorf("unknown format option %s: valid options are %s", strings.Join(bad, ", "), strings.Join(valid, ", "))
}

// AppendJavaFloat appends x the way Java's Float.toString (bits 32) or Double.toString
// (bits 64) prints it, with the shortest digits that round-trip: plain notation with at least
// one fraction digit for 1e-3 <= |x| < 1e7, else d.dddE<exp>.
func AppendJavaFloat(dst []byte, x float64, bits int) []byte {
	if x == 0 {
		if 1/x < 0 {
			return append(dst, "-0.0"...)
		}
		return append(dst, "0.0"...)
	}
	abs := x
	if abs < 0 {
		abs = -abs
	}
	if abs >= 1e-3 && abs < 1e7 {
		start := len(dst)
		dst = strconv.AppendFloat(dst, x, 'f', -1, bits)
		if !slices.Contains(dst[start:], '.') {
			dst = append(dst, ".0"...)
		}
		return dst
	}
	var buf [32]byte
	e := strconv.AppendFloat(buf[:0], x, 'e', -1, bits) // -d.ddde+XX
	mant, exp, _ := strings.Cut(string(e), "e")
	dst = append(dst, mant...)
	if !strings.Contains(mant, ".") {
		dst = append(dst, ".0"...)
	}
	dst = append(dst, 'E')
	n, _ := strconv.Atoi(exp)
	return strconv.AppendInt(dst, int64(n), 10)
}

// AppendJSONString appends s as a JSON string: non-ASCII raw, control characters escaped, no
// HTML escaping (the canal writer profile). Invalid UTF-8 becomes U+FFFD.
func AppendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	// Runs of bytes that need nothing are copied at once: most text has no escapes.
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if jsonPlain[c] {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				dst = append(dst, s[start:i]...)
				dst = append(dst, "\ufffd"...)
				i++
				start = i
				continue
			}
			i += size
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		i++
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// jsonPlain marks the ASCII bytes a JSON string holds as they are.
var jsonPlain = func() (t [256]bool) {
	for c := 0x20; c < 0x7f; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()
