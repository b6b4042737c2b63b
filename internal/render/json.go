package render

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/server/encoder"
)

// jsonRenderer prints one JSON object per row change:
//
//	{"keyspace","table","op","before","after","gtid","position","timestamp"}
//
// and DDL, heartbeats, copy completions and bare positions as objects of their own. The gtid
// and the position to resume from come after a transaction's rows in the stream, so a
// transaction's rows are held until its VGTID and printed together; the rows of a transaction
// the client rolls back (to receive it again after a reconnect) are never printed.
type jsonRenderer struct {
	tables tables
	cells  [][]byte

	// pending holds the unfinished objects of the open transaction, each without its closing
	// gtid, position and timestamp; ends are their end offsets and stamps their timestamps.
	pending []byte
	ends    []int
	stamps  []int64
	gtid    string
	line    []byte
	// after holds objects that follow the held rows in the stream (a copy's COPY_COMPLETED
	// comes after its last chunk's rows, before their VGTID); afterEnds are their end offsets.
	after     []byte
	afterEnds []int
}

func (r *jsonRenderer) Events(events []*binlogdata.VEvent, emit Emit) error {
	for _, ev := range events {
		if err := r.event(ev, emit); err != nil {
			return err
		}
	}
	return nil
}

func (r *jsonRenderer) event(ev *binlogdata.VEvent, emit Emit) error {
	switch ev.GetType() {
	case binlogdata.VEventType_FIELD:
		r.tables.field(ev)
	case binlogdata.VEventType_BEGIN, binlogdata.VEventType_ROLLBACK:
		r.reset()
	case binlogdata.VEventType_ROW:
		return r.row(ev)
	case binlogdata.VEventType_GTID:
		r.gtid = ev.GetGtid()
	case binlogdata.VEventType_DDL:
		r.pending = append(r.pending, `{"op":"ddl","keyspace":`...)
		r.pending = appendString(r.pending, []byte(ev.GetKeyspace()))
		r.pending = append(r.pending, `,"statement":`...)
		r.pending = appendString(r.pending, []byte(ev.GetStatement()))
		r.ends = append(r.ends, len(r.pending))
		r.stamps = append(r.stamps, ev.GetTimestamp())
	case binlogdata.VEventType_VGTID:
		return r.flush(ev, emit)
	case binlogdata.VEventType_HEARTBEAT:
		r.line = append(r.line[:0], `{"op":"heartbeat"`...)
		r.line = appendStamp(r.line, ev.GetTimestamp())
		return emit(append(r.line, '}'))
	case binlogdata.VEventType_COPY_COMPLETED:
		r.line = append(r.line[:0], `{"op":"copy_completed","keyspace":`...)
		r.line = appendString(r.line, []byte(ev.GetKeyspace()))
		r.line = append(r.line, `,"table":`...)
		r.line = appendString(r.line, []byte(ev.GetLastPKEvent().GetTableLastPK().GetTableName()))
		r.line = append(r.line, '}')
		if len(r.ends) > 0 {
			// Printed after the rows it follows, once their VGTID closes them.
			r.after = append(r.after, r.line...)
			r.afterEnds = append(r.afterEnds, len(r.after))
			return nil
		}
		return emit(r.line)
	case binlogdata.VEventType_JOURNAL, binlogdata.VEventType_VERSION:
		r.line = append(r.line[:0], `{"op":`...)
		r.line = appendString(r.line, []byte(strings.ToLower(ev.GetType().String())))
		return emit(append(r.line, '}'))
	default:
		// COMMIT waits for its VGTID; OTHER, LASTPK, SAVEPOINT and statement events carry no
		// row a reader needs.
	}
	return nil
}

func (r *jsonRenderer) reset() {
	r.pending, r.ends, r.stamps, r.gtid = r.pending[:0], r.ends[:0], r.stamps[:0], ""
	r.after, r.afterEnds = r.after[:0], r.afterEnds[:0]
}

func (r *jsonRenderer) row(ev *binlogdata.VEvent) error {
	tb, err := r.tables.of(ev)
	if err != nil {
		return err
	}
	for _, rc := range ev.GetRowEvent().GetRowChanges() {
		p := append(r.pending, `{"keyspace":`...)
		p = appendString(p, []byte(tb.keyspace))
		p = append(p, `,"table":`...)
		p = appendString(p, []byte(tb.name))
		p = append(p, `,"op":"`...)
		p = append(p, op(rc)...)
		p = append(p, `","before":`...)
		if p, err = r.appendImage(p, tb, rc.GetBefore(), nil); err != nil {
			return err
		}
		p = append(p, `,"after":`...)
		if p, err = r.appendImage(p, tb, rc.GetAfter(), rc.GetDataColumns()); err != nil {
			return err
		}
		r.pending = p
		r.ends = append(r.ends, len(p))
		r.stamps = append(r.stamps, ev.GetTimestamp())
	}
	return nil
}

// appendImage appends a row image as an object keyed by column name; the columns a partial
// after image left out (data_columns, under binlog_row_image NOBLOB or MINIMAL) are left out
// too, rather than shown as a NULL they are not.
func (r *jsonRenderer) appendImage(dst []byte, tb *table, row *query.Row, logged *binlogdata.RowChange_Bitmap) ([]byte, error) {
	if row == nil {
		return append(dst, "null"...), nil
	}
	var err error
	if r.cells, err = tb.cells(row, r.cells); err != nil {
		return nil, err
	}
	dst = append(dst, '{')
	first := true
	for i, f := range tb.fields {
		if !encoder.Logged(logged, i, len(tb.fields)) {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = appendString(dst, []byte(f.GetName()))
		dst = append(dst, ':')
		dst = AppendJSON(dst, f, r.cells[i])
	}
	return append(dst, '}'), nil
}

// flush prints the held objects closed with the transaction's gtid and this position, or the
// bare position when nothing is held (the start of a stream, an OTHER statement, a
// transaction on tables the filter leaves out).
func (r *jsonRenderer) flush(ev *binlogdata.VEvent, emit Emit) error {
	var pos []byte
	pos, err := compactProto(pos, ev.GetVgtid())
	if err != nil {
		return fmt.Errorf("encode position: %w", err)
	}
	defer r.reset()
	if len(r.ends) == 0 {
		r.line = append(r.line[:0], `{"op":"position","position":`...)
		r.line = append(r.line, pos...)
		return emit(append(r.line, '}'))
	}
	start := 0
	for i, end := range r.ends {
		r.line = append(r.line[:0], r.pending[start:end]...)
		start = end
		r.line = append(r.line, `,"gtid":`...)
		r.line = appendString(r.line, []byte(r.gtid))
		r.line = append(r.line, `,"position":`...)
		r.line = append(r.line, pos...)
		r.line = appendStamp(r.line, r.stamps[i])
		if err := emit(append(r.line, '}')); err != nil {
			return err
		}
	}
	start = 0
	for _, end := range r.afterEnds {
		r.line = append(r.line[:0], r.after[start:end]...)
		start = end
		if err := emit(r.line); err != nil {
			return err
		}
	}
	return nil
}

// appendStamp appends the "timestamp" member: the event's time in UTC, null when the event
// has none (copied rows).
func appendStamp(dst []byte, sec int64) []byte {
	dst = append(dst, `,"timestamp":`...)
	if sec == 0 {
		return append(dst, "null"...)
	}
	dst = append(dst, '"')
	dst = time.Unix(sec, 0).UTC().AppendFormat(dst, time.RFC3339)
	return append(dst, '"')
}

// Messages prints each encoded message as {"format","topic","key","headers","tombstone",
// "value","position"}: a key or value that is JSON is embedded as is, any other as base64 in
// "key_base64" or "value_base64" (an Avro record, a protobuf message).
func (r *jsonRenderer) Messages(msgs []*vstreamv1.EncodedMessage, emit Emit) error {
	for _, m := range msgs {
		b := append(r.line[:0], `{"format":`...)
		b = appendString(b, []byte(m.GetFormat()))
		b = append(b, `,"topic":`...)
		b = appendString(b, []byte(m.GetTopic()))
		b = appendDoc(b, "key", m.GetKey())
		if len(m.GetHeaders()) > 0 {
			h, err := json.Marshal(m.GetHeaders()) // sorted keys: stable lines
			if err != nil {
				return fmt.Errorf("encode headers: %w", err)
			}
			b = append(b, `,"headers":`...)
			b = append(b, h...)
		}
		if m.GetTombstone() {
			b = append(b, `,"tombstone":true`...)
		} else {
			b = appendDoc(b, "value", m.GetValue())
		}
		if m.GetPosition() != nil {
			b = append(b, `,"position":`...)
			var err error
			if b, err = compactProto(b, m.GetPosition()); err != nil {
				return fmt.Errorf("encode position: %w", err)
			}
		}
		r.line = append(b, '}')
		if err := emit(r.line); err != nil {
			return err
		}
	}
	return nil
}

// appendDoc appends member name with doc embedded when it is JSON, else name_base64.
func appendDoc(dst []byte, name string, doc []byte) []byte {
	switch {
	case len(doc) == 0:
		return dst
	case json.Valid(doc):
		dst = append(dst, ',')
		dst = strconv.AppendQuote(dst, name)
		dst = append(dst, ':')
		return appendCompact(dst, doc)
	}
	dst = append(dst, ',')
	dst = strconv.AppendQuote(dst, name+"_base64")
	dst = append(dst, `:"`...)
	dst = base64.StdEncoding.AppendEncode(dst, doc)
	return append(dst, '"')
}

func appendCompact(dst, doc []byte) []byte {
	buf := bytes.NewBuffer(dst)
	_ = json.Compact(buf, doc) // doc is valid JSON
	return buf.Bytes()
}
