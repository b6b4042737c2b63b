// Package statuspage serves vstreamd's status page for people: the source database, the
// server's version, each open stream (client, keyspace, filter, format, position, lags,
// rate and copy progress; vstream-sink's labelled as sinks), the shared binlog readers and
// the last streams to end, as a self-refreshing HTML page with no external assets, and the
// same as JSON at /status.json. It reads the state the server's metrics are made of, so the
// page and the metrics always agree.
package statuspage

import (
	"context"
	"embed"
	"encoding/json"
	"html/template"
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/vstream-cdc/vstream/server"
	"github.com/vstream-cdc/vstream/vstreamer"
)

// Server is what the page reports on; *server.Server is one.
type Server interface {
	Streams() []server.StreamStatus
	Source(ctx context.Context) (server.Source, error)
	History() []server.EndedStream
	BinlogReaders() []vstreamer.BinlogReader
}

// Options configure the page.
type Options struct {
	// Version is the server's own version (default: BuildVersion()).
	Version string
	// Refresh is how often the page reloads itself (default 5s).
	Refresh time.Duration
	Logger  *slog.Logger
}

//go:embed page.html.tmpl
var files embed.FS

var page = template.Must(template.New("page.html.tmpl").Funcs(template.FuncMap{
	"seconds": func(d time.Duration) string { return d.Round(time.Millisecond).String() },
	"percent": func(c Copy) int { return int(c.Fraction() * 100) },
}).ParseFS(files, "page.html.tmpl"))

// New returns the handler of "/" (the page) and "/status.json"; other paths are not found.
func New(srv Server, opts Options) http.Handler {
	if opts.Version == "" {
		opts.Version = BuildVersion()
	}
	if opts.Refresh <= 0 {
		opts.Refresh = 5 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	h := &handler{srv: srv, opts: opts}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", h.page)
	mux.HandleFunc("GET /status.json", h.json)
	return mux
}

type handler struct {
	srv  Server
	opts Options
}

// Status is the page's content, and the document /status.json serves.
type Status struct {
	Version string    `json:"version"`
	Time    time.Time `json:"time"`
	Source  Source    `json:"source"`
	Streams []Stream  `json:"streams"`
	// PurgeWarnings counts the streams whose position is about to be purged.
	PurgeWarnings int `json:"purge_warnings"`
	// Sinks counts the open streams of vstream-sink clients (Stream.Sink).
	Sinks int `json:"sinks"`
	// Readers are the shared binlog readers; OwnReaders counts the open streams reading
	// the binlog with a connection of their own, which are not among them.
	Readers    []Reader `json:"binlog_readers"`
	OwnReaders int      `json:"own_readers"`
	// History is the last streams to end (server.HistorySize), the latest first.
	History []Ended `json:"history"`
	// Refresh is the page's reload interval in seconds.
	Refresh int `json:"-"`
}

// Source is the database streamed from. Error says why Flavor and Version are unknown.
type Source struct {
	Addr    string `json:"address"`
	Flavor  string `json:"flavor,omitempty"`
	Version string `json:"version,omitempty"`
	Error   string `json:"error,omitempty"`
}

// Stream is one open stream; lags are in seconds.
type Stream struct {
	ID            uint64    `json:"id"`
	Client        string    `json:"client"`
	Program       string    `json:"program,omitempty"`
	Sink          string    `json:"sink,omitempty"`
	API           string    `json:"api"`
	Keyspace      string    `json:"keyspace"`
	Filter        string    `json:"filter"`
	Format        string    `json:"format"`
	Started       time.Time `json:"started"`
	Position      string    `json:"position"`
	BinlogLag     float64   `json:"binlog_lag_seconds"`
	AckLag        *float64  `json:"ack_lag_seconds"` // null until the client acks
	RowsSent      int64     `json:"rows_sent"`
	RowsPerSecond float64   `json:"rows_per_second"`
	Transactions  int64     `json:"transactions_sent"`
	Reader        string    `json:"binlog_reader,omitempty"`
	Copies        []Copy    `json:"copies"`
	// Headroom is how far the position is from being purged from the source's binlogs;
	// null before the server's first check of them with this stream open.
	Headroom *Headroom `json:"binlog_headroom"`

	binlogLag, ackLag time.Duration
}

// Headroom is where a stream's position is among the source's binlog files (see
// server.BinlogHeadroom). PurgeWarning, when set, says why it is about to be purged.
type Headroom struct {
	File          string    `json:"file,omitempty"`
	FilesBefore   int       `json:"files_before"`
	Current       bool      `json:"current"`
	Purged        bool      `json:"purged"`
	AgeSeconds    float64   `json:"age_seconds"`
	ExpireSeconds float64   `json:"expire_seconds"`
	PurgeWarning  string    `json:"purge_warning,omitempty"`
	Checked       time.Time `json:"checked"`
}

// Reader is one shared binlog reader: its kind ("shared" or "catch-up"), the binlog file
// it reads, the position after the last transaction it read, and the streams reading it.
type Reader struct {
	Kind     string `json:"kind"`
	File     string `json:"file,omitempty"`
	Position string `json:"position,omitempty"`
	Streams  int    `json:"streams"`
}

// Ended is a stream that ended: as it was at its end, and how it ended. Code is the gRPC
// code its client was told ("OK" for a clean end) and Error the error's text.
type Ended struct {
	ID           uint64    `json:"id"`
	Client       string    `json:"client"`
	Program      string    `json:"program,omitempty"`
	Sink         string    `json:"sink,omitempty"`
	API          string    `json:"api"`
	Keyspace     string    `json:"keyspace"`
	Filter       string    `json:"filter"`
	Format       string    `json:"format"`
	Started      time.Time `json:"started"`
	Ended        time.Time `json:"ended"`
	Position     string    `json:"position"`
	Code         string    `json:"code"`
	Error        string    `json:"error,omitempty"`
	RowsSent     int64     `json:"rows_sent"`
	Transactions int64     `json:"transactions_sent"`
}

// Duration is how long the stream ran.
func (e Ended) Duration() time.Duration { return e.Ended.Sub(e.Started) }

// BinlogLagDuration and AckLagDuration are the lags for the page.
func (s Stream) BinlogLagDuration() time.Duration { return s.binlogLag }
func (s Stream) AckLagDuration() time.Duration    { return s.ackLag }

// Copy is a table copy's progress. Estimated is 0 when the server has no estimate.
type Copy struct {
	Table     string `json:"table"`
	Copied    int64  `json:"copied"`
	Estimated int64  `json:"estimated"`
}

// Fraction is how far the copy is, from 0 to 1, or -1 without an estimate. The estimate
// may be below the rows already read: the copy is then nearly done, not past done.
func (c Copy) Fraction() float64 {
	if c.Estimated <= 0 {
		return -1
	}
	return min(1, float64(c.Copied)/float64(c.Estimated))
}

func (h *handler) status(ctx context.Context) Status {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	st := Status{Version: h.opts.Version, Time: time.Now().UTC(), Refresh: max(1, int(h.opts.Refresh.Round(time.Second)/time.Second))}
	src, err := h.srv.Source(ctx)
	st.Source = Source{Addr: src.Addr, Flavor: src.Flavor, Version: src.Version}
	if err != nil {
		st.Source.Error = err.Error()
	}
	st.Streams = []Stream{}
	for _, s := range h.srv.Streams() {
		out := Stream{ID: s.ID, Client: s.Client, Program: s.Program, Sink: s.Sink, Transactions: s.Transactions, Reader: s.Reader, API: s.API, Keyspace: s.Keyspace, Filter: s.Filter, Format: s.Format,
			Started: s.Started.UTC(), Position: s.Position, BinlogLag: s.BinlogLag.Seconds(), RowsSent: s.RowsSent,
			RowsPerSecond: s.RowsPerSecond, Copies: []Copy{}, binlogLag: s.BinlogLag, ackLag: s.AckLag}
		if s.Acked {
			lag := s.AckLag.Seconds()
			out.AckLag = &lag
		}
		for _, c := range s.Copies {
			out.Copies = append(out.Copies, Copy(c))
		}
		if h := s.Headroom; h != nil {
			out.Headroom = &Headroom{File: h.File, FilesBefore: h.FilesBefore, Current: h.Current, Purged: h.Purged,
				AgeSeconds: h.Age.Seconds(), ExpireSeconds: h.Expire.Seconds(), PurgeWarning: h.Warning, Checked: h.Checked.UTC()}
			if h.Warning != "" {
				st.PurgeWarnings++
			}
		}
		if s.Sink != "" {
			st.Sinks++
		}
		if s.Reader == vstreamer.ReaderOwn {
			st.OwnReaders++
		}
		st.Streams = append(st.Streams, out)
	}
	st.Readers = []Reader{}
	for _, r := range h.srv.BinlogReaders() {
		st.Readers = append(st.Readers, Reader(r))
	}
	st.History = []Ended{}
	for _, e := range h.srv.History() {
		st.History = append(st.History, Ended{ID: e.ID, Client: e.Client, Program: e.Program, Sink: e.Sink, API: e.API,
			Keyspace: e.Keyspace, Filter: e.Filter, Format: e.Format, Started: e.Started.UTC(), Ended: e.Ended.UTC(),
			Position: e.Position, Code: e.Code, Error: e.Error, RowsSent: e.RowsSent, Transactions: e.Transactions})
	}
	return st
}

func (h *handler) page(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	// The page loads nothing from elsewhere, and runs no script.
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	if err := page.Execute(w, h.status(r.Context())); err != nil {
		h.opts.Logger.Warn("status page", "err", err)
	}
}

func (h *handler) json(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(h.status(r.Context())); err != nil {
		h.opts.Logger.Warn("status.json", "err", err)
	}
}

// BuildVersion is the binary's version as Go recorded it: the module version and, when
// built from a checkout with VCS stamping, the commit.
func BuildVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			v += " " + s.Value[:12]
		}
	}
	return v + " " + bi.GoVersion
}
