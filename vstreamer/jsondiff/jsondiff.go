// Package jsondiff reads the JSON diffs MySQL logs for an update of a JSON column when
// binlog_row_value_options=PARTIAL_JSON (a PARTIAL_UPDATE_ROWS_EVENT), and applies them to
// the column's value before the update, giving its whole value after it.
//
// A diff vector is what the after image holds in place of the value: diffs one after the
// other, each an operation (REPLACE, INSERT, REMOVE), a JSON path and, but for REMOVE, a
// value in MySQL's binary JSON. Documents are JSON text in MySQL's layout, as the stream
// prints whole JSON values; Apply prints its result the same way, so an update logged as
// diffs streams the same value as the same update logged whole.
package jsondiff

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// Op is a diff's operation, with MySQL's numbering (enum_json_diff_operation).
type Op byte

// The operations, as MySQL numbers them.
const (
	Replace Op = 0
	Insert  Op = 1
	Remove  Op = 2
)

func (o Op) String() string {
	switch o {
	case Replace:
		return "REPLACE"
	case Insert:
		return "INSERT"
	case Remove:
		return "REMOVE"
	}
	return "op " + strconv.Itoa(int(o))
}

// Diff is one change of a document.
type Diff struct {
	Op   Op
	Path string
	// Value is the new value in MySQL's binary JSON; nil for Remove.
	Value []byte
}

// ErrCorrupt is wrapped by the errors of a diff vector that cannot be read.
var ErrCorrupt = errors.New("corrupt JSON diff")

// Parse splits a diff vector (the bytes after the column's length) into its diffs. The
// values alias vector.
func Parse(vector []byte) ([]Diff, error) {
	var diffs []Diff
	for p := 0; p < len(vector); {
		op := Op(vector[p])
		if op > Remove {
			return nil, fmt.Errorf("%w: operation %d at byte %d", ErrCorrupt, op, p)
		}
		p++
		path, n, err := lenenc(vector[p:])
		if err != nil {
			return nil, fmt.Errorf("%w: path at byte %d: %v", ErrCorrupt, p, err)
		}
		p += n
		d := Diff{Op: op, Path: string(path)}
		if op != Remove {
			if d.Value, n, err = lenenc(vector[p:]); err != nil {
				return nil, fmt.Errorf("%w: value of %s at byte %d: %v", ErrCorrupt, d.Path, p, err)
			}
			p += n
		}
		diffs = append(diffs, d)
	}
	return diffs, nil
}

// lenenc reads a length-encoded string: its length as a length-encoded integer, then the
// bytes.
func lenenc(b []byte) (s []byte, n int, err error) {
	length, isNull, n := mysql.LengthEncodedInt(b)
	if isNull || n == 0 || n > len(b) || length > uint64(len(b)-n) {
		return nil, 0, errors.New("length past the end")
	}
	return b[n : n+int(length)], n + int(length), nil
}

// Apply applies diffs in order to doc, a JSON text, and returns the resulting text in MySQL's
// layout (`{"k": v, "k2": v2}`, `[a, b]`). value renders a diff's binary JSON value as text;
// quote appends a string quoted as that text quotes strings. Numbers and strings Apply does
// not change are written back as doc has them, and the keys of an object stay in the
// document's order, a new key placed where MySQL's binary JSON keeps it.
func Apply(doc string, diffs []Diff, value func(binary []byte) (string, error), quote func(dst, s []byte) []byte) (string, error) {
	if len(diffs) == 0 {
		return doc, nil
	}
	root, err := decode(doc)
	if err != nil {
		return "", fmt.Errorf("the value before the update: %w", err)
	}
	for _, d := range diffs {
		legs, err := parsePath(d.Path)
		if err != nil {
			return "", err
		}
		var v any
		if d.Op != Remove {
			var t string
			if t, err = value(d.Value); err == nil {
				v, err = decode(t)
			}
			if err != nil {
				return "", fmt.Errorf("%s %s: %w", d.Op, d.Path, err)
			}
		}
		if root, err = apply(root, legs, d.Op, v); err != nil {
			return "", fmt.Errorf("%s %s: %w", d.Op, d.Path, err)
		}
	}
	return string(appendValue(nil, root, quote)), nil
}

// object is a JSON object with its keys in order.
type object struct {
	keys []string
	vals []any
}

func (o *object) find(k string) int {
	for i, key := range o.keys {
		if key == k {
			return i
		}
	}
	return -1
}

// insert adds a key where MySQL's binary JSON keeps it: keys ordered by length, then by
// their bytes.
func (o *object) insert(k string, v any) {
	i := 0
	for i < len(o.keys) && (len(o.keys[i]) < len(k) || len(o.keys[i]) == len(k) && o.keys[i] < k) {
		i++
	}
	o.keys = append(o.keys[:i], append([]string{k}, o.keys[i:]...)...)
	o.vals = append(o.vals[:i], append([]any{v}, o.vals[i:]...)...)
}

// decode reads a JSON text into objects, []any, json.Number (numbers keep their text),
// strings, booleans and nil.
func decode(s string) (any, error) {
	if strings.TrimSpace(s) == "" {
		// An empty document (written by a non-strict insert) reads as null.
		return nil, nil
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	v, err := decodeNext(dec)
	if err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("text after the JSON value")
	}
	return v, nil
}

func decodeNext(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := &object{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, ok := kt.(string)
				if !ok {
					return nil, fmt.Errorf("object key %v", kt)
				}
				v, err := decodeNext(dec)
				if err != nil {
					return nil, err
				}
				o.keys, o.vals = append(o.keys, k), append(o.vals, v)
			}
			_, err := dec.Token() // '}'
			return o, err
		case '[':
			a := []any{}
			for dec.More() {
				v, err := decodeNext(dec)
				if err != nil {
					return nil, err
				}
				a = append(a, v)
			}
			_, err := dec.Token() // ']'
			return a, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	default:
		return tok, nil
	}
}

// appendValue writes v in MySQL's layout.
func appendValue(dst []byte, v any, quote func(dst, s []byte) []byte) []byte {
	switch v := v.(type) {
	case *object:
		dst = append(dst, '{')
		for i, k := range v.keys {
			if i > 0 {
				dst = append(dst, ',', ' ')
			}
			dst = quote(dst, []byte(k))
			dst = append(dst, ':', ' ')
			dst = appendValue(dst, v.vals[i], quote)
		}
		return append(dst, '}')
	case []any:
		dst = append(dst, '[')
		for i, e := range v {
			if i > 0 {
				dst = append(dst, ',', ' ')
			}
			dst = appendValue(dst, e, quote)
		}
		return append(dst, ']')
	case json.Number:
		return append(dst, v...)
	case string:
		return quote(dst, []byte(v))
	case bool:
		return strconv.AppendBool(dst, v)
	}
	return append(dst, "null"...)
}

// leg is one step of a path: a member name, or an array index (from the end when last).
type leg struct {
	key    string
	member bool
	index  int
	last   bool // index counts back from the last element: [last-index]
}

// parsePath reads a path as MySQL writes it in a diff: $ then .member, ."quoted member" or
// [index] legs, the index possibly last or last-N.
func parsePath(p string) ([]leg, error) {
	bad := func(why string) error { return fmt.Errorf("%w: path %q: %s", ErrCorrupt, p, why) }
	if !strings.HasPrefix(p, "$") {
		return nil, bad("does not start with $")
	}
	var legs []leg
	for i := 1; i < len(p); {
		switch p[i] {
		case ' ':
			i++
		case '.':
			i++
			for i < len(p) && p[i] == ' ' {
				i++
			}
			if i < len(p) && p[i] == '"' {
				end := i + 1
				for end < len(p) && p[end] != '"' {
					if p[end] == '\\' {
						end++
					}
					end++
				}
				if end >= len(p) {
					return nil, bad("unterminated quoted member")
				}
				var key string
				if err := json.Unmarshal([]byte(p[i:end+1]), &key); err != nil {
					return nil, bad(err.Error())
				}
				legs = append(legs, leg{key: key, member: true})
				i = end + 1
				continue
			}
			end := i
			for end < len(p) && p[end] != '.' && p[end] != '[' && p[end] != ' ' {
				_, size := utf8.DecodeRuneInString(p[end:])
				end += size
			}
			if end == i {
				return nil, bad("empty member name")
			}
			legs = append(legs, leg{key: p[i:end], member: true})
			i = end
		case '[':
			end := strings.IndexByte(p[i:], ']')
			if end < 0 {
				return nil, bad("unterminated array index")
			}
			l, err := parseIndex(strings.TrimSpace(p[i+1 : i+end]))
			if err != nil {
				return nil, bad(err.Error())
			}
			legs = append(legs, l)
			i += end + 1
		default:
			return nil, bad(fmt.Sprintf("unexpected %q at %d", p[i], i))
		}
	}
	return legs, nil
}

func parseIndex(s string) (leg, error) {
	if rest, ok := strings.CutPrefix(s, "last"); ok {
		rest = strings.TrimSpace(rest)
		if rest == "" {
			return leg{last: true}, nil
		}
		n, ok := strings.CutPrefix(rest, "-")
		if !ok {
			return leg{}, fmt.Errorf("bad index %q", s)
		}
		k, err := strconv.Atoi(strings.TrimSpace(n))
		if err != nil || k < 0 {
			return leg{}, fmt.Errorf("bad index %q", s)
		}
		return leg{last: true, index: k}, nil
	}
	k, err := strconv.Atoi(s)
	if err != nil || k < 0 {
		return leg{}, fmt.Errorf("bad index %q", s)
	}
	return leg{index: k}, nil
}

// apply changes node at the path legs and returns the node, which is new when the change is
// of the node itself.
func apply(node any, legs []leg, op Op, v any) (any, error) {
	if len(legs) == 0 {
		if op != Replace {
			return nil, errors.New("only REPLACE applies to the whole document")
		}
		return v, nil
	}
	if legs[0].member {
		return applyMember(node, legs, op, v)
	}
	return applyIndex(node, legs, op, v)
}

// applyMember applies op at legs, whose first leg is a member of the object node.
func applyMember(node any, legs []leg, op Op, v any) (any, error) {
	l := legs[0]
	obj, ok := node.(*object)
	if !ok {
		return nil, fmt.Errorf("member %q of a %s", l.key, kind(node))
	}
	at := obj.find(l.key)
	if len(legs) > 1 {
		if at < 0 {
			return nil, fmt.Errorf("no member %q", l.key)
		}
		c, err := apply(obj.vals[at], legs[1:], op, v)
		if err != nil {
			return nil, err
		}
		obj.vals[at] = c
		return obj, nil
	}
	switch op {
	case Remove:
		if at < 0 {
			return nil, fmt.Errorf("no member %q to remove", l.key)
		}
		obj.keys = append(obj.keys[:at], obj.keys[at+1:]...)
		obj.vals = append(obj.vals[:at], obj.vals[at+1:]...)
	case Replace:
		if at < 0 {
			return nil, fmt.Errorf("no member %q to replace", l.key)
		}
		obj.vals[at] = v
	case Insert:
		if at >= 0 {
			obj.vals[at] = v
		} else {
			obj.insert(l.key, v)
		}
	}
	return obj, nil
}

// applyIndex applies op at legs, whose first leg is an index of the array node.
func applyIndex(node any, legs []leg, op Op, v any) (any, error) {
	l := legs[0]
	arr, ok := node.([]any)
	if !ok {
		return nil, fmt.Errorf("array index of a %s", kind(node))
	}
	i := l.index
	if l.last {
		i = len(arr) - 1 - l.index
	}
	if len(legs) > 1 {
		if i < 0 || i >= len(arr) {
			return nil, fmt.Errorf("index %d of an array of %d", i, len(arr))
		}
		c, err := apply(arr[i], legs[1:], op, v)
		if err != nil {
			return nil, err
		}
		arr[i] = c
		return arr, nil
	}
	switch op {
	case Insert:
		// MySQL appends what is inserted past the end.
		i = min(max(i, 0), len(arr))
		arr = append(arr, nil)
		copy(arr[i+1:], arr[i:])
		arr[i] = v
		return arr, nil
	case Replace, Remove:
		if i < 0 || i >= len(arr) {
			return nil, fmt.Errorf("index %d of an array of %d", i, len(arr))
		}
		if op == Replace {
			arr[i] = v
			return arr, nil
		}
		return append(arr[:i], arr[i+1:]...), nil
	}
	return nil, fmt.Errorf("unknown operation %s", op)
}

func kind(v any) string {
	switch v.(type) {
	case *object:
		return "object"
	case []any:
		return "array"
	case nil:
		return "null"
	}
	return "scalar"
}
