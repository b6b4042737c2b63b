// Package evtext renders stream events as the short lines tests compare: the form the
// engine's tests have always read (Short), with the row and cell renderings under it. It is
// apart from testkit because it links the module's generated protobuf types, which a test
// binary that links Vitess's own (interop/) must not.
package evtext

import (
	"fmt"
	"strings"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
)

// Short renders a stream event as one line for comparison, leaving out what varies from run
// to run (positions, times): a FIELD is its table and each column's name:type, a ROW its
// table and each change (+after, -before, before>after, rows as Row renders them), a DDL,
// ROWS_QUERY or OTHER its statement, a statement-based DML its type and statement, and any
// other event its type alone.
func Short(ev *binlogdata.VEvent) string {
	switch ev.Type {
	case binlogdata.VEventType_FIELD:
		var parts []string
		for _, f := range ev.FieldEvent.Fields {
			parts = append(parts, f.Name+":"+f.Type.String())
		}
		return fmt.Sprintf("FIELD %s %s", ev.FieldEvent.TableName, strings.Join(parts, " "))
	case binlogdata.VEventType_ROW:
		var parts []string
		for _, rc := range ev.RowEvent.RowChanges {
			switch {
			case rc.Before == nil:
				parts = append(parts, "+"+Row(rc.After))
			case rc.After == nil:
				parts = append(parts, "-"+Row(rc.Before))
			default:
				parts = append(parts, Row(rc.Before)+">"+Row(rc.After))
			}
		}
		return fmt.Sprintf("ROW %s %s", ev.RowEvent.TableName, strings.Join(parts, " "))
	case binlogdata.VEventType_DDL:
		return "DDL " + ev.Statement
	case binlogdata.VEventType_ROWS_QUERY:
		return "ROWS_QUERY " + ev.Statement
	case binlogdata.VEventType_INSERT, binlogdata.VEventType_UPDATE, binlogdata.VEventType_DELETE, binlogdata.VEventType_REPLACE:
		return ev.Type.String() + " " + ev.Dml
	case binlogdata.VEventType_OTHER:
		if ev.Statement == "" {
			return "OTHER"
		}
		return "OTHER " + ev.Statement
	default:
		// The rest are compared by their type alone: their contents are positions and times.
		return ev.Type.String()
	}
}

// Shorts is Short of each event.
func Shorts(evs []*binlogdata.VEvent) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = Short(ev)
	}
	return out
}

// Row renders a row as [v1 v2 ...], NULL for a null, and a value with a space, a bracket or
// an unprintable byte Go-quoted, so that every row reads back one way.
func Row(r *query.Row) string {
	vals := Cells(r)
	parts := make([]string, len(vals))
	for i, v := range vals {
		switch v {
		case nil:
			parts[i] = "NULL"
		default:
			s := string(v)
			if strings.ContainsAny(s, " []\x00") || !printable(s) {
				s = fmt.Sprintf("%q", s)
			}
			parts[i] = s
		}
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func printable(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r == 0xfffd {
			return false
		}
	}
	return true
}

// Cells splits a row into its values: nil for a NULL, an empty slice for an empty value.
func Cells(r *query.Row) [][]byte {
	out := make([][]byte, len(r.Lengths))
	off := int64(0)
	for i, l := range r.Lengths {
		if l < 0 {
			continue
		}
		out[i] = r.Values[off : off+l]
		if out[i] == nil {
			out[i] = []byte{}
		}
		off += l
	}
	return out
}
