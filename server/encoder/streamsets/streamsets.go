// Package streamsets encodes row changes as the records of StreamSets Data Collector's "MySQL
// Binary Log" origin: one record per changed row, a map holding Type, Database, Table,
// ServerId, Timestamp, Offset, the binlog coordinates (BinLogFilename and BinLogPosition, or
// GTID and SeqNo) and the row images Data and OldData, with the operation in the
// sdc.operation.type header. StreamSets defines an in-memory record, not bytes; the record is
// written here as a JSON object whose values are typed as the origin types them
// (schema/MysqlType.java): integers, floats and decimals as JSON numbers, dates and times as
// epoch milliseconds, BLOBs as base64, everything else as strings.
//
// Partial row images (binlog_row_image NOBLOB or MINIMAL): a column the binlog did not log
// (the row change's data_columns) is left out of Data, as the origin leaves out the columns a
// binlog row does not include. OldData has no such mark (Vitess sends none for the before
// image), so its unlogged columns read null.
package streamsets

import (
	"fmt"
	"strconv"
	"unsafe"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/server/encoder"
)

// Name is the format's name.
const Name = "streamsets"

// HeaderOperation is the record header attribute holding the operation code.
const HeaderOperation = "sdc.operation.type"

// Operation codes of StreamSets' OperationType, as the header carries them.
const (
	OpInsert = "1"
	OpDelete = "2"
	OpUpdate = "3"
)

// Encoder is a StreamSets record encoder for one stream.
type Encoder struct {
	p encoder.Params
	// gtid selects the GTID offset (GTID, SeqNo, JSON Offset) over file and position.
	gtid bool
	// snapshot keeps copied rows, as INSERT records.
	snapshot bool
	// micros writes temporal values in microseconds instead of milliseconds.
	micros bool
	// widen writes unsigned integers with their full value instead of wrapping them into
	// the signed type of their width.
	widen  bool
	tables map[string]*table

	// The transaction being read (GTID offsets): its GTID and the executed set before it.
	txGTID, txSetBefore string

	// Scratch, reused from event to event.
	prefix []byte
	// db is the database of the ROW event whose prefix was written last.
	db    string
	cells [][]byte
	// text holds a cell converted to UTF-8.
	text []byte
	// perRow is the size of the last record written, to size the next one's buffer.
	perRow int
	// slab holds the records and their bytes.
	slab encoder.Slab
}

// New builds an encoder from the stream's options:
//
//	offset             gtid (default) or file: the record's binlog coordinates
//	snapshot_as_insert true (default): copied rows as INSERT records; false leaves them out
//	time_unit          ms (default) or us: the unit of DATE, TIME, DATETIME and TIMESTAMP values
//	unsigned           wrap (default) or widen: unsigned integers as the origin reads them
//	                   (wrapped into the signed type of their width) or with their full value
func New(p encoder.Params) (*Encoder, error) {
	o := p.Options
	e := &Encoder{p: p, tables: map[string]*table{}}
	offset, err := o.String("offset", "gtid", "gtid", "file")
	if err != nil {
		return nil, err
	}
	e.gtid = offset == "gtid"
	if e.snapshot, err = o.Bool("snapshot_as_insert", true); err != nil {
		return nil, err
	}
	unit, err := o.String("time_unit", "ms", "ms", "us")
	if err != nil {
		return nil, err
	}
	e.micros = unit == "us"
	unsigned, err := o.String("unsigned", "wrap", "wrap", "widen")
	if err != nil {
		return nil, err
	}
	e.widen = unsigned == "widen"
	return e, nil
}

// opHeaders are the headers of each operation's records. Records share them: nothing
// writes to a message's headers once it is made.
var opHeaders = map[string]map[string]string{
	OpInsert: {HeaderOperation: OpInsert}, OpDelete: {HeaderOperation: OpDelete}, OpUpdate: {HeaderOperation: OpUpdate},
}

// Recycle implements encoder.Recycler.
func (e *Encoder) Recycle() { e.slab.Recycle() }

// Encode implements encoder.Encoder. Only ROW events become records; BEGIN starts the
// transaction whose GTID offsets the rows carry, FIELD describes the rows to come, and DDL
// and the rest have no record in this format.
func (e *Encoder) Encode(out []*vstreamv1.EncodedMessage, ev *binlogdata.VEvent) ([]*vstreamv1.EncodedMessage, error) {
	switch ev.GetType() {
	case binlogdata.VEventType_FIELD:
		return out, e.field(ev)
	case binlogdata.VEventType_BEGIN:
		return out, e.begin(ev)
	case binlogdata.VEventType_ROW:
		return e.rows(out, ev)
	default:
		// The other events have no StreamSets record: COMMIT and DDL change no row.
	}
	return out, nil
}

// begin remembers the transaction's GTID and the executed GTID set before it: the origin
// reads the client's set at the transaction's GTID event, before the client adds the
// transaction to it at the commit, so that an offset names the transaction as incomplete
// rather than done.
func (e *Encoder) begin(ev *binlogdata.VEvent) error {
	e.txGTID, e.txSetBefore = "", ""
	src := ev.GetSource()
	if !e.gtid || src.GetSnapshot() || ev.GetEventGtid() == "" {
		return nil
	}
	before, err := setBefore(src.GetGtidSet(), ev.GetEventGtid())
	if err != nil {
		return fmt.Errorf("streamsets: transaction %s: %w", ev.GetEventGtid(), err)
	}
	e.txGTID, e.txSetBefore = ev.GetEventGtid(), before
	return nil
}

func (e *Encoder) rows(out []*vstreamv1.EncodedMessage, ev *binlogdata.VEvent) ([]*vstreamv1.EncodedMessage, error) {
	re := ev.GetRowEvent()
	t := e.tables[re.GetTableName()]
	if t == nil {
		return out, fmt.Errorf("streamsets: ROW for table %s before its FIELD event", re.GetTableName())
	}
	src := ev.GetSource()
	snapshot := src.GetSnapshot()
	if snapshot && !e.snapshot {
		return out, nil
	}
	if err := e.writePrefix(ev, t, snapshot); err != nil {
		return out, err
	}
	for _, rc := range re.GetRowChanges() {
		buf := e.slab.Buffer(e.perRow + e.perRow/8 + 64)
		before, after := rc.GetBefore(), rc.GetAfter()
		var typ, code string
		switch {
		case before == nil && after == nil:
			continue
		case before == nil:
			typ, code = "INSERT", OpInsert
		case after == nil:
			typ, code = "DELETE", OpDelete
		default:
			typ, code = "UPDATE", OpUpdate
		}
		buf = append(buf, `{"Type":"`...)
		buf = append(buf, typ...)
		buf = append(buf, `",`...)
		buf = append(buf, e.prefix...)
		var err error
		if after != nil {
			buf = append(buf, `,"Data":`...)
			if buf, err = e.appendImage(buf, t, after, rc.GetDataColumns()); err != nil {
				return out, err
			}
		}
		if before != nil {
			buf = append(buf, `,"OldData":`...)
			if buf, err = e.appendImage(buf, t, before, nil); err != nil {
				return out, err
			}
		}
		buf = append(buf, '}')
		e.perRow = len(buf)
		m := e.slab.Message()
		m.Format, m.Value = Name, e.slab.Commit(buf)
		m.Database, m.Table = e.db, t.Name
		m.Headers = opHeaders[code]
		out = append(out, m)
	}
	return out, nil
}

// writePrefix writes the members every record of a ROW event shares, from "Database" to the
// binlog coordinates, without the braces.
func (e *Encoder) writePrefix(ev *binlogdata.VEvent, t *table, snapshot bool) error {
	src := ev.GetSource()
	b := e.prefix[:0]
	db := src.GetDatabase()
	if db == "" {
		db = t.database
	}
	if db == "" {
		db = e.p.Database
	}
	e.db = db
	b = append(b, `"Database":`...)
	b = encoder.AppendJSONString(b, db)
	b = append(b, `,"Table":`...)
	b = encoder.AppendJSONString(b, ev.GetRowEvent().GetTableName())
	b = append(b, `,"ServerId":`...)
	b = strconv.AppendUint(b, uint64(src.GetServerId()), 10)
	b = append(b, `,"Timestamp":`...)
	ms := ev.GetTimestamp() * 1000
	if snapshot || ev.GetTimestamp() == 0 {
		// Copied rows have no binlog event; the time they were read stands in.
		ms = e.p.Clock().UnixMilli()
	}
	b = strconv.AppendInt(b, ms, 10)
	if !e.gtid {
		// The origin's position offset is the position after the rows event, where a
		// restarted client resumes.
		b = append(b, `,"Offset":`...)
		b = encoder.AppendJSONString(b, src.GetFile())
		b = append(b[:len(b)-1], ':') // reopen the string for ":<position>"
		b = strconv.AppendUint(b, src.GetEndPos(), 10)
		b = append(b, '"')
		b = append(b, `,"BinLogFilename":`...)
		b = encoder.AppendJSONString(b, src.GetFile())
		b = append(b, `,"BinLogPosition":`...)
		b = strconv.AppendUint(b, src.GetEndPos(), 10)
		e.prefix = b
		return nil
	}
	// GTID offset: GtidSourceOffset as Jackson writes it, a JSON object inside the string.
	// GTIDs and GTID sets hold only digits, hex letters, '-', ':', ',' and tag letters, so
	// the object needs no escaping beyond its own quotes.
	if snapshot {
		b = append(b, `,"Offset":"{\"gtidSet\":\"`...)
		b = append(b, stripFlavor(src.GetGtidSet())...)
		b = append(b, `\",\"incompleteTransactions\":{}}","GTID":null,"SeqNo":null`...)
		e.prefix = b
		return nil
	}
	gtid := ev.GetEventGtid()
	if gtid == "" || gtid != e.txGTID {
		return fmt.Errorf("streamsets: ROW of table %s in transaction %q without the transaction's BEGIN (GTID offsets need it; offset=file does not)", t.Name, gtid)
	}
	seq := uint64(src.GetRowsEventOrdinal())
	b = append(b, `,"Offset":"{\"gtidSet\":\"`...)
	b = append(b, e.txSetBefore...)
	b = append(b, `\",\"incompleteTransactions\":{\"`...)
	b = append(b, gtid...)
	b = append(b, `\":`...)
	b = strconv.AppendUint(b, seq, 10)
	b = append(b, `}}","GTID":`...)
	b = encoder.AppendJSONString(b, gtid)
	b = append(b, `,"SeqNo":`...)
	b = strconv.AppendUint(b, seq, 10)
	e.prefix = b
	return nil
}

// appendImage writes a row image as a JSON object of column name → typed value. When the
// row event says which columns it holds (a MINIMAL or NOBLOB row image), the others are left
// out, as the origin leaves out columns the binlog row does not include.
func (e *Encoder) appendImage(b []byte, t *table, r *query.Row, present *binlogdata.RowChange_Bitmap) ([]byte, error) {
	var err error
	e.cells, err = encoder.Cells(e.cells[:0], r, len(t.Fields))
	if err != nil {
		return b, fmt.Errorf("streamsets: table %s: %w", t.Name, err)
	}
	b = append(b, '{')
	first := true
	for i, cell := range e.cells {
		if !encoder.Logged(present, i, len(e.cells)) {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, t.keys[i]...)
		if cell == nil {
			b = append(b, "null"...)
			continue
		}
		if b, err = e.appendValue(b, t, i, cell); err != nil {
			return b, fmt.Errorf("streamsets: table %s column %s: %w", t.Name, t.Fields[i].GetName(), err)
		}
	}
	return append(b, '}'), nil
}

// view is a read-only string over b, for functions that take strings and keep nothing.
func view(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}
