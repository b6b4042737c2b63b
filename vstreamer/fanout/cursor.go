package fanout

import (
	"context"
	"errors"
	"io"

	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/vstream-cdc/vstream/position"
)

// readAhead is how many events a cursor takes from its ring per lock.
const readAhead = 64

// Cursor is one reader's place in a hub. Its methods are for one goroutine.
type Cursor struct {
	pool   *Pool
	open   OpenFunc
	onKind func(Kind)
	kind   Kind

	hub *hub
	seq uint64
	buf []entry
	bi  int
	// inject is an event to hand out before the next one of the ring.
	inject *replication.BinlogEvent
	// pending is the position the cursor waits for in a hub that has not reached it yet.
	pending *position.Position
	missed  bool

	// resume is where the cursor starts again when it falls behind.
	resume resumePoint
	// failedIn is the binlog file the hub was reading when it failed, once GetEvent returned
	// its error.
	failedIn string
	closed   bool

	// filter is what the cursor leaves out (see LeaveOut).
	filter eventFilter
}

// resumePoint is what a cursor has handed out, so that one that falls behind starts again
// at its last boundary and skips the events after it it handed out already. lastBound is
// the last boundary handed out, and sinceBound is set once an event of the binlog after it
// has been; lastFile and lastPos is the place of that event. skipping is set while the
// cursor skips.
type resumePoint struct {
	lastBound  position.Position
	sinceBound bool
	lastFile   string
	lastPos    uint32
	skipping   bool
}

// eventFilter is what a cursor leaves out: leaveTypes are the event types, leaveOut says
// which tables' events; wants holds its verdicts, and last the last one asked, since it is
// asked of every table map and rows event the cursor reads.
type eventFilter struct {
	leaveOut    func(t *Table) bool
	wants       map[*Table]bool
	last        *Table
	lastWant    bool
	leaveTypes  [256]bool
	leavesTypes bool
}

// LeaveOut makes the cursor leave out the events of the types given and the table map and
// rows events of the tables skip reports (if set), which it asks once per table of a ring: a
// reader that wants a few tables of a shared binlog then reads a few tables' events. Call it
// before GetEvent.
func (c *Cursor) LeaveOut(skip func(t *Table) bool, types ...replication.EventType) {
	f := &c.filter
	f.leaveOut = skip
	for _, t := range types {
		f.leaveTypes[t] = true
	}
	f.leavesTypes = len(types) > 0
}

// TableName names a table id of a table map the cursor has left out or handed out since
// LeaveOut, for an error about an event of that id.
func (c *Cursor) TableName(id uint64) (string, bool) {
	for t := range c.filter.wants {
		if t.ID == id {
			return t.Name, true
		}
	}
	return "", false
}

// FailedIn names the binlog file the hub was reading when it failed, once GetEvent has
// returned the hub's error: a cursor placed inside a running dump may never have been told
// the file by a rotate event.
func (c *Cursor) FailedIn() string { return c.failedIn }

// TxnEnds is a run of consecutive transactions of which a cursor hands out only the first and
// the last event each (a GTID event and, say, an XID, the others left out): it hands the run out
// as one event, whose header is the last transaction's last event's, and the reader handles
// the events in turn, in order. Only a cursor that leaves events out (LeaveOut) hands out
// TxnEnds; it saves its reader a hand-off, and an allocation, per transaction, which is most
// of what a transaction a reader does not want costs it.
type TxnEnds struct {
	Txns []Ends
}

// Ends is the first and the last event of a transaction of a TxnEnds.
type Ends struct {
	First, Last *replication.BinlogEvent
}

// Dump writes the events, in order.
func (s *TxnEnds) Dump(w io.Writer) {
	for _, t := range s.Txns {
		t.First.Dump(w)
		t.Last.Dump(w)
	}
}

// Decode fails: a TxnEnds event is made by a cursor, never read from a binlog.
func (s *TxnEnds) Decode([]byte) error {
	return errors.New("fanout: a TxnEnds event is not decoded")
}

// endsRun is a TxnEnds event in one allocation, with room for the common run of one.
type endsRun struct {
	ev   replication.BinlogEvent
	ends TxnEnds
	one  [1]Ends
}

// skipsWhole reports whether the cursor may hand out transactions as TxnEnds: it leaves
// events out, and it hands out the events of the ring it does not leave out as they come.
func (c *Cursor) skipsWhole() bool {
	return c.filter.active() && c.pending == nil && !c.resume.skipping && !c.missed && c.inject == nil
}

// endOf returns the index in buf of the last event of the transaction whose first event is
// buf[i-1], when buf holds it and the cursor leaves out every event in between; else -1.
func (c *Cursor) endOf(i int) int {
	for j := i; j < len(c.buf); j++ {
		e := c.buf[j]
		if e.start {
			return -1
		}
		if c.filter.leaves(e) {
			if e.after != nil {
				return -1
			}
			continue
		}
		if e.after == nil {
			return -1
		}
		return j
	}
	return -1
}

// skipRun hands out as one TxnEnds the transaction whose first event the cursor just took,
// which ends at buf[j], and the transactions right after it in buf of which it also leaves
// out all but the ends. A run is of transactions the cursor left something out of: one it
// hands out whole (a DDL's GTID and query, say) is a run of its own, as the reader may well
// send it. The events are taken as take would, without judging them again.
func (c *Cursor) skipRun(first *replication.BinlogEvent, j int) *replication.BinlogEvent {
	// The run is measured first, so that it takes one allocation of its size (two when longer
	// than one transaction).
	n, end := 1, j
	for k := j + 1; j > c.bi && k < len(c.buf) && c.buf[k].start && !c.filter.leaves(c.buf[k]); {
		e := c.endOf(k + 1)
		if e <= k+1 {
			break
		}
		n, end, k = n+1, e, e+1
	}
	r := &endsRun{}
	if n == 1 {
		r.ends.Txns = r.one[:0]
	} else {
		r.ends.Txns = make([]Ends, 0, n)
	}
	t := Ends{First: first}
	for ; c.bi <= end; c.bi++ {
		e := c.buf[c.bi]
		c.resume.account(e)
		c.buf[c.bi] = entry{}
		switch {
		case e.start:
			t.First = e.ev
		case e.after != nil:
			t.Last = e.ev
			r.ends.Txns = append(r.ends.Txns, t)
		}
	}
	r.ev = replication.BinlogEvent{Header: t.Last.Header, Event: &r.ends}
	return &r.ev
}

// active reports whether the filter leaves anything out.
func (f *eventFilter) active() bool {
	return f.leaveOut != nil || f.leavesTypes
}

// leaves reports an event the cursor leaves out.
func (f *eventFilter) leaves(e entry) bool {
	return f.leaveTypes[e.typ] || e.table != nil && f.leaveOut != nil && !f.wanted(e.table)
}

// wanted reports whether the cursor hands out the events of t.
func (f *eventFilter) wanted(t *Table) bool {
	if t == f.last {
		return f.lastWant
	}
	want, ok := f.wants[t]
	if !ok {
		if f.wants == nil || len(f.wants) > 4096 {
			f.wants = make(map[*Table]bool)
		}
		want = !f.leaveOut(t)
		f.wants[t] = want
	}
	f.last, f.lastWant = t, want
	return want
}

func (c *Cursor) setKind(k Kind) {
	if k == c.kind {
		return
	}
	c.kind = k
	if c.onKind != nil {
		c.onKind(k)
	}
}

// Kind is the kind of hub serving the cursor.
func (c *Cursor) Kind() Kind { return c.kind }

// GetEvent returns the next event, waiting for one while ctx lasts. It returns the hub's
// error once the events read before it are handed out.
func (c *Cursor) GetEvent(ctx context.Context) (*replication.BinlogEvent, error) {
	for {
		if c.closed {
			return nil, ErrClosed
		}
		if ev := c.inject; ev != nil {
			c.inject = nil
			return ev, nil
		}
		for c.bi < len(c.buf) && !c.missed {
			e := c.buf[c.bi]
			c.buf[c.bi] = entry{}
			c.bi++
			if ev := c.take(e); ev != nil {
				if e.start && c.skipsWhole() {
					if j := c.endOf(c.bi); j >= 0 {
						return c.skipRun(ev, j), nil
					}
				}
				return ev, nil
			}
			if c.inject != nil {
				break
			}
		}
		if c.inject != nil {
			continue
		}
		if c.missed {
			// The shared hub went past the position without stopping there.
			pos := *c.pending
			c.pending, c.missed = nil, false
			c.moveTo(pos, false)
			continue
		}
		c.buf, c.bi = c.buf[:0], 0
		wait, err := c.fill()
		if err != nil {
			return nil, err
		}
		if wait == nil {
			continue
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// fill takes the next events of the ring into buf, or moves the cursor. It returns a
// channel to wait on when there is nothing to read yet.
func (c *Cursor) fill() (<-chan struct{}, error) {
	h := c.hub
	h.mu.Lock()
	if ho := h.handover; ho != nil && c.seq >= ho.seq && c.pending == nil {
		h.mu.Unlock()
		c.handedOver(ho)
		return nil, nil
	}
	if c.seq < h.first {
		h.mu.Unlock()
		c.fellBehind()
		return nil, nil
	}
	if c.seq < h.next {
		end := min(h.next, c.seq+readAhead)
		if ho := h.handover; ho != nil && c.pending == nil {
			end = min(end, ho.seq)
		}
		if end == c.seq+readAhead && end < h.next && c.skipsWhole() {
			// Cut at the last transaction end in reach, but for a transaction longer than
			// half of it: the cursor then sees whole the transactions it skips, rather than
			// hand out the ends of one cut in two as two events.
			for k := end; k > c.seq+readAhead/2; k-- {
				if h.ring[(k-1)%uint64(len(h.ring))].after != nil {
					end = k
					break
				}
			}
		}
		for ; c.seq < end; c.seq++ {
			c.buf = append(c.buf, h.ring[c.seq%uint64(len(h.ring))])
		}
		// A hub waiting for the cursor to read its oldest event waits no more (see evict).
		if prev := h.readers.read[c]; prev <= h.first || len(h.readers.read) == 1 {
			h.readOn()
		}
		h.readers.read[c] = c.seq
		h.mu.Unlock()
		return nil, nil
	}
	if h.err != nil {
		err := h.err
		c.failedIn = h.at.file
		h.mu.Unlock()
		return nil, err
	}
	if h.handover != nil {
		// A cursor waiting in a hub that handed over waits no longer: the shared hub holds it.
		h.mu.Unlock()
		pos := c.resume.lastBound
		if c.pending != nil {
			pos = *c.pending
			c.pending = nil
		}
		c.moveTo(pos, false)
		return nil, nil
	}
	wait := h.signal
	h.waited = true
	h.mu.Unlock()
	return wait, nil
}

// take decides about an event of the ring: it returns it when the cursor hands it out.
func (c *Cursor) take(e entry) *replication.BinlogEvent {
	if c.pending != nil {
		if b := e.after; b != nil {
			switch {
			case same(b.pos, *c.pending):
				c.pending = nil
				c.resume.lastBound, c.resume.sinceBound = b.pos, false
				c.inject = rotateTo(b)
			case !c.pending.Contains(b.pos):
				c.missed = true
			}
		}
		return nil
	}
	if c.resume.skipping && c.resume.stillSkips(e) {
		return nil
	}
	// An event left out counts as handed out: a cursor that falls behind skips it again.
	c.resume.account(e)
	if c.filter.leaves(e) {
		return nil
	}
	return e.ev
}

// stillSkips reports, while the cursor skips, an event it handed out before it fell
// behind: those of the transaction it was in come again, after those a new dump starts
// with (which have no place, or one before them). The first event past them ends the
// skipping.
func (r *resumePoint) stillSkips(e entry) bool {
	if !e.placed || position.ComparePlaces(e.file, uint64(e.logPos), r.lastFile, uint64(r.lastPos)) <= 0 {
		return true
	}
	r.skipping = false
	return false
}

// account notes an event as handed out (or left out).
func (r *resumePoint) account(e entry) {
	if e.placed {
		r.lastFile, r.lastPos, r.sinceBound = e.file, e.logPos, true
	}
	if e.after != nil {
		r.lastBound, r.sinceBound = e.after.pos, false
	}
}

// handedOver moves the cursor from a catch-up hub to the shared one at the boundary both hold.
func (c *Cursor) handedOver(ho *handover) {
	old := c.hub
	if ho.to.joinAt(ho.toSeq, c) {
		c.hub, c.seq = ho.to, ho.toSeq
		old.release(c)
		c.setKind(c.hub.kind)
		return
	}
	c.moveTo(c.resume.lastBound, false)
}

// fellBehind starts the cursor again at its last boundary; the events after it it handed
// out are skipped (a dump from a position sends the same binlog).
func (c *Cursor) fellBehind() {
	c.moveTo(c.resume.lastBound, c.resume.sinceBound)
}

func (c *Cursor) moveTo(pos position.Position, skip bool) {
	old := c.hub
	c.pool.cfg.Logger.Debug("cursor moves", "pos", pos.String(), "skip", skip, "last_file", c.resume.lastFile, "last_pos", c.resume.lastPos)
	c.buf, c.bi = c.buf[:0], 0
	// Released first: place may put the cursor back on the same hub.
	old.release(c)
	c.pool.place(c, pos, false, false)
	c.resume.skipping = skip
}

// Close detaches the cursor; the last cursor of a hub ends its dump.
func (c *Cursor) Close() {
	if c.closed {
		return
	}
	c.closed = true
	c.hub.release(c)
}
