package vstreamer

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/vstream-cdc/vstream/filter"
	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	"github.com/vstream-cdc/vstream/position"
)

// RowsRequest asks for the rows of one table as of a consistent snapshot, the way Vitess's
// VStreamRows does: vreplication copies a table with it and then streams the binlog from the
// snapshot's position.
type RowsRequest struct {
	// Keyspace names the database to read (see Engine.Database); empty is the configured one.
	Keyspace string
	// Query is a rule filter on one table: select <cols> from t [where <conds>].
	Query string
	// LastPK, when it has a row, is the key of the last row the client holds (the PKFields of
	// an earlier answer): rows after it are read.
	LastPK *query.QueryResult
	// MaxBatchBytes bounds the row bytes of one batch; zero means the engine's MaxBatchBytes.
	MaxBatchBytes int
	// HeartbeatInterval sends a batch with Heartbeat set this often while the rows are read;
	// zero sends none.
	HeartbeatInterval time.Duration
}

// TablesRequest asks for the rows of every table of the database, from one snapshot.
type TablesRequest struct {
	// Keyspace names the database to read (see Engine.Database); empty is the configured one.
	Keyspace          string
	MaxBatchBytes     int
	HeartbeatInterval time.Duration
}

// RowsBatch is one piece of a table read. A table's first batch has Fields, PKFields and GTID
// (the snapshot's position, flavor-prefixed); the next ones have Rows and the key of the last
// row read in LastPK, which may be a row the query's conditions left out. Table names the
// table on every batch.
type RowsBatch struct {
	Table     string
	Fields    []*query.Field
	PKFields  []*query.Field
	GTID      string
	Rows      []*query.Row
	LastPK    *query.Row
	Heartbeat bool
}

// RowsFunc receives one batch. The batch and its rows are reused once it returns; it must
// not keep them. Returning an error ends the read with that error.
type RowsFunc func(*RowsBatch) error

// StreamRows reads the rows of the table req.Query selects, after req.LastPK, from one
// consistent snapshot, in key order. Tables without a usable key are ordered by all their
// columns, as Vitess does. The query's ukColumns and ukForce directives choose another
// unique key to order by (filter.ParseDirectives, snapshotReader.applyDirectives).
func (e *Engine) StreamRows(ctx context.Context, req RowsRequest, send RowsFunc) error {
	if err := e.snapshotFilePos("reading a table's rows (VStreamRows)"); err != nil {
		return err
	}
	table, err := filter.SelectTable(req.Query)
	if err != nil {
		return err
	}
	dirs, err := filter.ParseDirectives(req.Query)
	if err != nil {
		return err
	}
	db, err := e.Database(req.Keyspace)
	if err != nil {
		return err
	}
	flt, err := e.compileFilter(&binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: table, Filter: req.Query}}}, db, nil)
	if err != nil {
		return err
	}
	r, err := e.openReader(ctx, flt, db)
	if err != nil {
		return err
	}
	defer r.close()
	setup := &lazyConn{e: e, ctx: ctx}
	err = checkTables(setup.get, r.s.cfg.Database, flt, true)
	setup.release(err)
	if err != nil {
		return err
	}
	t, err := r.describe(table)
	if err != nil {
		return err
	}
	if err := r.applyDirectives(t, dirs); err != nil {
		return err
	}
	if err := t.resumeRows(req.LastPK); err != nil {
		return err
	}
	if err := r.snapshot(ctx, t.name); err != nil {
		return err
	}
	return r.read(ctx, t, req.MaxBatchBytes, req.HeartbeatInterval, send)
}

// StreamTables reads every base table of the database, in name order, from one consistent
// snapshot, each as StreamRows reads "select * from t".
func (e *Engine) StreamTables(ctx context.Context, req TablesRequest, send RowsFunc) error {
	if err := e.snapshotFilePos("reading every table (VStreamTables)"); err != nil {
		return err
	}
	db, err := e.Database(req.Keyspace)
	if err != nil {
		return err
	}
	r, err := e.openReader(ctx, filter.All(), db)
	if err != nil {
		return err
	}
	defer r.close()
	var names []string
	err = r.s.sql(func(conn *client.Conn) (err error) {
		names, err = baseTables(conn, r.s.cfg.Database)
		return err
	})
	if err != nil {
		return err
	}
	if len(names) == 0 {
		return nil
	}
	tables := make([]*copyTable, len(names))
	for i, name := range names {
		if tables[i], err = r.describe(name); err != nil {
			return err
		}
	}
	if err := r.snapshot(ctx, names...); err != nil {
		return err
	}
	for _, t := range tables {
		if err := r.read(ctx, t, req.MaxBatchBytes, req.HeartbeatInterval, send); err != nil {
			return err
		}
	}
	return nil
}

// snapshotReader reads tables from one consistent snapshot with the table copy's own pieces:
// its key choice, its SELECT and its row encoding, so rows read here are the rows a copy
// streams. It is a stream that never reads the binlog: those pieces find the connections,
// the filter and the database on it.
type snapshotReader struct {
	s    *stream
	gtid string
}

// openReader opens a snapshot reader of database db (a name Engine.Database returned).
func (e *Engine) openReader(ctx context.Context, flt *filter.Filter, db string) (*snapshotReader, error) {
	select {
	case <-e.drain:
		return nil, fmt.Errorf("%w: not starting new reads", ErrShuttingDown)
	default:
	}
	setup := &lazyConn{e: e, ctx: ctx}
	cfg, err := e.keyspaceConfig(setup.get, db)
	setup.release(err)
	if err != nil {
		return nil, err
	}
	// A snapshot read needs no row metadata in the binlog: only its position.
	info, err := e.inspect(ctx, true)
	if err != nil {
		return nil, err
	}
	cc, err := e.copyConn(ctx)
	if err != nil {
		return nil, err
	}
	s := &stream{
		eng:            e,
		log:            e.cfg.Logger,
		sql:            e.sqlUse(ctx),
		keyspaceStream: keyspaceStream{cfg: cfg, filter: flt, copy: &copier{conn: cc}},
		cursor:         cursor{pos: position.Position{Flavor: info.flavor}},
	}
	return &snapshotReader{s: s}, nil
}

func (r *snapshotReader) close() {
	r.s.copy.close()
}

// describe reads a table's columns and key, as the copy does. A table without a primary or
// unique NOT NULL key is keyed by all its columns, so its read is still ordered and resumable.
// FLOAT and DOUBLE values are read as the server prints them, as Vitess's row streamer
// sends them.
func (r *snapshotReader) describe(table string) (*copyTable, error) {
	t := &copyTable{name: table, serverText: true}
	if err := r.s.describeCopy(t, true, true); err != nil {
		return nil, err
	}
	return t, nil
}

// resumeRows starts the read after a client's last key. Vitess reads only the row of it; the
// fields, when given, must name the key's columns.
func (t *copyTable) resumeRows(lastpk *query.QueryResult) error {
	if len(lastpk.GetRows()) == 0 {
		return nil
	}
	if len(lastpk.GetRows()) != 1 {
		return fmt.Errorf("%w: lastpk has %d rows; want one row over the key of %s (%s)", filter.ErrInvalid,
			len(lastpk.GetRows()), t.name, strings.Join(t.key, ", "))
	}
	lp := &binlogdata.TableLastPK{TableName: t.name, Lastpk: lastpk}
	if len(lastpk.GetFields()) == 0 {
		lp.Lastpk = &query.QueryResult{Fields: t.keyFields, Rows: lastpk.GetRows()}
	}
	if err := t.resume(lp); err != nil {
		return fmt.Errorf("lastpk: %w", err)
	}
	return nil
}

// snapshot opens the consistent snapshot the rows are read from, and finds its GTID position.
func (r *snapshotReader) snapshot(ctx context.Context, tables ...string) error {
	snap, err := r.s.openSnapshotOf(ctx, tables...)
	if err != nil {
		return err
	}
	if snap.file == "" {
		r.gtid = snap.gtid.String()
		return nil
	}
	// MariaDB names the snapshot by binlog file and offset; its GTID position there is what
	// a client streams the binlog from afterwards.
	body, err := queryString(r.s.copy.conn, fmt.Sprintf("SELECT BINLOG_GTID_POS(%s, %d)", filter.QuoteString(snap.file), snap.pos))
	if err != nil {
		return err
	}
	p, err := position.ParseBody(position.MariaDB, body)
	if err != nil {
		return fmt.Errorf("snapshot position %q at %s:%d: %w", body, snap.file, snap.pos, err)
	}
	r.gtid = p.String()
	return nil
}

// read sends one table's rows from the open snapshot.
func (r *snapshotReader) read(ctx context.Context, t *copyTable, maxBatch int, heartbeat time.Duration, send RowsFunc) error {
	if maxBatch <= 0 {
		maxBatch = r.s.cfg.MaxBatchBytes
	}
	var sendMu sync.Mutex
	safeSend := func(b *RowsBatch) error {
		sendMu.Lock()
		defer sendMu.Unlock()
		return send(b)
	}
	if err := safeSend(&RowsBatch{Table: t.name, Fields: t.plan.Fields(), PKFields: rowsPKFields(t), GTID: r.gtid}); err != nil {
		return err
	}
	stopBeats := rowsHeartbeat(heartbeat, t.name, safeSend)
	defer stopBeats()
	// A read the client gave up on is killed, so the connection is not held by a long scan.
	stopKill := context.AfterFunc(ctx, func() { r.kill() })
	defer stopKill()

	// The key is read whole: a table's rows come from a single query on the snapshot.
	sql, cols := r.s.chunkSQL(t, math.MaxInt64)
	keyIdx := make([]int, len(t.keyFields))
	for i, kf := range t.keyFields {
		for j, f := range t.fields {
			if f == kf {
				keyIdx[i] = j
			}
		}
	}
	rc := newCopiedRow(t, cols)
	cells := rc.cells
	last := make([][]byte, len(keyIdx))
	b := &rowsBatcher{t: t, maxBatch: maxBatch, send: safeSend, batch: &RowsBatch{Table: t.name}}
	var (
		sendErr error
		result  mysql.Result
	)
	err := r.s.copy.conn.ExecuteSelectStreaming(sql, &result, func(row []mysql.FieldValue) error {
		if _, err := rc.read(row); err != nil {
			return err
		}
		for i, ki := range keyIdx {
			last[i] = cells[ki]
		}
		t.setLastPK(last)
		if err := b.add(cells); err != nil {
			sendErr = err
			return err
		}
		return nil
	}, keepFloatText)
	if sendErr != nil {
		return sendErr
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%w: read %s: %v", ErrUnavailable, t.name, err)
	}
	return b.flush()
}

// rowsPKFields are the fields of t's key, as a StreamRows response's first batch gives them.
func rowsPKFields(t *copyTable) []*query.Field {
	pkFields := make([]*query.Field, len(t.keyFields))
	for i, f := range t.keyFields {
		pkFields[i] = &query.Field{Name: f.Name, Type: f.Type, Charset: f.Charset, Flags: f.Flags}
	}
	return pkFields
}

// rowsBatcher puts rows into batches of about maxBatch bytes, to send each once it is full:
// the rows a StreamRows read keeps, and a VStreamResults query's. The rows' values go into
// one arena and their structs into one slab, reused once a batch is sent.
type rowsBatcher struct {
	// t is the table a StreamRows read copies, whose last key read each batch carries; nil
	// for a query's results.
	t        *copyTable
	maxBatch int
	send     RowsFunc
	batch    *RowsBatch
	arena    []byte
	lens     []int64
	slab     []query.Row
	size     int
}

// add adds the row of cells if the table's plan keeps it, and sends the batch once full.
func (b *rowsBatcher) add(cells [][]byte) error {
	if !b.t.plan.Match(cells) {
		return nil
	}
	start, lstart := len(b.arena), len(b.lens)
	b.arena, b.lens = b.t.plan.AppendRow(b.arena, b.lens, cells)
	if b.addRow(start, lstart) {
		return b.flush()
	}
	return nil
}

// addRow adds the row whose values and lengths were appended to the arena from start and
// lstart, and reports whether the batch is full.
func (b *rowsBatcher) addRow(start, lstart int) (full bool) {
	b.slab = append(b.slab, query.Row{Lengths: b.lens[lstart:len(b.lens):len(b.lens)], Values: b.arena[start:len(b.arena):len(b.arena)]})
	b.size += len(b.arena) - start + 2*(len(b.lens)-lstart)
	return b.size >= b.maxBatch
}

// flush sends the batch's rows, if any, with the key of the last row read.
func (b *rowsBatcher) flush() error {
	// Rows point into slab; rebuild the list, as slab may have moved while it grew.
	b.batch.Rows = b.batch.Rows[:0]
	for i := range b.slab {
		b.batch.Rows = append(b.batch.Rows, &b.slab[i])
	}
	if len(b.batch.Rows) == 0 {
		return nil
	}
	if b.t != nil {
		b.batch.LastPK = b.t.lastPKResult().Rows[0]
	}
	if err := b.send(b.batch); err != nil {
		return err
	}
	// The receiver is done with the rows: their memory is reused.
	b.batch.Rows, b.arena, b.lens, b.slab, b.size = b.batch.Rows[:0], b.arena[:0], b.lens[:0], b.slab[:0], 0
	return nil
}

// kill stops the query running on the reader's copy connection, from a connection of its own.
func (r *snapshotReader) kill() {
	r.s.killQuery(r.s.copy.conn, "a read")
}

// rowsHeartbeat sends a heartbeat batch every interval until stopped.
func rowsHeartbeat(interval time.Duration, table string, send RowsFunc) (stop func()) {
	if interval <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				// A failed send surfaces on the reader's next send.
				_ = send(&RowsBatch{Table: table, Heartbeat: true})
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}
