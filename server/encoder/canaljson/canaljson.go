// Package canaljson encodes changes as canal's "flat message" JSON, in two profiles: canal's
// own (old holds only the changed columns) and Volcengine DTS's (id 0, a pgType member, old
// holds the whole before image).
package canaljson

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/server/encoder"
	"github.com/vstream-cdc/vstream/vstreamer/ddl"
)

// Name is the format's name.
const Name = "canal-json"

// Encoder is a canal JSON encoder for one stream.
type Encoder struct {
	p        encoder.Params
	dts      bool
	perEvent bool
	oldAll   bool
	baseType bool
	sequence bool
	snapshot bool
	zone     *time.Location
	nextID   int64
	tables   map[string]*table
	// sizeHint is the capacity a message starts with: the last one's size, so that a stream's
	// messages are written without growing.
	sizeHint int
}

// table is what FIELD said about a table.
type table struct {
	fields  []*query.Field
	pkNames []string
	labels  [][]string // ENUM/SET members per column
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
	e := &Encoder{p: p, dts: profile == "dts", tables: map[string]*table{}}
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
	mt, err := o.String("mysql_type", "full", "full", "base")
	if err != nil {
		return nil, err
	}
	e.baseType = mt == "base"
	id, err := o.String("id", "zero", "zero", "sequence")
	if err != nil {
		return nil, err
	}
	e.sequence = id == "sequence"
	zone, err := o.String("render_zone", "UTC")
	if err != nil {
		return nil, err
	}
	if e.zone, err = time.LoadLocation(zone); err != nil {
		return nil, fmt.Errorf("format option render_zone=%q: %v", zone, err)
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
		e.field(ev.GetFieldEvent())
	case binlogdata.VEventType_ROW:
		return e.rows(out, ev)
	case binlogdata.VEventType_DDL:
		return append(out, e.ddl(ev)), nil
	}
	return out, nil
}

func (e *Encoder) field(fe *binlogdata.FieldEvent) {
	t := &table{fields: fe.GetFields(), labels: make([][]string, len(fe.GetFields()))}
	for i, f := range t.fields {
		if f.GetFlags()&uint32(query.MySqlFlag_PRI_KEY_FLAG) != 0 {
			t.pkNames = append(t.pkNames, f.GetName())
		}
		if f.GetType() == query.Type_ENUM || f.GetType() == query.Type_SET {
			t.labels[i] = ddl.Labels(f.GetColumnType())
		}
	}
	e.tables[fe.GetTableName()] = t
}

func (e *Encoder) id() int64 {
	if !e.sequence {
		return 0
	}
	e.nextID++
	return e.nextID
}

func (e *Encoder) es(ev *binlogdata.VEvent) int64 {
	if ev.GetTimestamp() == 0 {
		// Copied rows have no binlog time.
		return e.p.Clock().UnixMilli()
	}
	return ev.GetTimestamp() * 1000
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
	t := e.tables[re.GetTableName()]
	if t == nil {
		return out, fmt.Errorf("canal-json: ROW for %s before its FIELD", re.GetTableName())
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
			m = &message{database: e.p.Database, table: re.GetTableName(), typ: typ, pkNames: t.pkNames,
				es: e.es(ev), fields: t.fields, sqlType: make([]int, len(t.fields))}
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
func (e *Encoder) render(t *table, r *query.Row, sqlType []int) ([]*string, error) {
	vals := make([]*string, len(t.fields))
	off := int64(0)
	for i, f := range t.fields {
		if i >= len(r.GetLengths()) {
			break
		}
		l := r.GetLengths()[i]
		var cell []byte
		if l >= 0 {
			cell = r.GetValues()[off : off+l]
			off += l
		}
		var text string
		code := baseSQLType(f, cell == nil)
		if cell != nil {
			var err error
			text, code, err = e.value(t, i, f, cell)
			if err != nil {
				return nil, err
			}
			vals[i] = &text
		}
		if sqlType != nil {
			sqlType[i] = code
		}
	}
	return vals, nil
}

// baseSQLType is the JDBC type code of a column from its type alone (canal's code for NULL).
func baseSQLType(f *query.Field, null bool) int {
	switch f.GetType() {
	case query.Type_INT8, query.Type_UINT8:
		return -6
	case query.Type_INT16, query.Type_UINT16:
		return 5
	case query.Type_INT24, query.Type_UINT24, query.Type_INT32, query.Type_UINT32:
		return 4
	case query.Type_INT64, query.Type_UINT64:
		return -5
	case query.Type_DECIMAL:
		return 3
	case query.Type_FLOAT32:
		return 7
	case query.Type_FLOAT64:
		return 8
	case query.Type_BIT:
		return -7
	case query.Type_DATE:
		return 91
	case query.Type_DATETIME, query.Type_TIMESTAMP:
		return 93
	case query.Type_TIME:
		return 92
	case query.Type_YEAR:
		return 12
	case query.Type_CHAR:
		return 1
	case query.Type_VARCHAR:
		return 12
	case query.Type_TEXT:
		return 2005
	case query.Type_ENUM:
		return 4
	case query.Type_SET:
		if null {
			return 2004
		}
		return -7
	case query.Type_JSON:
		if null {
			return 1111
		}
		return 12
	}
	return 2004 // binary strings, blobs, geometry
}

// unsignedPromotion is the value above which canal promotes an unsigned column's JDBC type.
var unsignedPromotion = map[query.Type]struct {
	limit uint64
	code  int
}{
	query.Type_UINT8:  {127, 5},
	query.Type_UINT16: {32767, 4},
	query.Type_UINT32: {2147483647, -5},
	query.Type_UINT64: {9223372036854775807, 3},
}

func (e *Encoder) value(t *table, i int, f *query.Field, cell []byte) (string, int, error) {
	code := baseSQLType(f, false)
	switch typ := f.GetType(); typ {
	case query.Type_UINT8, query.Type_UINT16, query.Type_UINT32, query.Type_UINT64:
		if p := unsignedPromotion[typ]; p.limit > 0 {
			if v, err := strconv.ParseUint(string(cell), 10, 64); err == nil && v > p.limit {
				code = p.code
			}
		}
		return string(cell), code, nil
	case query.Type_FLOAT32, query.Type_FLOAT64:
		bits := 64
		if typ == query.Type_FLOAT32 {
			bits = 32
		}
		x, err := strconv.ParseFloat(string(cell), bits)
		if err != nil {
			return "", 0, fmt.Errorf("canal-json: column %s: %q is not a number", f.GetName(), cell)
		}
		return string(encoder.AppendJavaFloat(nil, x, bits)), code, nil
	case query.Type_BIT:
		var v uint64
		for _, c := range cell {
			v = v<<8 | uint64(c)
		}
		return strconv.FormatUint(v, 10), code, nil
	case query.Type_TIMESTAMP:
		return e.timestamp(string(cell)), code, nil
	case query.Type_ENUM:
		for j, l := range t.labels[i] {
			if l == string(cell) {
				return strconv.Itoa(j + 1), code, nil
			}
		}
		return "0", code, nil
	case query.Type_SET:
		var mask uint64
		if len(cell) > 0 {
			for _, member := range strings.Split(string(cell), ",") {
				for j, l := range t.labels[i] {
					if l == member {
						mask |= 1 << uint(j)
					}
				}
			}
		}
		return strconv.FormatUint(mask, 10), code, nil
	case query.Type_BINARY:
		// canal prints BINARY(n) as the binlog has it, without the zero padding.
		return encoder.Latin1([]byte(strings.TrimRight(string(cell), "\x00"))), code, nil
	case query.Type_VARBINARY, query.Type_BLOB, query.Type_GEOMETRY:
		return encoder.Latin1(cell), code, nil
	}
	return string(cell), code, nil
}

// timestamp renders a UTC TIMESTAMP text in the render zone, keeping its fraction digits.
func (e *Encoder) timestamp(s string) string {
	if e.zone == time.UTC || strings.HasPrefix(s, "0000-00-00") {
		return s
	}
	layout := "2006-01-02 15:04:05"
	if dot := strings.IndexByte(s, '.'); dot >= 0 {
		layout += "." + strings.Repeat("0", len(s)-dot-1)
	}
	tm, err := time.ParseInLocation(layout, s, time.UTC)
	if err != nil {
		return s
	}
	return tm.In(e.zone).Format(layout)
}

func (e *Encoder) ddl(ev *binlogdata.VEvent) *vstreamv1.EncodedMessage {
	sql := ev.GetStatement()
	m := &message{database: e.p.Database, typ: ddlType(sql), sql: sql, isDDL: true, es: e.es(ev)}
	if _, tables, ok := ddl.Classify(sql); ok && len(tables) > 0 {
		m.table = tables[0].Name
		if tables[0].DB != "" {
			m.database = tables[0].DB
		}
	}
	return e.finish(m)
}

// ddlType is canal's kind of a DDL statement.
func ddlType(sql string) string {
	w := ddl.Keywords(sql, 64)
	at := func(i int) string {
		if i < len(w) {
			return w[i]
		}
		return ""
	}
	i := 1
	switch at(0) {
	case "CREATE":
		if at(i) == "OR" {
			i += 2
		}
		for at(i) == "TEMPORARY" || at(i) == "UNIQUE" || at(i) == "FULLTEXT" || at(i) == "SPATIAL" || at(i) == "ONLINE" {
			i++
		}
		switch at(i) {
		case "TABLE":
			return "CREATE"
		case "INDEX":
			return "CINDEX"
		}
	case "ALTER":
		if at(i) != "TABLE" {
			break
		}
		rest := w[min(len(w), 2):]
		switch {
		case containsSeq(rest, "ADD", "INDEX"), containsSeq(rest, "ADD", "KEY"), containsSeq(rest, "ADD", "UNIQUE"),
			containsSeq(rest, "ADD", "FULLTEXT"), containsSeq(rest, "ADD", "SPATIAL"):
			return "CINDEX"
		case containsSeq(rest, "DROP", "INDEX"), containsSeq(rest, "DROP", "KEY"), containsSeq(rest, "DROP", "CONSTRAINT"),
			containsSeq(rest, "DROP", "PRIMARY"), containsSeq(rest, "DROP", "FOREIGN"):
			return "DINDEX"
		case containsSeq(rest, "RENAME") && !containsSeq(rest, "RENAME", "COLUMN") && !containsSeq(rest, "RENAME", "INDEX") &&
			!containsSeq(rest, "RENAME", "KEY") && !strings.Contains(sql, ","):
			return "RENAME"
		}
		return "ALTER"
	case "DROP":
		if at(i) == "TEMPORARY" {
			i++
		}
		switch at(i) {
		case "TABLE":
			return "ERASE"
		case "INDEX":
			return "DINDEX"
		}
	case "TRUNCATE":
		return "TRUNCATE"
	case "RENAME":
		if at(i) == "TABLE" {
			return "RENAME"
		}
	}
	return "QUERY"
}

func containsSeq(w []string, seq ...string) bool {
	for i := 0; i+len(seq) <= len(w); i++ {
		match := true
		for j, s := range seq {
			if w[i+j] != s {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
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
			b = encoder.AppendJSONString(b, e.mysqlType(f.GetColumnType()))
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
		msg.Key = []byte(e.key(m))
	}
	return msg
}

// key is a suggested partition key: the table and the first row's primary-key values.
func (e *Encoder) key(m *message) string {
	var sb strings.Builder
	sb.WriteString(m.database + "." + m.table)
	for _, pk := range m.pkNames {
		for i, f := range m.fields {
			if f.GetName() == pk {
				sb.WriteByte(':')
				if v := m.data[0][i]; v != nil {
					sb.WriteString(*v)
				}
			}
		}
	}
	return sb.String()
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

// mysqlType is the column type as canal prints it: COLUMN_TYPE, or without sizes for the
// base option ("bigint(20) unsigned" -> "bigint unsigned").
func (e *Encoder) mysqlType(columnType string) string {
	if !e.baseType {
		return columnType
	}
	open := strings.IndexByte(columnType, '(')
	if open < 0 {
		return columnType
	}
	end := strings.LastIndexByte(columnType, ')')
	if end < open {
		return columnType[:open]
	}
	return columnType[:open] + columnType[end+1:]
}
