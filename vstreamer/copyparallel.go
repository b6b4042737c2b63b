package vstreamer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
)

// A parallel copy (Request.CopyParallelism above one) reads chunks of several tables at
// once, each on a worker connection of its own, while the stream goroutine still emits them
// one chunk at a time, each as the serial copy does: a transaction of its own with FIELD,
// ROW, LASTPK and a VGTID naming every table still being copied.
//
// Correctness rests on the serial copy's invariant, kept per table: a chunk of table t read
// from a snapshot at position P is emitted when the stream stands exactly at P, so that the
// catch-up before it forwarded only changes to rows of t up to t's last key, and the chunk
// holds the rows after that key as of P. Snapshots are opened one after the other on the
// stream goroutine, so their positions only grow, and their chunks are emitted in that order
// (a queue): the stream never has to go back to reach one. While a table's chunk is read
// ahead, its last key in the stream is still the previous chunk's, and the catch-up drops the
// changes to rows after it, which the chunk read ahead holds as of its own (later) snapshot.
//
// A table's next chunk starts after the key its previous chunk ends at, so it is read ahead
// once that chunk's read is over (chained): its snapshot, opened then, is later than the
// previous chunk's, and it is emitted after it. So a single large table is read ahead too:
// tables not started come first, then the tables whose last read is over, in table order.
//
// What runs in parallel is the expensive part: the server's reads, and decoding and
// encoding the rows (chunk.encodeWhole, encodeFiltered), which a worker does into arenas of
// its own. The stream goroutine only links the rows into ROW events and batches.

// MaxCopyParallelism bounds Request.CopyParallelism: every table copied at once holds a
// connection to the database and a snapshot open on it.
const MaxCopyParallelism = 16

// Pieces carry a read ahead's rows from its worker to the stream goroutine. A piece ends at
// pieceRows rows or pieceBytes bytes of values; prefetchPieces of them may wait in the
// channel, which bounds the memory a read ahead holds while the stream is busy with another
// table to about prefetchPieces*pieceBytes (1 MiB of values) beside the piece being filled;
// the worker then waits, its read held at the server. Deeper queues were measured slower on
// a machine whose cores are all busy: their rows stay live longer and the garbage collector
// does more, for reads the stream cannot send any sooner.
const (
	pieceBytes     = 64 << 10
	prefetchPieces = 16
)

// pieceRows is a variable for tests, which cut chunks of a few rows into several pieces.
var pieceRows = 1024

// errCopyStopped ends a worker's read when the stream has ended.
var errCopyStopped = errors.New("copy: the stream ended")

// copyWorker is a connection that reads chunks ahead from snapshots of its own; cur is the
// chunk it reads or read last.
type copyWorker struct {
	conn *client.Conn
	cur  *prefetch
}

// idle reports whether the worker's connection is free: its last read is over.
func (w *copyWorker) idle() bool { return w.cur == nil || w.cur.over() }

// chainedReads counts the chunks read ahead after a chunk of the same table still in
// flight, for tests: a single table was read ahead.
var chainedReads atomic.Int64

// prefetch is one chunk read ahead: its table, the worker and snapshot it is read from, and
// the channel its rows come through.
type prefetch struct {
	t      *copyTable
	w      *copyWorker
	snap   snapshot
	cols   []int
	pieces chan copyPiece
	// read is closed when the worker is done with the read and its connection (the rows
	// may still wait in pieces); end (the key of the last row read) and full (the chunk
	// read its limit of rows, without error: the table has more) are set before.
	read chan struct{}
	end  [][]byte
	full bool
}

// over reports whether the chunk's read is over.
func (p *prefetch) over() bool {
	select {
	case <-p.read:
		return true
	default:
		return false
	}
}

// copyPiece is a run of rows of a chunk read ahead. The last piece of a chunk has end set,
// with the chunk's rows read (n) and its error, if any.
type copyPiece struct {
	rows []*binlogdata.RowChange
	// last is the key of the last row read before the piece ended, kept or not (a rule's
	// condition may drop it; a row that cannot be decoded may be skipped); nil when none was.
	last [][]byte
	// skipped are the rows the failure mode skipped, for the stream to log and count.
	skipped []*PoisonError
	end     bool
	n       int
	err     error
}

// prefetchOut is the worker's side of a read ahead: the piece being filled and where it goes.
type prefetchOut struct {
	p   *prefetch
	cur copyPiece
	// maxRow is the largest row's values so far: a piece ends when its arena has less room.
	maxRow int
	stop   <-chan struct{}
	// failStop: a row that cannot be decoded ends the stream (the stream's failure mode).
	failStop bool
	// from is the key the chunk starts after, copied at dispatch: the table's own moves
	// on the stream goroutine as the chunk's pieces are sent.
	from [][]byte
}

// add takes one encoded row, and ships the piece once it is full: at pieceRows rows, or
// when the next row might not fit in the arenas. Growing an arena would copy the piece's
// rows and clear twice the memory; a piece's arenas are allocated once, at their size.
func (o *prefetchOut) add(k *chunk, rc *binlogdata.RowChange) error {
	o.cur.rows = append(o.cur.rows, rc)
	v, l := len(rc.After.Values), len(rc.After.Lengths)
	o.maxRow = max(o.maxRow, v)
	if len(o.cur.rows) < pieceRows && cap(k.mem.vals)-len(k.mem.vals) >= o.maxRow && cap(k.mem.lens)-len(k.mem.lens) >= l {
		return nil
	}
	// The piece's rows are handed over with the arenas they sit in: the next rows go into
	// new ones.
	o.newArenas(k)
	return o.ship(k)
}

// newArenas gives the chunk the arenas of a piece: pieceBytes of values, and the lengths of
// pieceRows rows, or of one row at least.
func (o *prefetchOut) newArenas(k *chunk) {
	k.mem.vals = make([]byte, 0, max(pieceBytes, 2*o.maxRow))
	k.mem.lens = make([]int64, 0, pieceRows*max(len(k.cols), 1))
}

// ship hands the piece over, with the key of the row read last.
func (o *prefetchOut) ship(k *chunk) error {
	o.cur.last = cloneKey(k.last)
	select {
	case o.p.pieces <- o.cur:
	case <-o.stop:
		k.sendErr = errCopyStopped
		return errCopyStopped
	}
	o.cur = copyPiece{rows: make([]*binlogdata.RowChange, 0, pieceRows)}
	return nil
}

// poison handles a row whose table column ci cannot be decoded, as stream.copyPoison does,
// but without the stream's state: the stream locates, logs and counts it when the piece
// arrives.
func (o *prefetchOut) poison(k *chunk, row []mysql.FieldValue, ci int, cause error) error {
	t := k.t
	po := &PoisonError{Table: t.name, Column: t.cols[ci].Name, Err: cause}
	key, keyErr := copiedKey(t, k.cols, k.keyIdx, row)
	switch {
	case keyErr == nil && len(key) > 0:
		po.Row = "copied row with key " + keyText(key)
	case len(k.last) > 0:
		po.Row = "copied row after key " + keyText(k.last)
	case o.from != nil:
		po.Row = "copied row after key " + keyText(o.from)
	default:
		po.Row = "first copied row"
	}
	if o.failStop {
		return po
	}
	if keyErr != nil {
		po.Err = fmt.Errorf("%w; the row cannot be skipped: its key does not decode either: %v", cause, keyErr)
		return po
	}
	o.cur.skipped = append(o.cur.skipped, po)
	// The copy moves past the row: its key is the last read.
	k.last = append(k.last[:0], key...)
	return nil
}

func cloneKey(key [][]byte) [][]byte {
	if len(key) == 0 {
		return nil
	}
	out := make([][]byte, len(key))
	for i, v := range key {
		if v != nil {
			out[i] = append(make([]byte, 0, len(v)), v...)
		}
	}
	return out
}

// parallel reports whether the copy reads tables in parallel. A Vitess-shaped copy does not:
// Vitess's tablets copy one table at a time, and its clients see the tables in that order.
func (c *copier) parallel() bool { return c.parallelism > 1 && !c.vitess }

// copyStepParallel emits the next chunk read ahead, after starting reads ahead for tables
// that have none in flight.
func (s *stream) copyStepParallel(ctx context.Context, events <-chan *replication.BinlogEvent) error {
	k := s.ks
	c := s.copy
	if err := s.dispatch(ctx); err != nil {
		return err
	}
	if len(c.inflight) == 0 {
		// Every table is copied; copyStep found one pending only if one was in flight.
		c.finished = true
		return nil
	}
	p := c.inflight[0]
	c.snap = p.snap
	defer s.use(k)
	if ok, err := s.catchUp(ctx, events, p.snap); !ok {
		return err
	}
	s.use(k)
	s.copying = p.t
	err := s.emitPrefetched(ctx, p)
	s.copying = nil
	// The chunk stays in the queue while it is sent, counting against the parallelism.
	c.inflight = c.inflight[1:]
	return err
}

// dispatch starts reads ahead up to the copy's parallelism: first for the tables not copied
// and without one in flight, in table order, then for the tables whose last read ahead is
// over and read its limit of rows, each after that read's last key.
func (s *stream) dispatch(ctx context.Context) error {
	c := s.copy
	if c.stop == nil {
		c.stop = make(chan struct{})
		c.wctx, c.cancel = context.WithCancel(ctx)
	}
	lagChecked := false
	for _, t := range c.tables {
		if len(c.inflight) >= c.parallelism {
			return nil
		}
		if t.status != copyDone && t.ahead == nil {
			if !lagChecked {
				if err := s.waitForLag(ctx); err != nil {
					return err
				}
				lagChecked = true
			}
			if err := s.readAheadFrom(ctx, t, t.lastpk); err != nil {
				return err
			}
		}
	}
	return s.chainReads(ctx)
}

// chainReads starts, up to the copy's parallelism, the next chunk of each table whose last
// read ahead is over and read its limit of rows. It runs at each chunk and as a chunk's
// pieces are sent, so that the next read starts as soon as the last one ends, the stream
// still sending its rows. The chunk being sent counts against the parallelism: its worker
// may still be reading. Under a replication-lag bound a chained read starts only while the
// lag is within it (lagWithin): the stream does not wait in the middle of sending a chunk,
// and once no read is in flight dispatch waits for the lag as before any chunk.
func (s *stream) chainReads(ctx context.Context) error {
	c := s.copy
	for chained := true; chained; {
		chained = false
		for _, t := range c.tables {
			if len(c.inflight) >= c.parallelism {
				return nil
			}
			if p := t.ahead; p != nil && len(t.key) > 0 && !t.oneRead && p.over() && p.full {
				if ok, err := s.lagWithin(); !ok || err != nil {
					return err
				}
				if err := s.readAheadFrom(ctx, t, p.end); err != nil {
					return err
				}
				chainedReads.Add(1)
				chained = true
			}
		}
	}
	return nil
}

// readAheadFrom starts a read ahead of t's next chunk, after key from, on an idle worker.
func (s *stream) readAheadFrom(ctx context.Context, t *copyTable, from [][]byte) error {
	err := s.startReadAhead(ctx, t, from)
	if err != nil && ctx.Err() != nil {
		// The client left while a connection was opened or a snapshot started: the
		// stream ends as a stream whose client leaves does, not as a database failure.
		return fmt.Errorf("copy of %s: %w", t.name, ctx.Err())
	}
	return err
}

// startReadAhead is readAheadFrom's work.
func (s *stream) startReadAhead(ctx context.Context, t *copyTable, from [][]byte) error {
	c := s.copy
	w, err := s.idleWorker(ctx)
	if err != nil {
		return err
	}
	snap, err := s.openSnapshotOn(ctx, w.conn, t.name)
	if err != nil {
		return err
	}
	// chunkSQL reads the chunk's start from the table's last key, which is the
	// stream's; it is the stream goroutine's alone, so it is swapped for the SELECT's
	// start (a chained chunk starts after a chunk not sent yet) and put back.
	sent := t.lastpk
	t.lastpk = from
	sql, cols := s.chunkSQL(t, c.chunkRows)
	t.lastpk = sent
	p := &prefetch{t: t, w: w, snap: snap, cols: cols, pieces: make(chan copyPiece, prefetchPieces), read: make(chan struct{})}
	k := &chunk{s: s, t: t, cols: cols, ctx: c.wctx, throttle: c.throttle, row: newCopiedRow(t, cols),
		direct: t.plan.Passthrough() && len(cols) == len(t.fields)}
	k.keyIdx = make([]int, len(t.keyFields))
	for i, kf := range t.keyFields {
		k.keyIdx[i] = slices.Index(t.fields, kf)
	}
	k.pre = &prefetchOut{p: p, stop: c.stop, failStop: s.failMode == FailStop || s.failMode == "", from: cloneKey(from),
		cur: copyPiece{rows: make([]*binlogdata.RowChange, 0, pieceRows)}}
	k.pre.newArenas(k)
	t.ahead, w.cur = p, p
	c.inflight = append(c.inflight, p)
	c.wg.Add(1)
	go s.readAhead(c, k, w.conn, sql, s.killer(w.conn, "a copy's read ahead"))
	return nil
}

// idleWorker returns a worker not reading, opening a connection for a new one.
func (s *stream) idleWorker(ctx context.Context) (*copyWorker, error) {
	c := s.copy
	for _, w := range c.workers {
		if w.idle() {
			return w, nil
		}
	}
	conn, err := s.eng.copyConn(ctx)
	if err != nil {
		return nil, err
	}
	w := &copyWorker{conn: conn}
	c.workers = append(c.workers, w)
	return w, nil
}

// readAhead is a worker's goroutine: it reads the chunk's rows into pieces, ends the
// snapshot, and hands over the last piece. It touches nothing of the stream's but what
// stays fixed while the stream runs.
func (s *stream) readAhead(c *copier, k *chunk, conn *client.Conn, sql string, kill func()) {
	o := k.pre
	defer c.wg.Done()
	err := func() (err error) {
		defer catch(&err, StageCopy, func(pe *PanicError) { pe.Table = k.t.name })
		// A read the server is still working on when the stream ends is killed, so that
		// the worker's goroutine ends and its connection can be closed.
		stopKill := context.AfterFunc(c.wctx, kill)
		defer stopKill()
		return k.read(conn, sql)
	}()
	if errors.Is(err, errCopyStopped) {
		return
	}
	limit := c.chunkRows
	if err == nil {
		// The rows are read: the snapshot is not needed any more, and releasing it at
		// once lets the server purge the row versions it kept. After a failed read the
		// connection may still hold rows of the result (go-mysql does not drain it), and
		// the stream ends anyway, closing it.
		if _, rerr := conn.Execute("ROLLBACK"); rerr != nil {
			err = fmt.Errorf("%w: copy of %s: end snapshot: %v", ErrUnavailable, k.t.name, rerr)
		}
	}
	o.cur.end, o.cur.n, o.cur.err = true, k.n, err
	o.cur.last = cloneKey(k.last)
	o.p.end, o.p.full = o.cur.last, err == nil && k.n >= limit
	close(o.p.read)
	select {
	case o.p.pieces <- o.cur:
	case <-o.stop:
	}
}

// emitPrefetched sends a chunk read ahead, the stream standing at its snapshot: the chunk's
// transaction as copyChunk sends it, its rows as they arrive.
func (s *stream) emitPrefetched(ctx context.Context, p *prefetch) error {
	t := p.t
	s.now = nowNanos()
	s.out.inChunk = true
	defer func() { s.out.inChunk = false }()
	k := s.newChunk(t, p.cols)
	if err := k.start(); err != nil {
		return err
	}
	// The worker may still be reading (the first table's chunk, or a slow server).
	stopBeats := s.heartbeatWhile()
	defer stopBeats()
	defer func() { _ = k.sender.wait() }()
	n, err := s.takePieces(ctx, k, p)
	if werr := k.sender.wait(); err == nil {
		err = werr
	}
	if err != nil {
		return err
	}
	return k.end(n)
}

// takePieces adds the chunk's rows to the batch piece by piece (addRow), sending full
// batches, and returns the rows the chunk read. Each piece's rows have buffers of their own.
func (s *stream) takePieces(ctx context.Context, k *chunk, p *prefetch) (int, error) {
	t := k.t
	for {
		var pc copyPiece
		select {
		case pc = <-p.pieces:
		case <-ctx.Done():
			return 0, fmt.Errorf("copy of %s: %w", t.name, ctx.Err())
		}
		for _, po := range pc.skipped {
			if err := s.poisoned(po); err != nil {
				return 0, err
			}
		}
		for _, rc := range pc.rows {
			if k.addRow(rc) {
				if err := k.flushRows(nil); err != nil {
					return 0, err
				}
			}
		}
		if pc.last != nil {
			t.setLastPK(pc.last)
		}
		if err := s.chainReads(ctx); err != nil {
			return 0, err
		}
		if !pc.end {
			continue
		}
		if t.ahead == p {
			t.ahead = nil
		}
		if pc.err != nil {
			// The read's errors are wrapped already (chunk.read); a row that cannot be
			// decoded is located here, where the stream stands at the chunk's snapshot.
			var po *PoisonError
			if errors.As(pc.err, &po) {
				s.locate(po)
			}
			return 0, pc.err
		}
		return pc.n, nil
	}
}

// stopWorkers ends the reads ahead still in flight and waits for their goroutines, before
// the copier's connections close: a goroutine is never left reading from a closed one.
func (c *copier) stopWorkers() {
	if c.stop == nil {
		return
	}
	close(c.stop)
	c.cancel()
	c.wg.Wait()
	for _, w := range c.workers {
		// Closing the socket ends the session and its snapshot; nothing more to undo.
		_ = w.conn.Close()
	}
}
