// Package drs encodes changes as Huawei DRS's Kafka JSON messages, in its two variants:
// drs-json (deleted rows in old, TIMESTAMP as epoch seconds) and drs-json-c (canal-like:
// deleted rows in data, TIMESTAMP as wall-clock text). Both carry every value as a string,
// binaries as Java byte-array text, JDBC type codes with DRS's 94 for DATETIME, the full
// before image of updates, and turn a table copy into full-sync INIT_DDL and INIT messages.
// Strings are escaped the way Gson's HTML-safe writer does.
//
// Partial row images (binlog_row_image NOBLOB or MINIMAL): a column the binlog did not log
// (the row change's data_columns) is left out of data, as the canal-like formats list only the
// columns a binlog row holds. The before image (old) has no such mark (Vitess sends none), so
// its unlogged columns read null.
package drs

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/position"
	"github.com/vstream-cdc/vstream/server/encoder"
	"github.com/vstream-cdc/vstream/sqltext"
)

// Format names.
const (
	NameJSON  = "drs-json"
	NameJSONC = "drs-json-c"
)

// Values of the snapshot option.
const (
	snapshotInit   = "init"
	snapshotInsert = "insert"
	snapshotNone   = "none"
)

// idNamespace scopes the name-based UUIDs derived for job and shard ids.
var idNamespace = uuid.MustParse("6f1c2b0e-5d0a-4c8e-9a57-3b1f1e1d7a42")

// Encoder is a DRS JSON or JSON-C encoder for one stream.
type Encoder struct {
	p        encoder.Params
	name     string
	jsonc    bool
	perEvent bool
	snapshot string
	zone     *time.Location
	zoneUTC  bool
	nextID   int64
	sqlTypes map[string]int
	tables   map[string]*table

	// Full-sync state.
	jobID        string
	jobJSON      []byte
	copies       map[string]*copyState
	chunkPending bool
	// newUUID derives a shard id from a name; tests replace it.
	newUUID func(name string) string

	cells    [][]byte
	sizeHint int
	// slab holds the row messages and their bytes.
	slab encoder.Slab
	// text holds a cell converted to UTF-8.
	text []byte
}

// copyState is the copy of one table: the chunk being read and its full-sync members.
type copyState struct {
	ordinal int
	src     *binlogdata.EventSource
	// head is the rendered jobId, shardId, identifier and eventId members.
	head []byte
}

// NewJSON builds a drs-json encoder.
func NewJSON(p encoder.Params) (*Encoder, error) { return newEncoder(p, false) }

// NewJSONC builds a drs-json-c encoder.
func NewJSONC(p encoder.Params) (*Encoder, error) { return newEncoder(p, true) }

// newEncoder reads the stream's options:
//
//	rows_per_message    row (default): one message per row change; event: one per rows event
//	render_zone         time zone of drs-json-c TIMESTAMP text (default: the source server's)
//	id_start            the first message id (default 1); ids then increase by one
//	job_id              jobId of full-sync messages (default: a UUID derived from the stream's
//	                    first snapshot position and the clock at that moment)
//	snapshot            init (default): copied rows as INIT messages after an INIT_DDL per
//	                    table; insert: copied rows as INSERT; none: copied rows left out
//	sql_type_overrides  sqlType codes by mysqlType name, e.g. "year=12,bit=-7"
func newEncoder(p encoder.Params, jsonc bool) (*Encoder, error) {
	o := p.Options
	e := &Encoder{p: p, name: NameJSON, jsonc: jsonc, tables: map[string]*table{}, copies: map[string]*copyState{},
		sqlTypes: defaultSQLTypes, sizeHint: 512}
	if jsonc {
		e.name = NameJSONC
	}
	e.newUUID = func(name string) string { return uuid.NewSHA1(idNamespace, []byte(name)).String() }
	rows, err := o.String("rows_per_message", "row", "row", "event")
	if err != nil {
		return nil, err
	}
	e.perEvent = rows == "event"
	if e.zone, err = encoder.RenderZone(p); err != nil {
		return nil, err
	}
	e.zoneUTC = e.zone == time.UTC
	start, err := o.String("id_start", "1")
	if err != nil {
		return nil, err
	}
	if e.nextID, err = strconv.ParseInt(start, 10, 64); err != nil || e.nextID < 1 {
		// 0 is the id of INIT_DDL messages.
		return nil, fmt.Errorf("format option id_start=%q: want an integer of at least 1", start)
	}
	if e.jobID, err = o.String("job_id", ""); err != nil {
		return nil, err
	}
	if e.snapshot, err = o.String("snapshot", snapshotInit, snapshotInit, snapshotInsert, snapshotNone); err != nil {
		return nil, err
	}
	overrides, err := o.String("sql_type_overrides", "")
	if err != nil {
		return nil, err
	}
	if overrides != "" {
		e.sqlTypes = make(map[string]int, len(defaultSQLTypes))
		for k, v := range defaultSQLTypes {
			e.sqlTypes[k] = v
		}
		for item := range strings.SplitSeq(overrides, ",") {
			k, v, ok := strings.Cut(item, "=")
			code, err := strconv.Atoi(strings.TrimSpace(v))
			k = strings.ToLower(strings.TrimSpace(k))
			if !ok || err != nil || k == "" {
				return nil, fmt.Errorf("format option sql_type_overrides=%q: want mysqltype=code[,mysqltype=code...]", overrides)
			}
			e.sqlTypes[k] = code
		}
	}
	return e, nil
}

// Recycle implements encoder.Recycler.
func (e *Encoder) Recycle() { e.slab.Recycle() }

// Encode implements encoder.Encoder.
func (e *Encoder) Encode(out []*vstreamv1.EncodedMessage, ev *binlogdata.VEvent) ([]*vstreamv1.EncodedMessage, error) {
	switch ev.GetType() {
	case binlogdata.VEventType_BEGIN:
		if ev.GetSource().GetSnapshot() {
			// Each copy chunk is read in its own snapshot transaction: a new full-sync shard.
			e.chunkPending = true
		}
	case binlogdata.VEventType_FIELD:
		t, err := e.field(ev)
		if err != nil {
			return out, err
		}
		if src := ev.GetSource(); src.GetSnapshot() && src.GetCreateTable() != "" && e.snapshot == snapshotInit {
			out = append(out, e.initDDL(ev, t))
		}
	case binlogdata.VEventType_ROW:
		return e.rows(out, ev)
	case binlogdata.VEventType_DDL:
		out = append(out, e.ddl(ev))
	default:
		// The other events (COMMIT, GTID, HEARTBEAT, ...) have no DRS message.
	}
	return out, nil
}

func (e *Encoder) id() int64 {
	id := e.nextID
	e.nextID++
	return id
}

func (e *Encoder) database(src *binlogdata.EventSource) string {
	if db := src.GetDatabase(); db != "" {
		return db
	}
	return e.p.Database
}

// op is the kind of one message.
type op uint8

const (
	opInsert op = iota
	opUpdate
	opDelete
	opInit
)

var opJSON = [...]string{
	opInsert: `,"type":"INSERT","isDdl":false,"sql":"","sqlType":`,
	opUpdate: `,"type":"UPDATE","isDdl":false,"sql":"","sqlType":`,
	opDelete: `,"type":"DELETE","isDdl":false,"sql":"","sqlType":`,
	opInit:   `,"type":"INIT","isDdl":false,"sql":"","sqlType":`,
}

func opOf(rc *binlogdata.RowChange) op {
	switch {
	case rc.GetBefore() == nil:
		return opInsert
	case rc.GetAfter() == nil:
		return opDelete
	}
	return opUpdate
}

func (e *Encoder) rows(out []*vstreamv1.EncodedMessage, ev *binlogdata.VEvent) ([]*vstreamv1.EncodedMessage, error) {
	re := ev.GetRowEvent()
	t := e.tables[re.GetTableName()]
	if t == nil {
		return out, fmt.Errorf("%s: ROW for table %s before its FIELD event", e.name, re.GetTableName())
	}
	src := ev.GetSource()
	snap := src.GetSnapshot()
	var es int64
	var cs *copyState
	switch {
	case snap && e.snapshot == snapshotNone:
		return out, nil
	case snap:
		// A copied row has no binlog time: es is when the snapshot was read.
		es = ev.GetCurrentTime() / 1e6
		if e.snapshot == snapshotInit {
			cs = e.chunk(ev, t)
		}
	default:
		es = ev.GetTimestamp() * 1000
	}
	if es == 0 {
		es = e.p.Clock().UnixMilli()
	}
	db := e.database(src)
	changes := re.GetRowChanges()
	for i := 0; i < len(changes); {
		kind := opOf(changes[i])
		j := i + 1
		if e.perEvent {
			for j < len(changes) && opOf(changes[j]) == kind {
				j++
			}
		}
		if cs != nil {
			kind = opInit
		}
		msg, err := e.dml(t, db, es, kind, cs, changes[i:j])
		if err != nil {
			return out, err
		}
		out = append(out, msg)
		i = j
	}
	return out, nil
}

// chunk returns the copy state of a table for a copied ROW event, starting a new shard when a
// new snapshot transaction began.
func (e *Encoder) chunk(ev *binlogdata.VEvent, t *table) *copyState {
	src := ev.GetSource()
	cs := e.copies[t.name]
	if cs == nil {
		cs = &copyState{}
		e.copies[t.name] = cs
	}
	if cs.ordinal == 0 || e.chunkPending {
		e.chunkPending = false
		cs.ordinal++
		cs.src = nil
	}
	if cs.src != src {
		job := e.job(src)
		cs.src = src
		ident := strconv.Itoa(cs.ordinal)
		cs.head = append(cs.head[:0], `{"jobId":`...)
		cs.head = append(cs.head, job...)
		cs.head = append(cs.head, `,"shardId":`...)
		cs.head = appendString(cs.head, e.newUUID(e.jobID+"/"+e.database(src)+"."+t.name+"/"+ident))
		cs.head = append(cs.head, `,"identifier":`...)
		cs.head = appendString(cs.head, ident)
		cs.head = append(cs.head, `,"eventId":`...)
		cs.head = appendString(cs.head, eventID(src))
		cs.head = append(cs.head, ',')
	}
	return cs
}

// job returns the rendered jobId, deriving it at the stream's first snapshot event when the
// options do not set it.
func (e *Encoder) job(src *binlogdata.EventSource) []byte {
	if e.jobJSON == nil {
		if e.jobID == "" {
			name := e.p.Keyspace + "\x00" + e.database(src) + "\x00" + eventID(src) + "\x00" +
				strconv.FormatInt(e.p.Clock().UnixMilli(), 10)
			e.jobID = uuid.NewSHA1(idNamespace, []byte(name)).String()
		}
		e.jobJSON = appendString(nil, e.jobID)
	}
	return e.jobJSON
}

// eventID is the snapshot's consistency point as DRS writes it: <file>:<position>;<GTID set>.
func eventID(src *binlogdata.EventSource) string {
	var sb strings.Builder
	if src.GetFile() != "" {
		sb.WriteString(src.GetFile())
		sb.WriteByte(':')
		sb.WriteString(strconv.FormatUint(src.GetStartPos(), 10))
	}
	// The set is flavor-prefixed ("MySQL56/...", "MariaDB/..."); DRS prints the bare set.
	gtids := position.Bare(src.GetGtidSet())
	if gtids != "" {
		if sb.Len() > 0 {
			sb.WriteByte(';')
		}
		sb.WriteString(gtids)
	}
	return sb.String()
}

// dml writes one message for row changes of one kind.
func (e *Encoder) dml(t *table, db string, es int64, kind op, cs *copyState, changes []*binlogdata.RowChange) (*vstreamv1.EncodedMessage, error) {
	b := e.slab.Buffer(e.sizeHint)
	b = e.appendHead(b, t, db, es, kind, cs)
	b, err := e.appendImages(b, t, kind, changes)
	if err != nil {
		return nil, err
	}
	b = append(b, `,"pkNames":`...)
	b = append(b, t.pkNamesJSON...)
	b = append(b, '}')

	// The key shares the value's buffer: one allocation for both.
	n := len(b)
	if b, err = e.appendKey(b, t, db, changes); err != nil {
		return nil, err
	}
	if len(b) > e.sizeHint {
		e.sizeHint = len(b) + len(b)/4
	}
	b = e.slab.Commit(b)
	msg := e.slab.Message()
	msg.Format, msg.Value, msg.Database, msg.Table = e.name, b[:n:n], db, t.name
	if len(b) > n {
		msg.Key = b[n:]
	}
	return msg, nil
}

// appendHead writes a message's fields before its rows: the table's, the event's and the
// change's kind.
func (e *Encoder) appendHead(b []byte, t *table, db string, es int64, kind op, cs *copyState) []byte {
	if cs != nil {
		b = append(b, cs.head...)
		b = append(b, `"mysqlType":`...)
	} else {
		b = append(b, `{"mysqlType":`...)
	}
	b = append(b, t.mysqlTypeJSON...)
	b = append(b, `,"id":`...)
	b = strconv.AppendInt(b, e.id(), 10)
	b = append(b, `,"es":`...)
	b = strconv.AppendInt(b, es, 10)
	b = append(b, `,"ts":`...)
	b = strconv.AppendInt(b, e.p.Clock().UnixMilli(), 10)
	b = append(b, `,"database":`...)
	b = appendString(b, db)
	b = append(b, `,"table":`...)
	b = append(b, t.nameJSON...)
	b = append(b, opJSON[kind]...)
	return append(b, t.sqlTypeJSON...)
}

// appendImages writes a message's data and old: which image of the changes goes to
// which depends on the change's kind (and, for a delete, on the dialect).
func (e *Encoder) appendImages(b []byte, t *table, kind op, changes []*binlogdata.RowChange) ([]byte, error) {
	dataAfter, oldBefore := true, false
	switch kind {
	case opUpdate:
		oldBefore = true
	case opDelete:
		dataAfter = false
		oldBefore = !e.jsonc
	default:
		// opInsert and opInit: the after image in data.
	}
	var err error
	b = append(b, `,"data":`...)
	if kind == opDelete && !e.jsonc {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, rc := range changes {
			if i > 0 {
				b = append(b, ',')
			}
			img, dc := rc.GetAfter(), rc.GetDataColumns()
			if !dataAfter {
				img, dc = rc.GetBefore(), nil
			}
			if b, err = e.appendRow(b, t, img, dc); err != nil {
				return b, err
			}
		}
		b = append(b, ']')
	}
	b = append(b, `,"old":`...)
	if !oldBefore {
		return append(b, "null"...), nil
	}
	b = append(b, '[')
	for i, rc := range changes {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = e.appendRow(b, t, rc.GetBefore(), nil); err != nil {
			return b, err
		}
	}
	return append(b, ']'), nil
}

// appendKey writes the message's key, db.table:pk1:pk2..., of the first change's row; a
// table without a primary key writes none.
func (e *Encoder) appendKey(b []byte, t *table, db string, changes []*binlogdata.RowChange) ([]byte, error) {
	if len(t.pk) == 0 {
		return b, nil
	}
	img := changes[0].GetAfter()
	if img == nil {
		img = changes[0].GetBefore()
	}
	b = append(b, db...)
	b = append(b, '.')
	b = append(b, t.name...)
	var err error
	if e.cells, err = encoder.Cells(e.cells[:0], img, len(t.cols)); err != nil {
		return b, fmt.Errorf("%s: table %s: %w", e.name, t.name, err)
	}
	for _, i := range t.pk {
		b = append(b, ':')
		b = append(b, e.cells[i]...)
	}
	return b, nil
}

// appendRow writes one row image as an object of column name to string value. Columns that
// dataColumns says the binlog did not log are left out.
func (e *Encoder) appendRow(b []byte, t *table, r *query.Row, dataColumns *binlogdata.RowChange_Bitmap) ([]byte, error) {
	var err error
	if e.cells, err = encoder.Cells(e.cells[:0], r, len(t.cols)); err != nil {
		return b, fmt.Errorf("%s: table %s: %w", e.name, t.name, err)
	}
	b = append(b, '{')
	first := true
	for i := range t.cols {
		c := &t.cols[i]
		if !encoder.Logged(dataColumns, i, len(t.cols)) {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, c.nameJSON...)
		cell := e.cells[i]
		if cell == nil {
			b = append(b, "null"...)
			continue
		}
		if b, err = e.appendValue(b, c, cell); err != nil {
			return b, fmt.Errorf("%s: table %s column %s: %w", e.name, t.name, c.name, err)
		}
	}
	return append(b, '}'), nil
}

// initDDL is the full-sync message carrying a copied table's definition.
func (e *Encoder) initDDL(ev *binlogdata.VEvent, t *table) *vstreamv1.EncodedMessage {
	src := ev.GetSource()
	ts := e.p.Clock().UnixMilli()
	b := make([]byte, 0, 256+len(src.GetCreateTable()))
	b = append(b, `{"jobId":`...)
	b = append(b, e.job(src)...)
	b = append(b, `,"shardId":null,"identifier":null,"eventId":"","mysqlType":null,"id":0,"es":`...)
	b = strconv.AppendInt(b, ts, 10)
	b = append(b, `,"ts":`...)
	b = strconv.AppendInt(b, ts, 10)
	b = append(b, `,"database":`...)
	b = appendString(b, e.database(src))
	b = append(b, `,"table":`...)
	b = append(b, t.nameJSON...)
	b = append(b, `,"type":"INIT_DDL","isDdl":true,"sql":`...)
	// DRS prints SHOW CREATE TABLE on one line; the indents after the line breaks remain.
	b = appendString(b, strings.NewReplacer("\r", "", "\n", "").Replace(src.GetCreateTable()))
	b = append(b, `,"sqlType":null,"data":null,"old":null,"pkNames":null}`...)
	return &vstreamv1.EncodedMessage{Format: e.name, Value: b}
}

// ddl is the message of a schema change read from the binlog.
func (e *Encoder) ddl(ev *binlogdata.VEvent) *vstreamv1.EncodedMessage {
	sql := ev.GetStatement()
	db, table := e.database(ev.GetSource()), ""
	if _, tables, ok := sqltext.Classify(sql); ok && len(tables) > 0 {
		table = tables[0].Name
		if tables[0].DB != "" {
			db = tables[0].DB
		}
	}
	ts := e.p.Clock().UnixMilli()
	es := ev.GetTimestamp() * 1000
	if es == 0 {
		es = ts
	}
	b := make([]byte, 0, 256+len(sql))
	b = append(b, `{"mysqlType":null,"id":`...)
	b = strconv.AppendInt(b, e.id(), 10)
	b = append(b, `,"es":`...)
	b = strconv.AppendInt(b, es, 10)
	b = append(b, `,"ts":`...)
	b = strconv.AppendInt(b, ts, 10)
	b = append(b, `,"database":`...)
	b = appendString(b, db)
	b = append(b, `,"table":`...)
	b = appendString(b, table)
	b = append(b, `,"type":"DDL","isDdl":true,"sql":`...)
	b = appendString(b, sql)
	b = append(b, `,"sqlType":null,"data":null,"old":null,"pkNames":null}`...)
	return &vstreamv1.EncodedMessage{Format: e.name, Value: b}
}
