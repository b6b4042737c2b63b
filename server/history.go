package server

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"time"
	"unicode"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/vstreamer"
)

// HistorySize is how many ended streams the server remembers (Server.History).
const HistorySize = 50

// EndedStream is a stream that ended: what it was at its end, when and how it ended.
type EndedStream struct {
	StreamStatus
	Ended time.Time
	// Code is the gRPC code the client was told ("OK" for a clean end); Error the
	// error's text, empty for a clean end.
	Code  string
	Error string
}

// streamHistory is the last HistorySize ended streams, a ring written once per stream at
// its end; its zero value is empty.
type streamHistory struct {
	mu   sync.Mutex
	ring [HistorySize]EndedStream
	n    uint64 // streams recorded so far; the next goes at n % HistorySize
}

func (h *streamHistory) add(e EndedStream) {
	h.mu.Lock()
	h.ring[h.n%HistorySize] = e
	h.n++
	h.mu.Unlock()
}

// list returns the recorded streams, the latest to end first.
func (h *streamHistory) list() []EndedStream {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := min(h.n, HistorySize)
	out := make([]EndedStream, 0, n)
	for i := uint64(1); i <= n; i++ {
		out = append(out, h.ring[(h.n-i)%HistorySize])
	}
	return out
}

// ended records the stream's end; err is what ended it (nil or io.EOF: cleanly).
func (s *streamStats) ended(err error) {
	now := time.Now()
	e := EndedStream{StreamStatus: s.status(now), Ended: now, Code: "OK"}
	e.RowsPerSecond = 0
	if err != nil && !errors.Is(err, io.EOF) {
		e.Code, e.Error = status.Code(toStatus(err)).String(), err.Error()
	}
	s.m.ended.add(e)
}

// History reports the last HistorySize streams to end, the latest first.
func (s *Server) History() []EndedStream { return s.stats.ended.list() }

// BinlogReaders reports the engine's shared binlog readers, each with its position and
// the number of streams reading from it. Streams reading with a connection of their own
// are not among them (StreamStatus.Reader says which reader serves a stream).
func (s *Server) BinlogReaders() []vstreamer.BinlogReader { return s.engine.BinlogReaderStatus() }

// SinkProgram is the program name vstream-sink sends (as "vstream-sink/<sink name>").
const SinkProgram = "vstream-sink"

// maxProgram bounds the program name kept from a client's metadata.
const maxProgram = 128

// clientProgram is the client's name for itself from the request metadata, with what is
// not printable dropped and its length bounded: any client may send anything there.
func clientProgram(ctx context.Context) string {
	v := metadata.ValueFromIncomingContext(ctx, vstreamv1.ClientHeader)
	if len(v) == 0 {
		return ""
	}
	p := strings.Map(func(r rune) rune {
		if !unicode.IsPrint(r) {
			return -1
		}
		return r
	}, v[0])
	if len(p) > maxProgram {
		p = strings.ToValidUTF8(p[:maxProgram], "")
	}
	return p
}
