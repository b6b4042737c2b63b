// Package render turns a vstreamd stream into lines for people and scripts: text (one line per
// row change, values decoded by column type, optionally coloured), json (one typed JSON object
// per row change, keyed by column name) and protojson (each VEvent or encoded message as it
// arrived). It decodes rows by the FIELD event of their table; the column kinds and cell rules
// are sqltypes'.
package render

import (
	"fmt"
	"strings"
	"time"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
)

// Output names a way to print the stream.
type Output string

// The outputs.
const (
	Text      Output = "text"
	JSON      Output = "json"
	ProtoJSON Output = "protojson"
)

// Outputs lists the outputs, for help text and checks.
var Outputs = []Output{Text, JSON, ProtoJSON}

// ParseOutput checks an --output value.
func ParseOutput(s string) (Output, error) {
	for _, o := range Outputs {
		if string(o) == s {
			return o, nil
		}
	}
	return "", fmt.Errorf("unknown output %q: want text, json or protojson", s)
}

// DefaultOutput is text for a person at a terminal and json for a pipe or file.
func DefaultOutput(terminal bool) Output {
	if terminal {
		return Text
	}
	return JSON
}

// UseColor says whether text output is coloured: only on a terminal, and never when the
// NO_COLOR environment variable is set to anything (https://no-color.org) or TERM is "dumb".
func UseColor(terminal bool, getenv func(string) string) bool {
	return terminal && getenv("NO_COLOR") == "" && getenv("TERM") != "dumb"
}

// Emit receives one finished line, without its newline; the slice is reused after it returns.
// An error stops the rendering and is returned as is.
type Emit func(line []byte) error

// Renderer turns batches into lines. It keeps what it needs between batches (each table's
// FIELD, the open transaction), so one Renderer serves one stream.
type Renderer interface {
	Events(events []*binlogdata.VEvent, emit Emit) error
	Messages(msgs []*vstreamv1.EncodedMessage, emit Emit) error
}

// Options tune a Renderer.
type Options struct {
	// Color writes ANSI colours (text output only).
	Color bool
	// Location is the time zone of the text output's times; nil means the local one.
	Location *time.Location
}

// New returns the renderer of an output.
func New(o Output, opts Options) Renderer {
	switch o {
	case Text:
		loc := opts.Location
		if loc == nil {
			loc = time.Local
		}
		return &textRenderer{tables: tables{}, color: opts.Color, loc: loc}
	case JSON:
		return &jsonRenderer{tables: tables{}}
	case ProtoJSON:
	}
	return protoRenderer{}
}

// tables holds the last FIELD event of each table, by keyspace and table name.
type tables map[string]*table

type table struct {
	keyspace, name string
	// qualified is "keyspace.name", made once per FIELD rather than per row.
	qualified string
	fields    []*query.Field
	key       []bool
}

func tableKey(keyspace, name string) string { return keyspace + "\x00" + name }

func (t tables) field(ev *binlogdata.VEvent) {
	fe := ev.GetFieldEvent()
	ks := fe.GetKeyspace()
	if ks == "" {
		ks = ev.GetKeyspace()
	}
	tb := &table{
		keyspace: ks, name: fe.GetTableName(), qualified: ks + "." + fe.GetTableName(),
		fields: fe.GetFields(), key: make([]bool, len(fe.GetFields())),
	}
	for i, f := range tb.fields {
		tb.key[i] = f.GetFlags()&uint32(query.MySqlFlag_PRI_KEY_FLAG) != 0
	}
	t[tableKey(ks, tb.name)] = tb
}

// of finds the table of a ROW event; a row without a FIELD before it is an error, since its
// cells cannot be named or typed.
func (t tables) of(ev *binlogdata.VEvent) (*table, error) {
	re := ev.GetRowEvent()
	ks := re.GetKeyspace()
	if ks == "" {
		ks = ev.GetKeyspace()
	}
	if tb := t[tableKey(ks, re.GetTableName())]; tb != nil {
		return tb, nil
	}
	return nil, fmt.Errorf("ROW event of table %s.%s came before its FIELD event", ks, re.GetTableName())
}

// cells splits a row into its cells; a nil cell is NULL. A row whose lengths do not add up is
// an error naming the table.
func (tb *table) cells(r *query.Row, dst [][]byte) ([][]byte, error) {
	dst = dst[:0]
	vals := r.GetValues()
	off := int64(0)
	for _, n := range r.GetLengths() {
		if n < 0 {
			dst = append(dst, nil)
			continue
		}
		if off+n > int64(len(vals)) {
			return nil, fmt.Errorf("row of %s.%s: cell lengths exceed its values", tb.keyspace, tb.name)
		}
		dst = append(dst, vals[off:off+n:off+n])
		off += n
	}
	if len(dst) != len(tb.fields) {
		return nil, fmt.Errorf("row of %s.%s has %d cells, its FIELD event %d columns", tb.keyspace, tb.name, len(dst), len(tb.fields))
	}
	return dst, nil
}

// op names a row change as SQL does.
func op(rc *binlogdata.RowChange) string {
	switch {
	case rc.GetBefore() == nil:
		return "insert"
	case rc.GetAfter() == nil:
		return "delete"
	}
	return "update"
}

// gtidText is a position's GTID set(s) as one short string.
func gtidText(v *binlogdata.VGtid) string {
	parts := make([]string, 0, len(v.GetShardGtids()))
	for _, sg := range v.GetShardGtids() {
		parts = append(parts, sg.GetGtid())
	}
	return strings.Join(parts, ",")
}

// copying names the tables a copy position still has to finish.
func copying(v *binlogdata.VGtid) []string {
	var out []string
	for _, sg := range v.GetShardGtids() {
		for _, tp := range sg.GetTablePKs() {
			if !tp.GetCompleted() {
				out = append(out, tp.GetTableName())
			}
		}
	}
	return out
}
