package vstreamer

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/vstream-cdc/vstream/internal/faults"
	"github.com/vstream-cdc/vstream/position"
	"github.com/vstream-cdc/vstream/sqltext"
	"github.com/vstream-cdc/vstream/vstreamer/history"
	"github.com/vstream-cdc/vstream/vstreamer/schema"
)

// StageSchemaHistory names the schema history tracker in a PanicError.
const StageSchemaHistory = "schema history"

// Tuning of the schema history tracker.
const (
	// historyWait bounds how long a stream waits for the tracker to reach the position of a
	// row it describes; past it the stream describes the row as it would without a history.
	historyWait = 5 * time.Second
	// historyPersist is how often the checkpoint of a tracker that sees no DDL is written.
	historyPersist = time.Second
	// historyBackoffMin and historyBackoffMax bound the wait before a failed tracker starts
	// again; a run that lasted historyStable resets it.
	historyBackoffMin = 100 * time.Millisecond
	historyBackoffMax = 30 * time.Second
	historyStable     = time.Minute
)

// RunSchemaHistory keeps the schema history of Config.SchemaHistoryDir until ctx ends, and
// then closes it. It reads the binlog with a connection of its own: from the server's
// current position the first time (recording every table's definition there), from the
// history's checkpoint after that. On each DDL it records the new definitions of the tables
// the DDL names, read from information_schema. It starts again, after a growing pause, when
// it fails or panics; SchemaHistoryRestarts counts those. While it runs, streams describe
// their rows with the definitions in force at the rows' positions. It returns when ctx ends,
// with nil: every failure is one starting again may mend.
func (e *Engine) RunSchemaHistory(ctx context.Context) error {
	h := e.hist
	if h == nil {
		return nil
	}
	defer func() { _ = h.Close() }() // nothing is lost: every entry is synced when written
	e.histRunning.Store(true)
	defer e.histRunning.Store(false)
	log := e.cfg.Logger.With("component", "schema-history")
	backoff := historyBackoffMin
	for {
		started := time.Now()
		err := e.trackHistory(ctx, h)
		e.histLive.Store(false)
		if ctx.Err() != nil {
			return nil
		}
		if time.Since(started) > historyStable {
			backoff = historyBackoffMin
		}
		e.histRestarts.Add(1)
		log.Warn("schema history tracker failed; starting it again", "err", err, "after", backoff)
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return nil
		}
		backoff = min(2*backoff, historyBackoffMax)
	}
}

// SchemaHistoryRestarts is how many times the schema history tracker failed and started again.
func (e *Engine) SchemaHistoryRestarts() uint64 { return e.histRestarts.Load() }

// history is the schema history streams look definitions up in: nil unless one is
// configured and its tracker runs. wait is how long a lookup may wait for the tracker: none
// while it is between a failure and its next start, when waiting would hold every new table
// of every stream for nothing.
func (e *Engine) history() (h *history.History, wait time.Duration) {
	if !e.histRunning.Load() {
		return nil, 0
	}
	if e.histLive.Load() {
		wait = historyWait
	}
	return e.hist, wait
}

// historyTracker is one run of the tracker: its connection and position.
type historyTracker struct {
	e    *Engine
	h    *history.History
	conn *client.Conn
	db   string
	pos  position.Position
	// gtid is the GTID of the transaction being read; inTxn is set between its BEGIN and
	// its end; pending are the tables DDLs inside it named (CREATE TABLE ... SELECT).
	gtid    string
	inTxn   bool
	pending []string
	saved   time.Time
}

// trackHistory runs the tracker once, until it fails or ctx ends. A panic becomes its error.
func (e *Engine) trackHistory(ctx context.Context, h *history.History) (err error) {
	t := &historyTracker{e: e, h: h, db: e.cfg.Database}
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Stage: StageSchemaHistory, Position: t.pos.String(), Value: v, Stack: debug.Stack()}
		}
	}()
	if t.conn, err = e.connect(ctx); err != nil {
		return err
	}
	defer func() { _ = t.conn.Close() }() // only read from
	info, err := e.source().inspect(ctx, e, true)
	if err != nil {
		return err
	}
	if err = t.start(info); err != nil {
		return err
	}
	streamer, closeReader, err := e.historyReader(t.pos, info)
	if err != nil {
		return err
	}
	defer closeReader()
	// The checkpoint is written when the tracker stops too, so that it starts again close by.
	defer func() { _ = t.h.Advance(t.pos, true) }()
	e.histLive.Store(true)
	for {
		ev, err := streamer.GetEvent(ctx)
		if err != nil {
			return fmt.Errorf("%w: schema history: binlog at %s: %v", ErrUnavailable, t.pos, err)
		}
		if err := t.handle(ev); err != nil {
			return err
		}
	}
}

// historyReader opens the tracker's binlog reader after the transactions in pos. Where the
// streams share the engine's readers, the tracker reads through them as one more stream: at
// the server's head it shares the streams' dump connection and decoding. Where every stream
// reads on its own, so does the tracker, without decoding rows (only their transactions'
// ends move its position).
func (e *Engine) historyReader(pos position.Position, info *serverInfo) (binlogReader, func(), error) {
	log := e.cfg.Logger.With("component", "schema-history-binlog")
	if _, shared := e.source().(sharedSource); shared {
		atHead := pos.Contains(info.current) && info.current.Contains(pos)
		c := e.readers.Attach(pos, atHead, e.sharedDump(syncerConfig(&e.cfg, info, true, log), info), nil)
		return c, c.Close, nil
	}
	cfg := syncerConfig(&e.cfg, info, false, log)
	cfg.RowsEventDecodeFunc = func(*replication.RowsEvent, []byte) error { return nil }
	streamer, stop, err := e.openDump(cfg, pos, e.dumpPlace(info, pos))
	if err != nil {
		return nil, nil, fmt.Errorf("schema history: %w", err)
	}
	return streamer, stop, nil
}

// start finds where to read from: the checkpoint, or, for a new history or one whose
// checkpoint the server has purged, the server's current position, where every table's
// definition is recorded first. Rows in a purged gap cannot be streamed, so no lookup
// needs the definitions it would have held.
func (t *historyTracker) start(info *serverInfo) error {
	cp, ok := t.h.Checkpoint()
	if ok && cp.Flavor == info.flavor && position.Missing(cp, info.purged) == "" {
		t.pos = cp
		return nil
	}
	if ok {
		t.e.cfg.Logger.Warn("schema history: the server no longer has the binlogs after its checkpoint; recording the tables as they are now",
			"checkpoint", cp.String(), "purged", info.purged.String())
	}
	t.pos = info.current.Clone()
	res, err := t.conn.Execute("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_TYPE = 'BASE TABLE'", t.db)
	if err != nil {
		return fmt.Errorf("%w: schema history: list tables: %v", ErrUnavailable, err)
	}
	tables := make([]string, 0, res.RowNumber())
	for i := range res.RowNumber() {
		tables = append(tables, resultString(res, i, 0))
	}
	res.Close()
	// Tables the history holds that are gone now.
	tables = append(tables, t.h.Tables(t.db)...)
	if err := t.record(t.pos, tables); err != nil {
		return err
	}
	return t.h.Advance(t.pos, true)
}

// record reads the definitions of tables now and records them at pos.
func (t *historyTracker) record(pos position.Position, tables []string) error {
	seen := make(map[string]bool, len(tables))
	for _, name := range tables {
		if seen[name] || schema.Internal(name) {
			continue
		}
		seen[name] = true
		cols, err := schema.Load(t.conn, t.db, name)
		if err != nil {
			return fmt.Errorf("%w: schema history: %v", ErrUnavailable, err)
		}
		if err := t.h.Record(pos, t.db, name, cols); err != nil {
			return err
		}
	}
	return nil
}

func (t *historyTracker) handle(ev *replication.BinlogEvent) error {
	if faults.Enabled() {
		faults.At(faults.SchemaHistory, "", ev)
	}
	switch e := ev.Event.(type) {
	case *replication.MariadbGTIDEvent:
		t.gtid = formatMariaDBGTID(e.GTID)
		t.inTxn = !e.IsStandalone()
	case *replication.GTIDEvent:
		return t.mysqlGTID(e)
	case *replication.GtidTaggedLogEvent:
		return t.mysqlGTID(&e.GTIDEvent)
	case *replication.TransactionPayloadEvent:
		// A compressed transaction (binlog_transaction_compression=ON): its events, in order.
		for _, inner := range e.Events {
			if err := t.handle(inner); err != nil {
				return err
			}
		}
	case *replication.XIDEvent:
		return t.commit(nil)
	case *replication.GenericEvent:
		if xaOnePhase(ev) {
			return t.commit(nil)
		}
	case *replication.QueryEvent:
		kind, tables, parsed := sqltext.Classify(string(e.Query))
		switch kind {
		case sqltext.Begin:
			t.inTxn = true
			return nil
		case sqltext.Commit, sqltext.Rollback:
			return t.commit(nil)
		case sqltext.DDL, sqltext.Executable:
			if t.inTxn {
				t.pending = append(t.pending, t.ddlTables(string(e.Schema), tables, parsed)...)
				return nil
			}
			return t.commit(t.ddlTables(string(e.Schema), tables, parsed))
		default:
			if !t.inTxn {
				return t.commit(nil)
			}
		}
	}
	return nil
}

// mysqlGTID starts a MySQL transaction. It opens with BEGIN, unless it is a DDL, which
// commits by itself.
func (t *historyTracker) mysqlGTID(e *replication.GTIDEvent) error {
	g, ok := mysqlGTIDString(e)
	if !ok {
		return fmt.Errorf("%w: schema history: a transaction without a GTID (gtid_mode is no longer ON) after %s", ErrServerConfig, t.pos)
	}
	t.gtid, t.inTxn = g, false
	return nil
}

// ddlTables are the tables of the tracked database a DDL changes: those it names, or, for a
// DDL it cannot read, every table the database has or the history knows.
func (t *historyTracker) ddlTables(defaultDB string, tables []sqltext.Table, parsed bool) []string {
	if !parsed {
		out := t.h.Tables(t.db)
		res, err := t.conn.Execute("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_TYPE = 'BASE TABLE'", t.db)
		if err == nil {
			for i := range res.RowNumber() {
				out = append(out, resultString(res, i, 0))
			}
			res.Close()
		}
		if out == nil {
			out = []string{}
		}
		return out
	}
	var out []string
	for _, tb := range tables {
		db := tb.DB
		if db == "" {
			db = defaultDB
		}
		if db == t.db {
			out = append(out, tb.Name)
		}
	}
	if out == nil {
		out = []string{}
	}
	return out
}

// commit ends a transaction: the position moves past it, and a DDL's tables (non-nil) are
// recorded at the new position before the history says it is complete there.
func (t *historyTracker) commit(ddlTables []string) error {
	next := t.pos
	if t.gtid != "" {
		// The position moves only once the DDL's tables are recorded: a failure between the
		// two must not leave a checkpoint past a DDL the history lacks.
		next = t.pos.Clone()
		if err := next.Update(t.gtid); err != nil {
			return fmt.Errorf("schema history: advance %s by %s: %w", t.pos, t.gtid, err)
		}
	}
	if t.pending != nil {
		ddlTables = append(t.pending, ddlTables...)
	}
	t.gtid, t.inTxn, t.pending = "", false, nil
	if ddlTables != nil {
		if err := t.record(next, ddlTables); err != nil {
			return err
		}
	}
	t.pos = next
	persist := ddlTables != nil || time.Since(t.saved) >= historyPersist
	if persist {
		t.saved = time.Now()
	}
	return t.h.Advance(t.pos, persist)
}
