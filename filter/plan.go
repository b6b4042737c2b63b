package filter

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/vstream-cdc/vstream/gen/query"
	"github.com/vstream-cdc/vstream/sqltypes"
)

// TablePlan is what a rule makes of one table with known columns: the fields streamed, the
// conditions a row image must meet, and how to project a row. A plan is used by one goroutine
// at a time (it keeps a scratch buffer for keyspace ids).
type TablePlan struct {
	Table string
	// Rule is the rule that selected the table.
	Rule   *Rule
	fields []*query.Field
	// out describes each output column.
	out   []outColumn
	preds []predicate
	// passthrough: every column in table order, no conditions.
	passthrough bool
}

type outColumn struct {
	src    int  // source column; -1 for keyspace_id() and the literal 1
	latin1 bool // convert(col using utf8mb4) of a latin1 column
	one    bool // the literal 1
	// kid is keyspace_id()'s: the table's vindex over its columns.
	kid *keyspaceIDOf
	// mask replaces the column's values (Filter.WithMasks); charset is the column's.
	mask    *compiledMask
	charset uint32
}

// keyspaceIDOf computes a row's keyspace id: a vindex over some of the table's columns.
type keyspaceIDOf struct {
	vdx  vindex
	cols []int
	uns  []bool // each column is unsigned
}

// of returns the keyspace id of a row image (cells in table order), or false when a vindex
// column is NULL or not a value the vindex reads. The result is valid until the next call.
func (k *keyspaceIDOf) of(cells [][]byte) ([]byte, bool) {
	for _, c := range k.cols {
		if cells[c] == nil {
			return nil, false
		}
	}
	if k.vdx.kind == vindexRegion {
		return k.vdx.regionID(cells[k.cols[0]], cells[k.cols[1]], k.uns[0], k.uns[1])
	}
	return k.vdx.keyspaceID(cells[k.cols[0]], k.uns[0])
}

func unsigned(f *query.Field) bool { return f.Type&query.Type(query.Flag_ISUNSIGNED) != 0 }

// bindVindex ties a vindex to the columns it reads, checking that the table has them and
// that they are of a type the vindex reads.
func bindVindex(v vindex, columns []string, fields []*query.Field, colIndex func(string) (int, error)) (keyspaceIDOf, error) {
	k := keyspaceIDOf{vdx: v}
	if len(columns) != v.columns() {
		if v.kind == vindexRegion {
			return k, fmt.Errorf("the %s vindex (region_experimental) needs two columns, the region and the id, for a keyspace id; got %d", v.name, len(columns))
		}
		return k, fmt.Errorf("the %s vindex takes one column, got %d", v.name, len(columns))
	}
	for _, name := range columns {
		i, err := colIndex(name)
		if err != nil {
			return k, err
		}
		if v.integral() && fields[i].Type&query.Type(query.Flag_ISINTEGRAL) == 0 {
			return k, fmt.Errorf("the %s vindex needs an integer column; %s is %s", v.name, fields[i].Name, fields[i].Type)
		}
		k.cols = append(k.cols, i)
		k.uns = append(k.uns, unsigned(fields[i]))
	}
	return k, nil
}

type predicate struct {
	op     condOp
	col    int
	kind   valueKind
	coll   *sqltypes.Collation // kindString's
	never  bool                // compares with NULL: never true
	vals   [][]byte
	floats []float64
	keys   []int64
	bits   []uint64
	// kr and kid are in_keyrange's: the range and the keyspace id it tests.
	kr  KeyRange
	kid keyspaceIDOf
	// sql holds the literals as SQL text, for pushing the condition down into a SELECT.
	sql []string
}

// Fields are the FIELD event's columns, in select order.
func (p *TablePlan) Fields() []*query.Field { return p.fields }

// SplitsImages reports a plan with a keyrange condition. As in Vitess, only the images that
// pass are sent then, so an update that moves a row out of the range arrives as a delete and
// one that moves it in as an insert: each range's stream keeps exactly its own rows.
func (p *TablePlan) SplitsImages() bool {
	for i := range p.preds {
		if p.preds[i].op == opInKeyrange {
			return true
		}
	}
	return false
}

// Passthrough reports that rows stream exactly as the binlog has them.
func (p *TablePlan) Passthrough() bool { return p.passthrough }

// Plan builds the plan of a table from its full column list (in table order) and the indexes
// of its primary-key columns. It returns nil, nil when no rule streams the table.
func (f *Filter) Plan(table string, fields []*query.Field, pk []int) (*TablePlan, error) {
	r := f.Table(table)
	if r == nil {
		return nil, nil
	}
	p, err := r.plan(table, fields, pk, f.vschema)
	if err != nil {
		return nil, fmt.Errorf("%w: rule %d (match %q) on table %s: %v", ErrInvalid, r.Index+1, r.Match, table, err)
	}
	if err := p.applyMasks(f.masks, fields, pk); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return p, nil
}

func (r *Rule) plan(table string, fields []*query.Field, pk []int, vs *VSchema) (*TablePlan, error) {
	p := &TablePlan{Table: table, Rule: r}
	tc := tableColumns{table: table, fields: fields, pk: pk, vs: vs}
	if r.keyrange != nil {
		kid, err := tc.keyspaceID()
		if err != nil {
			return nil, err
		}
		p.preds = append(p.preds, predicate{op: opInKeyrange, kr: *r.keyrange, kid: kid})
	}
	st := r.stmt
	if st == nil || st.star {
		for i := range fields {
			p.out = append(p.out, outColumn{src: i})
		}
		p.fields = fields
	} else {
		for _, it := range st.items {
			if err := p.addItem(it, &tc); err != nil {
				return nil, err
			}
		}
	}
	if st != nil {
		for _, c := range st.conds {
			pred, err := buildPredicate(c, fields, tc.index, tc.keyspaceID, vs)
			if err != nil {
				return nil, err
			}
			p.preds = append(p.preds, pred)
		}
	}
	p.passthrough = len(p.preds) == 0 && len(p.out) == len(fields)
	for i, o := range p.out {
		if o.src != i || o.latin1 {
			p.passthrough = false
		}
	}
	return p, nil
}

// tableColumns is the table a rule is planned for: its columns, by name, and its keyspace
// ids.
type tableColumns struct {
	table  string
	fields []*query.Field
	pk     []int
	vs     *VSchema
}

// index is the index of the column name.
func (tc *tableColumns) index(name string) (int, error) {
	for i, f := range tc.fields {
		if strings.EqualFold(f.Name, name) {
			return i, nil
		}
	}
	for _, f := range tc.fields {
		if !strings.HasPrefix(f.Name, "@") {
			return -1, fmt.Errorf("column %s not found in table %s", name, tc.table)
		}
	}
	// BEST_EFFORT names columns @1, @2, ... when the binlog has no names for them.
	return -1, fmt.Errorf("cannot use column names in vstream filter as the current table schema for table %s is not compatible with the current event for this table in the stream", tc.table)
}

// keyspaceID gives the table's keyspace ids: with a VSchema, from the table's vindex;
// without, from the hash of a primary key of one integer column.
func (tc *tableColumns) keyspaceID() (keyspaceIDOf, error) {
	fields, pk := tc.fields, tc.pk
	if tc.vs == nil {
		if len(pk) != 1 || fields[pk[0]].Type&query.Type(query.Flag_ISINTEGRAL) == 0 {
			return keyspaceIDOf{}, fmt.Errorf("keyspace ids need a primary key of one integer column (the hash vindex) or a VSchema; %s has no such key", tc.table)
		}
		return keyspaceIDOf{vdx: newHashVindex(), cols: []int{pk[0]}, uns: []bool{unsigned(fields[pk[0]])}}, nil
	}
	cv, def, err := tc.vs.tableVindex(tc.table)
	if err != nil {
		return keyspaceIDOf{}, err
	}
	v, err := newVindex(cv.name, def.typ, def.params)
	if err != nil {
		return keyspaceIDOf{}, err
	}
	return bindVindex(v, cv.columns, fields, tc.index)
}

// addItem adds the output column of a select item, and its FIELD.
func (p *TablePlan) addItem(it selectItem, tc *tableColumns) error {
	fields, table := tc.fields, tc.table
	switch it.kind {
	case itemKeyspaceID:
		kid, err := tc.keyspaceID()
		if err != nil {
			return err
		}
		// The length of the vindex's keyspace ids; binary's are the column's values.
		length := uint32(kid.vdx.idLength())
		if length == 0 {
			length = fields[kid.cols[0]].ColumnLength
		}
		// As in Vitess, an alias does not rename the FIELD: consumers that rename
		// (VReplication) apply their own aliases.
		name := "keyspace_id"
		p.out = append(p.out, outColumn{src: -1, kid: &kid})
		p.fields = append(p.fields, &query.Field{Name: name, Type: query.Type_VARBINARY, Table: table, OrgTable: table, Charset: sqltypes.BinaryCollation, ColumnLength: length, Flags: uint32(query.MySqlFlag_BINARY_FLAG)})
	case itemOne:
		p.out = append(p.out, outColumn{src: -1, one: true})
		p.fields = append(p.fields, &query.Field{Name: "1", Type: query.Type_INT64, Charset: sqltypes.BinaryCollation,
			Flags: uint32(query.MySqlFlag_NOT_NULL_FLAG | query.MySqlFlag_NUM_FLAG)})
	case itemColumn:
		i, err := tc.index(it.column)
		if err != nil {
			return err
		}
		p.out = append(p.out, outColumn{src: i})
		p.fields = append(p.fields, fields[i])
	case itemConvert:
		i, err := tc.index(it.column)
		if err != nil {
			return err
		}
		oc, fld, err := convertColumn(fields[i], it)
		if err != nil {
			return err
		}
		oc.src = i
		p.out = append(p.out, oc)
		p.fields = append(p.fields, fld)
	}
	return nil
}

func convertColumn(f *query.Field, it selectItem) (outColumn, *query.Field, error) {
	if f.Type&query.Type(query.Flag_ISTEXT) == 0 && f.Type != query.Type_ENUM && f.Type != query.Type_SET && !sqltypes.BinaryTypedText(f.Type, f.Charset) {
		return outColumn{}, nil, fmt.Errorf("convert(%s using %s): %s is not a character column", it.column, it.charset, it.column)
	}
	from := sqltypes.CharsetOf(f.Charset)
	out := proto.Clone(f).(*query.Field)
	var oc outColumn
	switch it.charset {
	case "utf8mb4", "utf8", "utf8mb3":
		switch from {
		case "utf8mb4", "utf8mb3":
		case "latin1":
			oc.latin1 = true
		default:
			return outColumn{}, nil, fmt.Errorf("convert(%s using %s): conversion from collation %d is not supported", it.column, it.charset, f.Charset)
		}
		out.Charset = 45
		if it.charset != "utf8mb4" {
			out.Charset = 33
		}
	case "binary":
		out.Charset = sqltypes.BinaryCollation
	default:
		if it.charset != from {
			return outColumn{}, nil, fmt.Errorf("convert(%s using %s): only utf8mb4, utf8 and binary targets are supported", it.column, it.charset)
		}
	}
	return oc, out, nil
}

func buildPredicate(c cond, fields []*query.Field, colIndex func(string) (int, error),
	tableKeyspaceID func() (keyspaceIDOf, error), vs *VSchema) (predicate, error) {
	pred := predicate{op: c.op}
	if c.op == opInKeyrange {
		kr, err := ParseKeyRange(c.keyrange)
		if err != nil {
			return pred, err
		}
		pred.kr = kr
		if c.vindex == "" {
			// in_keyrange('-80'): the table's own vindex.
			pred.kid, err = tableKeyspaceID()
			return pred, err
		}
		v, err := vs.vindex(c.vindex)
		if err != nil {
			return pred, fmt.Errorf("in_keyrange: %w", err)
		}
		if pred.kid, err = bindVindex(v, c.krColumns, fields, colIndex); err != nil {
			return pred, fmt.Errorf("in_keyrange: %w", err)
		}
		return pred, nil
	}
	col, err := colIndex(c.column)
	if err != nil {
		return pred, err
	}
	pred.col = col
	binary := false
	if c.op == opIsNull || c.op == opIsNotNull {
		return pred, nil
	}
	f := fields[col]
	kind, err := kindOf(f)
	if err != nil {
		return pred, err
	}
	pred.kind = kind
	if kind == kindString {
		if pred.coll, err = collationOf(f); err != nil {
			return pred, err
		}
	}
	for _, lit := range c.values {
		pred.sql = append(pred.sql, lit.sql())
		if lit.null && c.op == opIn {
			// x IN (1, NULL) is true when x = 1: the NULL matches nothing.
			continue
		}
		if lit.null {
			pred.never = true
			// Keep positions aligned for BETWEEN; the predicate is never true anyway.
			pred.vals = append(pred.vals, nil)
			continue
		}
		if err := pred.addLiteral(f, lit); err != nil {
			return pred, err
		}
		if lit.bin && kind == kindString {
			// A hexadecimal or bit literal is a binary string: the server compares the
			// column with it, and with the condition's other values, byte by byte.
			binary = true
		}
	}
	if binary {
		pred.coll, _ = sqltypes.CollationOf(sqltypes.BinaryCollation)
	}
	return pred, nil
}

func (p *predicate) addLiteral(f *query.Field, lit literal) error {
	bad := func(want string) error {
		return fmt.Errorf("column %s is %s: %s is not %s", f.Name, f.Type, lit.source, want)
	}
	text := lit.text
	if lit.bin {
		switch p.kind {
		case kindDecimal, kindFloat, kindBit:
			// A hexadecimal or bit literal is an unsigned number in a numeric context.
			if len(text) > 8 {
				return bad("a number of at most 64 bits")
			}
			var u uint64
			for i := 0; i < len(text); i++ {
				u = u<<8 | uint64(text[i])
			}
			text = strconv.FormatUint(u, 10)
		default:
			// Other kinds take the literal's bytes as they are.
		}
	}
	switch p.kind {
	case kindDecimal:
		if !sqltypes.IsDecimal(text) {
			v, err := strconv.ParseFloat(strings.TrimSpace(text), 64)
			if err != nil {
				return bad("a number")
			}
			text = strconv.FormatFloat(v, 'f', -1, 64)
		}
		p.vals = append(p.vals, []byte(strings.TrimSpace(text)))
	case kindFloat:
		v, err := strconv.ParseFloat(strings.TrimSpace(text), 64)
		if err != nil {
			return bad("a number")
		}
		p.floats = append(p.floats, v)
	case kindDateTime:
		k, ok := sqltypes.DateTimeKey([]byte(text))
		if !ok {
			return bad("a date or datetime ('YYYY-MM-DD[ hh:mm:ss[.ffffff]]', UTC for TIMESTAMP)")
		}
		p.keys = append(p.keys, k)
	case kindTime:
		k, ok := sqltypes.TimeKey([]byte(text))
		if !ok {
			return bad("a time ('[-]hh:mm:ss[.ffffff]')")
		}
		p.keys = append(p.keys, k)
	case kindBit:
		v, err := strconv.ParseUint(text, 10, 64)
		if err != nil {
			return bad("an unsigned integer")
		}
		p.bits = append(p.bits, v)
	case kindString:
		if lit.bin {
			p.vals = append(p.vals, []byte(text))
			break
		}
		// The server converts the literal to the column's character set to compare.
		v, err := p.coll.FromUTF8(text)
		if err != nil {
			return fmt.Errorf("column %s is %s: %w", f.Name, p.coll.Name, err)
		}
		p.vals = append(p.vals, v)
	}
	return nil
}

// cmp compares cell with the predicate's i-th literal.
func (p *predicate) cmp(cell []byte, i int) (int, bool) {
	switch p.kind {
	case kindDecimal:
		return sqltypes.CompareDecimal(cell, p.vals[i]), true
	case kindFloat:
		v, ok := parseFloat(cell)
		if !ok {
			return 0, false
		}
		switch w := p.floats[i]; {
		case v < w:
			return -1, true
		case v > w:
			return 1, true
		}
		return 0, true
	case kindDateTime, kindTime:
		var k int64
		var ok bool
		if p.kind == kindTime {
			k, ok = sqltypes.TimeKey(cell)
		} else {
			k, ok = sqltypes.DateTimeKey(cell)
		}
		if !ok {
			return 0, false
		}
		switch w := p.keys[i]; {
		case k < w:
			return -1, true
		case k > w:
			return 1, true
		}
		return 0, true
	case kindBit:
		v, w := sqltypes.BitValue(cell), p.bits[i]
		switch {
		case v < w:
			return -1, true
		case v > w:
			return 1, true
		}
		return 0, true
	case kindString:
		return p.coll.Compare(cell, p.vals[i]), true
	}
	return 0, false
}

func (p *predicate) literals() int {
	switch p.kind {
	case kindFloat:
		return len(p.floats)
	case kindDateTime, kindTime:
		return len(p.keys)
	case kindBit:
		return len(p.bits)
	default:
		// The other kinds keep their literals in vals.
	}
	return len(p.vals)
}

func (p *predicate) eval(cells [][]byte) bool {
	if p.op == opInKeyrange {
		kid, ok := p.kid.of(cells)
		return ok && p.kr.Contains(kid)
	}
	cell := cells[p.col]
	switch p.op {
	case opIsNull:
		return cell == nil
	case opIsNotNull:
		return cell != nil
	default:
		// The other operators are false on NULL, below.
	}
	if cell == nil || p.never {
		return false
	}
	switch p.op {
	case opIn, opNotIn:
		found := false
		for i := 0; i < p.literals(); i++ {
			if c, ok := p.cmp(cell, i); ok && c == 0 {
				found = true
				break
			}
		}
		return found == (p.op == opIn)
	case opBetween, opNotBetween:
		lo, ok1 := p.cmp(cell, 0)
		hi, ok2 := p.cmp(cell, 1)
		if !ok1 || !ok2 {
			return false
		}
		return (lo >= 0 && hi <= 0) == (p.op == opBetween)
	default:
		// The one-value comparisons, below.
	}
	c, ok := p.cmp(cell, 0)
	if !ok {
		return false
	}
	switch p.op {
	case opEq:
		return c == 0
	case opNe:
		return c != 0
	case opLt:
		return c < 0
	case opLe:
		return c <= 0
	case opGt:
		return c > 0
	case opGe:
		return c >= 0
	default:
		// opInKeyrange, the NULL tests and the many-value operators are answered above.
	}
	return false
}

// applyMasks sets the masks of the plan's output columns and their FIELDs.
func (p *TablePlan) applyMasks(masks []compiledMask, fields []*query.Field, pk []int) error {
	if len(masks) == 0 {
		return nil
	}
	copied := false
	for i, o := range p.out {
		if o.src < 0 {
			continue
		}
		m := maskOf(masks, p.Table, fields[o.src].Name)
		if m == nil {
			continue
		}
		fld, err := applyMask(m, p.Table, fields[o.src], slices.Contains(pk, o.src))
		if err != nil {
			return err
		}
		if !copied {
			// The fields may be the table's own: the plan gets a list of its own.
			p.fields, copied = slices.Clone(p.fields), true
		}
		p.fields[i] = fld
		p.out[i].mask, p.out[i].charset = m, fields[o.src].Charset
		p.passthrough = false
	}
	return nil
}

// Match reports whether a row image, as cells in table order (nil for NULL), meets every
// condition. It does not allocate.
func (p *TablePlan) Match(cells [][]byte) bool {
	for i := range p.preds {
		if !p.preds[i].eval(cells) {
			return false
		}
	}
	return true
}

// AppendRow appends the projected row to values and lengths. It allocates only to grow them.
func (p *TablePlan) AppendRow(values []byte, lengths []int64, cells [][]byte) ([]byte, []int64) {
	for _, o := range p.out {
		if o.one {
			values = append(values, '1')
			lengths = append(lengths, 1)
			continue
		}
		if o.kid != nil {
			kid, ok := o.kid.of(cells)
			if !ok {
				lengths = append(lengths, -1)
				continue
			}
			values = append(values, kid...)
			lengths = append(lengths, int64(len(kid)))
			continue
		}
		cell := cells[o.src]
		if cell == nil {
			lengths = append(lengths, -1)
			continue
		}
		start := len(values)
		if o.mask != nil {
			values = o.mask.appendMasked(values, cell, o.charset)
		} else if o.latin1 {
			values = sqltypes.AppendLatin1(values, cell)
		} else {
			values = append(values, cell...)
		}
		lengths = append(lengths, int64(len(values)-start))
	}
	return values, lengths
}
