package debezium

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	"github.com/vstream-cdc/vstream/server/encoder"
	"github.com/vstream-cdc/vstream/server/encoder/debezium/debeziumtest"
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

var clockAt = encodertest.Clock

// JSON comparisons: parse keeps number text, so that they also check how numbers are written.
var (
	parse    = debeziumtest.Parse
	show     = debeziumtest.Show
	sameJSON = debeziumtest.SameJSON
)

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

// fieldEvent is a FIELD event; enumLabels says whether ENUM/SET cells are labels.
func fieldEvent(table string, enumLabels bool, fields ...*query.Field) *binlogdata.VEvent {
	return &binlogdata.VEvent{Type: binlogdata.VEventType_FIELD, FieldEvent: &binlogdata.FieldEvent{
		TableName: table, Fields: fields, EnumSetStringValues: enumLabels}}
}
