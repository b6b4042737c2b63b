package vstreamer

import (
	"slices"

	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/vstream-cdc/vstream/vstreamer/schema"
)

// streamed reports whether the stream sends the changes of a table: one of the database of
// one of its keyspaces that the keyspace's filter selects (buildPlan's test). It depends on the
// database and the name only, and reads only what does not change while the stream runs (not
// cfg and filter, which follow the keyspace being handled), so the reader goroutine may ask.
func (s *stream) streamed(db, table string) bool {
	for _, k := range s.keyspaces {
		if k.cfg.Database == db {
			return !schema.Internal(table) && k.filter.Table(table) != nil
		}
	}
	return false
}

// leavesOut reports whether the table map and rows events of a table need not reach the
// stream goroutine: the table is not streamed, and the stream carries no sources (which
// count every rows event of a transaction).
func (s *stream) leavesOut(db, table string) bool {
	return !s.withSrc && !s.streamed(db, table)
}

// unsentTypes are the binlog event types the stream goroutine does nothing with but for
// streams with sources: MariaDB's annotate rows events, whose SQL only sources carry.
var unsentTypes = []replication.EventType{replication.MARIADB_ANNOTATE_ROWS_EVENT}

// unsentType reports an event type the stream goroutine need not get (unsentTypes).
func (s *stream) unsentType(t replication.EventType) bool {
	return !s.withSrc && slices.Contains(unsentTypes, t)
}

// unsent is what a stream's binlog reader goroutine knows of the tables the stream leaves
// out (leavesOut), to drop their events before they reach the stream goroutine, which would
// do nothing with them: on a shared reader every stream reads every event of the binlog, and
// most of a filtered stream's are other tables' rows. A shared reader's cursor leaves them
// out itself (sharedSource). The transaction's GTID and the event that ends it still reach
// the stream goroutine, which moves the position by them.
type unsent struct {
	s *stream
	// tables is the verdict on each table id of the table maps read.
	tables map[uint64]tableVerdict
}

type tableVerdict struct {
	db, name string
	leftOut  bool
}

// drops reports an event the stream goroutine would do nothing with: a table map or rows
// event of a table the stream leaves out, or MariaDB's annotate rows event when the stream
// carries no sources.
func (u *unsent) drops(ev *replication.BinlogEvent) bool {
	switch e := ev.Event.(type) {
	case *replication.TableMapEvent:
		return u.tableMap(e)
	case *replication.RowsEvent:
		v, ok := u.tables[e.TableID]
		return ok && v.leftOut
	case *replication.MariadbAnnotateRowsEvent:
		return u.s.unsentType(replication.MARIADB_ANNOTATE_ROWS_EVENT)
	case *replication.FormatDescriptionEvent:
		// Table ids are reused after a server restart.
		clear(u.tables)
	default:
		// The stream goroutine handles every other event.
	}
	return false
}

// tableMap reports whether a table map's table is left out, judged again only when its table
// id names another table.
func (u *unsent) tableMap(tm *replication.TableMapEvent) bool {
	if v, ok := u.tables[tm.TableID]; ok && v.name == string(tm.Table) && v.db == string(tm.Schema) {
		return v.leftOut
	}
	if u.tables == nil || len(u.tables) > 4096 {
		// Table ids grow with every table definition the server loads; only recent ones
		// matter.
		u.tables = make(map[uint64]tableVerdict)
	}
	v := tableVerdict{db: string(tm.Schema), name: string(tm.Table)}
	v.leftOut = u.s.leavesOut(v.db, v.name)
	u.tables[tm.TableID] = v
	return v.leftOut
}
