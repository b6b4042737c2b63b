package nats

import (
	"testing"

	"github.com/vstream-cdc/vstream/sink"
)

// Fit counts a record as the message newMsg makes of it would be counted: printable and
// binary keys, headers, tombstones.
func TestMsgSize(t *testing.T) {
	for _, r := range []*sink.Record{
		{Topic: "cdc.t", ID: "s/pos/0", Value: []byte(`{"a":1}`)},
		{Topic: "cdc.t", ID: "s/pos/1", Key: []byte(`{"id":7}`), Value: []byte("v"), Headers: map[string]string{"h": "x", "vstream.oversize": "key-only"}},
		{Topic: "cdc.t", ID: "s/pos/2", Key: []byte{0, 1, 2, 0xff, 9}, Value: []byte{}},
		{Topic: "cdc.t", ID: "s/pos/3", Key: []byte("k"), Value: nil},
	} {
		_, want := newMsg(r)
		if got := msgSize(r); got != want {
			t.Errorf("record %s: msgSize %d, newMsg %d", r.ID, got, want)
		}
	}
}
