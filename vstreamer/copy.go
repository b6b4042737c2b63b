package vstreamer

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"google.golang.org/protobuf/proto"

	"github.com/vstream-cdc/vstream/filter"
	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	"github.com/vstream-cdc/vstream/position"
	"github.com/vstream-cdc/vstream/sqltypes"
	"github.com/vstream-cdc/vstream/vstreamer/rowcodec"
	"github.com/vstream-cdc/vstream/vstreamer/schema"
)

// ErrNoKey: a table to copy has neither a primary key nor a unique NOT NULL key.
var ErrNoKey = errors.New("table has no key to copy by")

// DefaultCopyChunkRows is how many rows one copy chunk reads from one snapshot.
const DefaultCopyChunkRows = 50000

type copyStatus int

const (
	copyPending copyStatus = iota
	copyRunning
	copyDone
)

// copyTable is the copy state of one table.
//
// The copy keeps one invariant: the client holds exactly the rows with a key up to lastpk,
// as of the stream position. Each chunk opens a snapshot, moves the binlog stream to the
// snapshot's position forwarding only changes to rows the client holds, then reads the next
// rows after lastpk from the snapshot. So no row arrives twice and no change arrives for a
// row the client has not received.
type copyTable struct {
	name   string
	status copyStatus
	// resync marks a table copied again on a running stream (TableLastPK.resync): its
	// changes stream while it is copied, every chunk read at the position the stream is at.
	resync bool
	// where is a resync copy's condition (TableLastPK.where); wherePlan its plan, whose
	// WhereSQL the chunk SELECT adds: the changes of rows outside it stream all the same.
	where     string
	wherePlan *filter.TablePlan
	// pk are the indexes of the primary key columns in fields.
	pk []int
	// key names the columns the copy orders by; empty copies the table in one read.
	key   []string
	index string
	// keyFields describe the key columns, for ordering binlog rows; pkFields are their
	// name, type, character set and flags, which is what LASTPK carries (as Vitess's do).
	keyFields []*query.Field
	pkFields  []*query.Field
	// oneRead copies the table in a single read: it is ordered by all its columns, having
	// no key a chunk could restart after safely (NULLs, duplicate rows).
	oneRead bool
	// lastpk is the key of the last row copied; nil before the first.
	lastpk [][]byte
	cols   []rowcodec.Column
	fields []*query.Field
	plan   *filter.TablePlan
	// serverText keeps FLOAT and DOUBLE values as the server prints them, as Vitess's tablet
	// reads (VStreamRows, VStreamTables) send them; the copy of a VStream sends them as its
	// binlog rows have them, so the two agree.
	serverText bool
	// fieldsSent tells whether this copy's FIELD event went out.
	fieldsSent bool
	// ahead is the table's last chunk read ahead (copyparallel.go), nil when none is in flight.
	ahead *prefetch
	// progress is how far the copy is, for the observer.
	progress copyProgress
	// serverKeys has, per key column, how the server is asked to order its values when
	// filter.Compare cannot (a UCA collation); filled in at the first such comparison.
	serverKeys []*serverKey
}

// serverKey orders the values of one key column by asking the server: the collation's name
// and character set, and the last comparison made (a row's before and after images, or
// several changes to one row, often compare the same key with lastpk).
type serverKey struct {
	collation, charset string
	cell, last         []byte
	result             int
	cached             bool
}

// copier is the table copy of one stream, tables in name order.
type copier struct {
	tables    []*copyTable
	byName    map[string]*copyTable
	chunkRows int
	conn      *client.Conn
	lock      *client.Conn
	// finished is set once the final COPY_COMPLETED went out.
	finished bool
	// parallelism is how many tables are read at once (copyparallel.go); throttle, when
	// set, paces the rows read.
	parallelism int
	throttle    *copyThrottle
	// A parallel copy's workers, its reads ahead in snapshot order, and what stops them:
	// stop and wctx end with the stream (stopWorkers), wg counts their goroutines.
	workers  []*copyWorker
	inflight []*prefetch
	stop     chan struct{}
	wctx     context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	// vitess shapes the copy's events as Vitess's tablets send them (Request.VitessCopy).
	vitess bool
	// mems, when the stream's send retains nothing (Request.SendRetainsNothing), holds the
	// memory of batches of rows already sent, for the next batches to reuse.
	mems chan *copyMem
	// snap is the snapshot of the chunk being read.
	snap snapshot
}

func (c *copier) active() bool { return c != nil && !c.finished }

func (c *copier) next() *copyTable {
	for _, t := range c.tables {
		if t.status != copyDone {
			return t
		}
	}
	return nil
}

func (c *copier) close() {
	if c == nil {
		return
	}
	c.stopWorkers()
	// Closing the socket ends the session on the server, which rolls back the snapshot and
	// releases any lock; a close error leaves nothing more to undo.
	if c.conn != nil {
		_ = c.conn.Close()
	}
	if c.lock != nil {
		_ = c.lock.Close()
	}
}

// state returns the copy state of a table, or nil when the table is not being copied (or
// its copy is done): its changes stream as usual.
func (c *copier) state(table string) *copyTable {
	if !c.active() {
		return nil
	}
	t := c.byName[table]
	if t == nil || t.status == copyDone || t.resync {
		return nil
	}
	return t
}

// tablePKs renders the copy state for a VGtid.
//
// Vitess marks a completed table by leaving it out of table_p_ks, and a client that keeps
// the VGtid with Vitess's protos drops our completed flag (field 100) anyway. So a
// Vitess-shaped copy lists only the tables still to copy: the one in progress with its last
// key, the ones not started without one. Resuming from such a VGtid copies exactly the
// tables listed, so a completed table is not copied again.
func (c *copier) tablePKs() []*binlogdata.TableLastPK {
	if !c.active() {
		return nil
	}
	out := make([]*binlogdata.TableLastPK, 0, len(c.tables))
	for _, t := range c.tables {
		if c.vitess && t.status == copyDone {
			continue
		}
		e := &binlogdata.TableLastPK{TableName: t.name, Completed: t.status == copyDone, Resync: t.resync, Where: t.where}
		if t.status != copyDone && t.lastpk != nil {
			e.Lastpk = t.lastPKResult()
		}
		out = append(out, e)
	}
	return out
}

func (t *copyTable) lastPKResult() *query.QueryResult {
	if t.lastpk == nil {
		return nil
	}
	row := &query.Row{Lengths: make([]int64, len(t.lastpk))}
	for i, v := range t.lastpk {
		if v == nil {
			row.Lengths[i] = -1
			continue
		}
		row.Lengths[i] = int64(len(v))
		row.Values = append(row.Values, v...)
	}
	return &query.QueryResult{Fields: t.pkFields, Rows: []*query.Row{row}}
}

// copyRequest is what a request says about copying.
type copyRequest struct {
	emptyPosition bool
	lastPKs       []*binlogdata.TableLastPK
	tablesToCopy  []string
	withoutKey    bool
	chunkRows     int
	parallelism   int
	throttle      *copyThrottle
	vitess        bool
	reuse         bool
	// othersCopy is set in a stream of several keyspaces: a keyspace whose tables the
	// filter leaves out copies nothing while the others copy, and tables_to_copy may name
	// tables of the others.
	othersCopy bool
}

// wanted reports whether the request copies. tables_to_copy alone, with a position, adds
// tables to a running stream; Vitess ignores it there (it only narrows a copy that runs).
func (r copyRequest) wanted() bool {
	return r.emptyPosition || len(r.lastPKs) > 0 || len(r.tablesToCopy) > 0 && !r.vitess
}

// newCopier works out which tables to copy and from where, and checks each can be copied.
func (s *stream) newCopier(req copyRequest) (*copier, error) {
	db := s.cfg.Database
	var all []string
	err := s.sql(func(conn *client.Conn) (err error) {
		all, err = baseTables(conn, db)
		return err
	})
	if err != nil {
		return nil, err
	}
	exists := map[string]bool{}
	var selected []string
	for _, t := range all {
		exists[t] = true
		// Online schema change tables are not streamed from the binlog, so not copied either.
		if s.filter.Table(t) != nil && !schema.Internal(t) {
			selected = append(selected, t)
		}
	}
	for _, t := range req.tablesToCopy {
		if !exists[t] && req.othersCopy {
			// A table of another keyspace of the stream (checkNamedTables).
			continue
		}
		if !exists[t] {
			return nil, fmt.Errorf("%w: tables_to_copy names %s, which is not a table of %s", filter.ErrInvalid, t, db)
		}
		if s.filter.Table(t) == nil {
			return nil, fmt.Errorf("%w: tables_to_copy names %s, which the filter does not stream", filter.ErrInvalid, t)
		}
	}
	set := selected
	if !req.emptyPosition && len(req.lastPKs) > 0 {
		set = nil
		for _, lp := range req.lastPKs {
			set = append(set, lp.GetTableName())
		}
	}
	if len(req.tablesToCopy) > 0 {
		set = slices.DeleteFunc(slices.Clone(set), func(t string) bool { return !slices.Contains(req.tablesToCopy, t) })
	}
	slices.Sort(set)
	set = slices.Compact(set)
	c := &copier{byName: map[string]*copyTable{}, chunkRows: req.chunkRows, vitess: req.vitess,
		parallelism: req.parallelism, throttle: req.throttle}
	if req.reuse {
		c.mems = make(chan *copyMem, copyMems)
	}
	if c.chunkRows <= 0 {
		c.chunkRows = DefaultCopyChunkRows
	}
	for _, name := range set {
		if !exists[name] {
			return nil, fmt.Errorf("%w: table_p_ks names %s, which is not a table of %s", filter.ErrInvalid, name, db)
		}
		if s.filter.Table(name) == nil {
			return nil, fmt.Errorf("%w: table_p_ks names %s, which the filter does not stream", filter.ErrInvalid, name)
		}
		t := &copyTable{name: name}
		if err := s.describeCopy(t, req.withoutKey, req.vitess); err != nil {
			return nil, err
		}
		c.tables = append(c.tables, t)
		c.byName[name] = t
	}
	for _, lp := range req.lastPKs {
		t := c.byName[lp.GetTableName()]
		if t == nil {
			continue
		}
		if err := t.resume(lp); err != nil {
			return nil, err
		}
	}
	if req.emptyPosition && len(c.tables) == 0 && !req.othersCopy {
		return nil, fmt.Errorf("%w: nothing to copy: the filter selects no table of %s; give a position to stream from", filter.ErrInvalid, db)
	}
	if c.next() == nil {
		// Every table is copied already: a VGtid saved after the copy's last chunk.
		c.finished = true
	}
	return c, nil
}

func baseTables(conn *client.Conn, db string) ([]string, error) {
	res, err := conn.Execute("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_TYPE = 'BASE TABLE' ORDER BY TABLE_NAME", db)
	if err != nil {
		return nil, fmt.Errorf("%w: list tables: %v", ErrUnavailable, err)
	}
	defer res.Close()
	out := make([]string, 0, res.RowNumber())
	for i := 0; i < res.RowNumber(); i++ {
		t := resultString(res, i, 0)
		out = append(out, t)
	}
	return out, nil
}

// estimateEvery is how often the estimate of a table's rows is read again during its copy:
// the server's TABLE_ROWS moves as its statistics are recalculated, and a lookup per chunk
// would be wasted on small chunks.
const estimateEvery = time.Second

// copyProgress is how far a table's copy is, as the observer hears it.
type copyProgress struct {
	// copied counts rows read so far; estimated is the server's guess of the table's rows.
	copied, estimated int64
	// estimatedAt is when estimated was read.
	estimatedAt time.Time
}

// estimateRows reads the server's estimate of t's rows into t.progress.estimated. An estimate is only
// for progress reports, so a failure to read it leaves the previous one.
func (s *stream) estimateRows(t *copyTable) {
	t.progress.estimatedAt = time.Now()
	_ = s.sql(func(conn *client.Conn) error {
		r, err := conn.Execute("SELECT COALESCE(TABLE_ROWS, 0) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?", s.cfg.Database, t.name)
		if err != nil {
			return err // closes the connection; the estimate stays
		}
		if r.RowNumber() > 0 {
			t.progress.estimated, _ = r.GetInt(0, 0)
		}
		r.Close()
		return nil
	})
}

// describeCopy reads the table's columns and the key to copy it by.
//
// A table without a key is copied in one read; the Vitess shape orders that read by all its
// columns, which then stand for the key in LASTPK, as Vitess's rowstreamer does.
func (s *stream) describeCopy(t *copyTable, withoutKey, allColumns bool) error {
	var info []schema.ColumnInfo
	err := s.sql(func(conn *client.Conn) (err error) {
		info, err = schema.Load(conn, s.cfg.Database, t.name)
		return err
	})
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	t.cols = schema.Columns(info)
	var pk []int
	t.fields, pk = tableFields(s.cfg.Database, t.name, t.cols)
	t.pk = pk
	if t.plan, err = s.filter.Plan(t.name, t.fields, pk); err != nil {
		return err
	}
	s.estimateRows(t)
	err = s.sql(func(conn *client.Conn) (err error) {
		t.index, t.key, err = copyKey(conn, s.cfg.Database, t.name)
		return err
	})
	if err != nil {
		return err
	}
	if len(t.key) == 0 && allColumns {
		for _, f := range t.fields {
			t.key = append(t.key, f.Name)
		}
		t.oneRead = true
	}
	if len(t.key) == 0 && !withoutKey {
		return fmt.Errorf("%w: %s.%s has neither a primary key nor a unique key on NOT NULL columns; add one, or set copy_tables_without_key to copy it in one consistent read",
			ErrNoKey, s.cfg.Database, t.name)
	}
	for _, k := range t.key {
		i := slices.IndexFunc(t.fields, func(f *query.Field) bool { return strings.EqualFold(f.Name, k) })
		if i < 0 {
			return fmt.Errorf("%w: key column %s of %s not found", ErrSchema, k, t.name)
		}
		f := t.fields[i]
		t.keyFields = append(t.keyFields, f)
		t.pkFields = append(t.pkFields, &query.Field{Name: f.Name, Type: f.Type, Charset: f.Charset, Flags: f.Flags})
	}
	return nil
}

// copyKey picks the index to copy by: the primary key, else a unique index whose columns are
// all NOT NULL (and not prefixes). It returns no columns when there is none.
func copyKey(conn *client.Conn, db, table string) (index string, cols []string, err error) {
	res, err := conn.Execute(`SELECT INDEX_NAME, COLUMN_NAME, NULLABLE, SUB_PART FROM information_schema.STATISTICS
		WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND NON_UNIQUE = 0
		ORDER BY INDEX_NAME = 'PRIMARY' DESC, INDEX_NAME, SEQ_IN_INDEX`, db, table)
	if err != nil {
		return "", nil, fmt.Errorf("%w: read indexes of %s: %v", ErrUnavailable, table, err)
	}
	defer res.Close()
	type idx struct {
		cols []string
		ok   bool
	}
	var order []string
	indexes := map[string]*idx{}
	for i := 0; i < res.RowNumber(); i++ {
		name := resultString(res, i, 0)
		col := resultString(res, i, 1)
		nullable := resultString(res, i, 2)
		subPart, _ := res.GetValue(i, 3)
		x := indexes[name]
		if x == nil {
			x = &idx{ok: true}
			indexes[name] = x
			order = append(order, name)
		}
		x.cols = append(x.cols, col)
		if nullable == "YES" || subPart != nil {
			x.ok = false
		}
	}
	for _, name := range order {
		if indexes[name].ok {
			return name, indexes[name].cols, nil
		}
	}
	return "", nil, nil
}

// resume applies a table's entry of a VGtid the client sent back.
func (t *copyTable) resume(lp *binlogdata.TableLastPK) error {
	t.resync = lp.GetResync()
	if t.where = lp.GetWhere(); t.where != "" {
		if err := t.planWhere(); err != nil {
			return err
		}
	}
	if lp.GetCompleted() {
		t.status = copyDone
		return nil
	}
	qr := lp.GetLastpk()
	if len(qr.GetRows()) == 0 {
		return nil
	}
	if len(qr.GetFields()) == 0 {
		// Vitess's words: a last key must say which columns its values are of.
		return fmt.Errorf("%w: lastpk for table %s has no fields defined", filter.ErrInvalid, t.name)
	}
	if len(qr.GetRows()) != 1 || len(qr.GetFields()) != len(t.key) {
		return fmt.Errorf("%w: table_p_ks for %s: want one row over the key (%s)", filter.ErrInvalid, t.name, strings.Join(t.key, ", "))
	}
	for i, f := range qr.GetFields() {
		if !strings.EqualFold(f.GetName(), t.key[i]) {
			return fmt.Errorf("%w: table_p_ks for %s is over column %s, but the table is copied by (%s)", filter.ErrInvalid, t.name, f.GetName(), strings.Join(t.key, ", "))
		}
	}
	row := qr.GetRows()[0]
	if len(row.GetLengths()) != len(t.key) {
		return fmt.Errorf("%w: table_p_ks for %s: the row has %d values, the key %d columns", filter.ErrInvalid, t.name, len(row.GetLengths()), len(t.key))
	}
	off := int64(0)
	for _, l := range row.GetLengths() {
		if l == -1 {
			// NULL, in a table copied by all its columns.
			t.lastpk = append(t.lastpk, nil)
			continue
		}
		if l < 0 || off+l > int64(len(row.GetValues())) {
			return fmt.Errorf("%w: table_p_ks for %s: malformed row", filter.ErrInvalid, t.name)
		}
		v := row.GetValues()[off : off+l]
		if err := t.checkMember(len(t.lastpk), v); err != nil {
			return err
		}
		t.lastpk = append(t.lastpk, append([]byte{}, v...))
		off += l
	}
	t.status = copyRunning
	return nil
}

// keyLabels are the members of the i-th key column when it is an ENUM or SET (nil
// otherwise): the server orders such a key by member number or bitmask, not by its labels.
func (t *copyTable) keyLabels(i int) []string {
	f := t.keyFields[i]
	if f.Type != query.Type_ENUM && f.Type != query.Type_SET {
		return nil
	}
	if j := slices.Index(t.fields, f); j >= 0 {
		return t.cols[j].Labels
	}
	return nil
}

// checkMember refuses a client's last key whose ENUM or SET value is not made of the
// column's members: its member number or bitmask, which the chunk SELECT compares by, is
// unknown, and a guess would skip or repeat rows.
func (t *copyTable) checkMember(i int, v []byte) error {
	labels := t.keyLabels(i)
	if labels == nil {
		return nil
	}
	f := t.keyFields[i]
	if f.Type == query.Type_ENUM && sqltypes.EnumIndex(labels, v) == 0 && len(v) > 0 ||
		f.Type == query.Type_SET && !sqltypes.ValidSet(labels, v) {
		return fmt.Errorf("%w: table_p_ks for %s: %q is not a value of key column %s (%s); give a value the column holds, spelt as the server prints it",
			filter.ErrInvalid, t.name, v, f.Name, strings.Join(labels, ", "))
	}
	return nil
}

// copyStep copies one chunk of the first table not yet copied.
func (s *stream) copyStep(ctx context.Context, events <-chan *replication.BinlogEvent) error {
	// The catch-up below hands changes to the keyspaces of their tables; the chunk is k's.
	k := s.ks
	c := s.copy
	t := c.next()
	if t == nil {
		c.finished = true
		return nil
	}
	if c.parallel() {
		return s.copyStepParallel(ctx, events)
	}
	if err := s.waitForLag(ctx); err != nil {
		return err
	}
	if c.vitess {
		// Vitess streams each catch-up with a new binlog reader, which describes every
		// table again with a FIELD before its first row.
		clear(s.fieldsFor)
	}
	if c.conn == nil {
		conn, err := s.eng.copyConn(ctx)
		if err != nil {
			return err
		}
		c.conn = conn
	}
	snap, err := s.openSnapshot(ctx, t)
	if err != nil {
		return err
	}
	c.snap = snap
	defer func() {
		s.use(k)
		s.endSnapshot()
	}()
	if ok, cerr := s.catchUp(ctx, events, snap); !ok {
		return cerr
	}
	s.use(k)
	// copying stays set if the chunk panics, to name the table.
	s.copying = t
	err = s.copyChunk(ctx, t)
	s.copying = nil
	return err
}

// catchUp brings the stream to the snapshot: the chunk continues exactly where the binlog
// is. It returns false when the chunk must not be read: on an error, or with nil when the
// stream is draining (the loop then ends the stream).
func (s *stream) catchUp(ctx context.Context, events <-chan *replication.BinlogEvent, snap snapshot) (bool, error) {
	for !s.reached(snap) {
		if s.drain.seen && !s.cursor.inTxn {
			return false, nil
		}
		ev, err := s.nextEvent(ctx, events)
		if err != nil {
			return false, err
		}
		if ev == nil {
			continue
		}
		if err = s.handle(ev); err != nil {
			if err = s.poisoned(err); err != nil {
				return false, err
			}
		}
		if s.out.overBatch() {
			if err = s.out.flush(); err != nil {
				return false, err
			}
		}
	}
	return true, nil
}

// copyConn opens a connection for reading rows from snapshots.
func (e *Engine) copyConn(ctx context.Context) (*client.Conn, error) {
	conn, err := e.connect(ctx)
	if err != nil {
		return nil, err
	}
	// The copy quotes with backslashes and reads at repeatable read. Its rows come back
	// unconverted, in each column's character set, as the binlog's rows are; literals
	// stay in the connection's utf8mb4.
	for _, q := range []string{"SET SESSION sql_mode = ''", "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ",
		"SET SESSION character_set_results = binary"} {
		if _, err := conn.Execute(q); err != nil {
			_ = conn.Close() // thrown away unused; the error below is what matters
			return nil, fmt.Errorf("%w: prepare copy connection: %s: %v", ErrUnavailable, q, err)
		}
	}
	return conn, nil
}

// snapshot is where a consistent snapshot sits in the binlog: a GTID position (MySQL) or a
// binlog file and offset (MariaDB, which reports those for a snapshot; turning them into
// GTIDs with BINLOG_GTID_POS would read the binlog file from its start at every chunk).
type snapshot struct {
	gtid position.Position
	file string
	pos  uint32
	// near is the server's binlog file and offset read just before a GTID snapshot (MySQL),
	// for the sources of rows copied before the stream has read any binlog of its own.
	nearFile string
	nearPos  uint32
}

// reached reports whether the stream is at the snapshot, between transactions.
func (s *stream) reached(snap snapshot) bool {
	if s.cursor.inTxn {
		return false
	}
	if snap.file == "" {
		return s.cursor.pos.Contains(snap.gtid)
	}
	if s.cursor.binlogFile == "" {
		return false
	}
	if c := compareBinlogFiles(s.cursor.binlogFile, snap.file); c != 0 {
		return c > 0
	}
	return s.cursor.binlogPos >= snap.pos
}

// compareBinlogFiles orders binlog file names by their sequence number.
func compareBinlogFiles(a, b string) int {
	ia, ib := strings.LastIndexByte(a, '.'), strings.LastIndexByte(b, '.')
	if ia >= 0 && ib >= 0 && a[:ia] == b[:ib] {
		na, errA := strconv.ParseUint(a[ia+1:], 10, 64)
		nb, errB := strconv.ParseUint(b[ib+1:], 10, 64)
		if errA == nil && errB == nil {
			return cmp.Compare(na, nb)
		}
	}
	return strings.Compare(a, b)
}

// openSnapshot starts a consistent-snapshot transaction on the copy connection and returns
// its place in the binlog.
func (s *stream) openSnapshot(ctx context.Context, t *copyTable) (snapshot, error) {
	return s.openSnapshotOf(ctx, t.name)
}

// openSnapshotOf is openSnapshot for a read of several tables.
func (s *stream) openSnapshotOf(ctx context.Context, tables ...string) (snapshot, error) {
	return s.openSnapshotOn(ctx, s.copy.conn, tables...)
}

// openSnapshotOn starts the snapshot on conn: the copy connection, or a parallel copy's
// worker's (copyparallel.go). The lock connection is the copier's, used by the stream
// goroutine only.
func (s *stream) openSnapshotOn(ctx context.Context, conn *client.Conn, tables ...string) (snapshot, error) {
	what := strings.Join(tables, ", ")
	if s.cursor.pos.Flavor == position.MariaDB {
		return mariadbSnapshot(conn, what)
	}
	return s.mysqlSnapshot(ctx, conn, what, tables)
}

// snapshotExec runs q on conn for the copy of what.
func snapshotExec(conn *client.Conn, what, q string) (*mysql.Result, error) {
	r, err := conn.Execute(q)
	if err != nil {
		return nil, fmt.Errorf("%w: copy of %s: %s: %v", ErrUnavailable, what, q, err)
	}
	return r, nil
}

// mariadbSnapshot starts a MariaDB snapshot on conn, which tells its place in the binlog.
func mariadbSnapshot(conn *client.Conn, what string) (snapshot, error) {
	if _, err := snapshotExec(conn, what, "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY"); err != nil {
		return snapshot{}, err
	}
	r, err := snapshotExec(conn, what, "SHOW STATUS LIKE 'binlog_snapshot_%'")
	if err != nil {
		return snapshot{}, err
	}
	var file, off string
	for i := 0; i < r.RowNumber(); i++ {
		name := resultString(r, i, 0)
		val := resultString(r, i, 1)
		switch strings.ToLower(name) {
		case "binlog_snapshot_file":
			file = val
		case "binlog_snapshot_position":
			off = val
		}
	}
	p, err := strconv.ParseUint(off, 10, 32)
	if file == "" || err != nil {
		return snapshot{}, fmt.Errorf("copy of %s: the server reports no binlog snapshot position (%q %q); is log_bin on?", what, file, off)
	}
	return snapshot{file: file, pos: uint32(p)}, nil
}

// mysqlSnapshot starts a MySQL snapshot on conn. MySQL has no snapshot position: the copy's
// lock connection holds writes to the tables while the snapshot starts, and reads the GTID
// set then.
func (s *stream) mysqlSnapshot(ctx context.Context, conn *client.Conn, what string, tables []string) (snapshot, error) {
	c := s.copy
	if c.lock == nil {
		lock, err := s.eng.connect(ctx)
		if err != nil {
			return snapshot{}, err
		}
		c.lock = lock
	}
	if _, err := snapshotExec(c.lock, what, "SET SESSION lock_wait_timeout = 30"); err != nil {
		return snapshot{}, err
	}
	if len(tables) > 0 {
		if err := s.lockTables(ctx, what, tables); err != nil {
			return snapshot{}, err
		}
		defer s.unlockTables()
	}
	var snap snapshot
	if s.cursor.binlogFile == "" {
		// Copied rows carry the snapshot's place in the binlog, and the stream has none yet.
		// Read before the GTID set, it is at or before the snapshot: nothing the snapshot
		// lacks comes before it.
		file, off, err := masterStatus(c.lock)
		if err != nil {
			return snapshot{}, fmt.Errorf("copy of %s: %w", what, err)
		}
		snap.nearFile, snap.nearPos = file, uint32(off)
	}
	body, err := queryString(c.lock, "SELECT @@GLOBAL.gtid_executed")
	if err != nil {
		return snapshot{}, err
	}
	if _, err = snapshotExec(conn, what, "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY"); err != nil {
		return snapshot{}, err
	}
	snap.gtid, err = position.ParseBody(position.MySQL56, body)
	if err != nil {
		return snapshot{}, fmt.Errorf("copy of %s: snapshot position %q: %w", what, body, err)
	}
	return snap, nil
}

// lockTables read-locks tables on the copy's lock connection; the caller unlocks them
// (unlockTables) once it succeeded.
func (s *stream) lockTables(ctx context.Context, what string, tables []string) error {
	c := s.copy
	locks := make([]string, len(tables))
	for i, t := range tables {
		locks[i] = filter.QuoteIdent(s.cfg.Database) + "." + filter.QuoteIdent(t) + " READ"
	}
	// The lock waits for a session that holds a table locked (up to lock_wait_timeout): a
	// client that leaves meanwhile has its wait killed, and the read ends at once.
	stopKill := context.AfterFunc(ctx, func() { s.killQuery(c.lock, "a snapshot's table lock") })
	_, err := snapshotExec(c.lock, what, "LOCK TABLES "+strings.Join(locks, ", "))
	if !stopKill() && ctx.Err() != nil {
		// Killed, or about to be: the connection's next statement must not be the one
		// the KILL ends; the stream is over anyway.
		if err == nil {
			s.unlockTables()
		}
		return fmt.Errorf("copy of %s: %w", what, ctx.Err())
	}
	return err
}

// killQuery ends the statement conn runs, from a connection of its own, for a client that
// left: what names the statement in the warning when it cannot be killed.
func (s *stream) killQuery(conn *client.Conn, what string) {
	s.killer(conn, what)()
}

// killer is killQuery for another goroutine: what it needs of the stream is read now, on
// the stream goroutine (a stream of several keyspaces swaps its configuration as it goes).
func (s *stream) killer(conn *client.Conn, what string) func() {
	e, timeout, log := s.eng, s.cfg.DialTimeout, s.log
	return func() { e.killQuery(conn, what, timeout, log) }
}

// killQuery ends the statement conn runs, from a connection of its own.
func (e *Engine) killQuery(conn *client.Conn, what string, timeout time.Duration, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	// A statement not killed runs on to its end on the server, holding the connection and
	// what it waits for or reads: say so, as nothing else will.
	kc, err := e.connect(ctx)
	if err != nil {
		log.Warn("cannot connect to kill "+what+" a client left; it runs to its end", slog.String("err", err.Error()))
		return
	}
	defer func() { _ = kc.Close() }() // a connection used for one KILL only
	if _, err := kc.Execute(fmt.Sprintf("KILL QUERY %d", conn.GetConnectionID())); err != nil {
		log.Warn("KILL QUERY of "+what+" a client left failed; it runs to its end", slog.String("err", err.Error()))
	}
}

// chunkSQL is the SELECT of the next chunk: the columns the rule reads and the key, the rule's
// conditions, rows after lastpk, in key order.
func (s *stream) chunkSQL(t *copyTable, limit int) (sql string, cols []int) {
	need := map[int]bool{}
	for _, i := range t.plan.UsedColumns() {
		need[i] = true
	}
	for _, kf := range t.keyFields {
		need[slices.Index(t.fields, kf)] = true
	}
	var sel []string
	for i, f := range t.fields {
		if !need[i] {
			continue
		}
		cols = append(cols, i)
		name := filter.QuoteIdent(f.Name)
		if t.cols[i].Type == mysql.MYSQL_TYPE_FLOAT && !t.serverText {
			// FLOAT text is rounded to six digits; DOUBLE text is exact. A read that sends
			// the server's text (serverText) wants the rounded text.
			name = "CAST(" + name + " AS DOUBLE)"
		}
		sel = append(sel, name)
	}
	if len(sel) == 0 {
		// A rule that reads no column (select 1 from a table without a key) still counts rows.
		sel = append(sel, "1")
	}
	var b strings.Builder
	b.WriteString("SELECT ")
	b.WriteString(strings.Join(sel, ", "))
	b.WriteString(" FROM ")
	b.WriteString(filter.QuoteIdent(s.cfg.Database) + "." + filter.QuoteIdent(t.name))
	if t.index != "" {
		b.WriteString(" FORCE INDEX (" + filter.QuoteIdent(t.index) + ")")
	}
	var where []string
	if w := t.plan.WhereSQL(t.fields); w != "" {
		where = append(where, w)
	}
	if t.wherePlan != nil {
		where = append(where, t.wherePlan.WhereSQL(t.fields))
	}
	if t.lastpk != nil {
		where = append(where, t.afterLastPK())
	}
	if len(where) > 0 {
		b.WriteString(" WHERE " + strings.Join(where, " AND "))
	}
	if len(t.key) > 0 {
		keys := make([]string, len(t.key))
		for i, k := range t.key {
			keys[i] = filter.QuoteIdent(k)
		}
		b.WriteString(" ORDER BY " + strings.Join(keys, ", "))
		if !t.oneRead {
			fmt.Fprintf(&b, " LIMIT %d", limit)
		}
	}
	return b.String(), cols
}

// afterLastPK is "key > lastpk" for a composite key: (a > 1) OR (a = 1 AND b > 2). A NULL in
// lastpk (a table copied by all its columns) sorts first, as ORDER BY puts it: after NULL is
// IS NOT NULL, equal to it IS NULL.
func (t *copyTable) afterLastPK() string {
	var ors []string
	for i := range t.key {
		var ands []string
		for j := 0; j < i; j++ {
			if t.lastpk[j] == nil {
				ands = append(ands, filter.QuoteIdent(t.key[j])+" IS NULL")
				continue
			}
			ands = append(ands, filter.QuoteIdent(t.key[j])+" = "+t.literal(j))
		}
		if t.lastpk[i] == nil {
			ands = append(ands, filter.QuoteIdent(t.key[i])+" IS NOT NULL")
		} else {
			ands = append(ands, filter.QuoteIdent(t.key[i])+" > "+t.literal(i))
		}
		ors = append(ors, "("+strings.Join(ands, " AND ")+")")
	}
	return "(" + strings.Join(ors, " OR ") + ")"
}

// literal renders the i-th lastpk value for SQL: numbers as they are, everything else as a
// hex string in the column's character set, so that any bytes survive and comparisons use
// the column's collation.
func (t *copyTable) literal(i int) string {
	v := t.lastpk[i]
	f := t.keyFields[i]
	if f.Type&query.Type(query.Flag_ISINTEGRAL) != 0 || f.Type == query.Type_DECIMAL {
		return string(v)
	}
	// The server compares an ENUM or SET with a string as strings, but with a number by
	// member number or bitmask, which is how ORDER BY orders it.
	if labels := t.keyLabels(i); labels != nil {
		if f.Type == query.Type_ENUM {
			return strconv.Itoa(sqltypes.EnumIndex(labels, v))
		}
		return strconv.FormatUint(sqltypes.SetMask(labels, v), 10)
	}
	hex := fmt.Sprintf("X'%x'", v)
	col := t.cols[slices.Index(t.fields, f)]
	if col.Ext != rowcodec.ExtNone {
		// UUID and INET values are their text: the server parses a string literal.
		return filter.QuoteString(string(v))
	}
	// The column's own type: FIELD calls a CHAR with a binary collation BINARY.
	if col.QueryType()&query.Type(query.Flag_ISTEXT) != 0 && col.Collation != sqltypes.BinaryCollation {
		if cs := charsetName(t, f); cs != "" {
			return "_" + cs + " " + hex
		}
	}
	if f.Type == query.Type_DATE || f.Type == query.Type_DATETIME || f.Type == query.Type_TIMESTAMP || f.Type == query.Type_TIME {
		return filter.QuoteString(string(v))
	}
	return hex
}

// charsetName is the character set of a key column, from the schema.
func charsetName(t *copyTable, f *query.Field) string {
	for i := range t.fields {
		if t.fields[i] == f {
			return t.cols[i].Charset
		}
	}
	return ""
}

// copyTellPosition starts a Vitess-shaped chunk: the FIELD group, if the chunk opened one,
// goes out alone, then the snapshot's position when the client has not been told it yet
// (within the FIELD group, else in a transaction of its own), as Vitess's uvstreamer does.
// Each GTID is followed by the VGTID that replaces it at vtgate.
func (s *stream) copyTellPosition(open bool) error {
	if open {
		if err := s.out.flush(); err != nil {
			return err
		}
	}
	if s.cursor.pos.String() == s.out.gtidSent {
		return nil
	}
	if !open {
		s.add(&binlogdata.VEvent{Type: binlogdata.VEventType_BEGIN})
	}
	s.add(s.gtidEvent(0), s.vgtidEvent())
	if !open {
		s.add(&binlogdata.VEvent{Type: binlogdata.VEventType_COMMIT})
	}
	return s.out.flush()
}

func (t *copyTable) setLastPK(key [][]byte) {
	if len(t.key) == 0 {
		return
	}
	if len(t.lastpk) != len(key) {
		t.lastpk = make([][]byte, len(key))
	}
	for i, k := range key {
		if k == nil {
			// NULL, in a table copied by all its columns.
			t.lastpk[i] = nil
			continue
		}
		t.lastpk[i] = append(append(t.lastpk[i][:0], k...), 0)[:len(k)]
	}
}

// copyFieldsPlan stands for "the FIELD event the copy sent" in the per-table record of the
// last FIELD, so that binlog rows after it re-send FIELD only when theirs differs.
func (s *stream) copyFieldsPlan(t *copyTable) *tablePlan {
	if p, ok := s.copyPlans[t.name]; ok {
		return p
	}
	p := &tablePlan{name: t.name, selected: true, fields: t.plan.Fields()}
	s.copyPlans[t.name] = p
	return p
}

// inCopiedRange reports whether a binlog row image (cells in binlog column order) is a row
// the client already holds: its key is at most lastpk. A key column whose order sqltypes
// does not know exactly (filter.Compare) is compared by the server, on the stream's
// connection, which only the stream goroutine uses and which holds no open result here.
func (s *stream) inCopiedRange(t *copyTable, p *tablePlan, cells [][]byte) (bool, error) {
	if t.status != copyRunning || t.lastpk == nil {
		return false, nil
	}
	if p.copyKeyFor != t {
		p.copyKey = p.copyKey[:0]
		for _, k := range t.key {
			i := slices.IndexFunc(p.cols, func(c rowcodec.Column) bool { return strings.EqualFold(c.Name, k) })
			if i < 0 {
				return false, fmt.Errorf("%w: key column %s of %s is gone from the binlog while the table is copied", ErrSchema, k, t.name)
			}
			p.copyKey = append(p.copyKey, i)
		}
		p.copyKeyFor = t
	}
	for i, ci := range p.copyKey {
		cell := cells[ci]
		switch {
		case cell == nil && t.lastpk[i] == nil:
			// NULLs are equal in ORDER BY (a table copied by all its columns).
			continue
		case cell == nil:
			return t.oneRead, nil
		case t.lastpk[i] == nil:
			return false, nil
		}
		var c int
		if e := p.cols[ci].Ext; e != rowcodec.ExtNone {
			// UUID and INET keys are text; the server orders them by their binary form.
			c = rowcodec.CompareExt(e, cell, t.lastpk[i])
		} else if labels := t.keyLabels(i); labels != nil {
			// Cells of both are labels; the server orders by member number or bitmask.
			if t.keyFields[i].Type == query.Type_ENUM {
				c = sqltypes.CompareEnum(labels, cell, t.lastpk[i])
			} else {
				c = sqltypes.CompareSet(labels, cell, t.lastpk[i])
			}
		} else {
			var ok bool
			if c, ok = filter.Compare(t.keyFields[i], cell, t.lastpk[i]); !ok {
				var err error
				if c, err = s.serverCompare(t, i, cell); err != nil {
					return false, err
				}
			}
		}
		if c != 0 {
			return c < 0, nil
		}
	}
	return true, nil
}

// serverCompare orders cell against the i-th lastpk value as the server orders the key
// column: STRCMP of the two values, each given in its own bytes in the column's character set
// and collation. A failure ends the stream: guessing could lose a change or send it twice.
func (s *stream) serverCompare(t *copyTable, i int, cell []byte) (int, error) {
	if t.serverKeys == nil {
		t.serverKeys = make([]*serverKey, len(t.keyFields))
	}
	k := t.serverKeys[i]
	f := t.keyFields[i]
	if f.Type == query.Type_ENUM || f.Type == query.Type_SET {
		// STRCMP would order the labels, not the member numbers ORDER BY uses.
		return 0, fmt.Errorf("%w: copy of %s: key column %s (%s) has no members known to order it by", ErrSchema, t.name, f.Name, f.Type)
	}
	if k == nil {
		var coll, cs string
		err := s.sql(func(conn *client.Conn) (err error) {
			coll, cs, err = collationName(conn, f.Charset)
			return err
		})
		if err != nil {
			return 0, fmt.Errorf("%w: copy of %s: key column %s: %v", ErrUnavailable, t.name, f.Name, err)
		}
		if coll == "" {
			return 0, fmt.Errorf("%w: copy of %s: key column %s (%s, collation %d) has no order the copy knows", ErrSchema, t.name, f.Name, f.Type, f.Charset)
		}
		k = &serverKey{collation: coll, charset: cs}
		t.serverKeys[i] = k
	}
	last := t.lastpk[i]
	if k.cached && bytes.Equal(k.cell, cell) && bytes.Equal(k.last, last) {
		return k.result, nil
	}
	q := fmt.Sprintf("SELECT STRCMP(_%s X'%x' COLLATE %s, _%s X'%x' COLLATE %s)", k.charset, cell, k.collation, k.charset, last, k.collation)
	var c int64
	err := s.sql(func(conn *client.Conn) error {
		r, err := conn.Execute(q)
		if err != nil {
			return err
		}
		c, err = r.GetInt(0, 0)
		r.Close()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("%w: copy of %s: compare key column %s under %s: %v", ErrUnavailable, t.name, f.Name, k.collation, err)
	}
	k.cell, k.last = append(k.cell[:0], cell...), append(k.last[:0], last...)
	k.result, k.cached = int(c), true
	return k.result, nil
}

// collationName names a collation id and its character set as the server does; "" when the
// server has no collation of that id.
func collationName(conn *client.Conn, id uint32) (name, charset string, err error) {
	all, err := schema.Collations(conn)
	if err != nil {
		return "", "", fmt.Errorf("name collation %d: %v", id, err)
	}
	c, ok := all[id]
	if !ok {
		return "", "", nil
	}
	// Both go into SQL unquoted: only a name the server could give is taken.
	if !isSQLName(c.Name) || !isSQLName(c.Charset) {
		return "", "", fmt.Errorf("name collation %d: unexpected name %q (%q)", id, c.Name, c.Charset)
	}
	return c.Name, c.Charset, nil
}

func isSQLName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

// copySource is the EventSource of a copy chunk's events: the snapshot's place in the binlog,
// marked as a snapshot read. Nil when the stream does not carry sources.
func (s *stream) copySource(t *copyTable) *binlogdata.EventSource {
	if !s.withSrc {
		return nil
	}
	snap := s.copy.snap
	src := &binlogdata.EventSource{
		File:     snap.file,
		StartPos: uint64(snap.pos),
		EndPos:   uint64(snap.pos),
		Database: s.cfg.Database,
		GtidSet:  s.cursor.pos.String(),
		Snapshot: true,
	}
	if snap.file == "" {
		// A GTID snapshot (MySQL): the stream stands at it, so its file and offset are the
		// stream's; before the stream has read the binlog, the server's as the snapshot began.
		file, pos := s.cursor.binlogFile, s.cursor.binlogPos
		if file == "" {
			file, pos = snap.nearFile, snap.nearPos
		}
		src.File, src.StartPos, src.EndPos = file, uint64(pos), uint64(pos)
	}
	return src
}

// copyFieldSource is the EventSource of the FIELD event that opens a table's copy: the
// chunk's, with the table's definition.
func (s *stream) copyFieldSource(t *copyTable, chunk *binlogdata.EventSource) (*binlogdata.EventSource, error) {
	if chunk == nil {
		return nil, nil
	}
	q := "SHOW CREATE TABLE " + filter.QuoteIdent(s.cfg.Database) + "." + filter.QuoteIdent(t.name)
	src := proto.CloneOf(chunk)
	show := func(conn *client.Conn) error {
		res, err := conn.Execute(q)
		if err != nil {
			return err
		}
		defer res.Close()
		if res.RowNumber() > 0 && res.ColumnNumber() > 1 {
			src.CreateTable = resultString(res, 0, 1)
		}
		return nil
	}
	var err error
	if s.copy.conn != nil {
		err = show(s.copy.conn)
	} else {
		// A parallel copy's snapshots are on its workers' connections, busy reading; a
		// table's definition is not part of a snapshot anyway (SHOW CREATE TABLE reads the
		// current one), so the stream's own connection serves.
		err = s.sql(show)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: copy of %s: show create table: %v", ErrUnavailable, t.name, err)
	}
	return src, nil
}

// copiedRow turns a row read by a copy (or a snapshot read) into cells in table column order,
// each value in the binlog's text encoding (Column.AppendCopied), so that copied rows and
// binlog rows are filtered and encoded alike. Its buffers are reused row after row: a row's
// cells are valid until the next read.
type copiedRow struct {
	t    *copyTable
	cols []int // the table column of each result column
	// raw marks result columns whose text is kept as the server sent it (serverText).
	raw   []bool
	cells [][]byte
	buf   []byte
	lens  []int64
	offs  []int
}

func newCopiedRow(t *copyTable, cols []int) *copiedRow {
	r := &copiedRow{t: t, cols: cols, cells: make([][]byte, len(t.fields)), offs: make([]int, 0, len(cols))}
	if t.serverText {
		r.raw = make([]bool, len(cols))
		for j, ci := range cols {
			r.raw[j] = isFloat(t.cols[ci].Type)
		}
	}
	return r
}

func isFloat(tp byte) bool { return tp == mysql.MYSQL_TYPE_FLOAT || tp == mysql.MYSQL_TYPE_DOUBLE }

// keepFloatText makes go-mysql hand over a result's FLOAT and DOUBLE values as the text the
// server sent rather than parsed into float64, whose formatting is not the server's. It is a
// SELECT's per-result callback: it runs once the columns are read, before any row.
func keepFloatText(res *mysql.Result) error {
	for _, f := range res.Fields {
		if isFloat(f.Type) {
			f.Type = mysql.MYSQL_TYPE_VAR_STRING
		}
	}
	return nil
}

// read decodes row; on failure it returns the table column that could not be decoded.
func (r *copiedRow) read(row []mysql.FieldValue) (int, error) {
	r.buf, r.lens, r.offs = r.buf[:0], r.lens[:0], r.offs[:0]
	clear(r.cells)
	for j, ci := range r.cols {
		r.offs = append(r.offs, len(r.buf))
		var null bool
		var err error
		if r.raw != nil && r.raw[j] && row[j].Type == mysql.FieldValueTypeString {
			r.buf = append(r.buf, row[j].AsString()...)
		} else if r.buf, null, err = r.t.cols[ci].AppendCopied(r.buf, &row[j]); err != nil {
			return ci, err
		}
		if null {
			r.lens = append(r.lens, -1)
		} else {
			r.lens = append(r.lens, int64(len(r.buf)-r.offs[j]))
		}
	}
	// Cells are cut once the buffer has stopped growing.
	for j, ci := range r.cols {
		if l := r.lens[j]; l > 0 {
			r.cells[ci] = r.buf[r.offs[j] : r.offs[j]+int(l) : r.offs[j]+int(l)]
		} else if l == 0 {
			r.cells[ci] = emptyCell
		}
	}
	return 0, nil
}

// planWhere parses a resync copy's condition as the WHERE of a filter rule on the table:
// the same grammar and checks as a rule's, rendered back by the filter package, so no text
// of the client's reaches the server unparsed.
func (t *copyTable) planWhere() error {
	f, err := filter.New(&binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: t.name,
		Filter: "select * from " + filter.QuoteIdent(t.name) + " where " + t.where}}})
	if err == nil {
		t.wherePlan, err = f.Plan(t.name, t.fields, t.pk)
	}
	if err != nil {
		return fmt.Errorf("%w: snapshot of %s where %q: %v", filter.ErrInvalid, t.name, t.where, err)
	}
	if !t.wherePlan.PushedDown() || t.wherePlan.WhereSQL(t.fields) == "" {
		return fmt.Errorf("%w: snapshot of %s where %q: give comparisons of columns with literals (in_keyrange cannot be read by a snapshot)", filter.ErrInvalid, t.name, t.where)
	}
	return nil
}
