package jsondiff

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// text stands in for the binary JSON renderer: the tests write values as text.
func text(b []byte) (string, error) { return string(b), nil }

// quote quotes as encoding/json does, without HTML escapes.
func quote(dst, s []byte) []byte { q, _ := json.Marshal(string(s)); return append(dst, q...) }

func TestApply(t *testing.T) {
	const doc = `{"a":1,"b":[1,2,3],"c":{"d":"x","long key":"y"},"n":12345678901234567890}`
	for _, c := range []struct {
		name  string
		diffs []Diff
		want  string
	}{
		{"no diffs leaves the text as it was", nil, `{"c":1, "a":2}`},
		{"replace a member", []Diff{{Replace, "$.a", []byte(`2`)}}, `{"a": 2, "b": [1, 2, 3], "c": {"d": "x", "long key": "y"}, "n": 12345678901234567890}`},
		{"insert a member where MySQL keeps it: by length, then bytes", []Diff{{Insert, "$.aa", []byte(`"new"`)}, {Insert, "$.m", []byte(`0`)}}, `{"a": 1, "b": [1, 2, 3], "c": {"d": "x", "long key": "y"}, "m": 0, "n": 12345678901234567890, "aa": "new"}`},
		{"remove a nested member", []Diff{{Remove, "$.c.d", nil}}, `{"a": 1, "b": [1, 2, 3], "c": {"long key": "y"}, "n": 12345678901234567890}`},
		{"quoted member", []Diff{{Replace, `$.c."long key"`, []byte(`[true,null]`)}}, `{"a": 1, "b": [1, 2, 3], "c": {"d": "x", "long key": [true, null]}, "n": 12345678901234567890}`},
		{"array element", []Diff{{Replace, "$.b[1]", []byte(`20`)}}, `{"a": 1, "b": [1, 20, 3], "c": {"d": "x", "long key": "y"}, "n": 12345678901234567890}`},
		{"insert into an array", []Diff{{Insert, "$.b[0]", []byte(`0`)}}, `{"a": 1, "b": [0, 1, 2, 3], "c": {"d": "x", "long key": "y"}, "n": 12345678901234567890}`},
		{"insert past the end appends", []Diff{{Insert, "$.b[9]", []byte(`4`)}}, `{"a": 1, "b": [1, 2, 3, 4], "c": {"d": "x", "long key": "y"}, "n": 12345678901234567890}`},
		{"remove the last element", []Diff{{Remove, "$.b[last]", nil}}, `{"a": 1, "b": [1, 2], "c": {"d": "x", "long key": "y"}, "n": 12345678901234567890}`},
		{"last-1", []Diff{{Replace, "$.b[last-1]", []byte(`"two"`)}}, `{"a": 1, "b": [1, "two", 3], "c": {"d": "x", "long key": "y"}, "n": 12345678901234567890}`},
		{"diffs apply in order", []Diff{{Remove, "$.b[0]", nil}, {Replace, "$.b[0]", []byte(`9`)}}, `{"a": 1, "b": [9, 3], "c": {"d": "x", "long key": "y"}, "n": 12345678901234567890}`},
		{"the whole document", []Diff{{Replace, "$", []byte(`[1]`)}}, `[1]`},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := doc
			if c.diffs == nil {
				in = c.want
			}
			got, err := Apply(in, c.diffs, text, quote)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Fatalf("got  %s\nwant %s", got, c.want)
			}
		})
	}
}

func TestApplyRefuses(t *testing.T) {
	for _, c := range []struct {
		name, doc string
		diff      Diff
		want      string
	}{
		{"replace of a missing member", `{"a":1}`, Diff{Replace, "$.b", []byte(`1`)}, `no member "b"`},
		{"member of an array", `[1]`, Diff{Replace, "$.a", []byte(`1`)}, "member \"a\" of a array"},
		{"index out of range", `[1]`, Diff{Replace, "$[3]", []byte(`1`)}, "index 3 of an array of 1"},
		{"a path without $", `{}`, Diff{Remove, "a", nil}, "does not start with $"},
		{"insert of the whole document", `{}`, Diff{Insert, "$", []byte(`1`)}, "whole document"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Apply(c.doc, []Diff{c.diff}, text, quote)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want one saying %q", err, c.want)
			}
		})
	}
}

func TestParse(t *testing.T) {
	// REPLACE $.a with a 2-byte value, then REMOVE $.b: what MySQL writes in the after image.
	vector := []byte("\x00\x03$.a\x02\x05\x02\x02\x03$.b")
	diffs, err := Parse(vector)
	if err != nil {
		t.Fatal(err)
	}
	if len(diffs) != 2 || diffs[0].Op != Replace || diffs[0].Path != "$.a" || string(diffs[0].Value) != "\x05\x02" ||
		diffs[1].Op != Remove || diffs[1].Path != "$.b" || diffs[1].Value != nil {
		t.Fatalf("diffs = %+v", diffs)
	}
	for _, bad := range [][]byte{{7}, []byte("\x00\x09$.a"), []byte("\x00\x03$.a\x09\x05")} {
		if _, err := Parse(bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("Parse(%q) = %v, want ErrCorrupt", bad, err)
		}
	}
}
