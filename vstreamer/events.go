package vstreamer

import (
	"fmt"

	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/vstream-cdc/vstream/gen/binlogdata"

	"github.com/vstream-cdc/vstream/position"
	"github.com/vstream-cdc/vstream/sqltext"
)

// This file holds what handle() does with MySQL 8 events and with events it has no case for.

// mysqlGTID starts a MySQL transaction: an untagged GTID event, or MySQL 8.4's tagged one
// (GTID_TAGGED_LOG_EVENT, uuid:tag:number), which go-mysql decodes into the same fields.
func (s *stream) mysqlGTID(e *replication.GTIDEvent) error {
	if !hasGTID(e) {
		return fmt.Errorf("%w: a transaction without a GTID (ANONYMOUS_GTID_LOG_EVENT) at %s:%d: gtid_mode is no longer ON; the stream needs gtid_mode=ON",
			ErrServerConfig, s.cursor.binlogFile, s.cursor.binlogPos)
	}
	// Its text is written when an event or an error needs it (gti).
	id := txnGTID{flavor: position.MySQL56, tag: e.Tag, gno: e.GNO}
	copy(id.sid[:], e.SID)
	s.cursor.enter(id)
	s.txn = txnSource{originalCommitUs: int64(e.OriginalCommitTimestamp)}
	return nil
}

// hasGTID reports whether a MySQL GTID event names its transaction: an ANONYMOUS_GTID_LOG_EVENT
// (gtid_mode OFF) carries a zero source uuid.
func hasGTID(e *replication.GTIDEvent) bool { return len(e.SID) == 16 && !isZero(e.SID) }

// mysqlGTIDString is the text of the GTID mysqlGTID reads; false for a transaction without
// one.
func mysqlGTIDString(e *replication.GTIDEvent) (string, bool) {
	if !hasGTID(e) {
		return "", false
	}
	if tag := e.Tag.String(); tag != "" {
		return formatMySQLTaggedGTID(e.SID, tag, e.GNO), true
	}
	return formatMySQLGTID(e.SID, e.GNO), true
}

// payload streams the events of a compressed transaction (MySQL 8.0.20+ with
// binlog_transaction_compression=ON) exactly as if they had been logged one by one: go-mysql
// has decompressed and decoded them. The transaction's GTID event precedes the payload,
// uncompressed.
//
// The inner events have no place of their own in the binlog file: they are inside the
// payload event, so their sources span the payload event, and the position in the file
// moves past the payload only with its last event.
func (s *stream) payload(outer *replication.BinlogEvent, p *replication.TransactionPayloadEvent) error {
	for _, inner := range p.Events {
		// The event may be shared with other streams: it is read, never written.
		hdr := *inner.Header
		hdr.LogPos, hdr.EventSize = outer.Header.LogPos, outer.Header.EventSize
		ev := *inner
		ev.Header = &hdr
		if err := s.handle(&ev); err != nil {
			return fmt.Errorf("compressed transaction (TRANSACTION_PAYLOAD_EVENT) at %s:%d: %w", s.cursor.binlogFile, outer.Header.LogPos, err)
		}
		// A payload holds a whole transaction, however large: its events go out in batches of
		// the stream's bound, as the events of an uncompressed one do.
		if s.out.overBatch() {
			if err := s.out.flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

// isUpdate tells the rows event of an update (two images a row) from the others. go-mysql's
// RowsEvent.Type() does not know PARTIAL_UPDATE_ROWS_EVENT; every update event, and only an
// update event, carries the second image's column bitmap.
func isUpdate(e *replication.RowsEvent) bool { return e.ColumnBitmap2 != nil }

// checkRows refuses a rows event of a streamed table that does not hold whole values: JSON
// diffs (binlog_row_value_options=PARTIAL_JSON) that could not be applied because the before
// image does not hold the column (binlog_row_image NOBLOB or MINIMAL), which would reach the
// client as wrong values; rowcodec applies the others to the before image. It is a session
// setting, so a stream that started under the right global one can still meet it. Partial
// row images are otherwise streamed with data_columns naming the columns logged.
func (s *stream) checkRows(typ replication.EventType, e *replication.RowsEvent) error {
	p := s.plans[e.TableID]
	if p == nil || !p.selected {
		return nil
	}
	if typ != replication.PARTIAL_UPDATE_ROWS_EVENT {
		return nil
	}
	// PARTIAL_UPDATE_ROWS_EVENT whose JSON columns were all logged whole is an ordinary update.
	for _, row := range e.Rows {
		for _, v := range row {
			if _, ok := v.(*replication.JsonDiff); ok {
				return fmt.Errorf("%w: %s of table %s at %s:%d holds a JSON column logged as a partial diff (binlog_row_value_options is PARTIAL_JSON in the session that wrote it) whose value before the update is not logged (binlog_row_image is MINIMAL in that session), so the diff cannot be applied; the stream needs binlog_row_image=FULL or binlog_row_value_options=''",
					ErrServerConfig, typ, p.name, s.cursor.binlogFile, s.cursor.binlogPos)
			}
		}
	}
	return nil
}

// checkQuery refuses XA COMMIT of a transaction prepared before: its rows were logged at its
// XA PREPARE, which a stream running then has refused (see unhandled), so a stream that sees
// the commit started after them and cannot send them.
func (s *stream) checkQuery(e *replication.QueryEvent) error {
	// Most statements are told apart by their first letter, without a copy of the text.
	if len(e.Query) == 0 {
		return nil
	}
	if c := e.Query[0] | 0x20; c >= 'a' && c <= 'z' && c != 'x' {
		return nil
	}
	if sqltext.CommitsPrepared(string(e.Query)) {
		return fmt.Errorf("%w: %q at %s:%d after position %s commits an XA transaction prepared before that position, whose rows cannot be sent",
			ErrUnsupportedEvent, e.Query, s.cursor.binlogFile, s.cursor.binlogPos, s.cursor.pos)
	}
	return nil
}

// skippable marks the binlog events that carry no change a stream must deliver. handle()
// has a case for every event it turns into changes; anything else go-mysql hands over is
// skipped only when it is listed here, and ends the stream otherwise: an event we do not know
// may carry row changes (a rows event of a newer server, say), and skipping it would lose them.
var skippable = func() (t [256]bool) {
	for _, typ := range []replication.EventType{
		replication.START_EVENT_V3,  // pre-5.0 format start marker
		replication.STOP_EVENT,      // the server stopped; the binlog continues in the next file
		replication.INTVAR_EVENT,    // AUTO_INCREMENT / LAST_INSERT_ID context of a statement
		replication.RAND_EVENT,      // RAND() seeds of a statement
		replication.USER_VAR_EVENT,  // user variables of a statement
		replication.IGNORABLE_EVENT, // by definition safe to ignore
		replication.HEARTBEAT_EVENT,
		replication.HEARTBEAT_LOG_EVENT_V2,
		replication.PREVIOUS_GTIDS_EVENT,      // the set before this file; positions come from GTID events
		replication.TRANSACTION_CONTEXT_EVENT, // group replication certification data
		replication.VIEW_CHANGE_EVENT,         // group replication membership, inside its own transaction
		replication.MARIADB_BINLOG_CHECKPOINT_EVENT,
		replication.MARIADB_GTID_LIST_EVENT,
		replication.MARIADB_START_ENCRYPTION_EVENT, // the server decrypts before sending
		// The bytes of a file LOAD DATA logged as a statement reads; the Execute_load_query
		// event that follows names the table, and handle() decides about it (loadData).
		replication.BEGIN_LOAD_QUERY_EVENT,
		replication.APPEND_BLOCK_EVENT,
	} {
		t[typ] = true
	}
	return t
}()

// xidCommit ends a transaction at its XID event (or what commits as one). The COMMIT is
// built only for a transaction that is sent: most a filtered stream sees are skipped.
func (s *stream) xidCommit(ts uint32, xid uint64) error {
	if skipped, err := s.endTxn(ts, true); err != nil || skipped {
		return err
	}
	c := &binlogdata.VEvent{Type: binlogdata.VEventType_COMMIT}
	if c.Source = s.source(); c.Source != nil {
		c.Source.Xid = xid
	}
	return s.sendCommit(ts, c)
}

// xaOnePhase reports MySQL's XA_PREPARE_LOG_EVENT of XA COMMIT ... ONE PHASE: its first byte
// is the one-phase flag, and the transaction commits at it as at an XID event. A two-phase
// XA PREPARE only prepares.
func xaOnePhase(ev *replication.BinlogEvent) bool {
	if ev.Header.EventType != replication.XA_PREPARE_LOG_EVENT {
		return false
	}
	g, ok := ev.Event.(*replication.GenericEvent)
	return ok && len(g.Data) > 0 && g.Data[0] != 0
}

// unhandled decides about an event handle() has no case for (see skippable).
func (s *stream) unhandled(ev *replication.BinlogEvent) error {
	typ := ev.Header.EventType
	if skippable[typ] {
		return nil
	}
	if xaOnePhase(ev) {
		return s.xidCommit(ev.Header.Timestamp, 0)
	}
	why := "it may carry row changes the stream would lose"
	switch typ {
	case replication.XA_PREPARE_LOG_EVENT:
		why = "prepared XA transactions are not streamed (XA COMMIT ... ONE PHASE is)"
	case replication.INCIDENT_EVENT:
		why = "the server reports changes missing from its binlog"
	default:
		// The general reason above.
	}
	if !s.cursor.inTxn {
		// The transactions before the event are complete: the client gets them, and their
		// position, before the error.
		if err := s.out.flush(); err != nil {
			return err
		}
	}
	return fmt.Errorf("%w: %s (type %d) at %s:%d after position %s: %s", ErrUnsupportedEvent, typ, byte(typ), s.cursor.binlogFile, ev.Header.LogPos, s.cursor.pos, why)
}
