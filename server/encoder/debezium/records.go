package debezium

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/server/encoder"
	"github.com/vstream-cdc/vstream/sqltext"
)

// Record is one Kafka Connect record, before a converter serializes it. Its values alias
// buffers of the Records that made it and are valid only during Serialize.
type Record struct {
	Topic string
	// Database and Table name the table whose row the record carries (a data record's,
	// a tombstone's); empty for the records of no one table.
	Database, Table string
	// KeySchema is nil for a null key.
	KeySchema *Schema
	Key       Value
	// ValueSchema is nil for a tombstone (a null value).
	ValueSchema *Schema
	Value       Value
	Headers     []Header
	// Rows holds the row images the KindRow and KindKey values of Key and Value refer to.
	Rows *RowImages
	// Snapshot marks a snapshot read: its source.snapshot says "true", and MarkLast may be
	// asked to turn it into "last" once the snapshot is known to have ended with it.
	Snapshot bool
	// SourceID, when not 0, identifies the values of Value's source block: records with the
	// same SourceID (the changes of one rows event) have the same source values but for
	// source.row, so a serializer may reuse what it made of the block for the previous one.
	SourceID uint64
}

// Header is a record header with a Connect-typed value (Debezium's __debezium.oldkey and
// __debezium.newkey carry key structs).
type Header struct {
	Key    string
	Schema *Schema
	Value  Value
}

// Serializer is a Kafka Connect converter: it renders records as messages.
type Serializer interface {
	// Serialize renders one record. It must not keep r or its values.
	Serialize(r *Record) (*vstreamv1.EncodedMessage, error)
	// MarkLast rewrites the source.snapshot of a message Serialize made from a Snapshot
	// record from "true" to "last". It is only asked for the latest such message.
	MarkLast(m *vstreamv1.EncodedMessage) error
}

// Records turns a stream's VEvents into Debezium records and hands them to a Serializer: the
// part of a Debezium encoder that does not depend on the converter.
type Records struct {
	cfg    Config
	p      encoder.Params
	ser    Serializer
	tables encoder.Tables
	schema map[string]*TableSchema

	// thread is the session of the transaction being read (BEGIN carries it).
	thread uint64
	txn    txn
	// held is the latest snapshot read, kept until the next event says whether it ended the
	// snapshot ("last").
	held *vstreamv1.EncodedMessage

	schemaChangeKey, schemaChangeValue *Schema
	txnKey, txnValue                   *Schema
	// sourceRow is the index of row among the source block's fields; sourceID numbers the
	// source values r.scratch.src holds for the changes of a rows event.
	sourceRow int
	sourceID  uint64
	// envOp and envTxn are the indexes of op and transaction among the envelope's fields;
	// envOpName is the op r.scratch.env holds (0: none yet).
	envOp, envTxn int
	envOpName     byte

	scratch recordScratch
}

// recordScratch is what Records reuses from row to row, so that a row costs no allocation
// of its own: the row's images, key and value parts, the source block and envelope values,
// the bytes they are written into and the record handed to the serializer.
type recordScratch struct {
	images    RowImages
	keys      [2][]Value
	src, env  []Value
	arena     []byte
	rec       Record
	hdr       [1]Header
	collected []Value
}

// txn is the transaction being read, for transaction metadata.
type txn struct {
	active bool
	// begun is set once the transaction's BEGIN record went out, with its first change.
	begun bool
	id    string
	total int64
	// order holds the tables in order of their first change, counts their changes.
	order  []string
	counts map[string]int64
}

// NewRecords makes the record builder of a stream.
func NewRecords(cfg Config, p encoder.Params, ser Serializer) *Records {
	if p.Clock == nil {
		p.Clock = time.Now
	}
	return &Records{cfg: cfg, p: p, ser: ser, tables: encoder.Tables{}, schema: map[string]*TableSchema{},
		schemaChangeKey: SchemaChangeKeySchema(&cfg), schemaChangeValue: SchemaChangeValueSchema(&cfg),
		txnKey: TransactionKeySchema(&cfg), txnValue: TransactionValueSchema(&cfg),
		sourceRow: SourceSchema(&cfg).Field("row"),
		envOp:     EnvelopeSchema(&cfg, "", nil).Field("op"), envTxn: EnvelopeSchema(&cfg, "", nil).Field("transaction")}
}

// Config returns the configuration the records follow.
func (r *Records) Config() *Config { return &r.cfg }

// Table returns the schemas of a table seen in a FIELD event, or nil.
func (r *Records) Table(name string) *TableSchema { return r.schema[name] }

// Encode appends the messages an event becomes to out.
func (r *Records) Encode(out []*vstreamv1.EncodedMessage, ev *binlogdata.VEvent) ([]*vstreamv1.EncodedMessage, error) {
	if r.held != nil {
		switch ev.GetType() {
		case binlogdata.VEventType_LASTPK:
			// The copy of a table went on or ended; the snapshot may not have.
		case binlogdata.VEventType_COPY_COMPLETED:
			if ev.GetLastPKEvent().GetTableLastPK().GetTableName() == "" {
				// The copy of every table is complete: the held read was the last.
				if err := r.ser.MarkLast(r.held); err != nil {
					return out, err
				}
				out = r.release(out)
			}
		default:
			out = r.release(out)
		}
	}
	switch ev.GetType() {
	case binlogdata.VEventType_BEGIN:
		r.thread = ev.GetSource().GetThreadId()
		if !ev.GetSource().GetSnapshot() {
			r.txn = txn{active: true, id: ev.GetEventGtid()}
			if r.txn.id == "" {
				src := ev.GetSource()
				r.txn.id = "file=" + src.GetFile() + ",pos=" + strconv.FormatUint(src.GetStartPos(), 10)
			}
		}
	case binlogdata.VEventType_FIELD:
		t := r.tables.Field(ev)
		db := ev.GetSource().GetDatabase()
		if db == "" {
			db = r.p.Database
		}
		ts, err := NewTableSchema(&r.cfg, db, t, ev.GetFieldEvent().GetEnumSetStringValues())
		if err != nil {
			return out, fmt.Errorf("debezium: %w", err)
		}
		r.schema[t.Name] = ts
		if src := ev.GetSource(); src.GetSnapshot() && src.GetCreateTable() != "" && r.cfg.SchemaChanges {
			return r.snapshotSchemaChange(out, ev, db, t)
		}
	case binlogdata.VEventType_ROW:
		return r.rows(out, ev)
	case binlogdata.VEventType_DDL:
		return r.ddl(out, ev)
	case binlogdata.VEventType_COMMIT:
		var err error
		out, err = r.commit(out, ev)
		r.thread = 0
		return out, err
	case binlogdata.VEventType_ROLLBACK:
		r.txn = txn{}
		r.thread = 0
	default:
		// The other events (GTID, HEARTBEAT, VGTID, ...) have no Debezium record.
	}
	return out, nil
}

// Recycle lets a serializer that is an encoder.Recycler reuse the memory of the messages
// sent. The held snapshot read has not been sent: its bytes move out first.
func (r *Records) Recycle() {
	rc, ok := r.ser.(encoder.Recycler)
	if !ok {
		return
	}
	if r.held != nil {
		r.held.Key, r.held.Value = bytes.Clone(r.held.Key), bytes.Clone(r.held.Value)
	}
	rc.Recycle()
}

// release sends the held snapshot read as it is.
func (r *Records) release(out []*vstreamv1.EncodedMessage) []*vstreamv1.EncodedMessage {
	out = append(out, r.held)
	r.held = nil
	return out
}

// eventMicros is when an event happened in the database.
func eventMicros(ev *binlogdata.VEvent) int64 {
	if us := ev.GetSource().GetOriginalCommitUs(); us > 0 {
		return us
	}
	return ev.GetTimestamp() * 1_000_000
}

// rows appends the records of a ROW event's changes. Copied rows are snapshot reads; the
// latest of them is held back until the next event tells whether it ended the snapshot.
func (r *Records) rows(out []*vstreamv1.EncodedMessage, ev *binlogdata.VEvent) ([]*vstreamv1.EncodedMessage, error) {
	re := ev.GetRowEvent()
	ts := r.schema[re.GetTableName()]
	if ts == nil {
		return out, fmt.Errorf("debezium: ROW for table %s before its FIELD event", re.GetTableName())
	}
	now := r.p.Clock()
	info, snapshot := r.sourceInfo(ev, ts, now)
	// The source block is the same for all the changes of the event but for its row, the
	// envelope but for before, after, op and transaction: both are made once, then changed
	// field by field (which spares copying whole values).
	r.scratch.src = info.AppendValues(r.scratch.src[:0], &r.cfg)
	r.sourceID++
	r.scratch.env = r.envelope(r.scratch.env[:0], Null, Null, StructOf(r.scratch.src...), Null, "", now)
	r.envOpName = 0
	// The record's fields that stay the same for the event's changes; change sets the others.
	// Fields are set one by one, each when it changes: a pointer stored in the heap costs a
	// write barrier while the collector marks.
	rec := &r.scratch.rec
	rec.Topic, rec.KeySchema, rec.ValueSchema, rec.Rows = ts.Topic, ts.Key, ts.Envelope, &r.scratch.images
	rec.Database, rec.Table = ts.Database, ts.Table
	rec.Value = StructOf(r.scratch.env...)
	if r.scratch.images.Table != ts {
		r.scratch.images.Table = ts
	}
	for _, rc := range re.GetRowChanges() {
		r.scratch.src[r.sourceRow].I = int64(int32(rc.GetRowIndex()))
		var err error
		for i, img := range [2]*query.Row{rc.GetBefore(), ts.WithUnavailable(rc.GetAfter(), rc.GetDataColumns())} {
			if err = r.scratch.images.Set(i, img); err != nil {
				return out, fmt.Errorf("debezium: table %s: %w", ts.Table, err)
			}
		}
		before, after := r.scratch.images.Has(0), r.scratch.images.Has(1)
		switch {
		case snapshot:
			if after {
				out, err = r.read(out, ts, info.Micros, now)
			}
		case !before:
			out, err = r.change(out, ts, 'c', info.Micros, now, 1, nil)
		case !after:
			out, err = r.change(out, ts, 'd', info.Micros, now, 0, nil)
		case ts.Key != nil && !r.scratch.images.SameKey():
			out, err = r.keyChange(out, ts, info.Micros, now)
		default:
			out, err = r.change(out, ts, 'u', info.Micros, now, 1, nil)
		}
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// sourceInfo is the source block of a ROW event's changes, and whether they are snapshot
// reads (copied rows), which happened now.
func (r *Records) sourceInfo(ev *binlogdata.VEvent, ts *TableSchema, now time.Time) (SourceInfo, bool) {
	src := ev.GetSource()
	snapshot := ev.GetTimestamp() == 0
	if src != nil {
		snapshot = src.GetSnapshot()
	}
	info := SourceInfo{Snapshot: SnapshotFalse, DB: ts.Database, Table: ts.Table, File: src.GetFile(), Pos: int64(src.GetStartPos())}
	if snapshot {
		info.Snapshot = SnapshotTrue
		info.Micros = now.UnixMicro()
		return info, true
	}
	info.Micros = eventMicros(ev)
	info.ServerID = int64(src.GetServerId())
	info.GTID = ev.GetEventGtid()
	info.Thread = int64(r.thread)
	if r.cfg.IncludeQuery {
		info.Query = src.GetQuery()
	}
	return info, false
}

// read appends a snapshot read of the row in the images, holding it back: only the latest
// read can still turn out to be the snapshot's last, so the one held before goes out.
func (r *Records) read(out []*vstreamv1.EncodedMessage, ts *TableSchema, micros int64, now time.Time) ([]*vstreamv1.EncodedMessage, error) {
	if r.held != nil {
		out = r.release(out)
	}
	n := len(out)
	out, err := r.change(out, ts, 'r', micros, now, 1, nil)
	if err != nil {
		return out, err
	}
	if len(out) > n {
		r.held, out = out[len(out)-1], out[:len(out)-1]
	}
	return out, nil
}

// keyChange appends the records of an update that changed the row's primary key. A new
// key is a new record to Kafka: Debezium deletes the old one and creates the new one, each
// telling where the row went or came from.
func (r *Records) keyChange(out []*vstreamv1.EncodedMessage, ts *TableSchema, micros int64, now time.Time) ([]*vstreamv1.EncodedMessage, error) {
	sc := &r.scratch
	sc.arena = sc.arena[:0]
	var err error
	for i := range sc.keys {
		if sc.keys[i], sc.arena, err = sc.images.Values(sc.keys[i][:0], sc.arena, KeyOf(i)); err != nil {
			return out, fmt.Errorf("debezium: table %s: %w", ts.Table, err)
		}
	}
	if out, err = r.change(out, ts, 'd', micros, now, 0, &Header{"__debezium.newkey", ts.Key, StructOf(sc.keys[1]...)}); err != nil {
		return out, err
	}
	return r.change(out, ts, 'c', micros, now, 1, &Header{"__debezium.oldkey", ts.Key, StructOf(sc.keys[0]...)})
}

// change appends the record of one change (op 'r', 'c', 'u' or 'd'), and a delete's
// tombstone, with the source values in r.scratch.src; micros is when the change happened, keyImage
// says which image (0 before, 1 after) holds the key.
func (r *Records) change(out []*vstreamv1.EncodedMessage, ts *TableSchema, op byte, micros int64, now time.Time, keyImage int, h *Header) ([]*vstreamv1.EncodedMessage, error) {
	if r.cfg.Skips(op) {
		return out, nil
	}
	var err error
	if out, err = r.beginTxn(out, micros); err != nil {
		return out, err
	}
	env := r.scratch.env
	env[0].Kind, env[0].I = KindNull, 0
	if op == 'u' || op == 'd' {
		env[0].Kind = KindRow
	}
	env[1].Kind, env[1].I = KindNull, 1
	if op != 'd' {
		env[1].Kind = KindRow
	}
	if r.envOpName != op {
		env[r.envOp].setStr(opName(op))
		r.envOpName = op
	}
	if r.cfg.TransactionMetadata {
		env[r.envTxn] = r.txnBlock(ts)
	}
	// The event's fields were set by rows.
	rec := &r.scratch.rec
	rec.Key.Kind, rec.Key.I = KindNull, 0
	if ts.Key != nil {
		rec.Key.Kind, rec.Key.I = KindKey, int64(keyImage)
	}
	rec.Snapshot, rec.SourceID = op == 'r', r.sourceID
	if h != nil {
		r.scratch.hdr[0] = *h
		rec.Headers = r.scratch.hdr[:]
	} else if rec.Headers != nil {
		rec.Headers = nil
	}
	m, err := r.ser.Serialize(rec)
	if err != nil {
		return out, err
	}
	out = append(out, m)
	if op == 'd' && r.cfg.Tombstones {
		rec.ValueSchema, rec.Value.Kind, rec.Headers = nil, KindNull, nil
		m, err = r.ser.Serialize(rec)
		rec.ValueSchema, rec.Value.Kind = ts.Envelope, KindStruct
		if err != nil {
			return out, err
		}
		out = append(out, m)
	}
	return out, nil
}

func opName(op byte) string {
	switch op {
	case 'r':
		return "r"
	case 'c':
		return "c"
	case 'u':
		return "u"
	case 'd':
		return "d"
	}
	return "t"
}

// envelope appends the envelope's field values in the layout's order.
func (r *Records) envelope(dst []Value, before, after, source, txnBlock Value, op string, now time.Time) []Value {
	if r.cfg.Layout == LayoutV20 {
		return append(dst, before, after, source, Str(op), Int(now.UnixMilli()), txnBlock)
	}
	return append(dst, before, after, source, txnBlock, Str(op), Int(now.UnixMilli()), Int(now.UnixMicro()), Int(now.UnixNano()))
}

// beginTxn sends the transaction's BEGIN record before its first change.
func (r *Records) beginTxn(out []*vstreamv1.EncodedMessage, micros int64) ([]*vstreamv1.EncodedMessage, error) {
	if !r.cfg.TransactionMetadata || !r.txn.active || r.txn.begun {
		return out, nil
	}
	r.txn.begun = true
	return r.txnRecord(out, &r.txn, "BEGIN", floorDiv(micros, 1000))
}

// txnBlock counts a change in the transaction and returns its transaction block.
func (r *Records) txnBlock(ts *TableSchema) Value {
	if !r.cfg.TransactionMetadata || !r.txn.active {
		return Null
	}
	t := &r.txn
	coll := ts.Database + "." + ts.Table
	if t.counts == nil {
		t.counts = map[string]int64{}
	}
	if t.counts[coll] == 0 {
		t.order = append(t.order, coll)
	}
	t.counts[coll]++
	t.total++
	r.scratch.collected = append(r.scratch.collected[:0], Str(t.id), Int(t.total), Int(t.counts[coll]))
	return StructOf(r.scratch.collected...)
}

// commit ends the transaction, with its END record when it had changes and metadata is on.
func (r *Records) commit(out []*vstreamv1.EncodedMessage, ev *binlogdata.VEvent) ([]*vstreamv1.EncodedMessage, error) {
	t := r.txn
	r.txn = txn{}
	if !t.begun {
		return out, nil
	}
	colls := make([]Value, len(t.order))
	for i, name := range t.order {
		colls[i] = StructOf(Str(name), Int(t.counts[name]))
	}
	return r.txnRecord(out, &t, "END", floorDiv(eventMicros(ev), 1000), colls...)
}

// txnRecord appends a transaction boundary record; END records carry the per-table counts.
func (r *Records) txnRecord(out []*vstreamv1.EncodedMessage, t *txn, status string, ms int64, colls ...Value) ([]*vstreamv1.EncodedMessage, error) {
	count, collections := Null, Null
	if status == "END" {
		count, collections = Int(t.total), ArrayOf(colls...)
	}
	rec := Record{Topic: r.cfg.Prefix + ".transaction", KeySchema: r.txnKey, Key: StructOf(Str(t.id)),
		ValueSchema: r.txnValue, Value: StructOf(Str(status), Str(t.id), count, collections, Int(ms))}
	m, err := r.ser.Serialize(&rec)
	if err != nil {
		return out, err
	}
	return append(out, m), nil
}

// ddl appends the schema-change record of a DDL, or a TRUNCATE's 't' record.
func (r *Records) ddl(out []*vstreamv1.EncodedMessage, ev *binlogdata.VEvent) ([]*vstreamv1.EncodedMessage, error) {
	sql := ev.GetStatement()
	src := ev.GetSource()
	db := src.GetDatabase()
	if db == "" {
		db = r.p.Database
	}
	_, tables, _ := sqltext.Classify(sql)
	var names []string
	for i, t := range tables {
		if i == 0 && t.DB != "" {
			db = t.DB
		}
		names = append(names, t.Name)
	}
	info := SourceInfo{Micros: eventMicros(ev), Snapshot: SnapshotFalse, DB: db, Table: strings.Join(names, ","),
		ServerID: int64(src.GetServerId()), GTID: ev.GetEventGtid(), File: src.GetFile(), Pos: int64(src.GetStartPos()),
		Thread: int64(src.GetThreadId())}
	now := r.p.Clock()
	if kw := sqltext.Keywords(sql, 1); len(kw) == 1 && kw[0] == "TRUNCATE" {
		return r.truncate(out, tables, &info, now)
	}
	if !r.cfg.SchemaChanges {
		return out, nil
	}
	r.scratch.src = info.AppendValues(r.scratch.src[:0], &r.cfg)
	rec := Record{Topic: r.cfg.Prefix, KeySchema: r.schemaChangeKey, Key: StructOf(Str(db)), ValueSchema: r.schemaChangeValue,
		Value: StructOf(StructOf(r.scratch.src...), Int(now.UnixMilli()), Str(db), Null, Str(sql), ArrayOf())}
	m, err := r.ser.Serialize(&rec)
	if err != nil {
		return out, err
	}
	return append(out, m), nil
}

// truncate appends the 't' record of a TRUNCATE TABLE of a table whose schema is known.
func (r *Records) truncate(out []*vstreamv1.EncodedMessage, tables []sqltext.Table, info *SourceInfo, now time.Time) ([]*vstreamv1.EncodedMessage, error) {
	if r.cfg.Skips('t') || len(tables) != 1 {
		return out, nil
	}
	ts := r.schema[tables[0].Name]
	if ts == nil || ts.Database != info.DB {
		return out, nil
	}
	r.scratch.src = info.AppendValues(r.scratch.src[:0], &r.cfg)
	r.scratch.env = r.envelope(r.scratch.env[:0], Null, Null, StructOf(r.scratch.src...), Null, "t", now)
	rec := Record{Topic: ts.Topic, Database: ts.Database, Table: ts.Table, ValueSchema: ts.Envelope, Value: StructOf(r.scratch.env...)}
	m, err := r.ser.Serialize(&rec)
	if err != nil {
		return out, err
	}
	return append(out, m), nil
}
