package render

import (
	"encoding/hex"
	"encoding/json"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/server/encoder"
)

// ANSI colours of the text output.
const (
	reset   = "\x1b[0m"
	dim     = "\x1b[2m"
	bold    = "\x1b[1m"
	red     = "\x1b[31m"
	green   = "\x1b[32m"
	yellow  = "\x1b[33m"
	magenta = "\x1b[35m"
)

// textRenderer prints a line per row change as a person reads it:
//
//	12:00:01 demo.customers insert id=1 name="alice" balance=3.50
//	12:00:02 demo.customers update id=1 balance: 3.50 -> 4.00
//	12:00:02 commit MariaDB/0-1-7
//
// An update names the key columns and the columns that changed. Transactions show as their
// commit and GTID, DDL as its statement; positions are shown at the start of a stream and as
// a copy goes (with the tables still to copy). Rows print as they arrive; a rollback (the
// client reconnected inside a transaction) says that the transaction comes again.
type textRenderer struct {
	tables tables
	color  bool
	loc    *time.Location
	cells  [][]byte
	before [][]byte
	gtid   string
	rows   int
	// seen is set once a position or commit is printed: the stream's first position is
	// printed only when nothing showed where the stream is.
	seen bool
	line []byte
}

func (r *textRenderer) paint(dst []byte, color string, s string) []byte {
	if !r.color {
		return append(dst, s...)
	}
	dst = append(dst, color...)
	dst = append(dst, s...)
	return append(dst, reset...)
}

// start begins a line with the event's time (local, to the second).
func (r *textRenderer) start(sec int64) []byte {
	r.line = r.line[:0]
	if sec != 0 {
		r.line = r.paint(r.line, dim, time.Unix(sec, 0).In(r.loc).Format(time.TimeOnly))
		r.line = append(r.line, ' ')
	}
	return r.line
}

func (r *textRenderer) Events(events []*binlogdata.VEvent, emit Emit) error {
	for _, ev := range events {
		if err := r.event(ev, emit); err != nil {
			return err
		}
	}
	return nil
}

func (r *textRenderer) event(ev *binlogdata.VEvent, emit Emit) error {
	switch ev.GetType() {
	case binlogdata.VEventType_FIELD:
		r.tables.field(ev)
	case binlogdata.VEventType_BEGIN:
		r.rows, r.gtid = 0, ""
	case binlogdata.VEventType_ROW:
		return r.row(ev, emit)
	case binlogdata.VEventType_GTID:
		r.gtid = ev.GetGtid()
	case binlogdata.VEventType_COMMIT:
		if r.rows == 0 || r.gtid == "" {
			// An empty transaction, or a copy chunk (its position follows).
			return nil
		}
		r.seen = true
		b := r.start(ev.GetTimestamp())
		b = r.paint(b, dim, "commit "+r.gtid)
		r.line = b
		return emit(b)
	case binlogdata.VEventType_DDL:
		r.seen = true
		b := r.start(ev.GetTimestamp())
		b = r.paint(b, magenta, "ddl")
		b = append(b, ' ')
		b = append(b, ev.GetStatement()...)
		r.line = b
		return emit(b)
	case binlogdata.VEventType_VGTID:
		tabs := copying(ev.GetVgtid())
		if r.seen && len(tabs) == 0 {
			return nil
		}
		r.seen = true
		b := r.start(0)
		s := "position " + gtidText(ev.GetVgtid())
		if len(tabs) > 0 {
			s += " (copying " + strings.Join(tabs, ", ") + ")"
		}
		b = r.paint(b, dim, s)
		r.line = b
		return emit(b)
	case binlogdata.VEventType_COPY_COMPLETED:
		b := r.start(0)
		if t := ev.GetLastPKEvent().GetTableLastPK().GetTableName(); t != "" {
			b = r.paint(b, dim, "copy of "+ev.GetKeyspace()+"."+t+" completed")
		} else {
			b = r.paint(b, dim, "copy completed")
		}
		r.line = b
		return emit(b)
	case binlogdata.VEventType_ROLLBACK:
		b := r.start(0)
		b = r.paint(b, yellow, "rollback: reconnected inside a transaction; it comes again")
		r.line = b
		return emit(b)
	default:
		// HEARTBEAT, OTHER, LASTPK and the rest say nothing a reader of changes needs.
	}
	return nil
}

func (r *textRenderer) row(ev *binlogdata.VEvent, emit Emit) error {
	tb, err := r.tables.of(ev)
	if err != nil {
		return err
	}
	for _, rc := range ev.GetRowEvent().GetRowChanges() {
		r.rows++
		b := r.start(ev.GetTimestamp())
		b = r.paint(b, bold, tb.qualified)
		b = append(b, ' ')
		o := op(rc)
		switch o {
		case "insert":
			b = r.paint(b, green, o)
			if b, err = r.pairs(b, tb, rc.GetAfter(), nil, rc.GetDataColumns()); err != nil {
				return err
			}
		case "delete":
			b = r.paint(b, red, o)
			if b, err = r.pairs(b, tb, rc.GetBefore(), nil, nil); err != nil {
				return err
			}
		default:
			b = r.paint(b, yellow, o)
			if b, err = r.pairs(b, tb, rc.GetAfter(), rc.GetBefore(), rc.GetDataColumns()); err != nil {
				return err
			}
		}
		r.line = b
		if err := emit(b); err != nil {
			return err
		}
	}
	return nil
}

// pairs appends " col=value" for every column of row, or, with a before image (an update),
// " key=value" for the key columns and " col: before -> after" for the columns that changed.
// Columns a partial after image left out (logged) are not shown.
func (r *textRenderer) pairs(b []byte, tb *table, row, before *query.Row, logged *binlogdata.RowChange_Bitmap) ([]byte, error) {
	var err error
	if r.cells, err = tb.cells(row, r.cells); err != nil {
		return nil, err
	}
	if before != nil {
		if r.before, err = tb.cells(before, r.before); err != nil {
			return nil, err
		}
	}
	for i, f := range tb.fields {
		if !encoder.Logged(logged, i, len(tb.fields)) {
			continue
		}
		cell := r.cells[i]
		changed := before != nil && !sameCell(r.before[i], cell)
		if before != nil && !changed && !tb.key[i] {
			continue
		}
		b = append(b, ' ')
		b = append(b, f.GetName()...)
		if changed {
			b = append(b, ": "...)
			b = AppendText(b, f, r.before[i])
			b = append(b, " -> "...)
		} else {
			b = append(b, '=')
		}
		b = AppendText(b, f, cell)
	}
	return b, nil
}

func sameCell(a, b []byte) bool {
	if (a == nil) != (b == nil) {
		return false
	}
	return string(a) == string(b)
}

// Messages prints each encoded message on a line: its topic, key, headers and value (JSON as
// it is, anything else as 0x hex), or "tombstone"; a line with the position to resume from
// comes first whenever it changes.
func (r *textRenderer) Messages(msgs []*vstreamv1.EncodedMessage, emit Emit) error {
	for _, m := range msgs {
		if p := gtidText(m.GetPosition()); p != "" && p != r.gtid {
			r.gtid = p
			b := r.start(0)
			r.line = r.paint(b, dim, "position "+p)
			if err := emit(r.line); err != nil {
				return err
			}
		}
		b := r.start(0)
		b = r.paint(b, bold, orDash(m.GetTopic()))
		if len(m.GetKey()) > 0 {
			b = append(b, " key="...)
			b = appendBytes(b, m.GetKey())
		}
		names := make([]string, 0, len(m.GetHeaders()))
		for k := range m.GetHeaders() {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			b = append(b, ' ')
			b = r.paint(b, dim, k+"="+m.GetHeaders()[k])
		}
		if m.GetTombstone() {
			b = append(b, ' ')
			b = r.paint(b, red, "tombstone")
		} else {
			b = append(b, ' ')
			b = appendBytes(b, m.GetValue())
		}
		r.line = b
		if err := emit(b); err != nil {
			return err
		}
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// appendBytes appends a key or value: compact JSON, printable text as is, else 0x hex.
func appendBytes(dst, v []byte) []byte {
	if json.Valid(v) {
		return appendCompact(dst, v)
	}
	if utf8.Valid(v) && !strings.ContainsFunc(string(v), func(c rune) bool { return c < ' ' }) {
		return append(dst, v...)
	}
	dst = append(dst, "0x"...)
	return hex.AppendEncode(dst, v)
}
