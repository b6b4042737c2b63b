package canalproto_test

import (
	"bytes"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// This file reads protobuf bytes with protoc, a decoder independent of the encoder, in two
// ways. protoc --decode_raw knows no schema: tests check the field numbers and wire types it
// prints against the field tables of the format spec (formats.md 6.2, 6.3). It cannot always
// give a string's bytes back: a string that parses as a message is printed as one, and groups
// and messages print alike ("st" reads as an empty group 14). protoc --decode with canal's
// .proto files prints strings as strings, so values are read that way, and checked against
// what --decode_raw printed wherever that is unambiguous.

type rawKind int

const (
	rawVarint rawKind = iota
	rawFixed32
	rawFixed64
	// rawString is a length-delimited field protoc printed as a string.
	rawString
	// rawMessage is a length-delimited field protoc could parse as a message, which it then
	// prints nested. Strings can parse as messages ("UTF-8" reads as field 10, fixed32).
	rawMessage
	// rawIdent is an enum value or bool as protoc --decode prints it.
	rawIdent
)

// rawField is one field as protoc printed it: key is the field number (--decode_raw) or
// name (--decode). Integers are kept as uint64 (negative ones as their two's complement).
type rawField struct {
	key  string
	num  int
	kind rawKind
	u    uint64
	s    []byte
	sub  []*rawField
}

// lengthDelimited reports wire type 2 (string, bytes or message).
func (f *rawField) lengthDelimited() bool { return f.kind == rawString || f.kind == rawMessage }

// bytes is a length-delimited field's content. For one protoc printed nested, the content is
// written back from the fields it printed.
func (f *rawField) bytes() []byte {
	if f.kind == rawString {
		return f.s
	}
	return appendRaw(nil, f.sub)
}

// fields is a length-delimited field read as a message: its fields.
func (f *rawField) fields(t testing.TB) []*rawField {
	t.Helper()
	if f.kind == rawString && len(f.s) > 0 {
		t.Fatalf("field %d is not a message: %q", f.num, f.s)
	}
	return f.sub
}

func appendRaw(b []byte, fs []*rawField) []byte {
	for _, f := range fs {
		n := protowire.Number(f.num)
		switch f.kind {
		case rawVarint:
			b = protowire.AppendTag(b, n, protowire.VarintType)
			b = protowire.AppendVarint(b, f.u)
		case rawFixed32:
			b = protowire.AppendTag(b, n, protowire.Fixed32Type)
			b = protowire.AppendFixed32(b, uint32(f.u))
		case rawFixed64:
			b = protowire.AppendTag(b, n, protowire.Fixed64Type)
			b = protowire.AppendFixed64(b, f.u)
		default:
			b = protowire.AppendTag(b, n, protowire.BytesType)
			b = protowire.AppendBytes(b, f.bytes())
		}
	}
	return b
}

// all returns the fields numbered num.
func all(fs []*rawField, num int) []*rawField {
	var out []*rawField
	for _, f := range fs {
		if f.num == num {
			out = append(out, f)
		}
	}
	return out
}

// one returns the field numbered num, nil when absent; more than one fails the test.
func one(t testing.TB, fs []*rawField, num int) *rawField {
	t.Helper()
	got := all(fs, num)
	if len(got) > 1 {
		t.Fatalf("field %d appears %d times", num, len(got))
	}
	if len(got) == 0 {
		return nil
	}
	return got[0]
}

// varint is the value of a varint field; absent is 0 (proto3's default).
func varint(t testing.TB, fs []*rawField, num int) uint64 {
	t.Helper()
	f := one(t, fs, num)
	if f == nil {
		return 0
	}
	if f.kind != rawVarint {
		t.Fatalf("field %d is not a varint", num)
	}
	return f.u
}

// str is the content of a string field; absent is "".
func str(t testing.TB, fs []*rawField, num int) string {
	t.Helper()
	f := one(t, fs, num)
	if f == nil {
		return ""
	}
	if !f.lengthDelimited() {
		t.Fatalf("field %d is not length-delimited", num)
	}
	return string(f.bytes())
}

// sub is a message field's fields; absent is empty.
func sub(t testing.TB, fs []*rawField, num int) []*rawField {
	t.Helper()
	f := one(t, fs, num)
	if f == nil {
		return nil
	}
	return f.fields(t)
}

// named returns the fields called name (protoc --decode output).
func named(fs []*rawField, name string) []*rawField {
	var out []*rawField
	for _, f := range fs {
		if f.key == name {
			out = append(out, f)
		}
	}
	return out
}

// field returns the field called name, nil when absent; more than one fails the test.
func field(t testing.TB, fs []*rawField, name string) *rawField {
	t.Helper()
	got := named(fs, name)
	if len(got) > 1 {
		t.Fatalf("field %s appears %d times", name, len(got))
	}
	if len(got) == 0 {
		return nil
	}
	return got[0]
}

// text is the value of a string or bytes field called name ("" when absent).
func text(t testing.TB, fs []*rawField, name string) string {
	t.Helper()
	f := field(t, fs, name)
	if f == nil {
		return ""
	}
	if f.kind != rawString {
		t.Fatalf("field %s is not a string", name)
	}
	return string(f.s)
}

// ident is the value of an enum or bool field called name ("" when absent).
func ident(t testing.TB, fs []*rawField, name string) string {
	t.Helper()
	f := field(t, fs, name)
	if f == nil {
		return ""
	}
	if f.kind != rawIdent {
		t.Fatalf("field %s is not an enum or bool", name)
	}
	return string(f.s)
}

// decodeRaw runs protoc --decode_raw on b and parses what it prints.
func decodeRaw(t testing.TB, b []byte) []*rawField {
	t.Helper()
	return runProtoc(t, b, "--decode_raw")
}

// decodeTyped runs protoc --decode with canal's .proto files on b, a message of the given
// type (e.g. "Entry"), and parses what it prints.
func decodeTyped(t testing.TB, b []byte, message string) []*rawField {
	t.Helper()
	return runProtoc(t, b, "-I", "../../../proto", "--decode=com.alibaba.otter.canal.protocol."+message,
		"canal/EntryProtocol.proto", "canal/CanalProtocol.proto")
}

func runProtoc(t testing.TB, b []byte, args ...string) []*rawField {
	t.Helper()
	protoc, err := exec.LookPath("protoc")
	if err != nil {
		t.Skipf("protoc is not installed (scripts/install-deps.sh installs it): %v", err)
	}
	cmd := exec.Command(protoc, args...)
	cmd.Stdin = bytes.NewReader(b)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("protoc %s: %v: %s", strings.Join(args, " "), err, stderr.Bytes())
	}
	lines := strings.Split(string(out), "\n")
	i := 0
	fs, err := parseRaw(lines, &i, 0)
	if err != nil {
		t.Fatalf("protoc %s output, line %d: %v\n%s", strings.Join(args, " "), i, err, out)
	}
	return fs
}

func parseRaw(lines []string, i *int, depth int) ([]*rawField, error) {
	var out []*rawField
	for *i < len(lines) {
		l := strings.TrimSpace(lines[*i])
		*i++
		switch {
		case l == "":
			continue
		case l == "}":
			if depth == 0 {
				return nil, fmt.Errorf("unbalanced }")
			}
			return out, nil
		case strings.HasSuffix(l, " {"):
			key := strings.TrimSuffix(l, " {")
			sub, err := parseRaw(lines, i, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, &rawField{key: key, num: number(key), kind: rawMessage, sub: sub})
			continue
		}
		key, val, ok := strings.Cut(l, ": ")
		if !ok || key == "" {
			return nil, fmt.Errorf("unexpected line %q", l)
		}
		f := &rawField{key: key, num: number(key)}
		var err error
		switch {
		case strings.HasPrefix(val, `"`):
			f.kind = rawString
			if f.s, err = unquoteC(val); err != nil {
				return nil, err
			}
		case strings.HasPrefix(val, "0x"):
			f.kind = rawFixed32
			if len(val) == 2+16 {
				f.kind = rawFixed64
			}
			f.u, err = strconv.ParseUint(val[2:], 16, 64)
		case val[0] == '-':
			f.kind = rawVarint
			var v int64
			v, err = strconv.ParseInt(val, 10, 64)
			f.u = uint64(v)
		case val[0] >= '0' && val[0] <= '9':
			f.kind = rawVarint
			f.u, err = strconv.ParseUint(val, 10, 64)
		default:
			f.kind = rawIdent
			f.s = []byte(val)
		}
		if err != nil {
			return nil, fmt.Errorf("value %q: %v", val, err)
		}
		out = append(out, f)
	}
	if depth > 0 {
		return nil, fmt.Errorf("unclosed message")
	}
	return out, nil
}

// number is a --decode_raw key's field number (-1 for a name).
func number(key string) int {
	n, err := strconv.Atoi(key)
	if err != nil {
		return -1
	}
	return n
}

// unquoteC reads a string as protoc prints it: C escapes, octal for other bytes.
func unquoteC(q string) ([]byte, error) {
	if len(q) < 2 || q[0] != '"' || q[len(q)-1] != '"' {
		return nil, fmt.Errorf("not a quoted string: %s", q)
	}
	s := q[1 : len(q)-1]
	var out []byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		i++
		if i == len(s) {
			return nil, fmt.Errorf("trailing backslash in %s", q)
		}
		switch c = s[i]; c {
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'a':
			out = append(out, '\a')
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'v':
			out = append(out, '\v')
		case '"', '\'', '\\', '?':
			out = append(out, c)
		case 'x':
			j := i + 1
			for j < len(s) && j < i+3 && strings.IndexByte("0123456789abcdefABCDEF", s[j]) >= 0 {
				j++
			}
			v, err := strconv.ParseUint(s[i+1:j], 16, 8)
			if err != nil {
				return nil, fmt.Errorf("escape in %s: %v", q, err)
			}
			out = append(out, byte(v))
			i = j - 1
		default:
			j := i
			for j < len(s) && j < i+3 && s[j] >= '0' && s[j] <= '7' {
				j++
			}
			if j == i {
				return nil, fmt.Errorf("unknown escape \\%c in %s", c, q)
			}
			v, err := strconv.ParseUint(s[i:j], 8, 16)
			if err != nil || v > 0xff {
				return nil, fmt.Errorf("octal escape in %s", q)
			}
			out = append(out, byte(v))
			i = j - 1
		}
	}
	return out, nil
}

func TestUnquoteC(t *testing.T) {
	got, err := unquoteC(`"a\n\"\\\303\251\0\x7f'"`)
	if err != nil || string(got) != "a\n\"\\é\x00\x7f'" {
		t.Errorf("unquoteC = %q, %v", got, err)
	}
	for _, bad := range []string{`"\q"`, `"\"`, `abc`} {
		if _, err := unquoteC(bad); err == nil {
			t.Errorf("unquoteC(%s) accepted", bad)
		}
	}
}
