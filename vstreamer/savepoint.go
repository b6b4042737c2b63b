package vstreamer

import (
	"errors"
	"fmt"
	"strings"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/sqltext"
)

// ErrPartialRollback: a transaction rolled back to a savepoint after the changes it undid had
// gone out in an earlier batch, so they cannot be taken back.
var ErrPartialRollback = errors.New("transaction rolled back to a savepoint after part of it was sent")

// savepoint is where a transaction's SAVEPOINT stands in the batch being built.
type savepoint struct {
	name string
	// mark is the length of the batch when it was set, and flushes the stream's flush count
	// then: the events after mark are still held if no flush happened since.
	mark    int
	flushes uint64
}

// savepoint follows a transaction's savepoints. The server writes ROLLBACK TO in the binlog
// when the transaction also changed a non-transactional table (whose change stays): the row
// images and statements logged after the savepoint were undone and must not reach the
// client. They are dropped from the batch, which still holds
// them unless it was sent in between (a transaction larger than the batch limit); then the
// stream ends naming the transaction, since what was sent cannot be taken back.
func (s *stream) savepoint(sql string) error {
	if !s.cursor.inTxn {
		return nil
	}
	op, name := sqltext.ReadSavepoint(sql)
	i := s.findSavepoint(name)
	switch op {
	case sqltext.SetSavepoint:
		if s.txn.beginDue {
			// A rollback to the savepoint keeps what comes before it: the BEGIN, first.
			s.openTxn()
		}
		s.txn.savepoints = append(s.txn.savepoints, savepoint{name: name, mark: len(s.out.batch), flushes: s.out.flushes})
	case sqltext.ReleaseSavepoint:
		if i >= 0 {
			s.txn.savepoints = s.txn.savepoints[:i]
		}
	case sqltext.RollbackToSavepoint:
		if i < 0 {
			return fmt.Errorf("%w: transaction %s rolls back to savepoint %s (%q), which it did not set in the binlog",
				ErrPartialRollback, s.cursor.gti(), name, sql)
		}
		if err := s.undo(s.txn.savepoints[i], sql); err != nil {
			return err
		}
		// Savepoints set after this one are gone; this one stays.
		s.txn.savepoints = s.txn.savepoints[:i+1]
	case sqltext.NotSavepoint:
		// Classify called it a savepoint statement, but its name could not be read. Were it a
		// ROLLBACK TO, ignoring it would stream changes the transaction undid.
		return fmt.Errorf("%w: transaction %s: cannot read the savepoint statement %q", ErrStatementChange, s.cursor.gti(), sql)
	}
	return nil
}

// rollback handles a transaction the server wrote and then rolled back: it does so when the
// transaction also changed a non-transactional table. Its changes were undone and are
// dropped, BEGIN kept, so that the client sees an empty transaction that moves the position
// past its GTID.
func (s *stream) rollback(sql string) error {
	if !s.cursor.inTxn || s.txn.beginDue {
		// Nothing of the transaction was added: there is nothing to drop.
		return nil
	}
	return s.undo(s.txn.begun, sql)
}

// undo drops the events of the batch after a mark, which a rollback undid. In row-based
// logging a non-transactional table's change goes to the binlog at once, in a transaction
// of its own, so every row image after the mark was undone. Statements are different: those
// on non-transactional tables stay and the others are undone, and which is which the binlog
// does not say, so the stream ends. It ends too when the events went out in an earlier batch.
func (s *stream) undo(sp savepoint, sql string) error {
	if sp.flushes != s.out.flushes {
		return fmt.Errorf("%w: transaction %s undoes changes with %q after they were sent; "+
			"start the stream with a max_batch_bytes above the transaction's size", ErrPartialRollback, s.cursor.gti(), sql)
	}
	for _, ev := range s.out.batch[sp.mark:] {
		if statementEvent(ev) {
			return fmt.Errorf("%w: transaction %s undoes statement-based changes with %q; those on non-transactional "+
				"tables stay and the binlog does not tell them from the others; set binlog_format=ROW on the source",
				ErrStatementChange, s.cursor.gti(), sql)
		}
	}
	s.discard(sp.mark)
	return nil
}

func statementEvent(ev *binlogdata.VEvent) bool {
	switch ev.GetType() {
	case binlogdata.VEventType_INSERT, binlogdata.VEventType_UPDATE, binlogdata.VEventType_DELETE, binlogdata.VEventType_REPLACE:
		return true
	default:
		// The other events are not statement-based DML.
	}
	return false
}

// findSavepoint returns the index of the latest savepoint of that name (savepoint names are
// case-insensitive), or -1.
func (s *stream) findSavepoint(name string) int {
	for i := len(s.txn.savepoints) - 1; i >= 0; i-- {
		if strings.EqualFold(s.txn.savepoints[i].name, name) {
			return i
		}
	}
	return -1
}

// discard drops the batch's events after mark. A FIELD event among them was not sent after
// all: its table's next row sends one again.
func (s *stream) discard(mark int) {
	for _, ev := range s.out.batch[mark:] {
		if ev.GetType() == binlogdata.VEventType_FIELD {
			s.forgetField(ev)
		}
	}
	clear(s.out.batch[mark:])
	s.out.batch = s.out.batch[:mark]
	// batchSize keeps counting the dropped events: the batch is sent a little early at worst.
}
