package vstreamer

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"hash/crc32"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/position"
)

// This file replays binlog events captured from MySQL servers (testdata/mysql8, see its
// README) through the engine's own stream loop: the bytes are decoded by go-mysql's
// BinlogParser with the decoding options of the replication connection, handed to the loop by
// a binlogSource in place of the server, and the loop turns them into events as it would live.
// Table schemas come from the test MariaDB, where each test creates the captured tables.

// replaySource stands in for a MySQL server: it reports info and serves events, then
// idles like a server with nothing more to send.
type replaySource struct {
	info   *serverInfo
	events []*replication.BinlogEvent

	mu sync.Mutex
	// opened records the position each stream asked to start after.
	opened []position.Position
}

func (r *replaySource) inspect(context.Context, *Engine, bool) (*serverInfo, error) {
	info := *r.info
	info.current = r.info.current.Clone()
	return &info, nil
}

func (r *replaySource) open(s *stream, _ *serverInfo) (binlogReader, func(), error) {
	r.mu.Lock()
	r.opened = append(r.opened, s.cursor.pos.Clone())
	r.mu.Unlock()
	return &replayReader{events: r.events}, func() {}, nil
}

type replayReader struct {
	events []*replication.BinlogEvent
	next   int
}

func (r *replayReader) GetEvent(ctx context.Context) (*replication.BinlogEvent, error) {
	if r.next < len(r.events) {
		r.next++
		return r.events[r.next-1], nil
	}
	<-ctx.Done()
	return nil, ctx.Err()
}

// mysql8HeaderLengths are the post-header lengths of MySQL 8.0.40's FORMAT_DESCRIPTION_EVENT,
// as Vitess's go/mysql TestMySQL56PartialUpdateRowsEvent lists them.
var mysql8HeaderLengths = []byte{
	0, 13, 0, 8, 0, 0, 0, 0, 4, 0, 4, 0, 0, 0, 98, 0, 4, 26, 8, 0, 0, 0, 8, 8, 8, 2, 0, 0, 0, 10, 10, 10, 42, 42, 0, 18, 52, 0, 10, 40, 0,
}

// formatEvent is a MySQL 8.0.40 FORMAT_DESCRIPTION_EVENT with CRC32 checksums, which every
// captured event carries (or had stripped, see withChecksum).
func formatEvent() []byte {
	body := binary.LittleEndian.AppendUint16(nil, 4)
	version := make([]byte, 50)
	copy(version, "8.0.40")
	body = append(body, version...)
	body = append(body, 0, 0, 0, 0, replication.EventHeaderSize)
	body = append(body, mysql8HeaderLengths...)
	body = append(body, byte(replication.BINLOG_CHECKSUM_ALG_CRC32))
	return makeEvent(replication.FORMAT_DESCRIPTION_EVENT, 1, 4, body)
}

// makeEvent wraps a body in an event header ending at logPos, with its checksum.
func makeEvent(typ replication.EventType, serverID, logPos uint32, body []byte) []byte {
	h := make([]byte, replication.EventHeaderSize, replication.EventHeaderSize+len(body)+4)
	binary.LittleEndian.PutUint32(h[0:], 1682694599)
	h[4] = byte(typ)
	binary.LittleEndian.PutUint32(h[5:], serverID)
	binary.LittleEndian.PutUint32(h[9:], uint32(len(h)+len(body)+4))
	binary.LittleEndian.PutUint32(h[13:], logPos)
	ev := append(h, body...)
	return binary.LittleEndian.AppendUint32(ev, crc32.ChecksumIEEE(ev))
}

// withChecksum appends the CRC32 that was stripped from a captured event (its header's size
// still counts it); the checksum of the same bytes is the one the server wrote.
func withChecksum(t testing.TB, ev []byte) []byte {
	t.Helper()
	if size := binary.LittleEndian.Uint32(ev[9:]); int(size) != len(ev)+4 {
		t.Fatalf("event of %d bytes says it has %d: not a stripped checksum", len(ev), size)
	}
	out := append([]byte(nil), ev...)
	return binary.LittleEndian.AppendUint32(out, crc32.ChecksumIEEE(out))
}

// fixture reads a hex file of testdata/mysql8.
func fixture(t testing.TB, name string) []byte {
	t.Helper()
	text, err := os.ReadFile(filepath.Join("testdata", "mysql8", name))
	if err != nil {
		t.Fatal(err)
	}
	b, err := hex.DecodeString(strings.Join(strings.Fields(string(text)), ""))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return b
}

// parseBinlog decodes raw events in order as the replication connection would: a parser
// with the connection's decoding options, checking every checksum.
func parseBinlog(t testing.TB, raws ...[]byte) []*replication.BinlogEvent {
	t.Helper()
	cfg := syncerConfig(&Config{}, &serverInfo{flavor: position.MySQL56}, false, slog.New(slog.DiscardHandler))
	p := newParser(cfg)
	p.SetVerifyChecksum(true)
	var out []*replication.BinlogEvent
	for i, raw := range raws {
		ev, err := p.Parse(raw)
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		out = append(out, ev)
	}
	return out
}

// replayEngine is an engine whose streams read events instead of a server, with schemas from
// database db of the test MariaDB.
func replayEngine(t testing.TB, db string, src *replaySource) *Engine {
	t.Helper()
	e := bareEngine(t)
	e.cfg.Database = db
	e.src = src
	return e
}

// mysqlInfo is what a MySQL server at position current reports.
func mysqlInfo(t testing.TB, current string) *serverInfo {
	t.Helper()
	p, err := position.Parse(current)
	if err != nil {
		t.Fatal(err)
	}
	return &serverInfo{flavor: position.MySQL56, current: p, purged: position.Position{Flavor: position.MySQL56}}
}

// collect runs a stream until it has sent n events or ended, and returns both.
func collect(t testing.TB, e *Engine, req Request, n int) ([]*binlogdata.VEvent, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got []*binlogdata.VEvent
	errc := make(chan error, 1)
	enough := make(chan struct{})
	go func() {
		errc <- e.Stream(ctx, req, func(evs []*binlogdata.VEvent) error {
			for _, ev := range evs {
				if len(got) < n {
					got = append(got, ev)
				}
			}
			if len(got) == n {
				select {
				case <-enough:
				default:
					close(enough)
				}
			}
			return nil
		})
	}()
	select {
	case <-enough:
		cancel()
		err := <-errc
		return got, err
	case err := <-errc:
		return got, err
	}
}

func crc32IEEE(b []byte) uint32 { return crc32.ChecksumIEEE(b) }
