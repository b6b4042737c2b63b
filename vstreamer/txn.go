package vstreamer

import "github.com/vstream-cdc/vstream/gen/binlogdata"

// This file holds a transaction's life in the stream: its BEGIN, added with its first
// event; its end, which moves the position and sends GTID, COMMIT (or DDL, OTHER) and
// VGTID, or skips it; and what the binlog said of it, for EventSource.

// gtidEvent is the GTID event of the position, which the transaction that ends moved.
func (s *stream) gtidEvent(ts uint32) *binlogdata.VEvent {
	s.out.gtidSent = s.cursor.pos.String()
	return &binlogdata.VEvent{Type: binlogdata.VEventType_GTID, Timestamp: int64(ts), Gtid: s.out.gtidSent, EventGtid: s.cursor.gti()}
}

// vgtidEvent is the VGTID of the position: one ShardGtid per keyspace, each with its copy
// state. It carries the position skipped transactions moved, if any.
func (s *stream) vgtidEvent() *binlogdata.VEvent {
	return s.vgtidAt("")
}

// vgtidAt is vgtidEvent with the position's text when the caller has it already (else ""):
// formatting a GTID set is the most of a VGTID's cost, and a commit has just formatted it.
func (s *stream) vgtidAt(gtid string) *binlogdata.VEvent {
	if ts, unobserved := s.skip.carried(s.clock()); unobserved {
		s.observe(ts, gtid)
	}
	if s.multi() {
		return &binlogdata.VEvent{Type: binlogdata.VEventType_VGTID, Vgtid: &binlogdata.VGtid{ShardGtids: s.shardGtids()}}
	}
	if gtid == "" {
		gtid = s.cursor.pos.String()
	}
	return &binlogdata.VEvent{Type: binlogdata.VEventType_VGTID, Vgtid: &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{
		Keyspace: s.cfg.Keyspace,
		Shard:    s.cfg.Shard,
		Gtid:     gtid,
		TablePKs: s.copy.tablePKs(),
	}}}}
}

// commit closes a transaction: the position moves only here. A file position moves to the
// end of the event that closes the transaction, where a stream resumes with the next one.
func (s *stream) commit(ts uint32, terminal *binlogdata.VEvent) error {
	if skipped, err := s.endTxn(ts, terminal.Type == binlogdata.VEventType_COMMIT); err != nil || skipped {
		return err
	}
	return s.sendCommit(ts, terminal)
}

// endTxn moves the position past the transaction that ends, and skips it when it is an
// empty one to skip (isCommit: it ends in a COMMIT). It reports whether it skipped it.
func (s *stream) endTxn(ts uint32, isCommit bool) (skipped bool, err error) {
	if err := s.cursor.advance(); err != nil {
		return false, err
	}
	if s.skip.enabled && s.cursor.inTxn && isCommit && s.emptyTxn() {
		s.skipTxn(ts)
		return true, nil
	}
	return false, nil
}

// sendCommit sends the end of a transaction endTxn did not skip.
func (s *stream) sendCommit(ts uint32, terminal *binlogdata.VEvent) error {
	s.useTxnKeyspace()
	terminal.Timestamp = int64(ts)
	terminal.EventGtid = s.cursor.gti()
	gtid := s.gtidEvent(ts)
	if src := terminal.Source; src != nil && terminal.Type != binlogdata.VEventType_COMMIT {
		src.GtidSet = gtid.Gtid
	}
	// The observer hears this transaction's position, which holds the skipped ones'.
	s.skip.unobserved = false
	s.add(gtid, terminal, s.vgtidAt(gtid.Gtid))
	s.observe(ts, gtid.Gtid)
	s.cursor.inTxn = false
	s.cursor.enter(txnGTID{})
	s.txn = txnSource{}
	return nil
}

// begin opens a transaction. Its BEGIN is added to the batch with the transaction's first
// event (openTxn): a filtered stream skips most transactions, and builds none for them.
func (s *stream) begin(ts uint32) {
	if s.cursor.inTxn {
		return
	}
	s.cursor.inTxn = true
	s.txn.beginDue, s.txn.beginTS = true, ts
	s.txnKs = nil
	if src := s.source(); src != nil {
		src.GtidSet = s.cursor.txnGTIDSet()
		src.ThreadId = s.txn.threadID
		s.txn.beginSrc = src
	}
}

// openTxn adds the BEGIN of the transaction begin opened, before its first event.
func (s *stream) openTxn() {
	s.txn.beginDue = false
	s.txn.beginAt = len(s.out.batch)
	if s.out.wants(binlogdata.VEventType_BEGIN) {
		ev := &binlogdata.VEvent{Type: binlogdata.VEventType_BEGIN, Timestamp: int64(s.txn.beginTS), EventGtid: s.cursor.gti(),
			Source: s.txn.beginSrc}
		s.push(ev)
		if s.multi() {
			// The keyspace of the transaction's first change, if one was read; else the
			// first keyspace, labelled again by the first change (see enter).
			k := s.txnKs
			if k == nil {
				k = s.keyspaces[0]
			}
			ev.Keyspace = k.cfg.Keyspace
		}
	}
	s.txn.begun = savepoint{mark: len(s.out.batch), flushes: s.out.flushes}
}

// txnSource is what the binlog said about the transaction being read, for EventSource.
type txnSource struct {
	threadID         uint64
	originalCommitUs int64
	// query is the SQL of the rows events that follow (annotate rows / rows query events).
	query string
	// rowsEvents counts the rows events of the transaction read so far, sent or not.
	rowsEvents uint32
	// savepoints are the transaction's savepoints, oldest first; begun marks its BEGIN.
	savepoints []savepoint
	begun      savepoint
	// beginAt is where the transaction's BEGIN stands in the batch (if it was added).
	beginAt int
	// beginDue is set while the transaction's BEGIN, of binlog time beginTS and source
	// beginSrc, waits for the transaction's first event (see begin).
	beginDue bool
	beginTS  uint32
	beginSrc *binlogdata.EventSource
}

// source is the EventSource of the binlog event being handled, or nil when the stream does
// not carry sources.
func (s *stream) source() *binlogdata.EventSource {
	if !s.withSrc || s.cursor.hdr == nil {
		return nil
	}
	h := s.cursor.hdr
	return &binlogdata.EventSource{
		File:             s.cursor.binlogFile,
		StartPos:         uint64(h.LogPos) - uint64(min(h.EventSize, h.LogPos)),
		EndPos:           uint64(h.LogPos),
		ServerId:         h.ServerID,
		OriginalCommitUs: s.txn.originalCommitUs,
	}
}
