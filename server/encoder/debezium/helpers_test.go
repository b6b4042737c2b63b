package debezium

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	"github.com/vstream-cdc/vstream/server/encoder"
	"github.com/vstream-cdc/vstream/server/encoder/encodertest"
)

// Shared test helpers.
var (
	row       = encodertest.Row
	encodeAll = encodertest.Encode
)

// newEncoder builds an encoder with a fixed clock, failing on unknown options.
func newEncoder(t testing.TB, p encoder.Params, opts map[string]string) *Encoder {
	t.Helper()
	if p.Clock == nil {
		p.Clock = encodertest.Clock(1_700_000_000_123)
	}
	if p.Keyspace == "" {
		p.Keyspace = "ks"
	}
	return encodertest.New(t, New, p, opts)
}

func clockAt(ms int64) func() time.Time { return func() time.Time { return time.UnixMilli(ms) } }

// parse decodes JSON keeping number text (json.Number), so that comparisons also check how
// numbers are written.
func parse(t testing.TB, b []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b)
	}
	if d.More() {
		t.Fatalf("trailing data after JSON document:\n%s", b)
	}
	return v
}

// diff lists the paths where two parsed JSON documents differ.
func diff(path string, got, want any) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: got %s, want an object", path, show(got))}
		}
		var out []string
		keys := make([]string, 0, len(w)+len(g))
		for k := range w {
			keys = append(keys, k)
		}
		for k := range g {
			if _, ok := w[k]; !ok {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			gv, gok := g[k]
			wv, wok := w[k]
			switch {
			case !gok:
				out = append(out, fmt.Sprintf("%s.%s: missing, want %s", path, k, show(wv)))
			case !wok:
				out = append(out, fmt.Sprintf("%s.%s: unexpected %s", path, k, show(gv)))
			default:
				out = append(out, diff(path+"."+k, gv, wv)...)
			}
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{fmt.Sprintf("%s: got %s, want %s", path, show(got), show(want))}
		}
		var out []string
		for i := range w {
			out = append(out, diff(fmt.Sprintf("%s[%d]", path, i), g[i], w[i])...)
		}
		return out
	}
	if !reflect.DeepEqual(got, want) {
		return []string{fmt.Sprintf("%s: got %s, want %s", path, show(got), show(want))}
	}
	return nil
}

func show(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 300 {
		return string(b[:300]) + "..."
	}
	return string(b)
}

func sameJSON(t testing.TB, what string, got, want any) {
	t.Helper()
	for _, d := range diff(what, got, want) {
		t.Error(d)
	}
}

// get walks a parsed document: get(doc, "payload", "source", "snapshot").
func get(v any, path ...string) any {
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

// keysOf returns an object's member names, sorted.
func keysOf(v any) []string {
	m, _ := v.(map[string]any)
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// memberOrder returns the member names of the object at path in the order the text has them.
func memberOrder(t testing.TB, b []byte, path ...string) []string {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	var walk func(depth int) []string
	// Descend along path, then read the keys of that object.
	walk = func(depth int) []string {
		tok, err := d.Token()
		if err != nil || tok != json.Delim('{') {
			t.Fatalf("memberOrder: no object at %v", path[:depth])
		}
		var keys []string
		for d.More() {
			kt, _ := d.Token()
			k := kt.(string)
			if depth < len(path) && k == path[depth] {
				return walk(depth + 1)
			}
			if depth == len(path) {
				keys = append(keys, k)
			}
			var skip json.RawMessage
			if err := d.Decode(&skip); err != nil {
				t.Fatal(err)
			}
		}
		if depth < len(path) {
			t.Fatalf("memberOrder: no member %s", strings.Join(path[:depth+1], "."))
		}
		return keys
	}
	return walk(0)
}

func fieldEvent(table string, enumLabels bool, fields ...*query.Field) *binlogdata.VEvent {
	return &binlogdata.VEvent{Type: binlogdata.VEventType_FIELD, FieldEvent: &binlogdata.FieldEvent{
		TableName: table, Fields: fields, EnumSetStringValues: enumLabels}}
}
