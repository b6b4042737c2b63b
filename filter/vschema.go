package filter

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// VSchema is what a stream reads of a keyspace's VSchema (Vitess's vschema.Keyspace, in its
// JSON form): the vindexes, and each table's column vindexes. With one, a table's keyspace id
// (keyrange rules, in_keyrange('-80'), keyspace_id()) comes from its vindex as in Vitess;
// in_keyrange(col, 'name', '-80') finds the vindex named so before a vindex type of that name.
type VSchema struct {
	vindexes map[string]vschemaVindex
	tables   map[string][]columnVindex
}

type vschemaVindex struct {
	typ    string
	params map[string]string
}

// columnVindex is one of a table's column vindexes.
type columnVindex struct {
	name    string
	columns []string
}

// The JSON of vschema.Keyspace, as far as a stream reads it. Other fields (routing, sequences,
// column lists, foreign keys) are accepted and ignored. Proto JSON spells a field either as
// in the .proto or in lowerCamelCase, so both spellings of column_vindexes are read.
type (
	keyspaceJSON struct {
		Sharded  bool                  `json:"sharded"`
		Vindexes map[string]vindexJSON `json:"vindexes"`
		Tables   map[string]tableJSON  `json:"tables"`
	}
	vindexJSON struct {
		Type   string            `json:"type"`
		Params map[string]string `json:"params"`
		Owner  string            `json:"owner"`
	}
	tableJSON struct {
		Type                string             `json:"type"`
		Pinned              string             `json:"pinned"`
		ColumnVindexes      []columnVindexJSON `json:"column_vindexes"`
		ColumnVindexesCamel []columnVindexJSON `json:"columnVindexes"`
	}
	columnVindexJSON struct {
		Column  string   `json:"column"`
		Name    string   `json:"name"`
		Columns []string `json:"columns"`
	}
)

// ParseVSchema reads a keyspace VSchema in Vitess's JSON form and checks it as Vitess builds
// one: every vindex of a known type with valid parameters, every column vindex naming a
// vindex and its columns, a unique primary vindex, multi-column vindexes primary only, and in
// a sharded keyspace a vindex for every table that is not a reference or pinned. Its errors
// are Vitess's.
func ParseVSchema(data []byte) (*VSchema, error) {
	var ks keyspaceJSON
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&ks); err != nil {
		return nil, fmt.Errorf("vschema: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("vschema: more than one JSON value")
	}
	vs := &VSchema{vindexes: map[string]vschemaVindex{}, tables: map[string][]columnVindex{}}
	for _, name := range sortedKeys(ks.Vindexes) {
		v := ks.Vindexes[name]
		vt, ok := vindexTypes[v.Type]
		if !ok {
			return nil, fmt.Errorf("vschema: vindexType %q not found", v.Type)
		}
		if vt.kind == vindexRegion {
			// The parameters are checked now, not when a stream first needs them.
			if _, err := newVindex(name, v.Type, v.Params); err != nil {
				return nil, fmt.Errorf("vschema: vindex %s: %w", name, err)
			}
		}
		vs.vindexes[name] = vschemaVindex{typ: v.Type, params: v.Params}
	}
	for _, tname := range sortedKeys(ks.Tables) {
		t := ks.Tables[tname]
		cvs := t.ColumnVindexes
		if len(cvs) == 0 {
			cvs = t.ColumnVindexesCamel
		}
		switch t.Type {
		case "", "reference":
		case "sequence":
			if ks.Sharded && t.Pinned == "" {
				return nil, fmt.Errorf("vschema: sequence table has to be in an unsharded keyspace or must be pinned: %s", tname)
			}
		default:
			return nil, fmt.Errorf("vschema: unidentified table type %s", t.Type)
		}
		if ks.Sharded && t.Type != "reference" && t.Pinned == "" && len(cvs) == 0 {
			return nil, fmt.Errorf("vschema: missing primary col vindex for table: %s", tname)
		}
		var out []columnVindex
		for i, cv := range cvs {
			v, ok := vs.vindexes[cv.Name]
			if !ok {
				return nil, fmt.Errorf("vschema: vindex %s not found for table %s", cv.Name, tname)
			}
			var cols []string
			switch {
			case cv.Column != "" && len(cv.Columns) > 0:
				return nil, fmt.Errorf("vschema: can't use column and columns at the same time in vindex (%s) and table (%s)", cv.Name, tname)
			case cv.Column != "":
				cols = []string{cv.Column}
			case len(cv.Columns) == 0:
				return nil, fmt.Errorf("vschema: must specify at least one column for vindex (%s) and table (%s)", cv.Name, tname)
			default:
				cols = slices.Clone(cv.Columns)
			}
			vt := vindexTypes[v.typ]
			if i == 0 && !vt.unique {
				return nil, fmt.Errorf("vschema: primary vindex %s is not Unique for table %s", cv.Name, tname)
			}
			if i > 0 && vt.multi {
				return nil, fmt.Errorf("vschema: multi-column vindex %s should be a primary vindex for table %s", cv.Name, tname)
			}
			out = append(out, columnVindex{name: cv.Name, columns: cols})
		}
		vs.tables[tname] = out
	}
	return vs, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// tableVindex returns the column vindex a stream computes a table's keyspace ids with, as
// Vitess chooses it: of the unique vindexes that need no lookup, the cheapest, the first of
// equals (the primary vindex, as a VSchema is usually written).
func (vs *VSchema) tableVindex(table string) (columnVindex, vschemaVindex, error) {
	cvs, ok := vs.tables[table]
	if !ok {
		return columnVindex{}, vschemaVindex{}, fmt.Errorf("table %s not found", table)
	}
	if len(cvs) == 0 {
		return columnVindex{}, vschemaVindex{}, fmt.Errorf("table %s has no vindex", table)
	}
	best := -1
	for i, cv := range cvs {
		vt := vindexTypes[vs.vindexes[cv.name].typ]
		if vt.kind == vindexLookup || !vt.unique {
			continue
		}
		if best < 0 || vindexTypes[vs.vindexes[cvs[best].name].typ].cost > vt.cost {
			best = i
		}
	}
	if best < 0 {
		return columnVindex{}, vschemaVindex{}, fmt.Errorf("could not find a vindex to compute keyspace id for table %s", table)
	}
	return cvs[best], vs.vindexes[cvs[best].name], nil
}

// vindex returns the vindex in_keyrange names: the VSchema's vindex of that name, else a
// vindex of that type.
func (vs *VSchema) vindex(name string) (vindex, error) {
	if vs != nil {
		if v, ok := vs.vindexes[name]; ok {
			return newVindex(name, v.typ, v.params)
		}
	}
	return newVindex(name, strings.ToLower(name), nil)
}
