package server

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/peer"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/vstreamer"
)

// StreamStatus is what an open stream is doing, as its metrics tell it.
type StreamStatus struct {
	// ID numbers the stream as the logs and the metrics' "stream" label do.
	ID uint64
	// Client is the client's network address.
	Client string
	// Program is the client's name for itself, from the request's x-vstream-client
	// metadata (vstreamv1.ClientHeader): "vstream", "vstream-sink/<name>", ...; empty when
	// it sent none. Sink is the name of a vstream-sink client, empty for others.
	Program, Sink string
	// Keyspace is the keyspace the stream reads.
	Keyspace string
	// Filter is the request's filter, its rules as "match" or "match: filter", joined by "; ".
	Filter string
	// API is the service the client called: "native", "vtgate" or "tablet".
	API string
	// Format is the encoding of the responses ("vevent" for the native events).
	Format  string
	Started time.Time
	// Position is the stream's latest position; empty before its first transaction.
	Position string
	// BinlogLag is how far behind the primary's clock the last transaction streamed was written.
	BinlogLag time.Duration
	// AckLag is how long before its last ack the acknowledged position had been sent; Acked
	// says whether the client acked at all.
	AckLag time.Duration
	Acked  bool
	// RowsSent counts the row changes sent; RowsPerSecond is their recent rate.
	RowsSent      int64
	RowsPerSecond float64
	// Transactions counts the transactions sent (their COMMITs).
	Transactions int64
	// Reader is the binlog reader serving the stream (vstreamer.ReaderShared,
	// ReaderCatchUp or ReaderOwn); empty before it reads the binlog.
	Reader string
	// Copies are the tables this stream copied or is copying, in the order they started.
	Copies []TableCopy
	// Headroom is how far the stream's position is from being purged, as of the purge
	// alarm's last check (see Server.WatchBinlogs); nil before it.
	Headroom *BinlogHeadroom
}

// TableCopy is one table copy's progress: rows read so far and the server's estimate of the
// table's rows (0 when it has none).
type TableCopy struct {
	Table     string
	Copied    int64
	Estimated int64
}

// Streams reports the open streams, by id.
func (s *Server) Streams() []StreamStatus {
	s.stats.mu.Lock()
	live := make([]*streamStats, 0, len(s.stats.live))
	for _, st := range s.stats.live {
		live = append(live, st)
	}
	s.stats.mu.Unlock()
	now := time.Now()
	out := make([]StreamStatus, 0, len(live))
	for _, st := range live {
		out = append(out, st.status(now))
	}
	slices.SortFunc(out, func(a, b StreamStatus) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// Source says which database the server streams from: its address and what it is.
type Source struct {
	Addr string
	vstreamer.Description
}

// Source describes the source database; the address is known even when the database does
// not answer.
func (s *Server) Source(ctx context.Context) (Source, error) {
	d, err := s.engine.Describe(ctx)
	return Source{Addr: s.engine.Config().Addr, Description: d}, err
}

// streamInfo gathers what is fixed about a stream at its start.
func (s *Server) streamInfo(ctx context.Context, id uint64, api string, req vstreamer.Request, format string) StreamStatus {
	keyspace := req.Keyspace
	if keyspace == "" {
		keyspace = s.engine.Config().Keyspace
	}
	if len(req.Keyspaces) > 0 {
		names := make([]string, len(req.Keyspaces))
		for i, k := range req.Keyspaces {
			names[i] = cmp.Or(k.Keyspace, s.engine.Config().Keyspace)
		}
		keyspace = strings.Join(names, ",")
	}
	var client string
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		client = p.Addr.String()
	}
	program := clientProgram(ctx)
	var sink string
	if name, ok := strings.CutPrefix(program, SinkProgram+"/"); ok {
		sink = name
	}
	return StreamStatus{ID: id, Client: client, Program: program, Sink: sink, Keyspace: keyspace, Filter: filterString(req.Filter), API: api, Format: format, Started: time.Now()}
}

// filterString renders a request's filter for people.
func filterString(f *binlogdata.Filter) string {
	var b strings.Builder
	for i, r := range f.GetRules() {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(r.GetMatch())
		if r.GetFilter() != "" {
			b.WriteString(": ")
			b.WriteString(r.GetFilter())
		}
	}
	return b.String()
}
