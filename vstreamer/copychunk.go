package vstreamer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	"github.com/vstream-cdc/vstream/internal/faults"
)

// copyChunk reads the next chunk of t from the open snapshot and sends it.
func (s *stream) copyChunk(ctx context.Context, t *copyTable) error {
	c := s.copy
	limit := c.chunkRows
	sql, cols := s.chunkSQL(t, limit)
	if c.vitess {
		// The catch-up's transactions go out before the chunk, as their own packets.
		if err := s.out.flush(); err != nil {
			return err
		}
	}
	s.now = nowNanos()
	// A copy's events are sent whatever event types were asked for, as in Vitess.
	s.out.inChunk = true
	defer func() { s.out.inChunk = false }()
	k := s.newChunk(t, cols)
	k.ctx, k.throttle = ctx, c.throttle
	if c.mems != nil {
		k.reuseMems()
	}
	if err := k.start(); err != nil {
		return err
	}
	// The server may scan long before it returns a row the rule keeps.
	stopBeats := s.heartbeatWhile()
	defer stopBeats()
	// On every way out the batches handed to the sender are sent (or dropped after a failed
	// send) before the stream sends anything else.
	defer func() { _ = k.sender.wait() }()
	err := k.read(c.conn, sql)
	if werr := k.sender.wait(); err == nil {
		err = werr
	}
	if err != nil {
		return err
	}
	return k.end(k.n)
}

// end closes a chunk of n rows read, its rows sent: the table's progress, and the
// transaction's (or Vitess's packets') closing events.
func (k *chunk) end(n int) error {
	s, t, c := k.s, k.t, k.s.copy
	limit := c.chunkRows
	t.status = copyRunning
	t.progress.copied += int64(n)
	if s.observer != nil {
		if time.Since(t.progress.estimatedAt) >= estimateEvery {
			s.estimateRows(t)
		}
		s.observer.CopyProgress(t.name, t.progress.copied, max(t.progress.estimated, t.progress.copied))
	}
	done := len(t.key) == 0 || t.oneRead || n < limit
	if c.vitess {
		return k.endVitess(done)
	}
	return k.endNative(done)
}

// chunk is one copy chunk in flight: the rows of one SELECT on the snapshot, turned into
// events in the batch. Its steps run in order: start, read (a row at a time), then
// endNative or endVitess.
type chunk struct {
	s *stream
	// ctx bounds the throttle's waits; throttle, when set, paces the rows read.
	ctx      context.Context
	throttle *copyThrottle
	// pre, when set, makes this chunk a parallel copy's read ahead on a worker goroutine
	// (copyparallel.go): its rows go to pre instead of the stream's batch, and it touches no
	// state of the stream or the table.
	pre  *prefetchOut
	t    *copyTable
	cols []int // the table column of each result column
	src  *binlogdata.EventSource
	// keyIdx is the table column of each key column; last is the key of the row last read.
	keyIdx []int
	last   [][]byte
	row    *copiedRow
	// direct: the table is streamed whole, so rows are encoded straight into the arenas.
	direct bool
	// open tells whether a copy transaction is open (its BEGIN is in the batch or sent).
	open bool
	// n counts the rows read.
	n int
	// sendErr is a failed send inside the read, returned as is rather than as a read error.
	sendErr error
	// temps are the result's date and time columns, which come packed (copybinary.go).
	temps binaryTemporals
	// sender sends the chunk's full batches while the next rows are read; nil until the
	// first batch fills.
	sender *batchSender

	mem chunkArenas

	rowEv  *binlogdata.RowEvent // native: the ROW event rows are added to
	packet int                  // Vitess-shaped: the open packet's size in row values
	// spare carries the next packet's memory to the sender when packets reuse memory.
	spare *copyMem
}

// chunkArenas is the memory a chunk's rows are encoded into. Rows are encoded at the end
// of the arenas, vals for the values and lens for their lengths, which are replaced once
// their rows are sent (the receiver may still hold the events), or reused when the send
// keeps nothing (copyMem). slabs hand out the rows' structs.
type chunkArenas struct {
	vals  []byte
	lens  []int64
	slabs rowSlabs
}

// copySlab is how many rows one slab of row structs holds.
const copySlab = 256

// rowSlabs hands out the structs of copied rows from slabs: one allocation per many rows.
type rowSlabs struct {
	changes []binlogdata.RowChange
	qrows   []query.Row
	// A Vitess-shaped copy sends one ROW event per row; they come from slabs too.
	vevs   []binlogdata.VEvent
	rowEvs []binlogdata.RowEvent
	rcPtrs []*binlogdata.RowChange
	// reuse takes whole blocks (a slab of each) from free before making new ones, and
	// keeps those handed out since the last take in used: a packet's blocks are reused
	// once it has been sent (copier.mems).
	reuse      bool
	used, free []*slabBlock
}

// slabBlock is one slab of each of a copied row's structs.
type slabBlock struct {
	changes []binlogdata.RowChange
	qrows   []query.Row
	vevs    []binlogdata.VEvent
	rowEvs  []binlogdata.RowEvent
	rcPtrs  []*binlogdata.RowChange
}

// block makes a free or new block the current slabs.
func (sl *rowSlabs) block() {
	var b *slabBlock
	if n := len(sl.free); n > 0 {
		b, sl.free = sl.free[n-1], sl.free[:n-1]
	} else {
		b = &slabBlock{
			changes: make([]binlogdata.RowChange, copySlab), qrows: make([]query.Row, copySlab),
			vevs: make([]binlogdata.VEvent, copySlab), rowEvs: make([]binlogdata.RowEvent, copySlab),
			rcPtrs: make([]*binlogdata.RowChange, copySlab),
		}
	}
	sl.used = append(sl.used, b)
	sl.changes, sl.qrows, sl.vevs, sl.rowEvs, sl.rcPtrs = b.changes, b.qrows, b.vevs, b.rowEvs, b.rcPtrs
}

// take appends the blocks handed out since the last take to into; the next row starts a
// block of its own, so nothing after the take shares a block with what came before.
func (sl *rowSlabs) take(into []*slabBlock) []*slabBlock {
	into = append(into, sl.used...)
	clear(sl.used)
	sl.used = sl.used[:0]
	sl.changes, sl.qrows, sl.vevs, sl.rowEvs, sl.rcPtrs = nil, nil, nil, nil, nil
	return into
}

// change is a RowChange whose after image is values with lengths.
func (sl *rowSlabs) change(values []byte, lengths []int64) *binlogdata.RowChange {
	if len(sl.changes) == 0 {
		if sl.reuse {
			sl.block()
		} else {
			sl.changes = make([]binlogdata.RowChange, copySlab)
			sl.qrows = make([]query.Row, copySlab)
		}
	}
	// Every field is set: a reused struct holds an earlier row's.
	qr := &sl.qrows[0]
	*qr = query.Row{Lengths: lengths, Values: values}
	rc := &sl.changes[0]
	*rc = binlogdata.RowChange{After: qr}
	sl.changes, sl.qrows = sl.changes[1:], sl.qrows[1:]
	return rc
}

// rowEvent is a ROW event of table name holding rc alone.
func (sl *rowSlabs) rowEvent(rc *binlogdata.RowChange, name, keyspace, shard string, src *binlogdata.EventSource) *binlogdata.VEvent {
	if len(sl.vevs) == 0 {
		if sl.reuse {
			sl.block()
		} else {
			sl.vevs = make([]binlogdata.VEvent, copySlab)
			sl.rowEvs = make([]binlogdata.RowEvent, copySlab)
			sl.rcPtrs = make([]*binlogdata.RowChange, copySlab)
		}
	}
	sl.rcPtrs[0] = rc
	re := &sl.rowEvs[0]
	*re = binlogdata.RowEvent{TableName: name, Keyspace: keyspace, Shard: shard, RowChanges: sl.rcPtrs[0:1:1]}
	ev := &sl.vevs[0]
	*ev = binlogdata.VEvent{Type: binlogdata.VEventType_ROW, RowEvent: re, Source: src}
	sl.vevs, sl.rowEvs, sl.rcPtrs = sl.vevs[1:], sl.rowEvs[1:], sl.rcPtrs[1:]
	return ev
}

// copyMem is the memory of one batch's copied rows (a Vitess-shaped packet's, or a native
// batch's): the arenas of their values and lengths and the slab blocks of their structs and
// events.
type copyMem struct {
	arena  []byte
	lens   []int64
	blocks []*slabBlock
}

// copyMems is how many batches' memory a copy keeps for reuse: one being sent, one waiting
// to be, one being filled.
const copyMems = 3

// reuseMems makes the chunk's batches reuse the memory of batches already sent
// (Request.SendRetainsNothing), starting with what the copier holds.
func (k *chunk) reuseMems() {
	k.mem.slabs.reuse = true
	select {
	case m := <-k.s.copy.mems:
		k.useMem(m)
	default:
	}
}

// useMem makes m's memory the chunk's, keeping the emptied m to carry the next packet's.
func (k *chunk) useMem(m *copyMem) {
	k.mem.vals, k.mem.lens = m.arena[:0], m.lens[:0]
	k.mem.slabs.free = append(k.mem.slabs.free, m.blocks...)
	clear(m.blocks)
	*m = copyMem{blocks: m.blocks[:0]}
	k.spare = m
}

// handOver takes the memory of the batch being closed, to go with it to the sender, and
// gives the chunk memory for the next batch: a sent batch's when there is one.
func (k *chunk) handOver() *copyMem {
	m := k.spare
	if m == nil {
		m = &copyMem{}
	}
	k.spare = nil
	m.arena, m.lens = k.mem.vals, k.mem.lens
	m.blocks = k.mem.slabs.take(m.blocks)
	select {
	case r := <-k.s.copy.mems:
		k.useMem(r)
	default:
		k.newArenas()
	}
	return m
}

// giveBack leaves the chunk's memory to the copier's next chunk once everything in it has
// been sent.
func (k *chunk) giveBack() {
	if !k.mem.slabs.reuse {
		return
	}
	m := k.spare
	if m == nil {
		m = &copyMem{}
	}
	k.spare = nil
	m.arena, m.lens = k.mem.vals, k.mem.lens
	m.blocks = append(k.mem.slabs.take(m.blocks), k.mem.slabs.free...)
	clear(k.mem.slabs.free)
	k.mem.slabs.free = k.mem.slabs.free[:0]
	select {
	case k.s.copy.mems <- m:
	default:
	}
}

func (s *stream) newChunk(t *copyTable, cols []int) *chunk {
	keyIdx := make([]int, len(t.keyFields))
	for i, kf := range t.keyFields {
		keyIdx[i] = slices.Index(t.fields, kf)
	}
	return &chunk{
		s: s, t: t, cols: cols, src: s.copySource(t), keyIdx: keyIdx,
		row:    newCopiedRow(t, cols),
		direct: t.plan.Passthrough() && len(cols) == len(t.fields),
	}
}

// begin opens the chunk's copy transaction.
func (k *chunk) begin() {
	k.s.add(&binlogdata.VEvent{Type: binlogdata.VEventType_BEGIN, Source: k.src})
	k.s.cursor.inTxn = true
	k.open = true
}

// start opens the chunk: a native chunk is one transaction, begun here; the table's FIELD
// event goes first when the client lacks it; a Vitess-shaped chunk then tells the position.
func (k *chunk) start() error {
	s := k.s
	if !s.copy.vitess {
		k.begin()
	}
	if err := k.sendFields(); err != nil {
		return err
	}
	if s.copy.vitess {
		return s.copyTellPosition(k.open)
	}
	return nil
}

// sendFields adds the table's FIELD event when the client has not seen it, or has since
// seen a different one for the table.
func (k *chunk) sendFields() error {
	s, t := k.s, k.t
	if prev := s.fieldsFor[t.name]; t.fieldsSent && (prev == nil || prev == s.copyFieldsPlan(t)) {
		return nil
	}
	fsrc, err := s.copyFieldSource(t, k.src)
	if err != nil {
		return err
	}
	if !k.open {
		k.begin()
	}
	s.add(&binlogdata.VEvent{Type: binlogdata.VEventType_FIELD, Source: fsrc, FieldEvent: &binlogdata.FieldEvent{
		TableName: t.name, Fields: t.plan.Fields(), Keyspace: s.cfg.Keyspace, Shard: s.cfg.Shard, EnumSetStringValues: true,
	}})
	t.fieldsSent = true
	s.fieldsFor[t.name] = s.copyFieldsPlan(t)
	return nil
}

// read runs the chunk's SELECT and adds its rows to the batch, sending full batches. The
// SELECT is a prepared statement, so that its rows come in the binary protocol (see
// copybinary.go).
func (k *chunk) read(conn *client.Conn, sql string) error {
	var result mysql.Result
	stmt, err := conn.Prepare(sql)
	if err != nil {
		return fmt.Errorf("%w: copy of %s: %v", ErrUnavailable, k.t.name, err)
	}
	err = stmt.ExecuteSelectStreaming(&result, k.onRow, k.takeTemporals)
	if err == nil {
		// A failed close leaves the statement to the session, which the copy ends.
		_ = stmt.Close()
	}
	if k.sendErr != nil {
		return k.sendErr
	}
	if po := (*PoisonError)(nil); errors.As(err, &po) {
		return po
	}
	if err != nil {
		return fmt.Errorf("%w: copy of %s: %v", ErrUnavailable, k.t.name, err)
	}
	return nil
}

// onRow takes one row of the SELECT.
func (k *chunk) onRow(row []mysql.FieldValue) error {
	k.n++
	if k.throttle != nil {
		if err := k.throttle.take(k.ctx, k.n); err != nil {
			return err
		}
	}
	if len(k.temps.cols) == 0 {
		return k.encode(row)
	}
	if k.direct && !faults.Enabled() {
		// Packed values are printed straight into the arenas.
		return k.encodeWhole(row, true)
	}
	if j, err := k.temps.print(row); err != nil {
		err = k.poison(row, k.cols[j], err, false)
		k.temps.restore(row)
		return err
	}
	err := k.encode(row)
	k.temps.restore(row)
	return err
}

// poison handles a row whose table column ci cannot be decoded (copyPoison); packed tells
// that the row's dates and times are still packed, so they are printed first, for its key.
func (k *chunk) poison(row []mysql.FieldValue, ci int, cause error, packed bool) error {
	if packed {
		// A date or time that does not unpack is left packed: the key, if it is one, then
		// does not decode, and the row cannot be skipped.
		_, _ = k.temps.print(row)
		defer k.temps.restore(row)
	}
	if k.pre != nil {
		return k.pre.poison(k, row, ci, cause)
	}
	return k.s.copyPoison(k.t, k.cols, k.keyIdx, ci, row, cause)
}

// encode adds one row, every value as the text protocol gives it, to the batch.
func (k *chunk) encode(row []mysql.FieldValue) error {
	if faults.Enabled() {
		faults.At(faults.Copy, k.t.name, row)
	}
	if k.direct {
		return k.encodeWhole(row, false)
	}
	return k.encodeFiltered(row)
}

// encodeWhole encodes a row of a table streamed whole straight into the arenas; packed
// tells that its dates and times are still packed (copybinary.go).
func (k *chunk) encodeWhole(row []mysql.FieldValue, packed bool) error {
	t := k.t
	start, lstart := len(k.mem.vals), len(k.mem.lens)
	for j := range k.cols {
		before := len(k.mem.vals)
		var null bool
		var err error
		if bt := k.temps.packedAt(j); packed && bt != nil && row[j].Type == mysql.FieldValueTypeString {
			k.mem.vals, err = appendTemporal(k.mem.vals, bt.typ, bt.fsp, row[j].AsString())
		} else {
			k.mem.vals, null, err = t.cols[j].AppendCopied(k.mem.vals, &row[j])
		}
		if err != nil {
			k.mem.vals, k.mem.lens = k.mem.vals[:start], k.mem.lens[:lstart]
			return k.poison(row, j, err, packed)
		}
		if null {
			k.mem.lens = append(k.mem.lens, -1)
		} else {
			k.mem.lens = append(k.mem.lens, int64(len(k.mem.vals)-before))
		}
	}
	k.last = k.last[:0]
	lens := k.mem.lens[lstart:]
	for _, ki := range k.keyIdx {
		off := start
		for _, l := range lens[:ki] {
			off += int(max(l, 0))
		}
		if lens[ki] < 0 {
			k.last = append(k.last, nil)
			continue
		}
		k.last = append(k.last, k.mem.vals[off:off+int(lens[ki])])
	}
	return k.emit(start, lstart)
}

// encodeFiltered decodes a row into cells, drops it if the rule does not keep it, and
// encodes the columns the rule selects into the arenas.
func (k *chunk) encodeFiltered(row []mysql.FieldValue) error {
	t := k.t
	if ci, err := k.row.read(row); err != nil {
		return k.poison(row, ci, err, false)
	}
	cells := k.row.cells
	k.last = k.last[:0]
	for _, ki := range k.keyIdx {
		k.last = append(k.last, cells[ki])
	}
	if !t.plan.Match(cells) {
		if k.pre == nil {
			// A read ahead keeps its last key in k.last: the table's is the stream's.
			t.setLastPK(k.last)
		}
		return nil
	}
	start, lstart := len(k.mem.vals), len(k.mem.lens)
	k.mem.vals, k.mem.lens = t.plan.AppendRow(k.mem.vals, k.mem.lens, cells)
	return k.emit(start, lstart)
}

// emit adds one copied row, already encoded at the end of the arenas, to the batch.
func (k *chunk) emit(start, lstart int) error {
	rc := k.mem.slabs.change(k.mem.vals[start:len(k.mem.vals):len(k.mem.vals)], k.mem.lens[lstart:len(k.mem.lens):len(k.mem.lens)])
	if k.pre != nil {
		return k.pre.add(k, rc)
	}
	if k.s.copy.vitess {
		return k.emitVitess(rc)
	}
	return k.emitNative(rc)
}

// emitNative adds the row to the chunk's ROW event, and sends the batch once it is full.
func (k *chunk) emitNative(rc *binlogdata.RowChange) error {
	full := k.addRow(rc)
	k.t.setLastPK(k.last)
	if full {
		return k.flushRows(k.closeMem())
	}
	return nil
}

// addRow adds the row to the chunk's ROW event, starting one in the batch when there is
// none, and reports a full batch, which the caller sends (flushRows): the next row then
// starts a new ROW event in the next batch.
func (k *chunk) addRow(rc *binlogdata.RowChange) (full bool) {
	s := k.s
	if k.rowEv == nil {
		k.rowEv = &binlogdata.RowEvent{TableName: k.t.name, Keyspace: s.cfg.Keyspace, Shard: s.cfg.Shard}
		s.add(&binlogdata.VEvent{Type: binlogdata.VEventType_ROW, RowEvent: k.rowEv, Source: k.src})
	}
	k.rowEv.RowChanges = append(k.rowEv.RowChanges, rc)
	qr := rc.After
	s.out.batchSize += len(qr.Values) + 2*len(qr.Lengths)
	s.out.rowBytes += len(qr.Values)
	if !s.out.copyBatchFull() {
		return false
	}
	k.rowEv = nil
	return true
}

// flushRows hands the full batch to the chunk's sender, which sends it while the read goes
// on, and starts the next batch.
func (k *chunk) flushRows(mem *copyMem) error {
	s := k.s
	if k.sender == nil {
		k.sender = s.out.newBatchSender(k.t.name, s.copy.mems)
	}
	next, err := k.sender.push(s.out.batch, mem)
	if err != nil {
		k.sendErr = err
		return err
	}
	s.out.batch, s.out.batchSize, s.out.rowBytes = next, 0, 0
	s.out.mems.handedOff()
	s.out.flushes++
	return nil
}

// emitVitess adds the row as a ROW event of its own, opening a packet if none is open, and
// closes and sends the packet once its rows reach Vitess's packet size.
func (k *chunk) emitVitess(rc *binlogdata.RowChange) error {
	s, t := k.s, k.t
	if !k.open {
		k.begin()
	}
	s.add(k.mem.slabs.rowEvent(rc, t.name, s.cfg.Keyspace, s.cfg.Shard, k.src))
	qr := rc.After
	s.out.batchSize += len(qr.Values) + 2*len(qr.Lengths)
	t.setLastPK(k.last)
	// Vitess's rowstreamer measures a packet by its rows' values.
	if k.packet += len(qr.Values); k.packet >= s.out.vitessPacket {
		mem := k.closeMem()
		k.closePacket()
		return k.flushRows(mem)
	}
	return nil
}

// closeMem gives the chunk memory for the next batch as the full one closes, and returns the
// full batch's, to go with it to the sender when batches reuse memory (nil when they do not).
func (k *chunk) closeMem() *copyMem {
	if k.mem.slabs.reuse {
		return k.handOver()
	}
	// New buffers for the next rows: the events sent may still be held by the receiver.
	k.newArenas()
	return nil
}

// newArenas replaces the arenas once their rows are sent: the receiver may still hold them.
func (k *chunk) newArenas() {
	k.mem.vals = make([]byte, 0, cap(k.mem.vals))
	k.mem.lens = make([]int64, 0, cap(k.mem.lens))
}

// closePacket ends a Vitess-shaped packet of rows: its LASTPK, then the VGTID that stands
// for it at vtgate, then COMMIT.
func (k *chunk) closePacket() {
	s, t := k.s, k.t
	if t.lastpk != nil {
		s.add(&binlogdata.VEvent{Type: binlogdata.VEventType_LASTPK, LastPKEvent: &binlogdata.LastPKEvent{
			TableLastPK: &binlogdata.TableLastPK{TableName: t.name, Lastpk: t.lastPKResult()},
		}})
	}
	s.add(s.vgtidEvent(), &binlogdata.VEvent{Type: binlogdata.VEventType_COMMIT})
	s.cursor.inTxn, k.open, k.packet = false, false, 0
}

// endNative ends a native chunk's transaction: the last key read (completed when the table
// is done), COPY_COMPLETED for a table copied to its end and then for the whole copy, COMMIT
// and the VGTID.
func (k *chunk) endNative(done bool) error {
	s, t, c := k.s, k.t, k.s.copy
	if done {
		t.status = copyDone
	}
	s.add(&binlogdata.VEvent{Type: binlogdata.VEventType_LASTPK, LastPKEvent: &binlogdata.LastPKEvent{
		TableLastPK: &binlogdata.TableLastPK{TableName: t.name, Lastpk: t.lastPKResult()},
		Completed:   done,
	}})
	if done {
		s.add(&binlogdata.VEvent{Type: binlogdata.VEventType_COPY_COMPLETED, LastPKEvent: &binlogdata.LastPKEvent{
			TableLastPK: &binlogdata.TableLastPK{TableName: t.name}, Completed: true,
		}})
		if c.next() == nil && !s.copyingOthers() {
			final := &binlogdata.VEvent{Type: binlogdata.VEventType_COPY_COMPLETED}
			s.add(final)
			final.Keyspace, final.Shard = "", ""
		}
	}
	if c.next() == nil {
		// From here on positions carry no copy state: resuming from them just streams.
		c.finished = true
	}
	s.add(&binlogdata.VEvent{Type: binlogdata.VEventType_COMMIT})
	s.add(s.vgtidEvent())
	s.cursor.inTxn = false
	if s.observer != nil {
		s.observer.Position(s.cursor.pos.String(), time.Now())
	}
	err := s.out.flush()
	// Every row of the chunk has been sent.
	k.giveBack()
	return err
}

// endVitess ends a Vitess-shaped chunk: the open packet closes with the last key read,
// and a table copied to its end is marked so in a transaction of its own,
// BEGIN, LASTPK{completed}, COMMIT, followed after the last table by COPY_COMPLETED.
func (k *chunk) endVitess(done bool) error {
	s, t, c := k.s, k.t, k.s.copy
	if k.open {
		k.closePacket()
		if err := s.out.flush(); err != nil {
			return err
		}
	}
	// Every row of the chunk has been sent.
	k.giveBack()
	if done {
		t.status = copyDone
		s.add(&binlogdata.VEvent{Type: binlogdata.VEventType_BEGIN},
			&binlogdata.VEvent{Type: binlogdata.VEventType_LASTPK, LastPKEvent: &binlogdata.LastPKEvent{
				TableLastPK: &binlogdata.TableLastPK{TableName: t.name}, Completed: true,
			}})
		if c.next() == nil {
			c.finished = true
		}
		s.add(s.vgtidEvent(), &binlogdata.VEvent{Type: binlogdata.VEventType_COMMIT})
		if c.finished {
			// COPY_COMPLETED goes out alone, and replication after it describes every table
			// again, as after Vitess's copy.
			if err := s.out.flush(); err != nil {
				return err
			}
			s.add(&binlogdata.VEvent{Type: binlogdata.VEventType_COPY_COMPLETED})
			if s.multi() && !s.copyingOthers() {
				// One keyspace's COPY_COMPLETED is a shard's at vtgate; vtgate follows the
				// last shard's with one for the whole copy, which only the stream can tell.
				final := &binlogdata.VEvent{Type: binlogdata.VEventType_COPY_COMPLETED}
				s.add(final)
				final.Keyspace, final.Shard = "", ""
			}
			clear(s.fieldsFor)
		}
	}
	s.cursor.inTxn = false
	if s.observer != nil {
		s.observer.Position(s.cursor.pos.String(), time.Now())
	}
	return s.out.flush()
}
