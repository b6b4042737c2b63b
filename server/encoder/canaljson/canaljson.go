// Package canaljson encodes changes as canal's "flat message" JSON, in two profiles: canal's
// own (old holds only the changed columns) and Volcengine DTS's (id 0, a pgType member, old
// holds the whole before image).
package canaljson

import (
	"fmt"
	"strconv"

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
	scratch  []byte
	// sizeHint is the capacity a message starts with: the last one's size, so that a stream's
	// messages are written without growing.
	sizeHint int
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
	e := &Encoder{p: p, dts: profile == "dts", tables: encoder.Tables{}}
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
	if e.values, err = canal.ReadOptions(o); err != nil {
		return nil, err
	}
	if e.snapshot, err = o.Bool("snapshot_as_insert", true); err != nil {
		return nil, err
	}
	return e, nil
}

// Encode implements encoder.Encoder.
func (e *Encoder) Encode(out []*vstreamv1.EncodedMessage, ev *binlogdata.VEvent) ([]*vstreamv1.EncodedMessage, error) {
	switch ev.GetType() {
	case binlogdata.VEventType_FIELD:
		e.tables.Field(ev)
	case binlogdata.VEventType_ROW:
		return e.rows(out, ev)
	case binlogdata.VEventType_DDL:
		return append(out, e.ddl(ev)), nil
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

// message holds the members of one flat message.
type message struct {
	database, table, typ, sql string
	pkNames                   []string
	isDDL                     bool
	es                        int64
	fields                    []*query.Field
	sqlType                   []int
	data, old                 [][]*string // per row, per column (nil: NULL); old: nil row = absent
	oldKeep                   [][]bool
	hasOld                    bool
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
	var m *message
	flush := func() {
		if m != nil {
			out = append(out, e.finish(m))
			m = nil
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
		if m == nil || !e.perEvent {
			flush()
			m = &message{database: e.p.Database, table: re.GetTableName(), typ: typ, pkNames: t.PKNames,
				es: canal.ExecuteTime(ev, e.p.Clock), fields: t.Fields, sqlType: make([]int, len(t.Fields))}
		}
		image := rc.GetAfter()
		if typ == "DELETE" {
			image = rc.GetBefore()
		}
		row, err := e.render(t, image, m.sqlType)
		if err != nil {
			return out, err
		}
		m.data = append(m.data, row)
		if typ == "UPDATE" {
			before, err := e.render(t, rc.GetBefore(), nil)
			if err != nil {
				return out, err
			}
			keep := make([]bool, len(before))
			for i := range before {
				keep[i] = e.oldAll || !sameValue(before[i], row[i])
			}
			m.old = append(m.old, before)
			m.oldKeep = append(m.oldKeep, keep)
			m.hasOld = true
		}
	}
	flush()
	return out, nil
}

func sameValue(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// render turns a row into canal's text values; when sqlType is given it also records each
// column's JDBC type code for the values (unsigned promotion depends on the value).
func (e *Encoder) render(t *encoder.Table, r *query.Row, sqlType []int) ([]*string, error) {
	vals := make([]*string, len(t.Fields))
	off := int64(0)
	for i, f := range t.Fields {
		if i >= len(r.GetLengths()) {
			break
		}
		l := r.GetLengths()[i]
		code := canal.SQLType(f, true)
		if l >= 0 {
			var err error
			e.scratch, code, err = e.values.AppendValue(e.scratch[:0], f, t.Labels[i], r.GetValues()[off:off+l])
			if err != nil {
				return nil, fmt.Errorf("canal-json: %w", err)
			}
			off += l
			text := string(e.scratch)
			vals[i] = &text
		}
		if sqlType != nil {
			sqlType[i] = code
		}
	}
	return vals, nil
}

func (e *Encoder) ddl(ev *binlogdata.VEvent) *vstreamv1.EncodedMessage {
	sql := ev.GetStatement()
	m := &message{sql: sql, isDDL: true, es: canal.ExecuteTime(ev, e.p.Clock)}
	m.typ, m.database, m.table = canal.DDL(sql, e.p.Database)
	return e.finish(m)
}

// finish writes the message's JSON, members in canal's order.
func (e *Encoder) finish(m *message) *vstreamv1.EncodedMessage {
	b := make([]byte, 0, max(256, e.sizeHint))
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, e.id(), 10)
	b = append(b, `,"database":`...)
	b = encoder.AppendJSONString(b, m.database)
	b = append(b, `,"table":`...)
	b = encoder.AppendJSONString(b, m.table)
	b = append(b, `,"pkNames":`...)
	if m.isDDL || len(m.pkNames) == 0 {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, n := range m.pkNames {
			if i > 0 {
				b = append(b, ',')
			}
			b = encoder.AppendJSONString(b, n)
		}
		b = append(b, ']')
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
		for i, f := range m.fields {
			if i > 0 {
				b = append(b, ',')
			}
			b = encoder.AppendJSONString(b, f.GetName())
			b = append(b, ':')
			b = strconv.AppendInt(b, int64(m.sqlType[i]), 10)
		}
		b = append(b, `},"mysqlType":{`...)
		for i, f := range m.fields {
			if i > 0 {
				b = append(b, ',')
			}
			b = encoder.AppendJSONString(b, f.GetName())
			b = append(b, ':')
			b = encoder.AppendJSONString(b, e.values.MySQLType(f.GetColumnType()))
		}
		b = append(b, `},"data":`...)
		b = appendRows(b, m.fields, m.data, nil)
		b = append(b, `,"old":`...)
		if m.hasOld {
			b = appendRows(b, m.fields, m.old, m.oldKeep)
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
	e.sizeHint = len(b) + len(b)/8
	msg := &vstreamv1.EncodedMessage{Format: Name, Value: b}
	if !m.isDDL && len(m.pkNames) > 0 && len(m.data) > 0 {
		msg.Key = e.key(m)
	}
	return msg
}

// key is a suggested partition key: the table and the first row's primary-key values.
func (e *Encoder) key(m *message) []byte {
	b := canal.AppendKey(nil, m.database, m.table)
	for _, name := range m.pkNames {
		for i, f := range m.fields {
			if f.GetName() == name {
				var v string
				if s := m.data[0][i]; s != nil {
					v = *s
				}
				b = canal.AppendKeyPart(b, v)
			}
		}
	}
	return b
}

func appendRows(b []byte, fields []*query.Field, rows [][]*string, keep [][]bool) []byte {
	b = append(b, '[')
	for r, row := range rows {
		if r > 0 {
			b = append(b, ',')
		}
		b = append(b, '{')
		first := true
		for i, v := range row {
			if keep != nil && !keep[r][i] {
				continue
			}
			if !first {
				b = append(b, ',')
			}
			first = false
			b = encoder.AppendJSONString(b, fields[i].GetName())
			b = append(b, ':')
			if v == nil {
				b = append(b, "null"...)
			} else {
				b = encoder.AppendJSONString(b, *v)
			}
		}
		b = append(b, '}')
	}
	return append(b, ']')
}
