package debeziumtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"testing"
)

// Parse decodes one JSON document keeping number text (json.Number), so that comparisons also
// check how numbers are written; it fails the test on anything else, trailing data included.
func Parse(t testing.TB, b []byte) any {
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

// Diff lists the paths where two parsed JSON documents differ.
func Diff(path string, got, want any) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: got %s, want an object", path, Show(got))}
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
				out = append(out, fmt.Sprintf("%s.%s: missing, want %s", path, k, Show(wv)))
			case !wok:
				out = append(out, fmt.Sprintf("%s.%s: unexpected %s", path, k, Show(gv)))
			default:
				out = append(out, Diff(path+"."+k, gv, wv)...)
			}
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{fmt.Sprintf("%s: got %s, want %s", path, Show(got), Show(want))}
		}
		var out []string
		for i := range w {
			out = append(out, Diff(fmt.Sprintf("%s[%d]", path, i), g[i], w[i])...)
		}
		return out
	}
	if !reflect.DeepEqual(got, want) {
		return []string{fmt.Sprintf("%s: got %s, want %s", path, Show(got), Show(want))}
	}
	return nil
}

// Show is a value as JSON, cut short for messages.
func Show(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 400 {
		return string(b[:400]) + "..."
	}
	return string(b)
}

// SameJSON reports every difference between two parsed JSON documents as a test error.
func SameJSON(t testing.TB, what string, got, want any) {
	t.Helper()
	for _, d := range Diff(what, got, want) {
		t.Error(d)
	}
}
