package vstreamer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/replication"
	"google.golang.org/protobuf/proto"

	"github.com/vstream-cdc/vstream/filter"
	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	"github.com/vstream-cdc/vstream/internal/faults"
	"github.com/vstream-cdc/vstream/vstreamer/rowcodec"
	"github.com/vstream-cdc/vstream/vstreamer/schema"
)

// tablePlan is how rows of one table id are turned into events.
type tablePlan struct {
	name string
	// db is the table's database.
	db string
	// ks is the keyspace of the table's database; nil for tables of other databases.
	ks *keyspaceStream
	// selected is false for tables the filter leaves out (or of other databases).
	selected bool
	cols     []rowcodec.Column
	fields   []*query.Field
	// filter is the rule's plan for the table: projection and conditions.
	filter *filter.TablePlan
	// signature of the TABLE_MAP the plan was built from, to notice a reused table id.
	types []byte
	meta  []uint16
	names []string
	// fitted is the last TABLE_MAP event the plan was found to fit: a binlog reader hands
	// out one event for a table's repeated maps (payloadReader.parseTableMap).
	fitted *replication.TableMapEvent
	// arenaHint is the size of the last rows event's values, to size the next one's buffer.
	arenaHint int
	// textPerByte and lengthsPerByte are how many bytes of text and how many lengths the last
	// raw rows event's bytes made, to size the next one's buffers.
	textPerByte, lengthsPerByte float64
	// rawImages holds the decoded images of a rows event while its rows are judged.
	rawImages rowcodec.Images
	// copyKey holds the binlog column indexes of copyKeyFor's key, while that table is copied.
	copyKey    []int
	copyKeyFor *copyTable
}

func (p *tablePlan) fits(tm *replication.TableMapEvent) bool {
	if tm == p.fitted {
		return true
	}
	if !p.fitsSignature(tm) {
		return false
	}
	p.fitted = tm
	return true
}

func (p *tablePlan) fitsSignature(tm *replication.TableMapEvent) bool {
	if p.name != string(tm.Table) || p.db != string(tm.Schema) {
		return false
	}
	if !p.selected {
		// Whether a table is streamed depends on its database and name only: the plan of
		// one that is not holds nothing its columns change.
		return true
	}
	return bytes.Equal(p.types, tm.ColumnType) && slices.Equal(p.meta, tm.ColumnMeta) &&
		slices.EqualFunc(p.names, tm.ColumnName, func(n string, b []byte) bool { return n == string(b) })
}

func (s *stream) tableMap(ts uint32, tm *replication.TableMapEvent) error {
	p := s.plans[tm.TableID]
	if p == nil || !p.fits(tm) {
		var err error
		if p, err = s.buildPlan(tm); err != nil {
			return err
		}
		s.plans[tm.TableID] = p
	}
	if !p.selected || !s.out.wants(binlogdata.VEventType_ROW) && !s.out.wants(binlogdata.VEventType_FIELD) {
		return nil
	}
	s.use(p.ks)
	if ct := s.copy.state(p.name); ct != nil && ct.status == copyPending {
		return nil
	}
	if prev := s.fieldsFor[p.name]; prev == p || prev != nil && sameFields(prev.fields, p.fields) {
		s.fieldsFor[p.name] = p
		return nil
	}
	s.fieldsFor[p.name] = p
	s.begin(ts)
	s.enter(p.ks)
	ev := &binlogdata.VEvent{
		Type:      binlogdata.VEventType_FIELD,
		Timestamp: int64(ts),
		EventGtid: s.cursor.gti(),
		FieldEvent: &binlogdata.FieldEvent{
			TableName:           p.name,
			Fields:              p.fields,
			Keyspace:            s.cfg.Keyspace,
			Shard:               s.cfg.Shard,
			EnumSetStringValues: hasEnumOrSet(p.fields),
		},
	}
	if ev.Source = s.source(); ev.Source != nil {
		ev.Source.Database = string(tm.Schema)
		ev.Source.TableId = tm.TableID
	}
	s.add(ev)
	return nil
}

// hasEnumOrSet reports whether a FIELD carries an ENUM or SET column: a replicated FIELD says
// its ROWs hold labels only then, as Vitess's does (the copy's FIELD always says so). The
// column type is read as well as the type, because an ENUM or SET of a binary collation is
// typed BINARY.
func hasEnumOrSet(fields []*query.Field) bool {
	return slices.ContainsFunc(fields, func(f *query.Field) bool {
		ct := strings.ToLower(f.ColumnType)
		return f.Type == query.Type_ENUM || f.Type == query.Type_SET || strings.HasPrefix(ct, "enum(") || strings.HasPrefix(ct, "set(")
	})
}

func sameFields(a, b []*query.Field) bool {
	return slices.EqualFunc(a, b, func(x, y *query.Field) bool { return proto.Equal(x, y) })
}

// columnNames is the column names tm carries (binlog_row_metadata=FULL), nil without them.
// The event is shared by the streams of a binlog reader, so its own cache of them
// (ColumnNameString, filled on first use) is left alone.
func columnNames(tm *replication.TableMapEvent) []string {
	if tm.ColumnName == nil {
		return nil
	}
	names := make([]string, len(tm.ColumnName))
	for i, b := range tm.ColumnName {
		names[i] = string(b)
	}
	return names
}

func (s *stream) buildPlan(tm *replication.TableMapEvent) (*tablePlan, error) {
	p := &tablePlan{
		name:   string(tm.Table),
		db:     string(tm.Schema),
		types:  slices.Clone(tm.ColumnType),
		meta:   slices.Clone(tm.ColumnMeta),
		names:  columnNames(tm),
		fitted: tm,
	}
	k := s.ks
	if string(tm.Schema) != k.cfg.Database {
		if k = s.keyspaceOf(tm.Schema); k == nil {
			return p, nil
		}
		s.use(k)
	}
	if schema.Internal(p.name) || s.filter.Table(p.name) == nil {
		return p, nil
	}
	p.selected, p.ks = true, k
	cols, hasNames := rowcodec.FromTableMap(tm)
	info, err := s.tableInfo(p.name, cols, hasNames)
	if err != nil {
		return nil, err
	}
	if err = schema.Reconcile(cols, hasNames, info); err != nil {
		if !errors.Is(err, schema.ErrMismatch) {
			return nil, err
		}
		if !s.filter.BestEffort() {
			return nil, fmt.Errorf("%w: table %s: %v; set binlog_row_metadata=FULL or use field_event_mode BEST_EFFORT", ErrSchema, p.name, err)
		}
		schema.NameByPosition(cols)
	}
	p.cols = cols
	fields, pk := tableFields(s.cfg.Database, p.name, cols)
	tp, err := s.filter.Plan(p.name, fields, pk)
	if err != nil {
		// The rule fitted the table when the stream started; a DDL since has changed it.
		return nil, fmt.Errorf("%w: %v", ErrSchema, err)
	}
	p.filter = tp
	p.fields = tp.Fields()
	return p, nil
}

// tableInfo is the definition a table's rows at the stream's position are described with:
// the schema history's, when one runs and its definition there fits the binlog's columns,
// else the table's definition now.
func (s *stream) tableInfo(table string, cols []rowcodec.Column, hasNames bool) ([]schema.ColumnInfo, error) {
	// The history records the configured database's tables only.
	if h, wait := s.eng.history(); h != nil && s.cfg.Database == s.eng.cfg.Database {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		info, ok, err := h.Lookup(ctx, s.cfg.Database, table, s.cursor.pos)
		cancel()
		switch {
		case err != nil:
			s.log.Warn("schema history: no definition; describing the table as it is now", "table", table, "err", err)
		case ok && schema.Fits(cols, hasNames, info):
			return info, nil
		}
	}
	var info []schema.ColumnInfo
	err := s.sql(func(conn *client.Conn) (err error) {
		info, err = schema.Load(conn, s.cfg.Database, table)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return info, nil
}

// tableFields renders columns as FIELD columns and lists the primary key's.
func tableFields(db, table string, cols []rowcodec.Column) ([]*query.Field, []int) {
	fields := make([]*query.Field, len(cols))
	var pk []int
	for i := range cols {
		fields[i] = cols[i].Field(db, table)
		if cols[i].PrimaryKey {
			pk = append(pk, i)
		}
	}
	return fields, pk
}

// rows turns a rows event of a selected table into one ROW event in the batch: each row's
// images are encoded (whole, or judged by the filter and the copy first), then sent.
func (s *stream) rows(ts uint32, typ replication.EventType, e *replication.RowsEvent) error {
	// Every rows event of the transaction counts, sent or not.
	s.txn.rowsEvents++
	p, ct, err := s.rowsPlan(e)
	if p == nil || err != nil {
		return err
	}
	raw := rowcodec.RawOf(e)
	if faults.Enabled() {
		raw = rowsFaults(p, ct, e, raw)
	}
	if err = p.checkLogged(e); err != nil {
		return err
	}
	whole := p.filter.Passthrough() && ct == nil
	b, err := newRowsBuild(s, p, ct, typ, e, raw, whole)
	if err != nil {
		return err
	}
	for i := 0; i < b.n; i++ {
		var imgs [2]*query.Row
		if whole {
			if imgs, err = b.encodeWhole(i); err != nil {
				return err
			}
		} else {
			var out [2]bool
			if out, err = b.judge(i); err != nil {
				return err
			}
			if !out[0] && !out[1] {
				continue
			}
			imgs = b.encodeJudged(out)
		}
		b.addChange(i, imgs)
	}
	if b.kept == 0 {
		s.out.mems.put(b.release())
		return nil
	}
	if err := s.sendRows(ts, e, p, &b); err != nil {
		return err
	}
	s.out.mems.hold(b.release())
	return nil
}

// rowsPlan is the plan of a rows event's table, nil when the event is not streamed: its
// table is not selected, ROW events were not asked for, or the table's rows will come from
// its copy. It fails an event this server cannot read.
func (s *stream) rowsPlan(e *replication.RowsEvent) (*tablePlan, *copyTable, error) {
	p := s.plans[e.TableID]
	if p == nil || !p.selected || !s.out.wants(binlogdata.VEventType_ROW) {
		return nil, nil, nil
	}
	if i := rowcodec.CompressedColumn(p.cols); i >= 0 {
		return nil, nil, fmt.Errorf("%w: table %s: column %s is a MariaDB COMPRESSED column, whose binlog rows this server cannot read; remove COMPRESSED from it (ALTER TABLE ... MODIFY) or leave the table out of the filter",
			ErrSchema, p.name, p.cols[i].Name)
	}
	if int(e.ColumnCount) != len(p.cols) {
		return nil, nil, fmt.Errorf("%w: table %s: rows event has %d columns, table map %d", ErrSchema, p.name, e.ColumnCount, len(p.cols))
	}
	s.use(p.ks)
	ct := s.copy.state(p.name)
	if ct != nil && ct.status == copyPending {
		// The table's rows will come from its copy, with these changes in them.
		return nil, nil, nil
	}
	return p, ct, nil
}

// rowsBuild holds the RowChanges of one rows event while they are built: their rows'
// values share one arena, sized from the table's previous event.
type rowsBuild struct {
	s  *stream
	p  *tablePlan
	ct *copyTable // the table's copy, while it runs
	e  *replication.RowsEvent
	// images is how many images each row has: two for an update, else one.
	images int
	// firstIsBefore: delete rows are before images; insert rows after images; updates alternate.
	firstIsBefore bool
	n, width      int
	split         bool
	dataColumns   *binlogdata.RowChange_Bitmap
	// raw holds the event's images as rowcodec decoded them from its bytes; nil when go-mysql
	// decoded its rows (e.Rows). Whole rows are decoded straight into the arena.
	raw *rowcodec.Images

	changes []binlogdata.RowChange
	kept    int
	qrows   []query.Row
	lengths []int64
	arena   []byte
	size    int
	// mem is where the slices above came from (rowMems).
	mem *rowMem
}

func newRowsBuild(s *stream, p *tablePlan, ct *copyTable, typ replication.EventType, e *replication.RowsEvent, raw *rowcodec.Raw, whole bool) (rowsBuild, error) {
	images := 1
	if isUpdate(e) {
		images = 2
	}
	width := len(p.fields)
	b := rowsBuild{
		s: s, p: p, ct: ct, e: e,
		images:        images,
		firstIsBefore: e.Type() != replication.EnumRowsEventTypeInsert,
		width:         width,
		split:         p.filter.SplitsImages(),
		dataColumns:   afterDataColumns(e),
	}
	count := len(e.Rows)
	m := s.out.mems.get()
	b.mem = m
	if raw != nil {
		im := &p.rawImages
		size := float64(raw.Size())
		if whole {
			// The images are the rows: they are decoded into the event's arena, sized from the
			// text the previous event's bytes made (events of one table vary in size: the
			// server splits a statement's rows into events of about 8KB).
			im = &m.images
			im.Values = bytesFor(m.vals, int(size*p.textPerByte*1.125)+64)
			im.Lengths = lengthsFor(m.lens, int(size*p.lengthsPerByte*1.125)+16)
			im.Starts = p.rawImages.Starts
		}
		im.Reset()
		if err := decodeRaw(p, typ, raw, im); err != nil {
			return b, err
		}
		b.raw, count = im, im.Count()
		if whole {
			b.arena, b.lengths = im.Values, im.Lengths
			p.rawImages.Starts = im.Starts
			if size > 0 {
				p.textPerByte, p.lengthsPerByte = float64(len(im.Values))/size, float64(len(im.Lengths))/size
			}
		}
	}
	if b.arena == nil {
		b.arena = bytesFor(m.vals, p.arenaHint+p.arenaHint/4)
	}
	b.n = count / images
	b.changes = changesFor(m.changes, b.n)
	b.qrows = rowsFor(m.qrows, b.n*images)
	if b.lengths == nil {
		b.lengths = lengthsFor(m.lens, b.n*images*width)
	}
	return b, nil
}

// release gives back the build's memory, as it grew: to be held until its ROW event has
// been sent, or freed when none was made.
func (b *rowsBuild) release() *rowMem {
	m := b.mem
	m.vals, m.lens, m.changes, m.qrows = b.arena, b.lengths, b.changes, b.qrows
	m.images.Values, m.images.Lengths, m.images.Starts = nil, nil, nil
	return m
}

// decodeRaw decodes the rows of a rows event that rowcodec left raw into im. When the event
// also carries go-mysql's decoding (rowcodec.DecodeRowsVerified, in tests), both must render
// every value alike.
func decodeRaw(p *tablePlan, typ replication.EventType, raw *rowcodec.Raw, im *rowcodec.Images) error {
	if err := raw.Decode(p.cols, typ, im); err != nil {
		var de *rowcodec.DecodeError
		if errors.As(err, &de) && de.Column < len(p.cols) {
			return &PoisonError{Table: p.name, Column: p.cols[de.Column].Name, Err: fmt.Errorf("rows event: %w", de.Err)}
		}
		return &PoisonError{Table: p.name, Err: fmt.Errorf("rows event: %w", err)}
	}
	if raw.Decoded == nil {
		return nil
	}
	if len(raw.Decoded) != im.Count() {
		return fmt.Errorf("table %s: rowcodec decoded %d row images, go-mysql %d", p.name, im.Count(), len(raw.Decoded))
	}
	w := len(p.cols)
	for k, row := range raw.Decoded {
		values, lengths, err := p.encode(nil, nil, row)
		if err != nil {
			return err
		}
		gotL, gotV := im.Lengths[k*w:(k+1)*w], im.Values[im.Starts[k]:im.Starts[k+1]]
		if !slices.Equal(gotL, lengths) || !bytes.Equal(gotV, values) {
			return fmt.Errorf("table %s: row image %d: rowcodec decoded %v %q, go-mysql %v %q", p.name, k, gotL, gotV, lengths, values)
		}
	}
	return nil
}

// encodeWhole encodes every image of row i, all columns, straight into the arena.
func (b *rowsBuild) encodeWhole(i int) (imgs [2]*query.Row, err error) {
	for img := 0; img < b.images; img++ {
		k := i*b.images + img
		if b.raw != nil {
			// Decoded in place: the image is the row.
			w := len(b.p.cols)
			l0, l1, v0, v1 := k*w, (k+1)*w, b.raw.Starts[k], b.raw.Starts[k+1]
			b.qrows = append(b.qrows, query.Row{Lengths: b.lengths[l0:l1:l1], Values: b.arena[v0:v1:v1]})
			imgs[img] = &b.qrows[len(b.qrows)-1]
			continue
		}
		start, lstart := len(b.arena), len(b.lengths)
		if b.arena, b.lengths, err = b.p.encode(b.arena, b.lengths, b.e.Rows[k]); err != nil {
			return imgs, err
		}
		imgs[img] = b.addRow(start, lstart)
	}
	return imgs, nil
}

// judge decodes the images of row i into the stream's scratch rows and tells which of them
// go out: none when the filter keeps neither, or the client does not hold the row and will
// get it from the copy.
func (b *rowsBuild) judge(i int) (out [2]bool, err error) {
	s, p, ct, images := b.s, b.p, b.ct, b.images
	var pass, held [2]bool
	for img := 0; img < images; img++ {
		sc := &s.scratch[img]
		if k := i*images + img; b.raw != nil {
			w := len(p.cols)
			sc.cells = cellsOf(sc.cells, b.raw.Values[b.raw.Starts[k]:b.raw.Starts[k+1]], b.raw.Lengths[k*w:(k+1)*w])
		} else {
			sc.values, sc.lengths = sc.values[:0], sc.lengths[:0]
			if sc.values, sc.lengths, err = p.encode(sc.values, sc.lengths, b.e.Rows[k]); err != nil {
				return out, err
			}
			sc.cells = cellsOf(sc.cells, sc.values, sc.lengths)
		}
		pass[img] = p.filter.Match(sc.cells)
		held[img] = true
		if ct != nil {
			if held[img], err = s.inCopiedRange(ct, p, sc.cells); err != nil {
				return out, err
			}
		}
	}
	if ct != nil && images == 2 && !allLogged(b.e.ColumnBitmap2, p.copyKey) {
		// A MINIMAL after image leaves out a key it did not change: the row is where
		// its before image is.
		held[1] = held[0]
	}
	if images == 1 && !held[0] || images == 2 && !held[0] && !held[1] {
		return out, nil
	}
	// An image of a row the client does not hold is left out: an update that moves
	// a row into the copied range arrives as an insert, one that moves it out as a
	// delete, and each is then judged by the filter alone.
	partial := images == 2 && held[0] != held[1]
	if partial {
		pass[0] = pass[0] && held[0]
		pass[1] = pass[1] && held[1]
	}
	if !pass[0] && !pass[1] {
		return out, nil
	}
	for img := 0; img < images; img++ {
		out[img] = pass[img] || !b.split && !partial
	}
	return out, nil
}

// encodeJudged encodes the images judge let out, as the filter projects them, into the arena.
func (b *rowsBuild) encodeJudged(out [2]bool) (imgs [2]*query.Row) {
	for img := 0; img < b.images; img++ {
		if !out[img] {
			continue
		}
		start, lstart := len(b.arena), len(b.lengths)
		b.arena, b.lengths = b.p.filter.AppendRow(b.arena, b.lengths, b.s.scratch[img].cells)
		imgs[img] = b.addRow(start, lstart)
	}
	return imgs
}

// addRow is the row image encoded at the end of the arena from start (values) and lstart
// (lengths).
func (b *rowsBuild) addRow(start, lstart int) *query.Row {
	b.qrows = append(b.qrows, query.Row{Lengths: b.lengths[lstart:len(b.lengths):len(b.lengths)], Values: b.arena[start:len(b.arena):len(b.arena)]})
	return &b.qrows[len(b.qrows)-1]
}

// addChange keeps row i as a RowChange of imgs.
func (b *rowsBuild) addChange(i int, imgs [2]*query.Row) {
	rc := &b.changes[b.kept]
	b.kept++
	if b.s.withSrc {
		rc.RowIndex = uint32(i)
	}
	switch {
	case b.images == 2:
		// With a keyrange one of them may be missing: the row left or entered the range.
		rc.Before, rc.After = imgs[0], imgs[1]
	case b.firstIsBefore:
		rc.Before = imgs[0]
	default:
		rc.After = imgs[0]
	}
	if rc.After != nil {
		rc.DataColumns = b.dataColumns
	}
	b.size += 2 * b.width * b.images
}

// sendRows adds the kept RowChanges of b to the batch as one ROW event, first sending the
// batch when the event would take it past the packet size.
func (s *stream) sendRows(ts uint32, e *replication.RowsEvent, p *tablePlan, b *rowsBuild) error {
	changes := b.changes[:b.kept]
	size := b.size + len(b.arena)
	p.arenaHint = len(b.arena)
	ptrs := ptrsFor(b.mem.ptrs, len(changes))
	for i := range changes {
		ptrs[i] = &changes[i]
	}
	b.mem.ptrs = ptrs
	if s.out.packetSize > 0 {
		// Vitess's vstreamer: the event that would take the batch's row values past the
		// packet size goes to the next batch.
		if len(s.out.batch) > 0 && s.out.rowBytes+len(b.arena) > s.out.packetSize {
			if err := s.out.flush(); err != nil {
				return err
			}
		}
		s.out.rowBytes += len(b.arena)
	}
	s.begin(ts)
	s.enter(p.ks)
	ev := &binlogdata.VEvent{
		Type:      binlogdata.VEventType_ROW,
		Timestamp: int64(ts),
		EventGtid: s.cursor.gti(),
		RowEvent: &binlogdata.RowEvent{
			TableName:  p.name,
			RowChanges: ptrs,
			Keyspace:   s.cfg.Keyspace,
			Shard:      s.cfg.Shard,
			Flags:      uint32(e.Flags),
		},
	}
	if ev.Source = s.source(); ev.Source != nil {
		ev.Source.Database = s.cfg.Database
		ev.Source.TableId = e.TableID
		ev.Source.RowsEventOrdinal = s.txn.rowsEvents
		ev.Source.Query = s.txn.query
	}
	s.add(ev)
	s.out.batchSize += size
	return nil
}

// afterDataColumns is the RowChange.data_columns of a rows event whose after image is partial
// (binlog_row_image NOBLOB or MINIMAL), nil for a full one. As Vitess gives it, the bitmap
// has a bit for every column of the table in binlog order, set for the columns the after
// image holds: an unset bit is a column that was not logged, whose cell reads NULL.
func afterDataColumns(e *replication.RowsEvent) *binlogdata.RowChange_Bitmap {
	bitmap := e.ColumnBitmap1
	switch e.Type() {
	case replication.EnumRowsEventTypeDelete:
		return nil
	case replication.EnumRowsEventTypeUpdate:
		bitmap = e.ColumnBitmap2
	default:
		// An insert's after image is described by the first bitmap.
	}
	n := int(e.ColumnCount)
	if !partial(bitmap, n) {
		return nil
	}
	return &binlogdata.RowChange_Bitmap{Count: int64(n), Cols: slices.Clone(bitmap[:(n+7)/8])}
}

// checkLogged fails a rows event whose row images (binlog_row_image NOBLOB or MINIMAL) leave
// out a column the filter's conditions test: its rows cannot be judged, and judging a missing
// value as NULL would drop or pass them wrongly.
func (p *tablePlan) checkLogged(e *replication.RowsEvent) error {
	if p.filter.Passthrough() {
		return nil
	}
	bitmaps := [][]byte{e.ColumnBitmap1}
	if isUpdate(e) {
		bitmaps = append(bitmaps, e.ColumnBitmap2)
	}
	for _, b := range bitmaps {
		if !partial(b, len(p.cols)) {
			continue
		}
		for _, c := range p.filter.ConditionColumns() {
			if !allLogged(b, []int{c}) {
				return fmt.Errorf("%w: table %s: a row image leaves out column %s (binlog_row_image NOBLOB or MINIMAL), which the filter tests; write the table with binlog_row_image=FULL or filter on columns every image holds",
					ErrSchema, p.name, p.cols[c].Name)
			}
		}
	}
	return nil
}

// partial reports whether a rows event's column bitmap leaves out one of its n columns.
func partial(bitmap []byte, n int) bool {
	if len(bitmap)*8 < n {
		return false
	}
	for i := 0; i < n; i++ {
		if bitmap[i/8]&(1<<(i%8)) == 0 {
			return true
		}
	}
	return false
}

// allLogged reports whether a rows event's column bitmap holds every column of cols.
func allLogged(bitmap []byte, cols []int) bool {
	for _, c := range cols {
		if c/8 >= len(bitmap) || bitmap[c/8]&(1<<(c%8)) == 0 {
			return false
		}
	}
	return true
}

// encode appends the Vitess encoding of every column of a binlog row.
func (p *tablePlan) encode(values []byte, lengths []int64, row []any) ([]byte, []int64, error) {
	for c := range p.cols {
		if c >= len(row) {
			lengths = append(lengths, -1)
			continue
		}
		before := len(values)
		var null bool
		var err error
		values, null, err = p.cols[c].Append(values, row[c])
		if err != nil {
			return values, lengths, &PoisonError{Table: p.name, Column: p.cols[c].Name, Err: err}
		}
		if null {
			lengths = append(lengths, -1)
		} else {
			lengths = append(lengths, int64(len(values)-before))
		}
	}
	return values, lengths, nil
}

// emptyCell is a non-NULL empty value: cells use nil for NULL.
var emptyCell = []byte{}

// cellsOf splits encoded values into cells (nil for NULL), reusing dst.
func cellsOf(dst [][]byte, values []byte, lengths []int64) [][]byte {
	dst = dst[:0]
	off := int64(0)
	for _, l := range lengths {
		switch {
		case l < 0:
			dst = append(dst, nil)
		case l == 0:
			dst = append(dst, emptyCell)
		default:
			dst = append(dst, values[off:off+l:off+l])
			off += l
		}
	}
	return dst
}

// rowScratch holds one row image while the filter judges it.
type rowScratch struct {
	values  []byte
	lengths []int64
	cells   [][]byte
}
