// Package canalproto encodes changes as canal's protobuf entries (alibaba/canal's
// EntryProtocol.proto, Go types in gen/canal), the format canal's clients and its MQ consumers
// read.
//
// Every transaction becomes entries as canal's binlog parser makes them: a TRANSACTIONBEGIN
// entry (TransactionBegin with the session's thread id), one ROWDATA entry per rows event
// (a RowChange with one RowData per row, values in canal's text), and a TRANSACTIONEND entry
// (TransactionEnd with the XID). A DDL is one ROWDATA entry whose RowChange has isDdl set.
// Copied (snapshot) rows are INSERT entries: canal has no snapshot reads. Headers carry the
// binlog file, the event's start offset and length, the server id, the event time in ms, the
// GTID set, and the props canal sets: curtGtid (the transaction's GTID) and rowsCount. With
// gtid_entries, a GTIDLOG entry (a Pair gtid = the transaction's GTID) opens each transaction,
// where canal has it; in the entry and none packagings it comes where the stream has the GTID,
// before the transaction's end.
//
// What one EncodedMessage value holds depends on the packet option:
//
//   - transaction (default): a Packet {version 1, type MESSAGES, compression NONE, body:
//     Messages {batch_id, messages: the serialized entries of one transaction or DDL}}, the
//     layout canal's MQ producers write as a Kafka value. batch_id counts packets from 1.
//     Entries are held until the transaction ends, so a message never holds half a
//     transaction, except that a transaction larger than max_packet_bytes is sent in several
//     packets (canal's own batches do not follow transactions either).
//   - entry: the same Packet around a single entry, one message per entry.
//   - none: a bare serialized Entry, one message per entry.
//
// Transactions with no row of a streamed table (and copy chunks left out) produce nothing, as
// canal's sink drops empty transactions.
//
// Partial row images (binlog_row_image NOBLOB or MINIMAL): a column the binlog did not log
// (the row change's data_columns) is left out of afterColumns, as canal's parser lists only
// the columns a binlog row holds. The before image carries no such mark (Vitess sends none),
// so its unlogged columns are listed as NULL.
//
// The message key suggests a partition: for transaction packets the stream's database (a
// transaction may touch several tables, and only one partition keeps their order); for single
// entries of rows, database.table and the first row's primary-key values; otherwise the
// database.
package canalproto

import (
	"bytes"
	"fmt"
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	canalpb "github.com/vstream-cdc/vstream/gen/canal"
	"github.com/vstream-cdc/vstream/gen/query"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/server/encoder"
	"github.com/vstream-cdc/vstream/server/encoder/canal"
)

// Name is the format's name.
const Name = "canal-protobuf"

// Field numbers of EntryProtocol.proto and CanalProtocol.proto.
const (
	entryHeader, entryType, entryStoreValue = 1, 2, 3

	headerVersion, headerLogfileName, headerLogfileOffset, headerServerID, headerServerenCode = 1, 2, 3, 4, 5
	headerExecuteTime, headerSourceType, headerSchemaName, headerTableName, headerEventLength = 6, 7, 8, 9, 10
	headerEventType, headerProps, headerGtid                                                  = 11, 12, 13

	columnIndex, columnSQLType, columnName, columnIsKey, columnUpdated, columnIsNull = 1, 2, 3, 4, 5, 6
	columnValue, columnMySQLType                                                     = 8, 10

	rowDataBefore, rowDataAfter = 1, 2

	rowChangeTableID, rowChangeEventType, rowChangeIsDdl, rowChangeSQL = 1, 2, 10, 11
	rowChangeRowDatas, rowChangeDdlSchemaName                          = 12, 14

	beginThreadID      = 4
	endTransactionID   = 2
	pairKey, pairValue = 1, 2

	packetVersion, packetType, packetCompression, packetBody = 2, 3, 4, 5
	messagesBatchID, messagesMessages                        = 1, 2
)

type packing int

const (
	perTransaction packing = iota
	perEntry
	bare
)

// Encoder is a canal protobuf encoder for one stream.
type Encoder struct {
	p           encoder.Params
	values      canal.Options
	packing     packing
	filterTxn   bool
	gtidEntries bool
	snapshot    bool
	maxPacket   int

	tables encoder.Tables
	meta   map[string]*tableMeta
	// batchID is the last packet's Messages.batch_id.
	batchID int64
	// dbKey is the key of transaction packets, shared by their messages.
	dbKey []byte

	txn txnState
	// pending holds the entries not sent yet, each as a Messages.messages field (tag, length,
	// serialized Entry) back to back; ents says where each ends and its key.
	pending []byte
	ents    []pendingEntry
	keys    []byte
	// gtidEntry is the transaction's GTIDLOG entry (a Messages.messages field), which canal
	// puts before the transaction's other entries.
	gtidEntry []byte

	// Scratch for one row: the rendered values and where each column's value lies.
	vals          []byte
	before, after []span
	cells         [][]byte
}

// txnState is what the encoder knows about the transaction it is in.
type txnState struct {
	// source is the BEGIN's, standing in for events without one (the COMMIT of a copy chunk).
	source  *binlogdata.EventSource
	gtidSet string
	// skip drops the transaction: a copy chunk when copied rows are not wanted.
	skip bool
	// changes counts the ROWDATA entries made; a transaction without any is not sent.
	changes int
}

type pendingEntry struct {
	end, keyEnd int
	// body is where the serialized Entry starts, after its Messages field tag and length.
	body int
}

// tableMeta is what the encoder derives once per FIELD event of a table: the Column fields
// that do not depend on the value, already encoded.
type tableMeta struct {
	t *encoder.Table
	// index is a column's index field; name its name and isKey fields; mysqlType its
	// mysqlType field.
	index, name, mysqlType [][]byte
}

// span is a rendered value in Encoder.vals.
type span struct {
	start, end int
	sqlType    int
	null       bool
}

// New builds an encoder from the stream's options:
//
//	packet                     transaction (default), entry or none (see the package doc)
//	max_packet_bytes           size past which a transaction's packet is sent before the
//	                           transaction ends (default 1048576)
//	filter_transaction_entries false (default); true leaves out TRANSACTIONBEGIN/END entries
//	gtid_entries               false (default); true adds a GTIDLOG entry per transaction
//	snapshot_as_insert         true (default): copied rows as INSERT; false leaves them out
//	mysql_type                 full (COLUMN_TYPE, default) or base (int, varchar, bigint unsigned)
//	render_zone                time zone for TIMESTAMP text (default UTC)
func New(p encoder.Params) (*Encoder, error) {
	o := p.Options
	e := &Encoder{p: p, tables: encoder.Tables{}, meta: map[string]*tableMeta{}}
	pk, err := o.String("packet", "transaction", "transaction", "entry", "none")
	if err != nil {
		return nil, err
	}
	e.packing = map[string]packing{"transaction": perTransaction, "entry": perEntry, "none": bare}[pk]
	maxPacket, err := o.String("max_packet_bytes", "1048576")
	if err != nil {
		return nil, err
	}
	if e.maxPacket, err = strconv.Atoi(maxPacket); err != nil || e.maxPacket <= 0 {
		return nil, fmt.Errorf("format option max_packet_bytes=%q: want a positive number of bytes", maxPacket)
	}
	if e.filterTxn, err = o.Bool("filter_transaction_entries", false); err != nil {
		return nil, err
	}
	if e.gtidEntries, err = o.Bool("gtid_entries", false); err != nil {
		return nil, err
	}
	if e.snapshot, err = o.Bool("snapshot_as_insert", true); err != nil {
		return nil, err
	}
	if e.values, err = canal.ReadOptions(p); err != nil {
		return nil, err
	}
	return e, nil
}

// Encode implements encoder.Encoder.
func (e *Encoder) Encode(out []*vstreamv1.EncodedMessage, ev *binlogdata.VEvent) ([]*vstreamv1.EncodedMessage, error) {
	switch ev.GetType() {
	case binlogdata.VEventType_FIELD:
		e.tables.Field(ev)
	case binlogdata.VEventType_BEGIN:
		out = e.endTxn(out)
		src := ev.GetSource()
		e.txn = txnState{source: src, gtidSet: src.GetGtidSet(), skip: src.GetSnapshot() && !e.snapshot}
		if !e.txn.skip && !e.filterTxn {
			e.transactionBegin(ev)
		}
	case binlogdata.VEventType_ROW:
		if e.txn.skip || !e.snapshot && snapshotRow(ev) {
			return out, nil
		}
		if err := e.rows(ev); err != nil {
			return out, err
		}
		if e.txn.changes > 0 && (e.packing != perTransaction || len(e.pending) >= e.maxPacket) {
			out = e.flush(out)
		}
	case binlogdata.VEventType_GTID:
		if e.gtidEntries && !e.txn.skip {
			e.gtid(ev)
		}
	case binlogdata.VEventType_COMMIT, binlogdata.VEventType_ROLLBACK:
		if !e.txn.skip && !e.filterTxn && e.txn.changes > 0 {
			e.transactionEnd(ev)
		}
		out = e.endTxn(out)
	case binlogdata.VEventType_DDL:
		e.ddl(ev)
		out = e.endTxn(out)
	case binlogdata.VEventType_OTHER:
		out = e.endTxn(out)
	default:
		// The other events (HEARTBEAT, VGTID, LASTPK, COPY_COMPLETED, ...) have no canal entry.
	}
	return out, nil
}

// snapshotRow reports a copied row event.
func snapshotRow(ev *binlogdata.VEvent) bool {
	if src := ev.GetSource(); src != nil {
		return src.GetSnapshot()
	}
	return ev.GetTimestamp() == 0
}

// endTxn sends what is pending if the transaction made changes, drops it otherwise, and
// forgets the transaction.
func (e *Encoder) endTxn(out []*vstreamv1.EncodedMessage) []*vstreamv1.EncodedMessage {
	if e.txn.changes > 0 {
		out = e.flush(out)
	}
	e.pending, e.ents, e.keys, e.gtidEntry = e.pending[:0], e.ents[:0], e.keys[:0], e.gtidEntry[:0]
	e.txn = txnState{}
	return out
}

// header describes where an entry comes from.
type header struct {
	schema, table string
	eventType     canalpb.EventType // 0: none (transaction entries)
	rowsCount     int
}

// appendHeader writes Entry.header.
func (e *Encoder) appendHeader(b []byte, ev *binlogdata.VEvent, h header) []byte {
	src := ev.GetSource()
	if src == nil {
		src = e.txn.source
	}
	b, start := open(b, entryHeader)
	b = appendVarint(b, headerVersion, 1)
	b = appendString(b, headerLogfileName, src.GetFile())
	b = appendInt(b, headerLogfileOffset, int64(src.GetStartPos()))
	b = appendInt(b, headerServerID, int64(src.GetServerId()))
	b = appendString(b, headerServerenCode, "UTF-8")
	b = appendInt(b, headerExecuteTime, canal.ExecuteTime(ev, e.p.Clock))
	b = appendVarint(b, headerSourceType, uint64(canalpb.Type_MYSQL))
	b = appendString(b, headerSchemaName, h.schema)
	b = appendString(b, headerTableName, h.table)
	if src.GetEndPos() > src.GetStartPos() {
		b = appendInt(b, headerEventLength, int64(src.GetEndPos()-src.GetStartPos()))
	}
	if h.eventType != 0 {
		b = appendVarint(b, headerEventType, uint64(h.eventType))
	}
	if g := ev.GetEventGtid(); g != "" {
		b = appendPair(b, headerProps, "curtGtid", g)
	}
	if ev.GetSequenceNumber() != 0 {
		var num [20]byte
		b = appendPair(b, headerProps, "curtGtidSn", strconv.AppendInt(num[:0], ev.GetSequenceNumber(), 10))
		b = appendPair(b, headerProps, "curtGtidLct", strconv.AppendInt(num[:0], ev.GetCommitParent(), 10))
	}
	if h.rowsCount > 0 {
		var num [20]byte
		b = appendPair(b, headerProps, "rowsCount", strconv.AppendInt(num[:0], int64(h.rowsCount), 10))
	}
	gtidSet := src.GetGtidSet()
	if gtidSet == "" {
		gtidSet = e.txn.gtidSet
	}
	b = appendString(b, headerGtid, canal.GTIDSet(gtidSet))
	return end(b, start)
}

func appendPair[T string | []byte](b []byte, num protowire.Number, key string, value T) []byte {
	b, start := open(b, num)
	b = appendString(b, pairKey, key)
	if len(value) > 0 {
		b = protowire.AppendTag(b, pairValue, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(len(value)))
		b = append(b, value...)
	}
	return end(b, start)
}

// openEntry starts an entry in pending: its Messages field, header and type. The caller
// writes the storeValue and calls closeEntry.
func (e *Encoder) openEntry(ev *binlogdata.VEvent, typ canalpb.EntryType, h header) (entryStart int) {
	b, start := open(e.pending, messagesMessages)
	b = e.appendHeader(b, ev, h)
	b = appendVarint(b, entryType, uint64(typ))
	e.pending = b
	return start
}

// closeEntry ends the entry openEntry started; its message key is what the caller appended
// to e.keys since the previous entry.
func (e *Encoder) closeEntry(start int) {
	body := start + protowire.SizeVarint(uint64(len(e.pending)-start)) - 1
	e.pending = end(e.pending, start)
	e.ents = append(e.ents, pendingEntry{end: len(e.pending), keyEnd: len(e.keys), body: body})
}

func (e *Encoder) transactionBegin(ev *binlogdata.VEvent) {
	start := e.openEntry(ev, canalpb.EntryType_TRANSACTIONBEGIN, header{})
	b, sv := open(e.pending, entryStoreValue)
	b = appendInt(b, beginThreadID, int64(ev.GetSource().GetThreadId()))
	e.pending = endOmitEmpty(b, sv, entryStoreValue)
	e.keys = append(e.keys, e.p.Database...)
	e.closeEntry(start)
}

func (e *Encoder) transactionEnd(ev *binlogdata.VEvent) {
	start := e.openEntry(ev, canalpb.EntryType_TRANSACTIONEND, header{})
	b, sv := open(e.pending, entryStoreValue)
	b = protowire.AppendTag(b, endTransactionID, protowire.BytesType)
	var num [20]byte
	b = protowire.AppendBytes(b, strconv.AppendUint(num[:0], ev.GetSource().GetXid(), 10))
	e.pending = end(b, sv)
	e.keys = append(e.keys, e.p.Database...)
	e.closeEntry(start)
}

// gtid makes the GTIDLOG entry of a transaction: a Pair gtid = the transaction's GTID.
func (e *Encoder) gtid(ev *binlogdata.VEvent) {
	g := ev.GetEventGtid()
	if g == "" {
		g = ev.GetGtid()
	}
	mark := len(e.pending)
	start := e.openEntry(ev, canalpb.EntryType_GTIDLOG, header{eventType: canalpb.EventType_GTID})
	b, sv := open(e.pending, entryStoreValue)
	b = appendString(b, pairKey, "gtid")
	b = appendString(b, pairValue, g)
	e.pending = end(b, sv)
	if e.packing == perTransaction && e.txn.source != nil {
		// Held apart to go first in the transaction's packet, where canal has it.
		e.pending = end(e.pending, start)
		e.gtidEntry = append(e.gtidEntry[:0], e.pending[mark:]...)
		e.pending = e.pending[:mark]
		return
	}
	e.keys = append(e.keys, e.p.Database...)
	e.closeEntry(start)
}

func (e *Encoder) ddl(ev *binlogdata.VEvent) {
	sql := ev.GetStatement()
	session := ev.GetSource().GetDatabase()
	defaultDB := session
	if defaultDB == "" {
		defaultDB = e.p.Database
	}
	kind, db, table := canal.DDL(sql, defaultDB)
	typ := canalpb.EventType(canalpb.EventType_value[kind])
	start := e.openEntry(ev, canalpb.EntryType_ROWDATA, header{schema: db, table: table, eventType: typ})
	b, sv := open(e.pending, entryStoreValue)
	b = appendVarint(b, rowChangeEventType, uint64(typ))
	b = appendVarint(b, rowChangeIsDdl, 1)
	b = appendString(b, rowChangeSQL, sql)
	b = appendString(b, rowChangeDdlSchemaName, session)
	e.pending = end(b, sv)
	e.keys = append(e.keys, e.p.Database...)
	e.closeEntry(start)
	e.txn.changes++
}

// tableMeta returns what is derived from the table's current FIELD event.
func (e *Encoder) tableMeta(t *encoder.Table) *tableMeta {
	m := e.meta[t.Name]
	if m != nil && m.t == t {
		return m
	}
	n := len(t.Fields)
	m = &tableMeta{t: t, index: make([][]byte, n), name: make([][]byte, n), mysqlType: make([][]byte, n)}
	isKey := make([]bool, n)
	for _, i := range t.PK {
		isKey[i] = true
	}
	for i, f := range t.Fields {
		m.index[i] = appendInt(nil, columnIndex, int64(i))
		m.name[i] = appendBool(appendString(nil, columnName, f.GetName()), columnIsKey, isKey[i])
		m.mysqlType[i] = appendString(nil, columnMySQLType, e.values.MySQLType(f.GetColumnType()))
	}
	e.meta[t.Name] = m
	return m
}

// rows makes the ROWDATA entries of a rows event: one per run of rows with the same
// operation (a binlog rows event has one).
func (e *Encoder) rows(ev *binlogdata.VEvent) error {
	t, err := e.tables.Row(ev)
	if err != nil {
		return fmt.Errorf("canal-protobuf: %w", err)
	}
	m := e.tableMeta(t)
	schema := ev.GetSource().GetDatabase()
	if schema == "" {
		schema = e.p.Database
	}
	changes := ev.GetRowEvent().GetRowChanges()
	for len(changes) > 0 {
		op := operation(changes[0])
		n := 1
		for n < len(changes) && operation(changes[n]) == op {
			n++
		}
		if err := e.rowEntry(ev, m, schema, op, changes[:n]); err != nil {
			return err
		}
		changes = changes[n:]
	}
	return nil
}

func operation(rc *binlogdata.RowChange) canalpb.EventType {
	switch {
	case rc.GetBefore() == nil:
		return canalpb.EventType_INSERT
	case rc.GetAfter() == nil:
		return canalpb.EventType_DELETE
	}
	return canalpb.EventType_UPDATE
}

func (e *Encoder) rowEntry(ev *binlogdata.VEvent, m *tableMeta, schema string, op canalpb.EventType, changes []*binlogdata.RowChange) error {
	t := m.t
	mark, entries, keys := len(e.pending), len(e.ents), len(e.keys)
	start := e.openEntry(ev, canalpb.EntryType_ROWDATA, header{schema: schema, table: t.Name, eventType: op, rowsCount: len(changes)})
	b, sv := open(e.pending, entryStoreValue)
	b = appendInt(b, rowChangeTableID, int64(ev.GetSource().GetTableId()))
	b = appendVarint(b, rowChangeEventType, uint64(op))
	b = appendVarint(b, rowChangeIsDdl, 0)
	for r, rc := range changes {
		e.vals = e.vals[:0]
		var err error
		if e.before, err = e.render(e.before[:0], t, rc.GetBefore()); err != nil {
			e.pending, e.ents, e.keys = e.pending[:mark], e.ents[:entries], e.keys[:keys]
			return err
		}
		if e.after, err = e.render(e.after[:0], t, rc.GetAfter()); err != nil {
			e.pending, e.ents, e.keys = e.pending[:mark], e.ents[:entries], e.keys[:keys]
			return err
		}
		var rd int
		b, rd = open(b, rowChangeRowDatas)
		if rc.GetBefore() != nil {
			for i := range t.Fields {
				b = e.appendColumn(b, rowDataBefore, m, i, e.before[i], false)
			}
		}
		if rc.GetAfter() != nil {
			for i := range t.Fields {
				if !encoder.Logged(rc.GetDataColumns(), i, len(t.Fields)) {
					// canal lists the columns the binlog row holds: one not logged is left out.
					continue
				}
				// Inserted columns are all updated; an update's are where the value changed.
				updated := rc.GetBefore() == nil || !e.same(e.before[i], e.after[i])
				b = e.appendColumn(b, rowDataAfter, m, i, e.after[i], updated)
			}
		}
		b = end(b, rd)
		if r == 0 {
			image := e.after
			if op == canalpb.EventType_DELETE {
				image = e.before
			}
			e.keys = canal.AppendKey(e.keys, schema, t.Name)
			for _, i := range t.PK {
				e.keys = canal.AppendKeyPart(e.keys, e.vals[image[i].start:image[i].end])
			}
		}
	}
	e.pending = end(b, sv)
	e.closeEntry(start)
	e.txn.changes++
	return nil
}

// render writes a row image's values into e.vals; nil r gives no spans.
func (e *Encoder) render(spans []span, t *encoder.Table, r *query.Row) ([]span, error) {
	if r == nil {
		return spans, nil
	}
	var err error
	if e.cells, err = encoder.Cells(e.cells[:0], r, len(t.Fields)); err != nil {
		return spans, fmt.Errorf("canal-protobuf: table %s: %w", t.Name, err)
	}
	for i, f := range t.Fields {
		cell := e.cells[i]
		if cell == nil {
			spans = append(spans, span{start: len(e.vals), end: len(e.vals), sqlType: canal.SQLType(f, true), null: true})
			continue
		}
		s := span{start: len(e.vals)}
		if e.vals, s.sqlType, err = e.values.AppendValue(e.vals, f, t.Labels[i], cell); err != nil {
			return spans, fmt.Errorf("canal-protobuf: table %s: %w", t.Name, err)
		}
		s.end = len(e.vals)
		spans = append(spans, s)
	}
	return spans, nil
}

// same is canal's "not updated": both NULL, or the same text.
func (e *Encoder) same(a, b span) bool {
	if a.null || b.null {
		return a.null == b.null
	}
	return bytes.Equal(e.vals[a.start:a.end], e.vals[b.start:b.end])
}

func (e *Encoder) appendColumn(b []byte, num protowire.Number, m *tableMeta, i int, s span, updated bool) []byte {
	b, start := open(b, num)
	b = append(b, m.index[i]...)
	b = appendInt(b, columnSQLType, int64(s.sqlType))
	b = append(b, m.name[i]...)
	b = appendBool(b, columnUpdated, updated)
	if s.null {
		b = appendVarint(b, columnIsNull, 1)
	} else {
		b = appendVarint(b, columnIsNull, 0)
		b = appendBytes(b, columnValue, e.vals[s.start:s.end])
	}
	b = append(b, m.mysqlType[i]...)
	return end(b, start)
}

// flush sends the pending entries: one packet, or one message per entry.
func (e *Encoder) flush(out []*vstreamv1.EncodedMessage) []*vstreamv1.EncodedMessage {
	if len(e.ents) == 0 && len(e.gtidEntry) == 0 {
		return out
	}
	if e.packing == perTransaction {
		if e.dbKey == nil {
			e.dbKey = []byte(e.p.Database)
		}
		out = append(out, e.message(e.packet(e.gtidEntry, e.pending), e.dbKey))
	} else {
		from, keyFrom := 0, 0
		for _, pe := range e.ents {
			key := append([]byte(nil), e.keys[keyFrom:pe.keyEnd]...)
			if e.packing == bare {
				out = append(out, e.message(append([]byte(nil), e.pending[pe.body:pe.end]...), key))
			} else {
				out = append(out, e.message(e.packet(nil, e.pending[from:pe.end]), key))
			}
			from, keyFrom = pe.end, pe.keyEnd
		}
	}
	e.pending, e.ents, e.keys, e.gtidEntry = e.pending[:0], e.ents[:0], e.keys[:0], e.gtidEntry[:0]
	return out
}

// packet wraps entries (Messages.messages fields) in a Messages body and a Packet.
func (e *Encoder) packet(first, entries []byte) []byte {
	e.batchID++
	bodyLen := protowire.SizeTag(messagesBatchID) + protowire.SizeVarint(uint64(e.batchID)) + len(first) + len(entries)
	size := 3*2 + protowire.SizeTag(packetBody) + protowire.SizeVarint(uint64(bodyLen)) + bodyLen
	b := make([]byte, 0, size)
	b = appendVarint(b, packetVersion, 1)
	b = appendVarint(b, packetType, uint64(canalpb.PacketType_MESSAGES))
	b = appendVarint(b, packetCompression, uint64(canalpb.Compression_NONE))
	b = protowire.AppendTag(b, packetBody, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(bodyLen))
	b = appendVarint(b, messagesBatchID, uint64(e.batchID))
	b = append(b, first...)
	return append(b, entries...)
}

func (e *Encoder) message(value, key []byte) *vstreamv1.EncodedMessage {
	return &vstreamv1.EncodedMessage{Format: Name, Key: key, Value: value}
}
