// Package fanout reads a server's binlog once for many readers. A hub owns one binlog dump
// from a start position and appends the decoded events to a ring bounded in events and
// bytes; each reader is a cursor into a ring with its own GetEvent. The shared hub, at the
// server's head, never waits for a cursor: when the ring drops an event a cursor has not
// read, that cursor has fallen behind and moves to a catch-up hub started where it was. A catch-up hub waits for its cursors, but
// for one stalled longer than a bound, so that cursors catching up together share its dump. A
// catch-up hub that reaches a transaction boundary the shared hub, or another catch-up hub,
// still holds hands its cursors over and ends its dump.
//
// The package knows nothing of streams: what starts and ends a transaction is told by the
// caller's Marker, and where a dump starts by its Open function.
package fanout

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/google/uuid"

	"github.com/vstream-cdc/vstream/position"
)

// Kind names what serves a cursor: the hub that follows the server's head (Shared) or one
// started for cursors behind it (CatchUp).
type Kind string

// The kinds of hub.
const (
	Shared  Kind = "shared"
	CatchUp Kind = "catch-up"
)

// Source hands out decoded binlog events one at a time (go-mysql's BinlogStreamer).
type Source interface {
	GetEvent(ctx context.Context) (*replication.BinlogEvent, error)
}

// OpenFunc starts a binlog dump after the transactions in pos; stop ends it.
//
// A dump that can calls push with each event instead, in order, in the goroutine that reads
// it: the hub's work on an event then follows its decoding with no hand-over between
// goroutines (a trip through the scheduler, for every transaction a stream waits for). Such
// a dump ends when push returns an error, and src's GetEvent then only reports its end. Its
// stop must not wait for a push in progress, which may wait for the hub. A dump that does
// not push hands every event out through GetEvent.
type OpenFunc func(pos position.Position, push func(*replication.BinlogEvent) error) (src Source, stop func(), err error)

// Marker tells where transactions start and end, as the streams reading the events see
// them: the position moves by a transaction's GTID at its end. One Marker reads one dump, in
// order, and may keep state.
type Marker interface {
	Mark(ev *replication.BinlogEvent) (gtid GTID, start, end bool)
}

// GTID is the GTID of the transaction an event starts, as the event holds it: a MariaDB or a
// MySQL GTID event's own, by which the position moves without its text written and parsed
// back (for every transaction of the dump), or Text, for a GTID a Marker found otherwise.
// The zero GTID is none.
type GTID struct {
	MariaDB *mysql.MariadbGTID
	// MySQL is a GTID event with a 16-byte source uuid.
	MySQL *replication.GTIDEvent
	Text  string
}

// IsZero reports whether g is none.
func (g GTID) IsZero() bool { return g.MariaDB == nil && g.MySQL == nil && g.Text == "" }

// addTo moves p past the transaction of g.
func (g GTID) addTo(p *position.Position) error {
	switch {
	case g.MariaDB != nil:
		return p.AddMariaDB(*g.MariaDB)
	case g.MySQL != nil:
		var id uuid.UUID
		copy(id[:], g.MySQL.SID)
		return p.AddMySQL(id, g.MySQL.Tag, g.MySQL.GNO)
	default:
		return p.Update(g.Text)
	}
}

// Config bounds the hubs of a pool.
type Config struct {
	// MaxEvents and MaxBytes (of the events' binlog bytes) bound each hub's ring.
	MaxEvents int
	MaxBytes  int
	// AloneBytes bounds the ring of a hub with one cursor, below MaxBytes. Such a hub waits
	// for its cursor rather than drop an event (see evict), so its ring fills whenever the
	// binlog is read faster than the stream sends, as in a big transaction, and holds what
	// the cursor has read only for cursors that may join. Half a MiB of read-ahead (with the
	// dump's own buffer of events behind it) keeps the stream busy; more only adds to the
	// live heap, and under vstreamd's memory limit for one stream a live heap larger by a few
	// MiB makes the collector run several times as often (4 MiB took a quarter more CPU on
	// the binlog workload of BenchmarkProcess than 512 KiB).
	AloneBytes int
	// CatchUpWait bounds how long a catch-up hub waits for its cursors (see evict): for a
	// cursor that has not read its oldest event while others have, which is then cut loose
	// onto a hub of its own, and for more cursors to start at its start position after the
	// last did, which then share its dump.
	CatchUpWait time.Duration
	// NewMarker makes the Marker of a new hub.
	NewMarker func() Marker
	Logger    *slog.Logger
}

// Pool is the hubs of one server.
type Pool struct {
	cfg  Config
	mu   sync.Mutex
	hubs map[*hub]struct{}
	// live is the hub started for a cursor at the server's head, which catch-up hubs hand
	// their cursors to first.
	live *hub
}

// NewPool returns an empty pool; hubs start as cursors attach.
func NewPool(cfg Config) *Pool {
	if cfg.MaxEvents <= 0 {
		cfg.MaxEvents = 16384
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = 32 << 20
	}
	if cfg.AloneBytes <= 0 {
		cfg.AloneBytes = 512 << 10
	}
	if cfg.CatchUpWait <= 0 {
		cfg.CatchUpWait = time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Pool{cfg: cfg, hubs: make(map[*hub]struct{})}
}

// Readers counts the hubs reading the binlog now, by kind.
func (p *Pool) Readers() map[Kind]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[Kind]int{Shared: 0, CatchUp: 0}
	for h := range p.hubs {
		if h.reading() {
			out[h.kind]++
		}
	}
	return out
}

// Attach returns a cursor that reads the binlog after the transactions in pos. atHead says
// pos is the server's current position: a hub started for it is the shared one. onKind, if
// set, hears which kind of hub serves the cursor, now and whenever that changes; it is
// called on the goroutine that calls GetEvent (or Attach).
func (p *Pool) Attach(pos position.Position, atHead bool, open OpenFunc, onKind func(Kind)) *Cursor {
	pos = pos.Clone()
	c := &Cursor{pool: p, open: open, onKind: onKind, resume: resumePoint{lastBound: pos}}
	p.place(c, pos, atHead, true)
	return c
}

// AttachHead returns a cursor at the last transaction boundary the shared hub has read, and
// the position there; false when no shared hub runs (or holds a boundary).
func (p *Pool) AttachHead(open OpenFunc, onKind func(Kind)) (*Cursor, position.Position, bool) {
	c := &Cursor{pool: p, open: open, onKind: onKind}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.live == nil {
		return nil, position.Position{}, false
	}
	b, ok := p.live.joinHead(c)
	if !ok {
		return nil, position.Position{}, false
	}
	c.hub, c.seq, c.resume.lastBound = p.live, b.seq, b.pos
	if b.file != "" {
		c.inject = rotateTo(b)
	}
	c.setKind(Shared)
	return c, b.pos.Clone(), true
}

// place puts c on a hub at pos: one whose ring holds that boundary, else (first) the shared
// hub when pos is ahead of it, else a new hub.
func (p *Pool) place(c *Cursor, pos position.Position, atHead, first bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	try := make([]*hub, 0, len(p.hubs)+1)
	if p.live != nil {
		try = append(try, p.live)
	}
	for h := range p.hubs {
		if h != p.live {
			try = append(try, h)
		}
	}
	for _, h := range try {
		if b, ok := h.join(pos, c); ok {
			c.hub, c.seq = h, b.seq
			if first && b.file != "" {
				// The cursor starts inside the hub's dump: tell it which binlog file that is.
				c.inject = rotateTo(b)
			}
			c.setKind(h.kind)
			return
		}
	}
	if first && p.live != nil {
		if seq, ok := p.live.pend(pos, c); ok {
			c.hub, c.seq, c.pending = p.live, seq, &pos
			c.setKind(Shared)
			return
		}
	}
	kind := CatchUp
	if atHead && p.live == nil {
		kind = Shared
	}
	h := newHub(p, kind, pos, c.open, c, first)
	p.hubs[h] = struct{}{}
	if kind == Shared {
		p.live = h
	}
	c.hub, c.seq = h, 0
	c.setKind(kind)
	go h.run()
}

// forget takes h out of the pool: it reads no more and new cursors do not join it.
func (p *Pool) forget(h *hub) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.hubs, h)
	if p.live == h {
		p.live = nil
	}
}

// same reports whether two positions hold the same transactions.
func same(a, b position.Position) bool { return a.Contains(b) && b.Contains(a) }

func rotateTo(b *bound) *replication.BinlogEvent {
	return &replication.BinlogEvent{
		Header: &replication.EventHeader{EventType: replication.ROTATE_EVENT},
		Event:  &replication.RotateEvent{Position: uint64(b.logPos), NextLogName: []byte(b.file)},
	}
}

// ErrClosed is returned by GetEvent after Close.
var ErrClosed = fmt.Errorf("fanout: cursor closed")
