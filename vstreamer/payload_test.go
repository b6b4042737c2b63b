package vstreamer

import (
	"bytes"
	"context"
	"encoding/binary"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/klauspost/compress/zstd"
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

// TestPayloadReaderBoundsMemory: a compressed transaction of 256 MiB of events is handed out
// event by event while it is decompressed; the heap never holds it whole, as go-mysql's
// decoding of the payload would.
func TestPayloadReaderBoundsMemory(t *testing.T) {
	const events, size = 256 << 10, 1 << 10
	// The uncompressed events are garbage once compressed: only the payload stays.
	payload := payloadEvent(t, 5000, bytes.Repeat(rowsQuery(size-replication.EventHeaderSize-1), events))
	r := newPayloadReader(&rawEvents{evs: [][]byte{formatEvent(), payload}}, replication.BinlogSyncerConfig{Flavor: mysql.MySQLFlavor})
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	base, peak := m.HeapAlloc, m.HeapAlloc
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if ev, err := r.GetEvent(ctx); err != nil || ev.Header.EventType != replication.FORMAT_DESCRIPTION_EVENT {
		t.Fatalf("first event %v, %v; want the format description", ev, err)
	}
	for i := 0; i < events; i++ {
		ev, err := r.GetEvent(ctx)
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
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
	}
	if _, err := r.GetEvent(ctx); err != context.Canceled {
		t.Fatalf("after the payload: %v, want the end of the dump", err)
	}
	if grew := int64(peak) - int64(base); grew > 64<<20 {
		t.Errorf("the heap grew by %d MiB reading a 256 MiB transaction", grew>>20)
	}
}
