package vstreamer

import (
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/vstream-cdc/vstream/sqltext"
	"github.com/vstream-cdc/vstream/vstreamer/fanout"
)

// txnMarks tells a shared reader where a stream's transactions start and end, so that it
// knows the positions streams may join it at. It follows handle() case by case: a
// transaction starts at its GTID event and ends where handle() calls commit, and the position
// then moves by that GTID. The tests that compare streams on shared and own readers check
// the two agree.
type txnMarks struct {
	// inTxn is the stream's inTxn: an open BEGIN (or a MariaDB GTID event that opens one).
	inTxn bool
}

var _ fanout.Marker = (*txnMarks)(nil)

func (m *txnMarks) Mark(ev *replication.BinlogEvent) (gtid fanout.GTID, start, end bool) {
	switch e := ev.Event.(type) {
	case *replication.MariadbGTIDEvent:
		if !e.IsStandalone() {
			m.inTxn = true
		}
		return fanout.GTID{MariaDB: &e.GTID}, true, false
	case *replication.GTIDEvent:
		return mysqlMark(e)
	case *replication.GtidTaggedLogEvent:
		return mysqlMark(&e.GTIDEvent)
	case *replication.XIDEvent:
		m.inTxn = false
		return fanout.GTID{}, false, true
	case *replication.GenericEvent:
		if xaOnePhase(ev) {
			m.inTxn = false
			return fanout.GTID{}, false, true
		}
	case *replication.QueryEvent:
		if sqltext.IsBegin(e.Query) {
			// Every MySQL transaction opens with one: read without the text made a string.
			m.inTxn = true
			return fanout.GTID{}, false, false
		}
		return fanout.GTID{}, false, m.query(string(e.Query))
	case *replication.TransactionPayloadEvent:
		for _, inner := range e.Events {
			g, s, en := m.Mark(inner)
			if s {
				gtid, start = g, true
			}
			end = end || en
		}
		return gtid, start, end
	default:
		// The other events neither start nor end a transaction.
	}
	return fanout.GTID{}, false, false
}

// mysqlMark is the start of a transaction by its MySQL GTID event; a transaction without a
// GTID is not marked (the stream fails on it, mysqlGTID).
func mysqlMark(e *replication.GTIDEvent) (fanout.GTID, bool, bool) {
	if !hasGTID(e) {
		return fanout.GTID{}, false, false
	}
	return fanout.GTID{MySQL: e}, true, false
}

// query is what query() and statementDML() do with the transaction.
func (m *txnMarks) query(sql string) bool {
	kind, _, _ := sqltext.Classify(sql)
	switch kind {
	case sqltext.Begin:
		m.inTxn = true
		return false
	case sqltext.Commit, sqltext.Rollback:
		m.inTxn = false
		return true
	case sqltext.Savepoint:
		return false
	default:
		// A statement inside a transaction is part of it; outside one it commits by itself.
		return !m.inTxn
	}
}
