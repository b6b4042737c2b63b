// Package encodertest holds what the output formats' tests share: building encoders with
// options and a fixed clock, rows from cell texts, and running events through an encoder.
package encodertest

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/server/encoder"
)

// New builds an encoder with a constructor, the params and the options, failing the test on
// an error or an option the encoder did not read.
func New[E any](t testing.TB, build func(encoder.Params) (E, error), p encoder.Params, opts map[string]string) E {
	t.Helper()
	p.Options = encoder.NewOptions(opts)
	e, err := build(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Options.Unknown(); err != nil {
		t.Fatal(err)
	}
	return e
}

// Clock is a clock stopped at ms milliseconds since the epoch.
func Clock(ms int64) func() time.Time { return func() time.Time { return time.UnixMilli(ms) } }

// Row builds a row from cells: a string is a value, nil is NULL.
func Row(vals ...any) *query.Row {
	r := &query.Row{}
	for _, v := range vals {
		if v == nil {
			r.Lengths = append(r.Lengths, -1)
			continue
		}
		s := v.(string)
		r.Lengths = append(r.Lengths, int64(len(s)))
		r.Values = append(r.Values, s...)
	}
	return r
}

// Encode runs events through an encoder and returns all the messages, failing the test on
// an error.
func Encode(t testing.TB, e encoder.Encoder, evs ...*binlogdata.VEvent) []*vstreamv1.EncodedMessage {
	t.Helper()
	var out []*vstreamv1.EncodedMessage
	for _, ev := range evs {
		var err error
		if out, err = e.Encode(out, ev); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// SameJSONFile compares a message with a golden JSON file, both parsed, so that spacing and
// member order do not count.
func SameJSONFile(t testing.TB, got []byte, wantFile string) {
	t.Helper()
	want, err := os.ReadFile(wantFile)
	if err != nil {
		t.Fatal(err)
	}
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, got)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("differs from %s\n got %s\nwant %s", wantFile, got, want)
	}
}
