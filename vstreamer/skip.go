package vstreamer

import "time"

// observeEvery bounds how often the observer hears the position moved by skipped
// transactions: formatting the position for each would cost a filtered stream more than
// skipping the transaction. A VGTID that carries the position tells the observer too.
const observeEvery = 100 * time.Millisecond

// clockEvery is how many skipped transactions in a row a stream handles between readings of
// the clock for the pending position (the lone VGTID and the observer): a clock reading
// costs as much as skipping a transaction, and a run of them takes microseconds. A stream
// that waits for events sends the pending position by its timer (nextEvent).
const clockEvery = 8

// pendingPositionDelay bounds how long a position moved only by skipped transactions waits
// for a VGTID to carry it, so that a client's resume point and acks keep moving.
const pendingPositionDelay = time.Second

// skips is what a stream keeps of the transactions it skips: whether it skips those the
// filter left empty, the position they moved that no VGTID has carried yet, and what the
// observer was told of it.
type skips struct {
	// enabled drops transactions the filter left empty (Request.SkipEmptyTransactions).
	enabled bool
	// pending is set when the position moved past such a transaction and no VGTID has
	// carried it yet; lastVGTID (unix nanos) is when the last VGTID was added, and timer
	// wakes an idle stream to send a pending position after pendingPositionDelay.
	pending   bool
	lastVGTID int64
	timer     *time.Timer
	// run counts the transactions skipped since the last VGTID (see clockEvery).
	run int
	// observedAt (unix nanos) is when the observer last heard the position; unobserved is
	// set when a skipped transaction moved it since, and unobservedTS is that
	// transaction's binlog time (see stream.observeSkipped).
	observedAt   int64
	unobserved   bool
	unobservedTS uint32
}

// stop stops the timer.
func (k *skips) stop() {
	if k.timer != nil {
		k.timer.Stop()
	}
}

// tick is the timer's channel while a position is pending, nil otherwise.
func (k *skips) tick() <-chan time.Time {
	if !k.pending || k.timer == nil {
		return nil
	}
	return k.timer.C
}

// arm marks the position pending at now (unix nanos), and arms the timer for what is left
// of pendingPositionDelay since the last VGTID.
func (k *skips) arm(now int64) {
	k.pending = true
	wait := max(time.Duration(int64(pendingPositionDelay)-(now-k.lastVGTID)), 0)
	if k.timer == nil {
		k.timer = time.NewTimer(wait)
	} else {
		k.timer.Reset(wait)
	}
}

// carried records a VGTID added at now: nothing is pending. It returns the binlog time of
// the transaction whose position the observer was not told, and whether there is one.
func (k *skips) carried(now int64) (ts uint32, unobserved bool) {
	k.pending, k.run = false, 0
	k.lastVGTID = now
	return k.unobservedTS, k.unobserved
}

// readsClock reports whether the skipped transaction just handled is one at which the
// stream reads the clock (every clockEvery of a run).
func (k *skips) readsClock() bool { return k.run%clockEvery == 0 }

// loneDue reports, at now, a pending position that waited pendingPositionDelay for a VGTID.
func (k *skips) loneDue(now int64) bool { return now-k.lastVGTID >= int64(pendingPositionDelay) }

// observeDue reports, at now, that the observer last heard the position observeEvery ago.
func (k *skips) observeDue(now int64) bool { return now-k.observedAt >= int64(observeEvery) }

// observed records that the observer heard the position at now.
func (k *skips) observed(now int64) { k.observedAt, k.unobserved = now, false }

// observe tells the observer the position, moved by a transaction of binlog time ts; pos is
// the position's text when the caller has it already (else ""), as a commit has.
func (s *stream) observe(ts uint32, pos string) {
	if s.observer == nil {
		return
	}
	if pos == "" {
		pos = s.cursor.pos.String()
	}
	s.observer.Position(pos, time.Unix(int64(ts), 0))
	s.skip.observed(s.clock())
}

// observeSkipped tells the observer the position a skipped transaction moved, at most
// every observeEvery (looking at the clock every clockEvery skipped transactions); the next
// VGTID carries a position it was not told.
func (s *stream) observeSkipped(ts uint32) {
	if s.observer == nil {
		return
	}
	s.skip.unobserved, s.skip.unobservedTS = true, ts
	if s.skip.readsClock() && s.skip.observeDue(s.clock()) {
		s.observe(ts, "")
	}
}

// emptyTxn reports a transaction in which nothing was added after BEGIN, and nothing sent:
// the filter left out all its changes (or a rollback dropped them).
func (s *stream) emptyTxn() bool {
	if s.nextCopy() != nil {
		return false
	}
	return s.txn.beginDue || s.out.flushes == s.txn.begun.flushes && len(s.out.batch) == s.txn.begun.mark
}

// skipTxn closes an empty transaction without sending it: its BEGIN leaves the batch and its
// position, already in s.pos, waits for the next VGTID the stream sends (see pending).
func (s *stream) skipTxn(ts uint32) {
	if !s.txn.beginDue {
		s.discard(s.txn.beginAt)
	}
	s.skip.run++
	s.observeSkipped(ts)
	s.cursor.inTxn = false
	s.cursor.enter(txnGTID{})
	s.txn = txnSource{}
	s.txnKs = nil
	if !s.skip.pending {
		s.skip.arm(s.clock())
	}
}
