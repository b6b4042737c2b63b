package fanout

import (
	"context"
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/vstream-cdc/vstream/position"
	"github.com/vstream-cdc/vstream/sqltext"
)

// entry is one event of a hub's ring, with what its cursors read of it (the event itself only
// when they hand it out: a hundred cursors reading every event's header cost more than the
// dump).
type entry struct {
	ev *replication.BinlogEvent
	// file is the binlog file the event is in.
	file string
	// after is set when a transaction ends with this event.
	after *bound
	// table is the table of a table map or rows event.
	table *Table
	// logPos is where the event ends in the file, and placed is set when that is a place in
	// the binlog (not a heartbeat's, nor an artificial event's).
	logPos uint32
	placed bool
	typ    replication.EventType
	// start is set when a transaction starts with this event.
	start bool
	// size is the event's raw length, kept here so that evicting an old event does not read
	// the event itself, long out of the cache by then.
	size int
}

// Table is a table the events of a hub's ring change: a table map's table id, database and
// name, which the table's rows events share.
type Table struct {
	ID       uint64
	DB, Name string
}

// bound is a transaction boundary: the place between two transactions.
type bound struct {
	// seq is the first event after the boundary.
	seq uint64
	// pos is the position there: the transactions before it.
	pos position.Position
	// file and logPos are where the boundary is in the binlog ("" before the dump said).
	file   string
	logPos uint32
}

// handover is where a catch-up hub's cursors move to the shared hub.
type handover struct {
	seq   uint64
	to    *hub
	toSeq uint64
}

// hub is one binlog dump and the ring of its events.
type hub struct {
	pool *Pool
	kind Kind
	open OpenFunc
	ctx  context.Context
	stop context.CancelFunc

	mu   sync.Mutex
	ring []entry
	// first and next are the sequence numbers of the oldest event held and of the next one.
	first, next uint64
	bytes       int
	// bounds are the boundaries at first or later, oldest first; their positions grow.
	bounds []*bound
	// at is where the dump has read to.
	at dumpPlace
	// tables is the Table of each table id the dump has mapped; only take touches it.
	tables map[uint64]*Table
	// signal is closed, and replaced, when an event is appended or the hub fails, if a
	// cursor took it to wait on (waited): most events are appended while every cursor is
	// busy, and a channel made and closed for each was an allocation per event.
	signal chan struct{}
	waited bool
	// held counts the events appended since waiting cursors were last woken (see append).
	held     int
	readers  readers
	err      error
	handover *handover
	closed   bool
	dump     func()
}

// dumpPlace is where a hub's dump has read to: the binlog file being read, the position
// after the last transaction that ended, and the GTID of the open one, all found by the
// hub's marker. Appending an event advances it, under the hub's mutex: cursors read file
// and pos.
type dumpPlace struct {
	file string
	pos  position.Position
	gtid GTID
	// broken is set once a GTID could not be added to pos: no boundary after it can be
	// trusted.
	broken bool
	marker Marker
}

// advance moves the place past ev, the event of sequence number seq. It reports whether
// a transaction starts with ev (and does not end with it), and returns the boundary ev
// ends a transaction with, if any.
func (d *dumpPlace) advance(ev *replication.BinlogEvent, seq uint64) (starts bool, after *bound) {
	if r, ok := ev.Event.(*replication.RotateEvent); ok {
		d.file = string(r.NextLogName)
	}
	gtid, start, end := d.marker.Mark(ev)
	if start {
		d.gtid = gtid
	}
	if !end {
		return start, nil
	}
	if !d.gtid.IsZero() && !d.broken {
		if err := d.gtid.addTo(&d.pos); err != nil {
			// The streams fail on this GTID themselves; no boundary after it can be trusted.
			d.broken = true
		}
	}
	d.gtid = GTID{}
	if d.broken {
		return false, nil
	}
	return false, &bound{seq: seq + 1, pos: d.pos.Clone(), file: d.file, logPos: ev.Header.LogPos}
}

// readers is what a hub knows of its cursors, under the hub's mutex. read is how far each
// has read; space is closed, and replaced, when one reads on or joins. cut are the cursors
// a catch-up hub no longer waits for; gather is until when it holds its first event for
// cursors starting where it started, once starters (the cursors that started there) are
// two or more.
type readers struct {
	read map[*Cursor]uint64
	// solo is the one cursor of read when it holds one, nil otherwise: a catch-up hub with a
	// full ring asks after its cursors for every event it appends (evict), and a hub mostly
	// serves one stream, which then costs a map lookup rather than a walk of the map.
	solo     *Cursor
	space    chan struct{}
	cut      map[*Cursor]bool
	gather   time.Time
	starters int
}

// findSolo sets solo after read changed.
func (r *readers) findSolo() {
	r.solo = nil
	if len(r.read) == 1 {
		for c := range r.read {
			r.solo = c
		}
	}
}

// newHub returns a hub for cursor c at start; gather says c starts there (rather than falls
// behind there), and that other cursors may start there soon.
func newHub(p *Pool, kind Kind, start position.Position, open OpenFunc, c *Cursor, gather bool) *hub {
	ctx, cancel := context.WithCancel(context.Background())
	h := &hub{pool: p, kind: kind, open: open, ctx: ctx, stop: cancel,
		ring: make([]entry, p.cfg.MaxEvents), at: dumpPlace{pos: start.Clone(), marker: p.cfg.NewMarker()},
		signal:  make(chan struct{}),
		readers: readers{space: make(chan struct{}), read: map[*Cursor]uint64{c: 0}, solo: c, cut: map[*Cursor]bool{}}}
	if gather {
		h.readers.gather, h.readers.starters = time.Now().Add(p.cfg.CatchUpWait), 1
	}
	h.bounds = []*bound{{seq: 0, pos: start.Clone()}}
	return h
}

// run reads the dump until it fails or the hub closes.
func (h *hub) run() {
	log := h.pool.cfg.Logger.With("reader", string(h.kind), "start", h.bounds[0].pos.String())
	log.Info("binlog reader started")
	src, stop, err := h.open(h.bounds[0].pos, h.push)
	if err != nil {
		h.fail(err)
		return
	}
	h.mu.Lock()
	h.dump = stop
	// A pushing dump may have handed over before its stop was known.
	ended := h.closed || h.handover != nil
	if ended {
		h.endDump()
	}
	h.mu.Unlock()
	if ended {
		return
	}
	defer log.Info("binlog reader stopped")
	for {
		ev, err := src.GetEvent(h.ctx)
		if err != nil {
			if !h.handedOver() {
				h.fail(err)
			}
			return
		}
		if h.take(ev) {
			return
		}
	}
}

// errHandedOver ends a pushing dump whose hub handed its cursors over.
var errHandedOver = errors.New("fanout: the reader handed its streams over to another")

// push is take for a dump that pushes its events (see OpenFunc).
func (h *hub) push(ev *replication.BinlogEvent) error {
	if err := h.ctx.Err(); err != nil {
		return err
	}
	if h.take(ev) {
		return errHandedOver
	}
	return nil
}

// take appends an event of the dump and reports whether the hub then handed its cursors
// over to another, its dump ended.
func (h *hub) take(ev *replication.BinlogEvent) bool {
	b := h.append(ev)
	return b != nil && h.kind == CatchUp && h.handOver(b)
}

// handedOver reports whether the hub handed its cursors over.
func (h *hub) handedOver() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.handover != nil
}

// fail ends the dump: the cursors read what the ring holds, then err.
func (h *hub) fail(err error) {
	h.pool.forget(h)
	h.mu.Lock()
	if h.handover == nil && !h.closed {
		h.err = err
	}
	h.endDump()
	h.wake()
	h.mu.Unlock()
}

// reading reports whether the hub holds a dump connection.
func (h *hub) reading() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return !h.closed && h.err == nil && h.handover == nil
}

// endDump closes the dump connection; under mu.
func (h *hub) endDump() {
	h.stop()
	if h.dump != nil {
		h.dump()
		h.dump = nil
	}
}

// wake tells waiting cursors something changed; under mu.
func (h *hub) wake() {
	if !h.waited {
		return
	}
	h.waited = false
	close(h.signal)
	h.signal = make(chan struct{})
}

// append adds an event and returns the boundary it ends with, if any.
func (h *hub) append(ev *replication.BinlogEvent) *bound {
	// Events are shared read-only from here. go-mysql fills a table map's caches of names
	// and enum and set values as strings on first use; nothing calls those on a shared
	// event (rowcodec.FromTableMap reads a copy), so none is filled here for nobody.
	ev = compact(ev)
	hd := ev.Header
	t := h.table(ev)
	h.mu.Lock()
	defer h.mu.Unlock()
	e := entry{ev: ev, file: h.at.file, table: t, logPos: hd.LogPos, typ: hd.EventType, size: len(ev.RawData),
		placed: hd.LogPos != 0 && hd.EventType != replication.HEARTBEAT_EVENT && hd.EventType != replication.HEARTBEAT_LOG_EVENT_V2}
	e.start, e.after = h.at.advance(ev, h.next)
	if e.after != nil {
		h.bounds = append(h.bounds, e.after)
	}
	if h.next-h.first == uint64(len(h.ring)) {
		h.evict()
	}
	h.ring[h.next%uint64(len(h.ring))] = e
	h.next++
	h.bytes += e.size
	limit := h.pool.cfg.MaxBytes
	if len(h.readers.read) == 1 {
		limit = min(limit, h.pool.cfg.AloneBytes)
	}
	for h.bytes > limit && h.next-h.first > 1 {
		h.evict()
	}
	if h.closed {
		return nil
	}
	n := 0
	for n < len(h.bounds) && h.bounds[n].seq < h.first {
		n++
	}
	if n > 0 {
		clear(h.bounds[:n])
		h.bounds = h.bounds[n:]
	}
	// Waiting cursors are woken once a transaction is whole, not for each of its events:
	// nothing of an open transaction is sent before its end, and each wake of a stream is
	// a trip through the scheduler. A long transaction still wakes them every wakeEvery
	// events, so that they stream it as it comes.
	if h.held++; !midTransaction(ev, !h.at.gtid.IsZero()) || h.held >= wakeEvery {
		h.held = 0
		h.wake()
	}
	return e.after
}

// wakeEvery is how many events of an open transaction the hub appends before it wakes the
// cursors waiting for them.
const wakeEvery = 32

// midTransaction reports whether ev, read while a transaction is open (open), is one of its
// inner events, which cannot end it: a GTID event that opens one, MySQL's BEGIN after it, a
// table map, a rows event and what MariaDB and MySQL write beside rows. Every other event
// (an XID, another query, which may commit, a heartbeat) wakes the cursors, so that a
// transaction the marker misjudges delays no stream.
func midTransaction(ev *replication.BinlogEvent, open bool) bool {
	if !open {
		return false
	}
	switch ev.Header.EventType {
	case replication.QUERY_EVENT:
		q, ok := ev.Event.(*replication.QueryEvent)
		return ok && sqltext.IsBegin(q.Query)
	case replication.MARIADB_GTID_EVENT, replication.GTID_EVENT, replication.GTID_TAGGED_LOG_EVENT,
		replication.TABLE_MAP_EVENT, replication.MARIADB_ANNOTATE_ROWS_EVENT, replication.ROWS_QUERY_EVENT,
		replication.WRITE_ROWS_EVENTv0, replication.WRITE_ROWS_EVENTv1, replication.WRITE_ROWS_EVENTv2,
		replication.UPDATE_ROWS_EVENTv0, replication.UPDATE_ROWS_EVENTv1, replication.UPDATE_ROWS_EVENTv2,
		replication.DELETE_ROWS_EVENTv0, replication.DELETE_ROWS_EVENTv1, replication.DELETE_ROWS_EVENTv2,
		replication.PARTIAL_UPDATE_ROWS_EVENT,
		replication.MARIADB_WRITE_ROWS_COMPRESSED_EVENT_V1, replication.MARIADB_UPDATE_ROWS_COMPRESSED_EVENT_V1,
		replication.MARIADB_DELETE_ROWS_COMPRESSED_EVENT_V1,
		replication.INTVAR_EVENT, replication.RAND_EVENT, replication.USER_VAR_EVENT:
		return true
	default:
		// Any other event may end the transaction, or stands outside it.
		return false
	}
}

// table returns the table of a table map or rows event; nil for other events and for a rows
// event of a table id the dump has not mapped.
func (h *hub) table(ev *replication.BinlogEvent) *Table {
	switch e := ev.Event.(type) {
	case *replication.TableMapEvent:
		if t := h.tables[e.TableID]; t != nil && t.Name == string(e.Table) && t.DB == string(e.Schema) {
			return t
		}
		if h.tables == nil || len(h.tables) > 4096 {
			// Table ids grow with every table definition the server loads; only recent
			// ones matter.
			h.tables = make(map[uint64]*Table)
		}
		t := &Table{ID: e.TableID, DB: string(e.Schema), Name: string(e.Table)}
		h.tables[e.TableID] = t
		return t
	case *replication.RowsEvent:
		return h.tables[e.TableID]
	case *replication.FormatDescriptionEvent:
		// Table ids are reused after a server restart.
		clear(h.tables)
	default:
		// Other events change no table, or (a compressed transaction's) many.
	}
	return nil
}

// evict drops the oldest event; under mu. A hub with one cursor is that cursor's own dump:
// it waits for the cursor rather than drop an event it has not read, which would only send
// it to a dump of its own that starts further back (and, as a dump starts with a burst of
// events, perhaps again and again). A second cursor of the shared hub ends the wait: the
// shared hub keeps the pace of the server's head, whoever stalls.
//
// A catch-up hub serves cursors that are all behind the head. It waits for each of them, so
// that streams catching up together keep one dump rather than each falling behind onto a
// dump of its own; but for a cursor that reads nothing for CatchUpWait while others wait,
// which it cuts loose (it falls behind, onto a hub of its own). Once a second cursor has
// started where it started, it also holds its first event until CatchUpWait after the last
// cursor started there, so that streams started one after another from one position share
// it; a cursor resuming alone is not held.
func (h *hub) evict() {
	var since time.Time
	for !h.closed && h.ctx.Err() == nil {
		var until time.Time
		if h.kind == CatchUp {
			// The clock is read only when the hub may wait: a full ring evicts for every
			// event appended, and mostly no cursor is still at the oldest.
			var now time.Time
			// A stream resuming alone is never held: only a second stream starting at the
			// same place shows that a wave of streams is starting.
			hold := false
			if h.first == 0 && h.readers.starters > 1 {
				now = time.Now()
				hold = now.Before(h.readers.gather)
			}
			if hold {
				until = h.readers.gather
			}
			blocked, moved := h.blocking()
			if blocked == 0 && !hold {
				break
			}
			if now.IsZero() {
				now = time.Now()
			}
			if blocked > 0 && moved > 0 {
				if since.IsZero() {
					since = now
				}
				end := since.Add(h.pool.cfg.CatchUpWait)
				if !now.Before(end) {
					h.cutLoose()
					since = time.Time{}
					continue
				}
				if until.IsZero() || end.Before(until) {
					until = end
				}
			}
		} else if !h.alone() {
			break
		}
		h.wait(until)
	}
	i := h.first % uint64(len(h.ring))
	h.bytes -= h.ring[i].size
	h.ring[i] = entry{}
	h.first++
}

// wait waits, without mu, until a cursor reads on or joins, the hub closes, or until (if
// set).
func (h *hub) wait(until time.Time) {
	// Cursors waiting for events held back from them (see append) must read them for the
	// hub to go on.
	h.held = 0
	h.wake()
	space := h.readers.space
	h.mu.Unlock()
	defer h.mu.Lock()
	var timeout <-chan time.Time
	if !until.IsZero() {
		t := time.NewTimer(time.Until(until))
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-space:
	case <-h.ctx.Done():
	case <-timeout:
	}
}

// blocking counts the cursors the hub waits for, which have not read the oldest event, and
// the others; under mu.
func (h *hub) blocking() (blocked, moved int) {
	if c := h.readers.solo; c != nil {
		switch {
		case h.readers.cut[c]:
			return 0, 0
		case h.readers.read[c] <= h.first:
			return 1, 0
		default:
			return 0, 1
		}
	}
	for c, seq := range h.readers.read {
		switch {
		case h.readers.cut[c]:
		case seq <= h.first:
			blocked++
		default:
			moved++
		}
	}
	return blocked, moved
}

// cutLoose stops waiting for the cursors that have not read the oldest event; under mu.
func (h *hub) cutLoose() {
	for c, seq := range h.readers.read {
		if seq <= h.first && !h.readers.cut[c] {
			h.pool.cfg.Logger.Debug("catch-up reader cuts a stalled cursor loose", "seq", seq)
			h.readers.cut[c] = true
		}
	}
}

// find returns the boundary of the ring at pos; under mu. Positions grow along the ring, so
// the first boundary that contains pos is the only candidate.
func (h *hub) find(pos position.Position) (*bound, bool) {
	i := sort.Search(len(h.bounds), func(i int) bool { return h.bounds[i].pos.Contains(pos) })
	if i == len(h.bounds) || !pos.Contains(h.bounds[i].pos) {
		return nil, false
	}
	return h.bounds[i], true
}

// alone reports a single cursor that has not read the oldest event; under mu.
func (h *hub) alone() bool {
	c := h.readers.solo
	return c != nil && h.readers.read[c] <= h.first
}

// join adds a cursor at pos if the ring holds that boundary.
func (h *hub) join(pos position.Position, c *Cursor) (*bound, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	// A hub that handed over still serves the boundaries it holds: its cursors move on at
	// the handover.
	if h.closed || h.err != nil {
		return nil, false
	}
	b, ok := h.find(pos)
	if ok && h.handover != nil && b.seq >= h.handover.seq {
		// The hub read no further: a cursor there would be handed over again, to a hub that
		// may no longer hold the boundary.
		return nil, false
	}
	if ok {
		h.addRef(c, b.seq)
		if b.seq == 0 && h.first == 0 && !h.readers.gather.IsZero() {
			h.readers.gather = time.Now().Add(h.pool.cfg.CatchUpWait)
			h.readers.starters++
		}
	}
	return b, ok
}

// joinHead adds a cursor at the last boundary the hub holds.
func (h *hub) joinHead(c *Cursor) (*bound, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || h.err != nil || h.at.broken || len(h.bounds) == 0 {
		return nil, false
	}
	b := h.bounds[len(h.bounds)-1]
	h.addRef(c, b.seq)
	return b, true
}

// joinAt adds a cursor at seq if the ring still holds it.
func (h *hub) joinAt(seq uint64, c *Cursor) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || h.err != nil || seq < h.first {
		return false
	}
	h.addRef(c, seq)
	return true
}

// pend adds a cursor that waits for pos, which is ahead of everything the hub has read, and
// returns where it starts reading.
func (h *hub) pend(pos position.Position, c *Cursor) (uint64, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || h.err != nil || h.at.broken || !pos.Contains(h.at.pos) {
		return 0, false
	}
	h.addRef(c, h.next)
	return h.next, true
}

// addRef counts a new cursor at seq; under mu. A hub waiting for a cursor that was alone
// waits no more (see evict).
func (h *hub) addRef(c *Cursor, seq uint64) {
	h.readers.read[c] = seq
	h.readers.findSolo()
	h.readOn()
}

// readOn wakes a hub waiting for its cursor; under mu.
func (h *hub) readOn() {
	close(h.readers.space)
	h.readers.space = make(chan struct{})
}

// release drops a cursor; the last one closes the hub.
func (h *hub) release(c *Cursor) {
	h.mu.Lock()
	delete(h.readers.read, c)
	delete(h.readers.cut, c)
	h.readers.findSolo()
	h.readOn()
	last := len(h.readers.read) == 0 && !h.closed
	if last {
		h.closed = true
		h.endDump()
		h.wake()
	}
	h.mu.Unlock()
	if last {
		h.pool.forget(h)
	}
}

// handOver moves a catch-up hub's cursors to another hub that holds boundary b, the shared
// one or another catch-up hub (started for cursors ahead of these), and ends the dump. It
// reports whether it did. The pool's lock makes handovers one at a time, so that two hubs
// never hand over to each other and leave their cursors with no dump.
func (h *hub) handOver(b *bound) bool {
	p := h.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	try := make([]*hub, 0, len(p.hubs))
	if p.live != nil {
		try = append(try, p.live)
	}
	for o := range p.hubs {
		if o != p.live {
			try = append(try, o)
		}
	}
	for _, o := range try {
		if o == h {
			continue
		}
		o.mu.Lock()
		var lb *bound
		ok := !o.closed && o.err == nil && o.handover == nil
		if ok {
			lb, ok = o.find(b.pos)
		}
		o.mu.Unlock()
		if !ok {
			continue
		}
		h.mu.Lock()
		h.handover = &handover{seq: b.seq, to: o, toSeq: lb.seq}
		h.endDump()
		h.wake()
		h.mu.Unlock()
		return true
	}
	return false
}

// compact moves the events every cursor hands out, a transaction's GTID and XID events, into
// one allocation each, header and body beside the event: the ring holds many megabytes of
// decoded rows, so each of a hundred cursors reading an event there misses the cache, once
// rather than once for each of the three.
func compact(ev *replication.BinlogEvent) *replication.BinlogEvent {
	switch e := ev.Event.(type) {
	case *replication.MariadbGTIDEvent:
		return compactAs(ev, e)
	case *replication.XIDEvent:
		return compactAs(ev, e)
	default:
		// Most cursors leave the other events out, or read their bodies at length.
	}
	return ev
}

// compactAs copies ev, its header and its body B into one allocation.
func compactAs[B any, P interface {
	*B
	replication.Event
}](ev *replication.BinlogEvent, body P) *replication.BinlogEvent {
	c := &struct {
		ev   replication.BinlogEvent
		hdr  replication.EventHeader
		body B
	}{ev: *ev, hdr: *ev.Header, body: *body}
	c.ev.Header, c.ev.Event = &c.hdr, P(&c.body)
	return &c.ev
}
