// Package applier applies a change stream to an in-memory image of tables the way a strict
// consumer does, for tests that compare the image with the source database: an insert of a
// key the image holds, or an update or delete of a row it does not hold exactly, is recorded
// as an error (a duplicate, or a change for a row never received).
package applier

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	"github.com/vstream-cdc/vstream/internal/testdb"
)

// Image is the applied state of some tables.
type Image struct {
	keys    map[string][]string // table -> key column names
	fields  map[string][]*query.Field
	Rows    map[string]map[string]string // table -> key -> row
	pending []*binlogdata.VEvent
	// Last is the VGTID after the last applied transaction.
	Last *binlogdata.VGtid
	// Copied is set by the final COPY_COMPLETED.
	Copied bool
	Errs   []string
}

// New makes an empty image of the tables, each with its key columns.
func New(keys map[string][]string) *Image {
	return &Image{keys: keys, fields: map[string][]*query.Field{}, Rows: map[string]map[string]string{}}
}

// SetFields records a table's columns, for an image that starts with rows of its own.
func (im *Image) SetFields(table string, fields []*query.Field) { im.fields[table] = fields }

// Add takes one event and reports whether it was a VGTID that closed a transaction. A
// transaction applies when the VGTID after its COMMIT (or DDL, OTHER) arrives: that is when the
// client library counts it as delivered. A ROLLBACK (the client library's "discard the
// unfinished transaction") drops what is pending.
func (im *Image) Add(ev *binlogdata.VEvent) bool {
	switch ev.Type {
	case binlogdata.VEventType_VGTID:
		if n := len(im.pending); n > 0 {
			switch im.pending[n-1].Type {
			case binlogdata.VEventType_COMMIT, binlogdata.VEventType_DDL, binlogdata.VEventType_OTHER:
			default:
				return false
			}
		}
		for _, p := range im.pending {
			im.apply(p)
		}
		im.pending = im.pending[:0]
		im.Last = ev.Vgtid
		return true
	case binlogdata.VEventType_ROLLBACK:
		im.Abort()
	case binlogdata.VEventType_HEARTBEAT:
	default:
		im.pending = append(im.pending, ev)
	}
	return false
}

// Abort drops an unfinished transaction, as a consumer does when its stream breaks.
func (im *Image) Abort() { im.pending = im.pending[:0] }

// Pending reports events of an unfinished transaction.
func (im *Image) Pending() int { return len(im.pending) }

func (im *Image) apply(ev *binlogdata.VEvent) {
	switch ev.Type {
	case binlogdata.VEventType_FIELD:
		im.fields[ev.FieldEvent.TableName] = ev.FieldEvent.Fields
	case binlogdata.VEventType_COPY_COMPLETED:
		if ev.Keyspace == "" {
			im.Copied = true
		}
	case binlogdata.VEventType_ROW:
		t := ev.RowEvent.TableName
		if im.Rows[t] == nil {
			im.Rows[t] = map[string]string{}
		}
		for _, rc := range ev.RowEvent.RowChanges {
			if rc.Before != nil {
				k, row := im.keyRow(t, rc.Before)
				if got, ok := im.Rows[t][k]; !ok || got != row {
					im.Errs = append(im.Errs, fmt.Sprintf("%s: change of a row not held: key %s, have %q, change from %q", t, k, got, row))
				}
				delete(im.Rows[t], k)
			}
			if rc.After != nil {
				k, row := im.keyRow(t, rc.After)
				if _, ok := im.Rows[t][k]; ok {
					im.Errs = append(im.Errs, fmt.Sprintf("%s: duplicate row for key %s", t, k))
				}
				im.Rows[t][k] = row
			}
		}
	default:
		// Positions, transaction bounds, DDL and heartbeats change no row of the image.
	}
}

func (im *Image) keyRow(table string, r *query.Row) (string, string) {
	var parts, key []string
	off := int64(0)
	for i, l := range r.Lengths {
		s := "<NULL>"
		if l >= 0 {
			s = string(r.Values[off : off+l])
			off += l
		}
		parts = append(parts, s)
		if slices.Contains(im.keys[table], im.fields[table][i].Name) {
			key = append(key, s)
		}
	}
	return strings.Join(key, ","), strings.Join(parts, "|")
}

// SourceRows reads a table the way the image holds it; the tests' column types render the
// same in SQL text and in VEvents.
func SourceRows(t testing.TB, db *testdb.Server, database, table string, keys []string) map[string]string {
	t.Helper()
	conn, err := db.Conn(database)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }() // read only; nothing is lost if the close fails
	r, err := conn.Execute("SELECT * FROM " + table)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for i := 0; i < r.RowNumber(); i++ {
		var parts, key []string
		for j, f := range r.Fields {
			v, _ := r.GetValue(i, j)
			s := "<NULL>"
			if v != nil {
				s, _ = r.GetString(i, j)
			}
			parts = append(parts, s)
			if slices.Contains(keys, string(f.Name)) {
				key = append(key, s)
			}
		}
		out[strings.Join(key, ",")] = strings.Join(parts, "|")
	}
	return out
}

// Check fails the test when the consumer saw an error or the image differs from the source.
func (im *Image) Check(t testing.TB, db *testdb.Server, database string) {
	t.Helper()
	if len(im.Errs) > 0 {
		t.Fatalf("%d consumer errors, first: %s", len(im.Errs), strings.Join(im.Errs[:min(5, len(im.Errs))], "\n"))
	}
	for table, keys := range im.keys {
		want := SourceRows(t, db, database, table, keys)
		got := im.Rows[table]
		if got == nil {
			got = map[string]string{}
		}
		if len(got) != len(want) {
			t.Errorf("%s: image has %d rows, source %d", table, len(got), len(want))
		}
		for k, w := range want {
			if got[k] != w {
				t.Errorf("%s key %s: image %q, source %q", table, k, got[k], w)
			}
		}
	}
}
