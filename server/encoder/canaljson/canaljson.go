// Package canaljson encodes changes as canal's "flat message" JSON, in two profiles: canal's
// own (old holds only the changed columns) and Volcengine DTS's (id 0, a pgType member, old
// holds the whole before image).
//
// Partial row images (binlog_row_image NOBLOB or MINIMAL): a column the binlog did not log
// (the row change's data_columns) is left out of data and old, as canal lists only the
// columns a binlog row holds. The before image carries no such mark (Vitess sends none), so
// its unlogged columns read null.
package canaljson

import (
	"fmt"
	"strconv"
	"unsafe"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/server/encoder"
	"github.com/vstream-cdc/vstream/server/encoder/canal"
)

// Name is the format's name.
const Name = "canal-json"

// Encoder is a canal JSON encoder for one stream.
type Encoder struct {
	p        encoder.Params
	dts      bool
	perEvent bool
	oldAll   bool
	sequence bool
	snapshot bool
	values   canal.Options
	nextID   int64
	tables   encoder.Tables
	// written caches what never changes in a table's messages.
	written map[*encoder.Table]*tableText
	// slab holds the messages and their bytes; buf is where a message is written first.
	slab encoder.Slab
	buf  []byte

	// Scratch reused from message to message: the rendered values of the message's rows
	// (text holds their bytes, spans locate them) and its sqlType codes.
	text    []byte
	spans   []span
	sqlType []int
	data    []int // start of each data row in spans
	old     []int // start of each old row in spans
}

// span locates a rendered value in Encoder.text; end < 0 is NULL.
type span struct{ off, end int32 }

// tableText is the JSON of a table's message parts that depend only on its columns.
type tableText struct {
	// names are the quoted column names with their colon: "id":
	names [][]byte
	// pkNames is the pkNames array, or null.
	pkNames []byte
	// mysqlType is the mysqlType object.
	mysqlType []byte
}

// New builds an encoder from the stream's options:
//
//	profile            canal (default) or dts
//	rows_per_message   row (default) or event (canal's grouping)
//	old_columns        changed (canal default) or all (dts default)
//	mysql_type         full (COLUMN_TYPE, default) or base (int, varchar, bigint unsigned)
//	id                 zero (default) or sequence
//	render_zone        time zone for TIMESTAMP text (default UTC)
//	snapshot_as_insert true (default): copied rows as INSERT; false leaves them out
func New(p encoder.Params) (*Encoder, error) {
	o := p.Options
	profile, err := o.String("profile", "canal", "canal", "dts")
	if err != nil {
		return nil, err
	}
	e := &Encoder{p: p, dts: profile == "dts", tables: encoder.Tables{}, written: map[*encoder.Table]*tableText{}}
	rows, err := o.String("rows_per_message", "row", "row", "event")
	if err != nil {
		return nil, err
	}
	e.perEvent = rows == "event"
	defOld := "changed"
	if e.dts {
		defOld = "all"
	}
	old, err := o.String("old_columns", defOld, "changed", "all")
	if err != nil {
		return nil, err
	}
	e.oldAll = old == "all"
	id, err := o.String("id", "zero", "zero", "sequence")
	if err != nil {
		return nil, err
	}
	e.sequence = id == "sequence"
	if e.values, err = canal.ReadOptions(p); err != nil {
		return nil, err
	}
	if e.snapshot, err = o.Bool("snapshot_as_insert", true); err != nil {
		return nil, err
	}
	return e, nil
}

// Recycle implements encoder.Recycler.
func (e *Encoder) Recycle() { e.slab.Recycle() }

// Encode implements encoder.Encoder.
func (e *Encoder) Encode(out []*vstreamv1.EncodedMessage, ev *binlogdata.VEvent) ([]*vstreamv1.EncodedMessage, error) {
	switch ev.GetType() {
	case binlogdata.VEventType_FIELD:
		if prev := e.tables[ev.GetFieldEvent().GetTableName()]; prev != nil {
			delete(e.written, prev)
		}
		e.tables.Field(ev)
	case binlogdata.VEventType_ROW:
		return e.rows(out, ev)
	case binlogdata.VEventType_DDL:
		return append(out, e.ddl(ev)), nil
	default:
		// The other events (BEGIN, COMMIT, GTID, HEARTBEAT, ...) have no canal-json message.
	}
	return out, nil
}

func (e *Encoder) id() int64 {
	if !e.sequence {
		return 0
	}
	e.nextID++
	return e.nextID
}

// message holds the members of one flat message; row values are in the Encoder's scratch.
type message struct {
	database, table, typ, sql string
	isDDL                     bool
	es                        int64
	t                         *encoder.Table
	tt                        *tableText
}

func (e *Encoder) tableText(t *encoder.Table) *tableText {
	if tt := e.written[t]; tt != nil {
		return tt
	}
	tt := &tableText{names: make([][]byte, len(t.Fields))}
	for i, f := range t.Fields {
		tt.names[i] = append(encoder.AppendJSONString(nil, f.GetName()), ':')
	}
	if len(t.PKNames) == 0 {
		tt.pkNames = []byte("null")
	} else {
		tt.pkNames = append(tt.pkNames, '[')
		for i, n := range t.PKNames {
			if i > 0 {
				tt.pkNames = append(tt.pkNames, ',')
			}
			tt.pkNames = encoder.AppendJSONString(tt.pkNames, n)
		}
		tt.pkNames = append(tt.pkNames, ']')
	}
	tt.mysqlType = append(tt.mysqlType, '{')
	for i, f := range t.Fields {
		if i > 0 {
			tt.mysqlType = append(tt.mysqlType, ',')
		}
		tt.mysqlType = append(tt.mysqlType, tt.names[i]...)
		tt.mysqlType = encoder.AppendJSONString(tt.mysqlType, e.values.MySQLType(f.GetColumnType()))
	}
	tt.mysqlType = append(tt.mysqlType, '}')
	e.written[t] = tt
	return tt
}

func (e *Encoder) rows(out []*vstreamv1.EncodedMessage, ev *binlogdata.VEvent) ([]*vstreamv1.EncodedMessage, error) {
	re := ev.GetRowEvent()
	t, err := e.tables.Row(ev)
	if err != nil {
		return out, fmt.Errorf("canal-json: %w", err)
	}
	if ev.GetTimestamp() == 0 && !e.snapshot {
		return out, nil
	}
	var m message
	open := false
	flush := func() {
		if open {
			out = append(out, e.finish(&m))
			open = false
		}
	}
	for _, rc := range re.GetRowChanges() {
		typ := "UPDATE"
		switch {
		case rc.GetBefore() == nil:
			typ = "INSERT"
		case rc.GetAfter() == nil:
			typ = "DELETE"
		}
		if !open || !e.perEvent {
			flush()
			m = message{database: e.p.Database, table: re.GetTableName(), typ: typ, t: t, tt: e.tableText(t),
				es: canal.ExecuteTime(ev, e.p.Clock)}
			open = true
			e.text, e.spans, e.data, e.old = e.text[:0], e.spans[:0], e.data[:0], e.old[:0]
			e.sqlType = e.sqlType[:0]
			for _, f := range t.Fields {
				e.sqlType = append(e.sqlType, canal.SQLType(f, true))
			}
		}
		image := rc.GetAfter()
		if typ == "DELETE" {
			image = rc.GetBefore()
		}
		e.data = append(e.data, len(e.spans))
		var dataColumns *binlogdata.RowChange_Bitmap
		if typ != "DELETE" {
			dataColumns = rc.GetDataColumns()
		}
		if err := e.render(t, image, dataColumns, true); err != nil {
			return out, err
		}
		if typ == "UPDATE" {
			e.old = append(e.old, len(e.spans))
			if err := e.render(t, rc.GetBefore(), nil, false); err != nil {
				return out, err
			}
		}
	}
	flush()
	return out, nil
}

// notLogged is the span of a column the binlog row image left out.
var notLogged = span{-2, -2}

// render appends a row's canal text values to the scratch; with types it also records each
// column's JDBC type code for the values (unsigned promotion depends on the value). Columns
// that dataColumns says were not logged get notLogged.
func (e *Encoder) render(t *encoder.Table, r *query.Row, dataColumns *binlogdata.RowChange_Bitmap, types bool) error {
	lengths, values := r.GetLengths(), r.GetValues()
	off := int64(0)
	for i, f := range t.Fields {
		if !encoder.Logged(dataColumns, i, len(t.Fields)) {
			e.spans = append(e.spans, notLogged)
			continue
		}
		if i >= len(lengths) || lengths[i] < 0 {
			e.spans = append(e.spans, span{-1, -1})
			continue
		}
		l := lengths[i]
		if off+l > int64(len(values)) {
			return fmt.Errorf("canal-json: table %s: row values end inside column %s", t.Name, f.GetName())
		}
		start := len(e.text)
		var code int
		var err error
		e.text, code, err = e.values.AppendValue(e.text, f, t.Labels[i], values[off:off+l])
		if err != nil {
			return fmt.Errorf("canal-json: %w", err)
		}
		off += l
		e.spans = append(e.spans, span{int32(start), int32(len(e.text))})
		if types {
			e.sqlType[i] = code
		}
	}
	return nil
}

func (e *Encoder) ddl(ev *binlogdata.VEvent) *vstreamv1.EncodedMessage {
	sql := ev.GetStatement()
	m := &message{sql: sql, isDDL: true, es: canal.ExecuteTime(ev, e.p.Clock)}
	m.typ, m.database, m.table = canal.DDL(sql, e.p.Database)
	return e.finish(m)
}

// finish writes the message's JSON, members in canal's order.
func (e *Encoder) finish(m *message) *vstreamv1.EncodedMessage {
	b := append(e.buf[:0], `{"id":`...)
	b = strconv.AppendInt(b, e.id(), 10)
	b = append(b, `,"database":`...)
	b = encoder.AppendJSONString(b, m.database)
	b = append(b, `,"table":`...)
	b = encoder.AppendJSONString(b, m.table)
	b = append(b, `,"pkNames":`...)
	if m.isDDL {
		b = append(b, "null"...)
	} else {
		b = append(b, m.tt.pkNames...)
	}
	b = append(b, `,"isDdl":`...)
	b = strconv.AppendBool(b, m.isDDL)
	b = append(b, `,"type":`...)
	b = encoder.AppendJSONString(b, m.typ)
	b = append(b, `,"es":`...)
	b = strconv.AppendInt(b, m.es, 10)
	b = append(b, `,"ts":`...)
	b = strconv.AppendInt(b, e.p.Clock().UnixMilli(), 10)
	b = append(b, `,"sql":`...)
	b = encoder.AppendJSONString(b, m.sql)
	if m.isDDL {
		b = append(b, `,"sqlType":null,"mysqlType":null,"data":null,"old":null`...)
	} else {
		b = append(b, `,"sqlType":{`...)
		for i := range m.t.Fields {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, m.tt.names[i]...)
			b = strconv.AppendInt(b, int64(e.sqlType[i]), 10)
		}
		b = append(b, `},"mysqlType":`...)
		b = append(b, m.tt.mysqlType...)
		b = append(b, `,"data":`...)
		b = e.appendRows(b, m.tt, e.data, nil)
		b = append(b, `,"old":`...)
		if len(e.old) > 0 {
			b = e.appendRows(b, m.tt, e.old, e.data)
		} else {
			b = append(b, "null"...)
		}
	}
	if e.dts {
		if m.isDDL {
			b = append(b, `,"pgType":null`...)
		} else {
			b = append(b, `,"pgType":{}`...)
		}
	}
	b = append(b, '}')
	e.buf = b
	msg := e.slab.Message()
	msg.Format, msg.Value = Name, e.slab.Bytes(b)
	if !m.isDDL {
		msg.Database, msg.Table = m.database, m.table
	}
	if !m.isDDL && len(m.t.PK) > 0 && len(e.data) > 0 {
		e.buf = e.key(e.buf[:0], m)
		msg.Key = e.slab.Bytes(e.buf)
	}
	return msg
}

// key is a suggested partition key: the table and the first row's primary-key values.
func (e *Encoder) key(b []byte, m *message) []byte {
	b = canal.AppendKey(b, m.database, m.table)
	for _, i := range m.t.PK {
		b = canal.AppendKeyPart(b, e.value(e.spans[e.data[0]+i]))
	}
	return b
}

// value is a rendered value's bytes (nil for NULL).
func (e *Encoder) value(sp span) []byte {
	if sp.end < 0 {
		return nil
	}
	return e.text[sp.off:sp.end]
}

// appendRows writes rows starting at the given spans. With against (old rows of updates),
// canal's profile leaves out the columns whose value equals the data row's.
func (e *Encoder) appendRows(b []byte, tt *tableText, rows, against []int) []byte {
	b = append(b, '[')
	for r, at := range rows {
		if r > 0 {
			b = append(b, ',')
		}
		b = append(b, '{')
		first := true
		for i := range tt.names {
			sp := e.spans[at+i]
			// canal lists only the columns the row image holds: a column the binlog did not
			// log is left out of data, and of old.
			if sp == notLogged || against != nil && e.spans[against[r]+i] == notLogged {
				continue
			}
			if against != nil && !e.oldAll {
				if o := e.spans[against[r]+i]; (sp.end < 0) == (o.end < 0) && string(e.value(sp)) == string(e.value(o)) {
					continue
				}
			}
			if !first {
				b = append(b, ',')
			}
			first = false
			b = append(b, tt.names[i]...)
			if sp.end < 0 {
				b = append(b, "null"...)
			} else {
				b = encoder.AppendJSONString(b, unsafeString(e.text[sp.off:sp.end]))
			}
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

// unsafeString views bytes as a string for reading only.
func unsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}
