package formattest_test

import (
	"bytes"
	"os"
	"testing"

	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/internal/formattest"
	"github.com/vstream-cdc/vstream/server"
)

func TestMain(m *testing.M) { os.Exit(formattest.Main(m)) }

// TestResumeFromMessagePositions checks, for every format, the promise of a message's
// position: a stream resumed from it sends that message again and then what followed it,
// nothing skipped and nothing twice. Messages are compared by topic, key and tombstone:
// values hold encode times and per-stream counters. Avro's schema messages are left out (a
// new stream announces its schemas again) and its keys compared past the Confluent frame
// (schema ids are per stream).
func TestResumeFromMessagePositions(t *testing.T) {
	for _, format := range server.Formats[1:] {
		t.Run(format, func(t *testing.T) {
			r := formattest.Run(t, format, nil)
			msgs := records(r.Messages)
			resumed := 0
			seen := map[string]bool{}
			for i, m := range msgs {
				sg := m.GetPosition().GetShardGtids()
				if len(sg) != 1 || len(sg[0].GetTablePKs()) > 0 || seen[sg[0].GetGtid()] {
					// Positions inside the copy resume it by chunks; the copy tests cover them.
					continue
				}
				seen[sg[0].GetGtid()] = true
				got := records(r.Resume(t, m.GetPosition()))
				want := msgs[i:]
				if len(got) != len(want) {
					t.Errorf("from %s: %d messages, want %d", sg[0].GetGtid(), len(got), len(want))
					continue
				}
				for j := range got {
					if got[j].GetTopic() != want[j].GetTopic() || got[j].GetTombstone() != want[j].GetTombstone() ||
						!bytes.Equal(key(format, got[j]), key(format, want[j])) {
						t.Errorf("from %s, message %d: topic %q key %q, want topic %q key %q", sg[0].GetGtid(), j,
							got[j].GetTopic(), got[j].GetKey(), want[j].GetTopic(), want[j].GetKey())
						break
					}
				}
				resumed++
			}
			// The workload's transactions after the copy: at least one position each.
			if resumed < 6 {
				t.Errorf("resumed from %d positions; the workload has 8 transactions after the copy", resumed)
			}
		})
	}
}

// records leaves out Avro's schema messages.
func records(msgs []*vstreamv1.EncodedMessage) []*vstreamv1.EncodedMessage {
	var out []*vstreamv1.EncodedMessage
	for _, m := range msgs {
		if m.GetHeaders()["vstream.message"] != "schema" {
			out = append(out, m)
		}
	}
	return out
}

func key(format string, m *vstreamv1.EncodedMessage) []byte {
	k := m.GetKey()
	if format == "avro" && len(k) >= 5 {
		return k[5:]
	}
	return k
}
