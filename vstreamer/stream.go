package vstreamer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"golang.org/x/sync/errgroup"

	"github.com/vstream-cdc/vstream/filter"
	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/internal/faults"
	"github.com/vstream-cdc/vstream/position"
	"github.com/vstream-cdc/vstream/sqltext"
	"github.com/vstream-cdc/vstream/vstreamer/fanout"
)

// stream is the state of one stream. One goroutine (run) owns it.
type stream struct {
	eng *Engine
	log *slog.Logger
	// sql runs a short use of a SQL connection (table definitions, collations), leased from
	// the engine's pool for that use only.
	sql sqlUse

	// keyspaces are the keyspaces streamed, in the client's order; ks is the one the stream's
	// code works with (see use), whose database, labels, filter, FIELD record and copy the
	// embedded keyspaceStream holds as a copy of *ks, read without going through ks; txnKs
	// is the keyspace of the transaction being read (see enter).
	keyspaces []*keyspaceStream
	ks        *keyspaceStream
	keyspaceStream
	txnKs *keyspaceStream

	// cursor is where the stream is in the binlog, and txn what the binlog said about the
	// transaction being read (txn.go).
	cursor cursor
	txn    txnSource
	// now is the wall clock (ns) stamped as current_time on the events being produced; 0
	// until clock reads it for the event being handled.
	now int64

	// plans are the plans of the binlog's table ids (plan.go), and scratch the before and
	// after image of a row being filtered.
	plans   map[uint64]*tablePlan
	scratch [2]rowScratch

	// out is the batch of events being put together and the send that takes it (outbox.go),
	// beats the heartbeat the client asked for (heartbeat.go), skip what the stream keeps of
	// the transactions it skips (skip.go), in what nextEvent keeps of the events it takes
	// (intake.go), and drain the engine's drain, as the stream sees it.
	out   outbox
	beats heartbeat
	skip  skips
	in    intake
	drain drainWatch

	// lag holds the copy back while the server lags its source (copythrottle.go), and
	// copying is the table whose chunk is being read, to name it if the stream panics.
	lag     lagGate
	copying *copyTable

	// observer hears the stream's position, copy progress, reader and poison events, when
	// the caller set one; withSrc stamps events with their EventSource; failMode is what a
	// poison event does (FailStop, FailWarn, FailSkip).
	observer Observer
	withSrc  bool
	failMode string
}

// Queue lengths between the binlog connection, its decoder and the stream loop. They bound
// what a stalled client makes the server hold (a few dozen binlog events per stream) while
// letting decoding run ahead of encoding.
const (
	decodedQueue = 64
	loopQueue    = 16
)

func (s *stream) run(ctx context.Context, info *serverInfo, current bool) error {
	s.cursor.atCurrent = current
	streamer, closeReader, err := s.eng.source().open(s, info)
	if err != nil {
		return err
	}
	defer closeReader()

	events := make(chan *replication.BinlogEvent, loopQueue)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return s.read(gctx, streamer, events) })
	g.Go(func() (err error) {
		defer catch(&err, StageStream, s.where)
		err = s.loop(gctx, events, current)
		if err == nil {
			err = context.Canceled
		}
		return err
	})
	err = g.Wait()
	s.settle(err)
	return s.classify(err)
}

// read hands the binlog's events to the stream goroutine, but for those it would do nothing
// with (see unsent). It touches no stream state. It does
// not close events when it fails: the stream goroutine would see that before the errgroup has
// the failure, and end the stream as cancelled; it ends on the errgroup's cancel instead.
func (s *stream) read(ctx context.Context, streamer binlogReader, events chan<- *replication.BinlogEvent) (err error) {
	var ev *replication.BinlogEvent
	defer catch(&err, StageRead, func(pe *PanicError) { pe.Table = eventTable(ev) })
	var where readPlace
	where.names, _ = streamer.(tableNamer)
	where.failedIn, _ = streamer.(interface{ FailedIn() string })
	skip := unsent{s: s}
	for {
		ev, err = streamer.GetEvent(ctx)
		if err != nil {
			return where.failed(where.undecodable(err))
		}
		where.saw(ev)
		if faults.Enabled() {
			faults.At(faults.Read, s.readTable(ev), ev)
		}
		if skip.drops(ev) {
			continue
		}
		// Sent without the two-way select when there is room: it locks both channels.
		select {
		case events <- ev:
			continue
		default:
		}
		select {
		case events <- ev:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// classify wraps binlog errors with the sentinel the server maps to a status code.
func (s *stream) classify(err error) error {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
		return err
	}
	var me *mysql.MyError
	if errors.As(err, &me) && me.Code == mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG {
		if s.cursor.atBadOffset(err) {
			return fmt.Errorf("%w: position %s is not where a binlog event starts: %s (errno %d); resume from a position this server sent",
				position.ErrBadPosition, s.cursor.pos, me.Message, me.Code)
		}
		if diverged(me.Message) {
			return fmt.Errorf("%w: at %s: the server's binlog lacks the position's GTID: its history diverged from that of the server the position was taken on (a replica promoted before it applied its primary's last transactions writes others under their numbers): %s (errno %d)",
				ErrAhead, s.cursor.pos, me.Message, me.Code)
		}
		return fmt.Errorf("%w: at %s: %s (errno %d)", ErrPurged, s.cursor.pos, me.Message, me.Code)
	}
	for _, sentinel := range []error{ErrSchema, ErrUnavailable, filter.ErrInvalid, ErrPanic, ErrPoison} {
		if errors.Is(err, sentinel) {
			return err
		}
	}
	if errors.Is(err, replication.ErrNeedSyncAgain) || errors.Is(err, replication.ErrSyncClosed) || isNetErr(err) {
		return fmt.Errorf("%w: binlog connection lost at %s: %v", ErrUnavailable, s.cursor.pos, err)
	}
	return fmt.Errorf("stream at %s: %w", s.cursor.pos, err)
}

// diverged reports MariaDB's refusal of a start GTID its binlog lacks although the binlog
// goes on past that GTID's sequence number in the domain (ER_GTID_POSITION_NOT_FOUND_IN_BINLOG
// and ...BINLOG2, sent as errno 1236): the server wrote other transactions under those
// numbers, as a replica promoted before it applied its primary's last ones does. MariaDB
// positions hold one GTID per domain, so resolve, comparing sequence numbers, cannot see it;
// the position holds a transaction the server has not executed, which is ErrAhead, not a
// purge: another server of the shard may have it, and "start from a newer position" would
// skip it.
func diverged(msg string) bool {
	return strings.Contains(msg, "requested to start from GTID") && strings.Contains(msg, "which is not in the")
}

func isNetErr(err error) bool {
	var ne interface{ Timeout() bool }
	return errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, mysql.ErrBadConn)
}

func (s *stream) loop(ctx context.Context, events <-chan *replication.BinlogEvent, current bool) error {
	s.out.lastSend = time.Now()
	s.skip.lastVGTID = nowNanos()
	defer s.skip.stop()
	if current {
		// Starting "now" gives the client a resume point at once.
		s.now = nowNanos()
		s.add(s.gtidEvent(0), &binlogdata.VEvent{Type: binlogdata.VEventType_OTHER}, s.vgtidEvent())
		if err := s.out.flush(); err != nil {
			return err
		}
	}
	s.beats.start()
	defer s.beats.stop()
	for {
		if s.drain.seen && !s.cursor.inTxn {
			if s.skip.pending {
				s.add(s.vgtidEvent())
			}
			if err := s.out.flush(); err != nil {
				return err
			}
			return fmt.Errorf("%w: the stream ended after position %s; resume from the last VGTID received", ErrShuttingDown, s.cursor.pos)
		}
		if k := s.nextCopy(); k != nil {
			s.use(k)
			if err := s.copyStep(ctx, events); err != nil {
				return err
			}
			continue
		}
		ev, err := s.nextEvent(ctx, events)
		if err != nil {
			return err
		}
		if ev == nil {
			continue
		}
		if err := s.handle(ev); err != nil {
			if err = s.poisoned(err); err != nil {
				return err
			}
		}
		lone := s.skip.pending && !s.cursor.inTxn && s.skip.readsClock() && s.skip.loneDue(s.clock())
		if lone {
			// A run of skipped transactions longer than the delay: its position goes out
			// now, whatever is queued behind it.
			s.add(s.vgtidEvent())
		}
		if lone || s.out.overBatch() || (len(s.out.batch) > 0 && !s.cursor.inTxn && len(events) == 0 && !s.in.running()) {
			if err := s.out.flush(); err != nil {
				return err
			}
		}
	}
}

// nextEvent waits for the next binlog event. It sends a HEARTBEAT when the stream has been
// idle for the requested interval, and then returns a nil event.
func (s *stream) nextEvent(ctx context.Context, events <-chan *replication.BinlogEvent) (*replication.BinlogEvent, error) {
	var tick, pend <-chan time.Time
	tick = s.beats.tick()
	pend = s.skip.tick()
	// A waiting event is taken without the full select, which locks every channel in it and
	// was, per stream and event, the stream goroutine's largest cost; every fairEvery-th
	// call selects over all, so a drain or a due heartbeat or position still goes first
	// sometimes, as it would by chance anyway.
	if s.in.quick < fairEvery {
		if s.in.running() {
			s.in.quick++
			return s.in.nextEnd(), nil
		}
		select {
		case ev, ok := <-events:
			if !ok {
				return nil, context.Canceled
			}
			s.in.quick++
			return s.in.unrun(ev), nil
		default:
		}
	}
	s.in.quick = 0
	// The events of a run go before those queued behind it.
	in, inRun := events, (<-chan struct{})(nil)
	if s.in.running() {
		in, inRun = nil, alwaysReady
	}
	select {
	case ev, ok := <-in:
		if !ok {
			return nil, context.Canceled
		}
		return s.in.unrun(ev), nil
	case <-inRun:
		return s.in.nextEnd(), nil
	case <-s.drain.ch:
		// Finish the transaction in progress, then end (see loop).
		s.drain.seen, s.drain.ch = true, nil
		return nil, nil
	case <-tick:
		if s.beats.due(&s.out) {
			s.now = nowNanos()
			s.add(&binlogdata.VEvent{Type: binlogdata.VEventType_HEARTBEAT, Timestamp: s.now / int64(time.Second)})
			if s.skip.pending && !s.cursor.inTxn {
				// The heartbeat carries the position skipped transactions moved.
				s.add(s.vgtidEvent())
			}
			if err := s.out.flush(); err != nil {
				return nil, err
			}
			s.beats.rearm()
		}
		return nil, nil
	case <-pend:
		if s.skip.pending && !s.cursor.inTxn {
			s.now = nowNanos()
			s.add(s.vgtidEvent())
			if err := s.out.flush(); err != nil {
				return nil, err
			}
		}
		return nil, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func nowNanos() int64 { return time.Now().UnixNano() }

// drainWatch is the engine's drain as a stream sees it.
type drainWatch struct {
	// ch closes when the engine drains; nil once the stream has seen it (seen).
	ch   <-chan struct{}
	seen bool
}

// alwaysReady is a closed channel: a select case on it is always ready.
var alwaysReady = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// heartbeatWhile sends heartbeats from a second goroutine while the stream goroutine is
// blocked in a long server-side read (a copy chunk whose rows the server filters out). It
// returns the function that stops it.
func (s *stream) heartbeatWhile() (stop func()) {
	if s.beats.interval <= 0 {
		return func() {}
	}
	first := s.keyspaces[0].cfg
	return s.beats.while(&s.out, first.Keyspace, first.Shard, func() string { return s.copying.tableName() })
}

// add appends events to the batch, stamping the fields every event carries. Events of types
// the client did not ask for are dropped here; those that end a batch still end it, since
// the callers flush after them.
func (s *stream) add(evs ...*binlogdata.VEvent) {
	for _, ev := range evs {
		if !s.out.wants(ev.Type) {
			continue
		}
		if s.txn.beginDue && ev.Type != binlogdata.VEventType_HEARTBEAT {
			s.openTxn()
		}
		s.push(ev)
	}
}

// push appends a wanted event to the batch.
func (s *stream) push(ev *binlogdata.VEvent) {
	ev.CurrentTime = s.clock()
	ev.Keyspace = s.cfg.Keyspace
	ev.Shard = s.cfg.Shard
	s.out.batch = append(s.out.batch, ev)
	s.out.batchSize += 32
}

// clock is now, read once per event handled.
func (s *stream) clock() int64 {
	if s.now == 0 {
		s.now = nowNanos()
	}
	return s.now
}

func (s *stream) handle(ev *replication.BinlogEvent) error {
	if t, ok := ev.Event.(*fanout.TxnEnds); ok {
		// Transactions the shared reader left all but their ends of: each handled as its
		// two events, each as the loop handles one.
		for _, txn := range t.Txns {
			for _, ev := range [2]*replication.BinlogEvent{txn.First, txn.Last} {
				if err := s.handle(ev); err != nil {
					if err = s.poisoned(err); err != nil {
						return err
					}
				}
			}
		}
		return nil
	}
	// Read by clock when an event or the pending position needs it: most events of a
	// filtered stream need none.
	s.now = 0
	s.cursor.saw(ev)
	ts := ev.Header.Timestamp
	switch e := ev.Event.(type) {
	case *replication.RotateEvent:
		s.cursor.rotate(e)
	case *replication.MariadbGTIDEvent:
		// Its text is written when an event or an error needs it (gti).
		s.cursor.enter(txnGTID{flavor: position.MariaDB, mariadb: e.GTID})
		s.txn = txnSource{}
		if !e.IsStandalone() {
			s.begin(ts)
		}
	case *replication.GTIDEvent:
		return s.mysqlGTID(e)
	case *replication.GtidTaggedLogEvent:
		return s.mysqlGTID(&e.GTIDEvent)
	case *replication.TransactionPayloadEvent:
		return s.payload(ev, e)
	case *replication.QueryEvent:
		if err := s.checkQuery(e); err != nil {
			return err
		}
		return s.query(ts, e)
	case *replication.ExecuteLoadQueryEvent:
		return s.loadData(ev.RawData)
	case *replication.XIDEvent:
		return s.xidCommit(ts, e.XID)
	case *replication.MariadbAnnotateRowsEvent:
		if s.withSrc {
			s.txn.query = string(e.Query)
		}
	case *replication.RowsQueryEvent:
		// MySQL logs it (binlog_rows_query_log_events=ON) before the rows events of each
		// statement; like Vitess, it is sent whatever tables the statement changed, as the
		// filter cannot tell them from the SQL. MariaDB's Annotate_rows is not sent: the
		// server logs it by default, so it would add an event to every transaction.
		if s.withSrc {
			s.txn.query = string(e.Query)
		}
		if s.out.wants(binlogdata.VEventType_ROWS_QUERY) {
			s.add(&binlogdata.VEvent{Type: binlogdata.VEventType_ROWS_QUERY, Timestamp: int64(ts), EventGtid: s.cursor.gti(),
				Statement: string(e.Query)})
			// A statement may be megabytes (a multi-row INSERT): it counts toward the batch.
			s.out.batchSize += len(e.Query)
		}
	case *replication.TableMapEvent:
		return s.tableMap(ts, e)
	case *replication.RowsEvent:
		if err := s.checkRows(ev.Header.EventType, e); err != nil {
			return err
		}
		return s.rows(ts, ev.Header.EventType, e)
	case *replication.FormatDescriptionEvent:
		// Table ids are reused after a server restart.
		clear(s.plans)
	default:
		return s.unhandled(ev)
	}
	return nil
}

func (s *stream) query(ts uint32, e *replication.QueryEvent) error {
	if string(e.Query) == "BEGIN" {
		// MySQL's every transaction: read without a copy of the text.
		s.txn.threadID = uint64(e.SlaveProxyID)
		s.begin(ts)
		return nil
	}
	sql := string(e.Query)
	kind, tables, parsed := sqltext.Classify(sql)
	s.txn.threadID = uint64(e.SlaveProxyID)
	db := string(e.Schema)
	switch kind {
	case sqltext.Begin:
		s.begin(ts)
		return nil
	case sqltext.Commit:
		return s.commit(ts, &binlogdata.VEvent{Type: binlogdata.VEventType_COMMIT})
	case sqltext.Rollback:
		if err := s.rollback(sql); err != nil {
			return err
		}
		// The transaction's GTID is spent: the position moves past it.
		return s.commit(ts, &binlogdata.VEvent{Type: binlogdata.VEventType_COMMIT})
	case sqltext.Savepoint:
		return s.savepoint(sql)
	case sqltext.Insert, sqltext.Update, sqltext.Delete, sqltext.Replace:
		return s.statementDML(ts, kind, db, tables, parsed, sql)
	default:
		// DDL, LOAD, executable comments and the other statements, below.
	}
	if s.cursor.inTxn {
		// Other statements inside a transaction (temporary tables and the like) change no
		// streamed table; the transaction's changes and commit follow.
		return nil
	}
	typ := binlogdata.VEventType_OTHER
	if kind == sqltext.DDL || kind == sqltext.Executable {
		typ = s.ddlKeyspaces(kind, db, tables, parsed)
	}
	// OTHER carries no statement, as in Vitess: it may be a DDL of a table the filter leaves
	// out, or a GRANT or CREATE USER with a password.
	ev := &binlogdata.VEvent{Type: typ}
	if typ == binlogdata.VEventType_DDL {
		ev.Statement = sql
	}
	if ev.Source = s.source(); ev.Source != nil {
		ev.Source.Database = db
		ev.Source.ThreadId = s.txn.threadID
	}
	return s.commit(ts, ev)
}

// ddlKeyspaces makes each keyspace forget the tables a DDL or executable comment touched,
// and says whether it is a DDL of a streamed table (DDL) or not (OTHER). Its event goes to
// the first keyspace it names a streamed table of, else to the keyspace of its default
// database.
func (s *stream) ddlKeyspaces(kind sqltext.Kind, db string, tables []sqltext.Table, parsed bool) binlogdata.VEventType {
	if !s.multi() {
		typ := binlogdata.VEventType_OTHER
		if kind == sqltext.DDL && s.ddlMatches(db, tables, parsed) {
			typ = binlogdata.VEventType_DDL
		}
		s.forget(db, tables, parsed)
		return typ
	}
	typ := binlogdata.VEventType_OTHER
	s.txnKs = s.keyspaceOf([]byte(db))
	for _, k := range s.keyspaces {
		s.use(k)
		if typ == binlogdata.VEventType_OTHER && kind == sqltext.DDL && s.ddlMatches(db, tables, parsed) {
			typ, s.txnKs = binlogdata.VEventType_DDL, k
		}
		s.forget(db, tables, parsed)
	}
	return typ
}

// ddlMatches reports whether a DDL names a streamed table of the keyspace's database.
func (s *stream) ddlMatches(defaultDB string, tables []sqltext.Table, parsed bool) bool {
	if !parsed {
		// A DDL we cannot read is sent as is, as Vitess does.
		return defaultDB == s.cfg.Database
	}
	for _, t := range tables {
		db := t.DB
		if db == "" {
			db = defaultDB
		}
		if db == s.cfg.Database && s.filter.Table(t.Name) != nil {
			return true
		}
	}
	return false
}

// forget drops what is known about tables a DDL touched, so their schema is read again and
// their next row is preceded by a FIELD event.
func (s *stream) forget(defaultDB string, tables []sqltext.Table, parsed bool) {
	if !parsed {
		clear(s.plans)
		clear(s.fieldsFor)
		return
	}
	for _, t := range tables {
		db := t.DB
		if db == "" {
			db = defaultDB
		}
		if db != s.cfg.Database {
			continue
		}
		delete(s.fieldsFor, t.Name)
		for id, p := range s.plans {
			if p.name == t.Name {
				delete(s.plans, id)
			}
		}
	}
}

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
