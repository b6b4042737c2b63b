package vstreamer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"strings"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/sqltext"
	"github.com/vstream-cdc/vstream/vstreamer/schema"
)

// ErrStatementChange: a change logged as a statement cannot be streamed exactly: it writes a
// table whose copy is half done (a statement cannot be split at the copied key), or its
// transaction rolls it back (only its changes to non-transactional tables stay).
var ErrStatementChange = errors.New("statement-based change cannot be streamed exactly")

// statementTypes are the events of statement-based DML, as Vitess names them.
var statementTypes = map[sqltext.Kind]binlogdata.VEventType{
	sqltext.Insert:  binlogdata.VEventType_INSERT,
	sqltext.Update:  binlogdata.VEventType_UPDATE,
	sqltext.Delete:  binlogdata.VEventType_DELETE,
	sqltext.Replace: binlogdata.VEventType_REPLACE,
}

// statementDML streams an INSERT, UPDATE, DELETE or REPLACE logged as a statement (the
// session's binlog_format was STATEMENT or MIXED) as an event of that type carrying the
// statement in dml, as Vitess does: there are no row images to send.
func (s *stream) statementDML(ts uint32, kind sqltext.Kind, db string, tables []sqltext.Table, parsed bool, sql string) error {
	standalone := !s.cursor.inTxn
	k, err := s.statementKeyspace(db, tables, sql)
	if err != nil {
		return err
	}
	s.use(k)
	names, unread := s.statementTables(db, tables, parsed)
	send := len(names) > 0 || unread
	if send {
		if send, err = s.statementDuringCopy(names, unread, sql); err != nil {
			return err
		}
	}
	if !send {
		if standalone {
			s.begin(ts)
			return s.commit(ts, &binlogdata.VEvent{Type: binlogdata.VEventType_COMMIT})
		}
		return nil
	}
	s.begin(ts)
	s.enter(k)
	ev := &binlogdata.VEvent{Type: statementTypes[kind], Timestamp: int64(ts), EventGtid: s.cursor.gti(), Dml: sql}
	if ev.Source = s.source(); ev.Source != nil {
		ev.Source.Database = db
		ev.Source.ThreadId = s.txn.threadID
		ev.Source.GtidSet = s.cursor.txnGTIDSet()
	}
	s.add(ev)
	s.out.batchSize += len(sql)
	if standalone {
		// A statement with no transaction around it (none is open: the server logged no
		// BEGIN) commits by itself.
		return s.commit(ts, &binlogdata.VEvent{Type: binlogdata.VEventType_COMMIT})
	}
	return nil
}

// statementTables returns the streamed tables a statement-based DML writes: tables of the
// keyspace's database that the filter selects and that are not an online schema change's
// own. unread is true when its tables could not be read and its default database is the
// keyspace's (or none): it is then sent, as Vitess decides for every statement, since sending
// one too many is better than losing a change.
func (s *stream) statementTables(defaultDB string, tables []sqltext.Table, parsed bool) (names []string, unread bool) {
	if !parsed || len(tables) == 0 {
		return nil, defaultDB == "" || defaultDB == s.cfg.Database
	}
	for _, t := range tables {
		db := t.DB
		if db == "" {
			db = defaultDB
		}
		if db == s.cfg.Database && !schema.Internal(t.Name) && s.filter.Table(t.Name) != nil && !slices.Contains(names, t.Name) {
			names = append(names, t.Name)
		}
	}
	return names, false
}

// statementDuringCopy decides a statement-based change met while tables are copied. The
// client holds a copied table's rows up to its copied key only, and a statement's rows cannot
// be told: a table whose copy has sent no row yet takes the change through its copy (the
// statement is not sent, as its rows events would not be); a table partly copied cannot take
// it, and the stream ends.
func (s *stream) statementDuringCopy(names []string, unread bool, sql string) (send bool, err error) {
	if !s.copy.active() {
		return true, nil
	}
	if unread {
		names = names[:0]
		for _, t := range s.copy.tables {
			names = append(names, t.name)
		}
	}
	held, notHeld := 0, 0
	for _, name := range names {
		ct := s.copy.state(name)
		switch {
		case ct == nil:
			held++
		case ct.status == copyPending || ct.lastpk == nil:
			notHeld++
		default:
			return false, fmt.Errorf("%w: transaction %s changes table %s by a statement (%q) while the table is being copied, "+
				"and a statement cannot be split at the copied key; set binlog_format=ROW on the source, or start the copy again",
				ErrStatementChange, s.cursor.gti(), name, sql)
		}
	}
	if held > 0 && notHeld > 0 || unread && notHeld > 0 {
		what := strings.Join(names, ", ")
		if unread {
			what = "(its tables could not be read)"
		}
		return false, fmt.Errorf("%w: transaction %s changes tables %s by a statement (%q), some copied and some not yet; "+
			"set binlog_format=ROW on the source, or start the copy again", ErrStatementChange, s.cursor.gti(), what, sql)
	}
	return notHeld == 0, nil
}

// loadData handles LOAD DATA logged as a statement (an Execute_load_query event): the rows
// travel in the binlog as the bytes of the loaded file, in events before it, not as row
// images, and the stream has no event for them. A load into a streamed table ends the stream
// naming it; a load into another table changes nothing streamed.
func (s *stream) loadData(raw []byte) error {
	db, sql, ok := decodeExecuteLoadQuery(raw)
	kind, tables, parsed := sqltext.Classify(sql)
	if !ok || kind != sqltext.Load {
		parsed = false
	}
	for _, k := range s.keyspaces {
		s.use(k)
		names, unread := s.statementTables(db, tables, parsed)
		if len(names) == 0 && !unread {
			continue
		}
		what := "table " + strings.Join(names, ", ")
		if unread {
			what = "a table it does not name readably"
		}
		return fmt.Errorf("%w: transaction %s loads rows into %s with LOAD DATA logged as a statement (%q), "+
			"whose rows are not in the binlog as row images; set binlog_format=ROW on the source",
			ErrStatementChange, s.cursor.gti(), what, sql)
	}
	return nil
}

// decodeExecuteLoadQuery reads the default database and the statement of an
// Execute_load_query event, which go-mysql leaves undecoded: after the 19-byte event header,
// a query event's 13-byte post-header (thread id, time, database length, error code, status
// variables length) and 13 more bytes (file id, start and end of the file name, duplicate
// handling), then the status variables, the database and a NUL, then the statement, and a
// CRC32 checksum when the server writes them.
func decodeExecuteLoadQuery(raw []byte) (db, sql string, ok bool) {
	const header, postHeader = 19, 26
	if len(raw) < header+postHeader {
		return "", "", false
	}
	body := raw[header:]
	dbLen := int(body[8])
	statusLen := int(binary.LittleEndian.Uint16(body[11:13]))
	start := postHeader + statusLen
	if len(body) < start+dbLen+1 {
		return "", "", false
	}
	db = string(body[start : start+dbLen])
	query := body[start+dbLen+1:]
	if n := len(raw); n >= 4 && crc32.ChecksumIEEE(raw[:n-4]) == binary.LittleEndian.Uint32(raw[n-4:]) {
		query = query[:max(0, len(query)-4)]
	}
	return db, string(query), true
}
