package vstreamer

import (
	"bytes"
	"context"
	"encoding/binary"
	"log/slog"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/klauspost/compress/zstd"

	"github.com/vstream-cdc/vstream/position"
)

// rawEvents is a dump read in raw mode: each event undecoded, as go-mysql hands it out.
type rawEvents struct{ evs [][]byte }

func (r *rawEvents) GetEvent(context.Context) (*replication.BinlogEvent, error) {
	if len(r.evs) == 0 {
		return nil, context.Canceled
	}
	raw := r.evs[0]
	r.evs = r.evs[1:]
	h := &replication.EventHeader{}
	if err := h.Decode(raw); err != nil {
		return nil, err
	}
	return &replication.BinlogEvent{RawData: raw, Header: h, Event: &replication.GenericEvent{}}, nil
}

// payloadEvent is a TRANSACTION_PAYLOAD event ending at logPos that holds inner, compressed
// with zstd, with its checksum.
func payloadEvent(t testing.TB, logPos uint32, inner []byte) []byte {
	t.Helper()
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	compressed := enc.EncodeAll(inner, nil)
	_ = enc.Close() // EncodeAll used no stream
	var body []byte
	field := func(typ, value uint64) {
		v := mysql.PutLengthEncodedInt(value)
		body = append(body, mysql.PutLengthEncodedInt(typ)...)
		body = append(body, mysql.PutLengthEncodedInt(uint64(len(v)))...)
		body = append(body, v...)
	}
	field(1, uint64(len(compressed))) // payload size
	field(payloadCompressionType, payloadZSTD)
	field(3, uint64(len(inner))) // uncompressed size, past 251 bytes, as big ones are
	body = append(body, payloadEndMark)
	body = append(body, compressed...)
	return makeEvent(replication.TRANSACTION_PAYLOAD_EVENT, 1, logPos, body)
}

// rowsQuery is a ROWS_QUERY event of n bytes of text, without a checksum, as events stand
// inside a payload.
func rowsQuery(n int) []byte {
	body := append([]byte{1}, strings.Repeat("q", n)...)
	ev := make([]byte, replication.EventHeaderSize, replication.EventHeaderSize+len(body))
	ev[4] = byte(replication.ROWS_QUERY_EVENT)
	binary.LittleEndian.PutUint32(ev[9:], uint32(len(ev)+len(body)))
	return append(ev, body...)
}

// eventFunc is a dump's handler of pushed events.
type eventFunc func(*replication.BinlogEvent) error

func (f eventFunc) HandleEvent(ev *replication.BinlogEvent) error { return f(ev) }

// TestPayloadReaderBoundsMemory: a compressed transaction of 256 MiB of events is handed out
// event by event while it is decompressed, both read (GetEvent) and pushed (HandleEvent, as
// a shared reader's dump hands its events on); the heap never holds it whole, as go-mysql's
// decoding of the payload would.
func TestPayloadReaderBoundsMemory(t *testing.T) {
	const events, size = 256 << 10, 1 << 10
	cfg := replication.BinlogSyncerConfig{Flavor: mysql.MySQLFlavor}
	for _, pushed := range []bool{false, true} {
		t.Run(map[bool]string{false: "read", true: "pushed"}[pushed], func(t *testing.T) {
			// The uncompressed events are garbage once compressed: only the payload stays.
			payload := payloadEvent(t, 5000, bytes.Repeat(rowsQuery(size-replication.EventHeaderSize-1), events))
			dump := &rawEvents{evs: [][]byte{formatEvent(), payload}}
			runtime.GC()
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			base, peak := m.HeapAlloc, m.HeapAlloc
			i := -1
			check := func(ev *replication.BinlogEvent) error {
				if i++; i == 0 {
					if ev.Header.EventType != replication.FORMAT_DESCRIPTION_EVENT {
						t.Fatalf("first event %v; want the format description", ev)
					}
					return nil
				}
				q, ok := ev.Event.(*replication.RowsQueryEvent)
				if !ok || len(q.Query) != size-replication.EventHeaderSize-1 {
					t.Fatalf("event %d is %T of %d bytes", i, ev.Event, len(q.Query))
				}
				// Every event of the payload spans it, as the stream reads a decoded payload's.
				if ev.Header.LogPos != 5000 || ev.Header.EventSize != uint32(len(payload)) {
					t.Fatalf("event %d: log pos %d, size %d", i, ev.Header.LogPos, ev.Header.EventSize)
				}
				if i%(16<<10) == 0 {
					runtime.ReadMemStats(&m)
					peak = max(peak, m.HeapAlloc)
				}
				return nil
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if pushed {
				r := &payloadReader{push: eventFunc(check), parser: newParser(cfg), cfg: cfg}
				for {
					raw, err := dump.GetEvent(ctx)
					if err != nil {
						break
					}
					if err := r.HandleEvent(raw); err != nil {
						t.Fatal(err)
					}
				}
			} else {
				r := newPayloadReader(dump, cfg)
				for {
					ev, err := r.GetEvent(ctx)
					if err == context.Canceled {
						break
					}
					if err != nil {
						t.Fatalf("event %d: %v", i+1, err)
					}
					_ = check(ev)
				}
			}
			if i != events {
				t.Fatalf("%d events of the payload handed out, want %d", i, events)
			}
			if grew := int64(peak) - int64(base); grew > 64<<20 {
				t.Errorf("the heap grew by %d MiB reading a 256 MiB transaction", grew>>20)
			}
		})
	}
}

// TestPayloadReaderTableMapOnce: a TABLE_MAP read again with the bytes its table id's last one
// had is handed out as the event of that first decoding, and the rows event after it decodes
// as it would after a fresh decoding (go-mysql decodes this JSON table's rows with the map
// the parser keeps); a map whose bytes changed, and one after a new format description, are
// decoded afresh. Every event equals what a parser decoding each one anew makes of it.
func TestPayloadReaderTableMapOnce(t *testing.T) {
	tm := tableMapJSON()
	renamed := bytes.Replace(tm, []byte("email"), []byte("e_mai"), 1)
	rows := withChecksum(t, fixture(t, "partial_update_json_replace.hex"))
	raws := [][]byte{
		formatEvent(),
		makeEvent(replication.TABLE_MAP_EVENT, 1, 1100, tm),
		rows,
		makeEvent(replication.TABLE_MAP_EVENT, 1, 2100, tm), // 3: the same map, later
		rows,
		makeEvent(replication.TABLE_MAP_EVENT, 1, 3100, renamed), // 5: a column renamed
		makeEvent(replication.TABLE_MAP_EVENT, 1, 3200, tm),      // 6: and back
		formatEvent(),
		makeEvent(replication.TABLE_MAP_EVENT, 1, 4100, tm), // 8: under a new format
	}
	want := parseBinlog(t, raws...)
	cfg := syncerConfig(&Config{}, &serverInfo{flavor: position.MySQL56}, false, slog.New(slog.DiscardHandler))
	r := newPayloadReader(&rawEvents{evs: slices.Clone(raws)}, cfg)
	var got []*replication.BinlogEvent
	for range raws {
		ev, err := r.GetEvent(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev)
	}
	for i := range raws {
		if !reflect.DeepEqual(got[i].Event, want[i].Event) || got[i].Header.LogPos != want[i].Header.LogPos {
			t.Errorf("event %d (%s) = %+v, want %+v", i, want[i].Header.EventType, got[i].Event, want[i].Event)
		}
	}
	if got[3].Event != got[1].Event {
		t.Error("the repeated map was decoded again")
	}
	for _, i := range []int{5, 6, 8} {
		if got[i].Event == got[1].Event || got[i].Event == got[i-1].Event {
			t.Errorf("map %d is the event of an earlier one", i)
		}
	}
	if len(got[4].Event.(*replication.RowsEvent).Rows) == 0 {
		t.Fatal("the rows event after the repeated map has no rows")
	}
}
