package vstreamer

import (
	"fmt"
	"slices"
	"strings"

	"github.com/go-mysql-org/go-mysql/client"

	"github.com/vstream-cdc/vstream/filter"
	"github.com/vstream-cdc/vstream/gen/query"
)

// tableIndex is one index of a table, its columns in index order.
type tableIndex struct {
	name   string
	cols   []string
	unique bool
}

// tableIndexes lists a table's indexes.
func tableIndexes(conn *client.Conn, db, table string) ([]tableIndex, error) {
	res, err := conn.Execute(`SELECT INDEX_NAME, COLUMN_NAME, NON_UNIQUE FROM information_schema.STATISTICS
		WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY INDEX_NAME = 'PRIMARY' DESC, INDEX_NAME, SEQ_IN_INDEX`, db, table)
	if err != nil {
		return nil, fmt.Errorf("%w: read indexes of %s: %v", ErrUnavailable, table, err)
	}
	defer res.Close()
	var out []tableIndex
	for i := 0; i < res.RowNumber(); i++ {
		name := resultString(res, i, 0)
		nonUnique, _ := res.GetInt(i, 2)
		if len(out) == 0 || out[len(out)-1].name != name {
			out = append(out, tableIndex{name: name, unique: nonUnique == 0})
		}
		out[len(out)-1].cols = append(out[len(out)-1].cols, resultString(res, i, 1))
	}
	return out, nil
}

// describeIndexes renders indexes for a message: "uk2 (uk1), PRIMARY (id)".
func describeIndexes(idx []tableIndex, uniqueOnly bool) string {
	var parts []string
	for _, x := range idx {
		if uniqueOnly && !x.unique {
			continue
		}
		parts = append(parts, x.name+" ("+strings.Join(x.cols, ", ")+")")
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// applyDirectives makes a row read use the key a query's ukColumns and ukForce directives
// name, as Vitess's row streamer does: the rows are ordered by ukColumns (else by the
// columns of the index ukForce names), that index is forced (none when only ukColumns is
// given), and LASTPK is over those columns.
//
// Vitess takes ukColumns on trust; here they must be the columns of a unique key of the
// table, in any order, so that a client resuming after a LASTPK over them neither skips
// nor repeats a row.
func (r *snapshotReader) applyDirectives(t *copyTable, d filter.Directives) error {
	if d.Empty() {
		return nil
	}
	var idx []tableIndex
	err := r.s.sql(func(conn *client.Conn) (err error) {
		idx, err = tableIndexes(conn, r.s.cfg.Database, t.name)
		return err
	})
	if err != nil {
		return err
	}
	var force *tableIndex
	if d.UKForce != "" {
		i := slices.IndexFunc(idx, func(x tableIndex) bool { return strings.EqualFold(x.name, d.UKForce) })
		if i < 0 {
			return fmt.Errorf("%w: directive ukForce names index %s, which table %s has not; its indexes are %s",
				filter.ErrInvalid, d.UKForce, t.name, describeIndexes(idx, false))
		}
		force = &idx[i]
	}
	key := d.UKColumns
	if len(key) == 0 {
		if !force.unique {
			return fmt.Errorf("%w: directive ukForce names index %s of %s, which is not unique; name a unique index (%s) or give ukColumns",
				filter.ErrInvalid, force.name, t.name, describeIndexes(idx, true))
		}
		key = force.cols
	}
	keyFields := make([]*query.Field, len(key))
	for i, k := range key {
		j := slices.IndexFunc(t.fields, func(f *query.Field) bool { return strings.EqualFold(f.Name, k) })
		if j < 0 {
			return fmt.Errorf("%w: directive ukColumns names column %s, which table %s has not; name the columns of one of its unique keys: %s",
				filter.ErrInvalid, k, t.name, describeIndexes(idx, true))
		}
		if slices.Contains(keyFields[:i], t.fields[j]) {
			return fmt.Errorf("%w: directive ukColumns names column %s twice; name each column of a unique key of %s once",
				filter.ErrInvalid, k, t.name)
		}
		keyFields[i] = t.fields[j]
	}
	if !slices.ContainsFunc(idx, func(x tableIndex) bool { return x.unique && sameColumns(x.cols, key) }) {
		return fmt.Errorf("%w: directive ukColumns (%s) are not the columns of a unique key of %s; name the columns of one of: %s",
			filter.ErrInvalid, strings.Join(key, ", "), t.name, describeIndexes(idx, true))
	}
	t.key, t.keyFields, t.pkFields, t.oneRead, t.index = nil, keyFields, nil, false, ""
	for _, f := range keyFields {
		t.key = append(t.key, f.Name)
		t.pkFields = append(t.pkFields, &query.Field{Name: f.Name, Type: f.Type, Charset: f.Charset, Flags: f.Flags})
	}
	if force != nil {
		t.index = force.name
	}
	return nil
}

// sameColumns reports whether a and b name the same columns, in any order.
func sameColumns(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !slices.ContainsFunc(b, func(y string) bool { return strings.EqualFold(x, y) }) {
			return false
		}
	}
	return true
}
