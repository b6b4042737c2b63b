package vstreamer

import (
	"fmt"
	"strings"

	"github.com/go-mysql-org/go-mysql/client"

	"github.com/vstream-cdc/vstream/filter"
	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/position"
	"github.com/vstream-cdc/vstream/sqltext"
)

// KeyspaceStart is where one keyspace of a stream of several starts: a ShardGtid of the
// client's VGtid.
type KeyspaceStart struct {
	Keyspace string
	// Position is the keyspace's gtid; every keyspace of one stream starts at the same one.
	Position string
	// TableLastPKs is the keyspace's copy state.
	TableLastPKs []*binlogdata.TableLastPK
}

// keyspaceStream is what a stream keeps for each keyspace it serves: the keyspace's
// database and labels, the filter compiled for that database, the FIELD events sent for
// its tables, and its table copy. The databases are of one server, so they share one binlog
// and one position: one stream reads the binlog once and hands each table's changes to the
// keyspace of the table's database.
type keyspaceStream struct {
	cfg    *Config
	filter *filter.Filter
	// fieldsFor is the plan whose FIELD event was last sent for a table name; copyPlans the
	// plans of the tables the copy reads, by name.
	fieldsFor map[string]*tablePlan
	copyPlans map[string]*tablePlan
	// copy is the keyspace's table copy, nil when it copies nothing.
	copy *copier
	// lastPKs is the keyspace's copy state as the client sent it.
	lastPKs []*binlogdata.TableLastPK
}

// keyspaceStarts turns a request into the keyspaces it streams, in the client's order, and
// the one position they start at. Keyspaces of one server share one binlog, so a VGtid this
// server sent gives every keyspace the same position; one whose keyspaces stand at different
// positions was put together by the client, and is refused rather than guessed at: a
// keyspace given an earlier position than it has would receive again what it had.
func keyspaceStarts(req *Request) ([]KeyspaceStart, string, error) {
	if len(req.Keyspaces) == 0 {
		return []KeyspaceStart{{Keyspace: req.Keyspace, Position: req.Position, TableLastPKs: req.TableLastPKs}}, req.Position, nil
	}
	first := req.Keyspaces[0]
	for i, k := range req.Keyspaces {
		for _, prev := range req.Keyspaces[:i] {
			if prev.Keyspace == k.Keyspace {
				return nil, "", fmt.Errorf("%w: the vgtid names keyspace %q twice", ErrBadRequest, k.Keyspace)
			}
		}
		if !samePosition(first.Position, k.Position) {
			return nil, "", fmt.Errorf("%w: keyspaces %q and %q are at different positions (%q and %q); the keyspaces of one server share one binlog, "+
				"so a stream of several starts them all at one position, as the VGTIDs it sends do: resume from a VGTID this server sent, "+
				"give every keyspace the earliest position (the later ones then receive again what they had), or stream the keyspaces separately",
				ErrBadRequest, first.Keyspace, k.Keyspace, first.Position, k.Position)
		}
	}
	return req.Keyspaces, first.Position, nil
}

// keyspaceFilters resolves the database of each keyspace and compiles the request's filter
// on it: Vitess gives every keyspace the request's filter, whose rules select tables of each.
func (e *Engine) keyspaceFilters(starts []KeyspaceStart, f *binlogdata.Filter, masks []filter.Mask) ([]string, []*filter.Filter, error) {
	dbs := make([]string, len(starts))
	filters := make([]*filter.Filter, len(starts))
	for i, ks := range starts {
		var err error
		if dbs[i], err = e.Database(ks.Keyspace); err != nil {
			return nil, nil, err
		}
		for j := range i {
			if dbs[j] == dbs[i] {
				return nil, nil, fmt.Errorf("%w: keyspaces %q and %q of the vgtid are both database %s; name it once", ErrBadRequest, starts[j].Keyspace, ks.Keyspace, dbs[i])
			}
		}
		if filters[i], err = e.compileFilter(f, dbs[i], masks); err != nil {
			return nil, nil, err
		}
	}
	return dbs, filters, nil
}

// checkNamedTables fails a stream of several keyspaces, before it starts, when a named
// rule's table is a table of none of the databases whose copy is full or resumed (copied), or
// a table tables_to_copy names is one of none of the databases copying (listed).
func checkNamedTables(conn *client.Conn, copied []string, f *filter.Filter, listed, tablesToCopy []string) error {
	inAny := func(dbs []string, table string) (bool, error) {
		args := []any{table}
		for _, db := range dbs {
			args = append(args, db)
		}
		res, err := conn.Execute("SELECT 1 FROM information_schema.TABLES WHERE TABLE_NAME = ? AND TABLE_SCHEMA IN (?"+strings.Repeat(", ?", len(dbs)-1)+")", args...)
		if err != nil {
			return false, fmt.Errorf("%w: check table %s: %v", ErrUnavailable, table, err)
		}
		defer res.Close()
		return res.RowNumber() > 0, nil
	}
	for _, r := range f.Rules() {
		if len(copied) == 0 || r.IsRegex() || r.Exclude() {
			continue
		}
		ok, err := inAny(copied, r.Match)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: rule %d (match %q): table %s is not present in the databases %s; create it, or start from a position to stream it once it is created",
				filter.ErrInvalid, r.Index+1, r.Match, r.Match, strings.Join(copied, ", "))
		}
	}
	for _, t := range tablesToCopy {
		if len(listed) == 0 {
			break
		}
		ok, err := inAny(listed, t)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: tables_to_copy names %s, which is not a table of %s", filter.ErrInvalid, t, strings.Join(listed, ", "))
		}
	}
	return nil
}

// samePosition reports two positions that name the same place: equal text, or equal GTID
// sets however written.
func samePosition(a, b string) bool {
	a, b = strings.TrimSpace(a), strings.TrimSpace(b)
	if a == b {
		return true
	}
	pa, errA := position.Parse(a)
	pb, errB := position.Parse(b)
	return errA == nil && errB == nil && pa.Equal(pb)
}

// multi reports a stream of several keyspaces.
func (s *stream) multi() bool { return len(s.keyspaces) > 1 }

// use makes k the keyspace whose database, filter, FIELD record and copy the stream's code
// works with: that of the table being handled. A stream of one keyspace never changes it.
func (s *stream) use(k *keyspaceStream) {
	if k == s.ks {
		return
	}
	s.ks = k
	s.keyspaceStream = *k
}

// keyspaceOf is the keyspace streaming database db, nil when none does.
func (s *stream) keyspaceOf(db []byte) *keyspaceStream {
	for _, k := range s.keyspaces {
		if string(db) == k.cfg.Database {
			return k
		}
	}
	return nil
}

// enter makes k the keyspace of a change about to be added. A transaction's BEGIN, GTID,
// COMMIT and VGTID carry the keyspace of its first change (the first keyspace of the stream
// when it has none): the BEGIN, added before any change was read, is labelled again here
// while it waits in the batch.
func (s *stream) enter(k *keyspaceStream) {
	s.use(k)
	if !s.multi() || !s.cursor.inTxn || s.txnKs != nil {
		return
	}
	s.txnKs = k
	// A BEGIN still due is labelled when it is added (openTxn).
	if !s.txn.beginDue && s.out.flushes == s.txn.begun.flushes && s.txn.beginAt < len(s.out.batch) {
		if b := s.out.batch[s.txn.beginAt]; b.Type == binlogdata.VEventType_BEGIN {
			b.Keyspace = k.cfg.Keyspace
		}
	}
}

// useTxnKeyspace labels the end of a transaction with its keyspace (see enter).
func (s *stream) useTxnKeyspace() {
	if !s.multi() {
		return
	}
	k := s.txnKs
	if k == nil {
		k = s.keyspaces[0]
	}
	s.use(k)
	s.txnKs = nil
}

// nextCopy is the first keyspace with tables still to copy, nil when none has.
func (s *stream) nextCopy() *keyspaceStream {
	for _, k := range s.keyspaces {
		if k.copy.active() {
			return k
		}
	}
	return nil
}

// copyingOthers reports a keyspace other than the current one with tables still to copy:
// the copy of the whole stream is not over when the current keyspace's is.
func (s *stream) copyingOthers() bool {
	for _, k := range s.keyspaces {
		if k != s.ks && k.copy.active() {
			return true
		}
	}
	return false
}

// forgetField drops the record of a FIELD event that was not sent after all, in the
// keyspace it was for.
func (s *stream) forgetField(ev *binlogdata.VEvent) {
	for _, k := range s.keyspaces {
		if k.cfg.Keyspace == ev.GetKeyspace() {
			delete(k.fieldsFor, ev.GetFieldEvent().GetTableName())
		}
	}
}

// shardGtids is the stream's position as VGtid entries: one per keyspace, each with its
// own copy state.
func (s *stream) shardGtids() []*binlogdata.ShardGtid {
	pos := s.cursor.pos.String()
	out := make([]*binlogdata.ShardGtid, len(s.keyspaces))
	for i, k := range s.keyspaces {
		out[i] = &binlogdata.ShardGtid{Keyspace: k.cfg.Keyspace, Shard: k.cfg.Shard, Gtid: pos, TablePKs: k.copy.tablePKs()}
	}
	return out
}

// statementKeyspace picks the keyspace a statement-based change (or a LOAD DATA) belongs
// to: that of the databases of the tables it names, or of its default database when they
// cannot be read. It fails a statement writing tables of two streamed keyspaces, whose
// changes one event of one keyspace cannot carry.
func (s *stream) statementKeyspace(defaultDB string, tables []sqltext.Table, sql string) (*keyspaceStream, error) {
	if !s.multi() {
		return s.ks, nil
	}
	var found *keyspaceStream
	for _, t := range tables {
		db := t.DB
		if db == "" {
			db = defaultDB
		}
		k := s.keyspaceOf([]byte(db))
		if k == nil || k == found {
			continue
		}
		if found != nil {
			return nil, fmt.Errorf("%w: transaction %s changes tables of keyspaces %q and %q by one statement (%q), which one event cannot carry; "+
				"set binlog_format=ROW on the source, or stream the keyspaces separately", ErrStatementChange, s.cursor.gti(), found.cfg.Keyspace, k.cfg.Keyspace, sql)
		}
		found = k
	}
	if found == nil {
		if found = s.keyspaceOf([]byte(defaultDB)); found == nil {
			found = s.ks
		}
	}
	return found, nil
}
