package vstreamer

import (
	"errors"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/vstreamer/ddl"
	"github.com/vstream-cdc/vstream/vstreamer/schema"
)

// ErrStatementRollback: a transaction logged as statements rolls back to a savepoint after
// changes the stream has sent, so which of them were kept cannot be told.
var ErrStatementRollback = errors.New("statement-based transaction rolled back to a savepoint")

// statementTypes are the events of statement-based DML, as Vitess names them.
var statementTypes = map[ddl.Kind]binlogdata.VEventType{
	ddl.Insert:  binlogdata.VEventType_INSERT,
	ddl.Update:  binlogdata.VEventType_UPDATE,
	ddl.Delete:  binlogdata.VEventType_DELETE,
	ddl.Replace: binlogdata.VEventType_REPLACE,
}

// statementDML streams an INSERT, UPDATE, DELETE or REPLACE logged as a statement (the
// session's binlog_format was STATEMENT or MIXED) as an event of that type carrying the
// statement in dml, as Vitess does: there are no row images to send.
func (s *stream) statementDML(ts uint32, kind ddl.Kind, db string, tables []ddl.Table, parsed bool, sql string) error {
	standalone := !s.inTxn
	if !s.statementMatches(db, tables, parsed) {
		if standalone {
			s.begin(ts)
			return s.commit(ts, &binlogdata.VEvent{Type: binlogdata.VEventType_COMMIT})
		}
		return nil
	}
	s.begin(ts)
	s.txn.statements++
	ev := &binlogdata.VEvent{Type: statementTypes[kind], Timestamp: int64(ts), EventGtid: s.eventGTI, Dml: sql}
	if ev.Source = s.source(); ev.Source != nil {
		ev.Source.Database = db
		ev.Source.ThreadId = s.txn.threadID
		ev.Source.GtidSet = s.txnGTIDSet()
	}
	s.add(ev)
	s.batchSize += len(sql)
	if standalone {
		// A statement with no transaction around it (none is open: the server logged no
		// BEGIN) commits by itself.
		return s.commit(ts, &binlogdata.VEvent{Type: binlogdata.VEventType_COMMIT})
	}
	return nil
}

// statementMatches reports whether a statement-based DML writes a streamed table: one of
// the keyspace's database that the filter selects and that is not an online schema change's
// own table. A statement whose tables cannot be read is sent when its default database is the
// keyspace's (or none), as Vitess decides for every statement: sending one too many is
// better than losing a change.
func (s *stream) statementMatches(defaultDB string, tables []ddl.Table, parsed bool) bool {
	if !parsed || len(tables) == 0 {
		return defaultDB == "" || defaultDB == s.cfg.Database
	}
	for _, t := range tables {
		db := t.DB
		if db == "" {
			db = defaultDB
		}
		if db == s.cfg.Database && !schema.Internal(t.Name) && s.filter.Table(t.Name) != nil {
			return true
		}
	}
	return false
}

func isRollbackTo(sql string) bool {
	kw := ddl.Keywords(sql, 2)
	return len(kw) == 2 && kw[0] == "ROLLBACK" && kw[1] == "TO"
}
