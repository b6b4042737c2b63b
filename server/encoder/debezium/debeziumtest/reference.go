// Package debeziumtest holds what the tests of the Debezium-based formats (debezium-json and
// avro) share: real Debezium 2.4 output for a table with a column of every MySQL type (the
// reference) with that table as FIELD metadata, cells and event streams, a copied table's
// events, and comparisons of JSON documents that keep number text.
//
// The reference files are embedded so that tests read them wherever they run.
package debeziumtest

import (
	"embed"
	"math"
	"math/big"
	"path"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	"github.com/vstream-cdc/vstream/server/encoder"
	"github.com/vstream-cdc/vstream/server/encoder/encodertest"
	"github.com/vstream-cdc/vstream/sqltypes"
)

// refDir holds real Debezium 2.4 output for a table with a column of every MySQL type; its
// README.md says where it comes from and with which connector modes it was made.
const refDir = "debezium-2.4-mysql-datatypes"

//go:embed debezium-2.4-mysql-datatypes
var refFiles embed.FS

// GTID is the transaction GTID of the events this package builds.
const GTID = "3e11fa47-71ca-11e1-9e33-c80aa9429562:23"

// Reference files: the value and the key message Debezium 2.4 wrote for the reference row.
const (
	ValueFile = "datatype.dbz.json"
	KeyFile   = "datatype.dbz.key.json"
)

// File returns a reference file (ValueFile, KeyFile, or the DDL and DML it was made from).
func File(t testing.TB, name string) []byte {
	t.Helper()
	b, err := refFiles.ReadFile(path.Join(refDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Column is a column of the reference CREATE TABLE (datatype.ddl.sql).
type Column struct {
	Name string
	// Type is the declared type: "DATETIME(4)", "INT UNSIGNED", "ENUM('a', 'b')".
	Type string
	PK   bool
}

// Columns reads the columns of the reference CREATE TABLE (one column per line).
func Columns(t testing.TB) []Column {
	t.Helper()
	line := regexp.MustCompile(`^\s*(\w+)\s+(.+?),?\s*$`)
	var cols []Column
	for _, l := range strings.Split(string(File(t, "datatype.ddl.sql")), "\n") {
		m := line.FindStringSubmatch(l)
		if m == nil || strings.HasPrefix(strings.ToUpper(l), "CREATE") {
			continue
		}
		typ, pk := strings.CutSuffix(m[2], " PRIMARY KEY")
		cols = append(cols, Column{Name: m[1], Type: typ, PK: pk})
	}
	return cols
}

// Literals reads the literals of the reference INSERT (datatype.dml.sql): numbers as text,
// strings unquoted.
func Literals(t testing.TB) []string {
	t.Helper()
	s := string(File(t, "datatype.dml.sql"))
	s = s[strings.Index(s, "(")+1 : strings.LastIndex(s, ")")]
	lit := regexp.MustCompile(`'((?:[^'\\]|\\.|'')*)'|(-?[0-9.]+)`)
	var vals []string
	for _, m := range lit.FindAllStringSubmatch(s, -1) {
		if m[2] != "" {
			vals = append(vals, m[2])
		} else {
			vals = append(vals, strings.ReplaceAll(m[1], "''", "'"))
		}
	}
	return vals
}

// typeArgs returns the numeric arguments of a COLUMN_TYPE: "decimal(10,5)" → [10 5].
func typeArgs(ct string) []int {
	open, end := strings.IndexByte(ct, '('), strings.IndexByte(ct, ')')
	if open < 0 || end < open {
		return nil
	}
	var args []int
	for a := range strings.SplitSeq(ct[open+1:end], ",") {
		n, err := strconv.Atoi(strings.TrimSpace(a))
		if err != nil {
			return nil
		}
		args = append(args, n)
	}
	return args
}

func typeArg(ct string, i, def int) int {
	if args := typeArgs(ct); i < len(args) {
		return args[i]
	}
	return def
}

// Field is the FIELD metadata a MySQL 8 source reports for a declared column type.
func Field(c Column) *query.Field {
	base, rest, _ := strings.Cut(c.Type, "(")
	base = strings.ToUpper(base)
	base, unsigned := strings.CutSuffix(base, " UNSIGNED")
	args := ""
	if rest != "" {
		args = "(" + strings.ReplaceAll(rest, " ", "")
		if i := strings.Index(args, ")"); i >= 0 {
			args = args[:i+1]
		}
	}
	types := map[string][2]query.Type{
		"TINYINT": {query.Type_INT8, query.Type_UINT8}, "SMALLINT": {query.Type_INT16, query.Type_UINT16},
		"MEDIUMINT": {query.Type_INT24, query.Type_UINT24}, "INT": {query.Type_INT32, query.Type_UINT32},
		"BIGINT": {query.Type_INT64, query.Type_UINT64}, "FLOAT": {query.Type_FLOAT32}, "DOUBLE": {query.Type_FLOAT64},
		"DECIMAL": {query.Type_DECIMAL}, "NUMERIC": {query.Type_DECIMAL}, "DATE": {query.Type_DATE},
		"DATETIME": {query.Type_DATETIME}, "TIMESTAMP": {query.Type_TIMESTAMP}, "TIME": {query.Type_TIME},
		"YEAR": {query.Type_YEAR}, "BIT": {query.Type_BIT}, "VARCHAR": {query.Type_VARCHAR}, "CHAR": {query.Type_CHAR},
		"VARBINARY": {query.Type_VARBINARY}, "BINARY": {query.Type_BINARY}, "BLOB": {query.Type_BLOB},
		"ENUM": {query.Type_ENUM}, "SET": {query.Type_SET}, "JSON": {query.Type_JSON},
	}
	tt, ok := types[base]
	if !ok {
		panic("no FIELD type for " + c.Type)
	}
	typ := tt[0]
	if unsigned {
		typ = tt[1]
	}
	f := &query.Field{Name: c.Name, Type: typ, Charset: 255}
	if base == "NUMERIC" {
		base = "DECIMAL"
	}
	f.ColumnType = strings.ToLower(base) + args
	if base == "ENUM" || base == "SET" {
		f.ColumnType = strings.ToLower(base) + "(" + strings.ReplaceAll(rest, ", ", ",")
	}
	if unsigned {
		f.ColumnType += " unsigned"
		f.Flags |= uint32(query.MySqlFlag_UNSIGNED_FLAG)
	}
	switch typ {
	case query.Type_VARBINARY, query.Type_BINARY, query.Type_BLOB, query.Type_BIT:
		f.Charset = 63
	default:
		// Text and the other types keep the column's character set.
	}
	if c.PK {
		f.Flags |= uint32(query.MySqlFlag_NOT_NULL_FLAG | query.MySqlFlag_PRI_KEY_FLAG)
	}
	return f
}

// Cell is the cell the binlog reader produces (formats.md 1.3) for a literal stored in a
// column, as MySQL stores it: fractional seconds rounded to the column's precision, FLOAT
// single precision, out-of-range ENUM/SET members stored as the empty value (non-strict mode).
func Cell(t testing.TB, f *query.Field, lit string) string {
	t.Helper()
	fsp := typeArg(f.ColumnType, 0, 0)
	switch f.Type {
	case query.Type_DATETIME, query.Type_TIMESTAMP:
		if strings.HasPrefix(lit, "0000-00-00") {
			return "0000-00-00 00:00:00" + fraction(0, fsp)
		}
		tm, err := time.Parse("2006-01-02 15:04:05.999999", lit)
		if err != nil {
			t.Fatal(err)
		}
		tm = tm.Round(time.Duration(math.Pow10(9 - fsp)))
		return tm.Format("2006-01-02 15:04:05") + fraction(tm.Nanosecond()/1000, fsp)
	case query.Type_TIME:
		neg := strings.HasPrefix(lit, "-")
		whole, frac, _ := strings.Cut(strings.TrimPrefix(lit, "-"), ".")
		parts := strings.Split(whole, ":")
		h, _ := strconv.Atoi(parts[0])
		m, _ := strconv.Atoi(parts[1])
		s, _ := strconv.Atoi(parts[2])
		us, _ := strconv.Atoi((frac + "000000")[:6])
		total := time.Duration(h)*time.Hour + time.Duration(m)*time.Minute + time.Duration(s)*time.Second + time.Duration(us)*time.Microsecond
		total = total.Round(time.Duration(math.Pow10(9 - fsp)))
		sign := ""
		if neg {
			sign = "-"
		}
		secs := int(total / time.Second)
		return sign + pad2(secs/3600) + ":" + pad2(secs/60%60) + ":" + pad2(secs%60) + fraction(int(total%time.Second/time.Microsecond), fsp)
	case query.Type_FLOAT32:
		x, _ := strconv.ParseFloat(lit, 32)
		return strconv.FormatFloat(x, 'E', -1, 32)
	case query.Type_FLOAT64:
		x, _ := strconv.ParseFloat(lit, 64)
		return strconv.FormatFloat(x, 'E', -1, 64)
	case query.Type_DECIMAL:
		r, _ := new(big.Rat).SetString(lit)
		return r.FloatString(typeArg(f.ColumnType, 1, 0))
	case query.Type_BIT:
		n, _ := new(big.Int).SetString(lit, 10)
		return string(n.FillBytes(make([]byte, (fsp+7)/8)))
	case query.Type_BINARY:
		return lit + strings.Repeat("\x00", fsp-len(lit))
	case query.Type_ENUM:
		for _, l := range sqltypes.Labels(f.ColumnType) {
			if l == lit {
				return lit
			}
		}
		return ""
	case query.Type_SET:
		var kept []string
		for _, l := range sqltypes.Labels(f.ColumnType) {
			for m := range strings.SplitSeq(lit, ",") {
				if m == l {
					kept = append(kept, l)
				}
			}
		}
		if len(kept) != len(strings.Split(lit, ",")) {
			return ""
		}
		return strings.Join(kept, ",")
	default:
		// The other types' cells are the literal as written.
	}
	return lit
}

func pad2(n int) string {
	if n < 10 {
		return "0" + strconv.Itoa(n)
	}
	return strconv.Itoa(n)
}

func fraction(us, fsp int) string {
	if fsp == 0 {
		return ""
	}
	s := strconv.Itoa(1_000_000 + us)[1:]
	return "." + s[:fsp]
}

// OtherCell is a second value for a column, at the other end of its range where it has one:
// negative where the reference is positive, extremes, pre-epoch times, text that needs
// escaping in JSON, bytes above 0x7f.
func OtherCell(f *query.Field) string {
	fsp := typeArg(f.ColumnType, 0, 0)
	frac := ""
	if fsp > 0 {
		frac = "." + strings.Repeat("5", fsp)
	}
	switch f.Type {
	case query.Type_INT8:
		return "127"
	case query.Type_INT16:
		return "32767"
	case query.Type_INT24:
		return "8388607"
	case query.Type_INT32:
		return "2147483647"
	case query.Type_INT64:
		return "9223372036854775807"
	case query.Type_UINT8, query.Type_UINT16, query.Type_UINT24, query.Type_UINT32:
		return "0"
	case query.Type_UINT64:
		return "9223372036854775808"
	case query.Type_FLOAT32:
		return "-1.5E-10"
	case query.Type_FLOAT64:
		return "1.7976931348623157E+308"
	case query.Type_DECIMAL:
		return "-99999.99999"
	case query.Type_DATE:
		return "1969-12-31"
	case query.Type_DATETIME:
		return "1969-12-31 23:59:59" + frac
	case query.Type_TIMESTAMP:
		return "1970-01-01 00:00:01" + frac
	case query.Type_TIME:
		return "-838:59:59" + strings.ReplaceAll(frac, "5", "0")
	case query.Type_YEAR:
		return "1901"
	case query.Type_BIT:
		n := typeArg(f.ColumnType, 0, 1)
		if n == 1 {
			return "\x00"
		}
		b := make([]byte, (n+7)/8)
		for i := range b {
			b[i] = 0xff
		}
		b[0] &= byte(0xff >> (8*len(b) - n))
		return string(b)
	case query.Type_VARCHAR, query.Type_CHAR:
		return "h\u00e9llo \U0001F600 \"\\\n\t"
	case query.Type_BINARY:
		return "\x00\xff\x10" + strings.Repeat("\x00", fsp-3)
	case query.Type_VARBINARY, query.Type_BLOB:
		return "\x00\xff\x10"
	case query.Type_ENUM:
		return "c"
	case query.Type_SET:
		return "a,c"
	case query.Type_JSON:
		return `{"k": [1, 2.5, "x y"], "n": null}`
	default:
		// No reference value for the other types: a test that asks for one is wrong.
	}
	panic("no other value for " + f.ColumnType)
}

// Table is the reference table as FIELD metadata and three rows of cells: the reference row
// (pk 1, the row Debezium's output is of), the other values (pk 2) and all NULL (pk 3).
func Table(t testing.TB) ([]*query.Field, [3][]any) {
	t.Helper()
	cols := Columns(t)
	lits := Literals(t)
	if len(cols) != len(lits) || len(cols) < 50 {
		t.Fatalf("%d columns, %d values", len(cols), len(lits))
	}
	var fields []*query.Field
	var rows [3][]any
	for i, c := range cols {
		f := Field(c)
		fields = append(fields, f)
		if c.PK {
			if lits[i] != "1" {
				t.Fatalf("reference row has primary key %s, want 1", lits[i])
			}
			rows[0], rows[1], rows[2] = append(rows[0], "1"), append(rows[1], "2"), append(rows[2], "3")
			continue
		}
		rows[0] = append(rows[0], Cell(t, f, lits[i]))
		rows[1] = append(rows[1], OtherCell(f))
		rows[2] = append(rows[2], nil)
	}
	return fields, rows
}

// ReferenceRun is the run that produced the reference output: its context (params, with the
// run's clock) and connector options (decimal.handling.mode=double, binary.handling.mode=base64,
// the 2.0-2.5 layout, server name dbserver1, version 2.4.0.Final), and the events of its
// insert of the reference row (BEGIN, FIELD, ROW) with the run's binlog coordinates, server id
// and thread, so that an encoder fed them writes every field of the reference, the volatile
// ones included.
func ReferenceRun(t testing.TB) (encoder.Params, map[string]string, []*binlogdata.VEvent) {
	t.Helper()
	fields, rows := Table(t)
	p := encoder.Params{Flavor: "mysql", Database: "test", Clock: encodertest.Clock(1701673705263)}
	opts := map[string]string{"topic.prefix": "dbserver1", "debezium.layout": "v2.0", "decimal.handling.mode": "double",
		"binary.handling.mode": "base64", "source.version": "2.4.0.Final"}
	src := &binlogdata.EventSource{File: "mysql-bin.000005", StartPos: 10394, EndPos: 10500, ServerId: 223344, Database: "test"}
	fe := FieldEvent("foo", fields...)
	fe.Source = src
	return p, opts, []*binlogdata.VEvent{
		{Type: binlogdata.VEventType_BEGIN, Timestamp: 1701673705, Source: &binlogdata.EventSource{File: src.File, StartPos: 10200, ServerId: 223344, ThreadId: 11}},
		fe,
		{Type: binlogdata.VEventType_ROW, Timestamp: 1701673705, Source: src,
			RowEvent: &binlogdata.RowEvent{TableName: "foo", RowChanges: []*binlogdata.RowChange{{After: encodertest.Row(rows[0]...)}}}},
	}
}

// FieldEvent is the FIELD event of a table with ENUM/SET cells as labels, the way streams with
// an output format send it.
func FieldEvent(table string, fields ...*query.Field) *binlogdata.VEvent {
	return &binlogdata.VEvent{Type: binlogdata.VEventType_FIELD, FieldEvent: &binlogdata.FieldEvent{
		TableName: table, Fields: fields, EnumSetStringValues: true}}
}

// Events is a stream over the reference table (named foo, database test): its copy (the three
// rows of Table), then a transaction that inserts, updates, moves (primary key change) and
// deletes, a DDL, and a TRUNCATE.
func Events(fields []*query.Field, rows [3][]any) []*binlogdata.VEvent {
	row := encodertest.Row
	snap := &binlogdata.EventSource{File: "mysql-bin.000005", StartPos: 10394, EndPos: 10394, Database: "test", Snapshot: true}
	fe := FieldEvent("foo", fields...)
	fe.Source = snap
	withPK := func(r []any, pk string) *query.Row {
		c := append([]any{pk}, r[1:]...)
		return row(c...)
	}
	bin := func(pos uint64) *binlogdata.EventSource {
		return &binlogdata.EventSource{File: "mysql-bin.000006", StartPos: pos, EndPos: pos + 100, ServerId: 223344, Database: "test",
			ThreadId: 11, Query: "insert into foo ..."}
	}
	rowEv := func(pos uint64, changes ...*binlogdata.RowChange) *binlogdata.VEvent {
		return &binlogdata.VEvent{Type: binlogdata.VEventType_ROW, Timestamp: 1701673705, EventGtid: GTID, Source: bin(pos),
			RowEvent: &binlogdata.RowEvent{TableName: "foo", RowChanges: changes}}
	}
	fe2 := FieldEvent("foo", fields...)
	fe2.Source = bin(150)
	return []*binlogdata.VEvent{
		{Type: binlogdata.VEventType_BEGIN, Source: snap},
		fe,
		{Type: binlogdata.VEventType_ROW, Source: snap, RowEvent: &binlogdata.RowEvent{TableName: "foo", RowChanges: []*binlogdata.RowChange{
			{After: row(rows[0]...)}, {After: row(rows[1]...)}, {After: row(rows[2]...)}}}},
		{Type: binlogdata.VEventType_LASTPK, LastPKEvent: &binlogdata.LastPKEvent{TableLastPK: &binlogdata.TableLastPK{TableName: "foo"}, Completed: true}},
		{Type: binlogdata.VEventType_COPY_COMPLETED, LastPKEvent: &binlogdata.LastPKEvent{TableLastPK: &binlogdata.TableLastPK{TableName: "foo"}, Completed: true}},
		{Type: binlogdata.VEventType_COPY_COMPLETED},
		{Type: binlogdata.VEventType_COMMIT},
		{Type: binlogdata.VEventType_BEGIN, Timestamp: 1701673705, EventGtid: GTID, Source: &binlogdata.EventSource{File: "mysql-bin.000006", StartPos: 100, ServerId: 223344, ThreadId: 11}},
		fe2,
		rowEv(200, &binlogdata.RowChange{After: withPK(rows[1], "4"), RowIndex: 0}, &binlogdata.RowChange{After: withPK(rows[2], "5"), RowIndex: 1}),
		rowEv(300, &binlogdata.RowChange{Before: withPK(rows[1], "4"), After: withPK(rows[0], "4")},
			&binlogdata.RowChange{Before: withPK(rows[2], "5"), After: withPK(rows[1], "5"), RowIndex: 1}),
		rowEv(400, &binlogdata.RowChange{Before: withPK(rows[0], "4"), After: withPK(rows[0], "40")}),
		rowEv(500, &binlogdata.RowChange{Before: withPK(rows[1], "5")}, &binlogdata.RowChange{Before: row(rows[1]...), RowIndex: 1}),
		{Type: binlogdata.VEventType_COMMIT, Timestamp: 1701673706, EventGtid: GTID, Source: bin(600)},
		{Type: binlogdata.VEventType_DDL, Timestamp: 1701673707, EventGtid: GTID, Statement: "ALTER TABLE foo ADD COLUMN extra INT", Source: bin(700)},
		{Type: binlogdata.VEventType_DDL, Timestamp: 1701673708, EventGtid: GTID, Statement: "TRUNCATE TABLE foo", Source: bin(800)},
	}
}

// ItemFields is table items: id (primary key), name, amount.
func ItemFields() []*query.Field {
	pk := uint32(query.MySqlFlag_NOT_NULL_FLAG | query.MySqlFlag_PRI_KEY_FLAG)
	return []*query.Field{
		{Name: "id", Type: query.Type_INT32, ColumnType: "int", Flags: pk},
		{Name: "name", Type: query.Type_VARCHAR, ColumnType: "varchar(32)", Charset: 45},
		{Name: "amount", Type: query.Type_DECIMAL, ColumnType: "decimal(10,2)"},
	}
}

// SnapshotEvents is a copy of table items (database shop) in chunks, the way the stream sends
// it: each chunk bracketed by BEGIN and COMMIT, its rows in rowEvents ROW events, the first
// chunk's FIELD event carrying the CREATE TABLE, LASTPK after each chunk and COPY_COMPLETED
// after the last.
func SnapshotEvents(rowEvents int, chunks ...[]*query.Row) []*binlogdata.VEvent {
	src := func() *binlogdata.EventSource {
		return &binlogdata.EventSource{File: "binlog.000002", StartPos: 4242, EndPos: 4242, Database: "shop", Snapshot: true}
	}
	var evs []*binlogdata.VEvent
	for i, rows := range chunks {
		evs = append(evs, &binlogdata.VEvent{Type: binlogdata.VEventType_BEGIN, Source: src()})
		if i == 0 {
			fe := FieldEvent("items", ItemFields()...)
			fe.Source = src()
			fe.Source.CreateTable = "CREATE TABLE items (...)"
			evs = append(evs, fe)
		}
		for p := range rowEvents {
			re := &binlogdata.RowEvent{TableName: "items"}
			for _, r := range rows[len(rows)*p/rowEvents : len(rows)*(p+1)/rowEvents] {
				re.RowChanges = append(re.RowChanges, &binlogdata.RowChange{After: r})
			}
			evs = append(evs, &binlogdata.VEvent{Type: binlogdata.VEventType_ROW, Source: src(), RowEvent: re})
		}
		last := i == len(chunks)-1
		evs = append(evs, &binlogdata.VEvent{Type: binlogdata.VEventType_LASTPK, LastPKEvent: &binlogdata.LastPKEvent{
			TableLastPK: &binlogdata.TableLastPK{TableName: "items"}, Completed: last}})
		if last {
			evs = append(evs,
				&binlogdata.VEvent{Type: binlogdata.VEventType_COPY_COMPLETED, LastPKEvent: &binlogdata.LastPKEvent{
					TableLastPK: &binlogdata.TableLastPK{TableName: "items"}, Completed: true}},
				&binlogdata.VEvent{Type: binlogdata.VEventType_COPY_COMPLETED})
		}
		evs = append(evs, &binlogdata.VEvent{Type: binlogdata.VEventType_COMMIT})
	}
	return evs
}

// SplitRows returns the events with each ROW event of several row changes replaced by one ROW
// event per change, the same in all else. An encoder must write the same messages for both:
// what it makes once per event and reuses for the event's rows must not show.
func SplitRows(evs []*binlogdata.VEvent) []*binlogdata.VEvent {
	var out []*binlogdata.VEvent
	for _, ev := range evs {
		changes := ev.GetRowEvent().GetRowChanges()
		if ev.GetType() != binlogdata.VEventType_ROW || len(changes) < 2 {
			out = append(out, ev)
			continue
		}
		for _, rc := range changes {
			one := proto.Clone(ev).(*binlogdata.VEvent)
			one.RowEvent.RowChanges = []*binlogdata.RowChange{rc}
			out = append(out, one)
		}
	}
	return out
}

// ItemEvents is a transaction on table items (database shop) whose rows events hold several
// changes each: three inserts, three updates of which the second moves its row to a new
// primary key, two deletes. Row indexes count the changes of each event.
func ItemEvents() []*binlogdata.VEvent {
	row := encodertest.Row
	src := func(pos uint64) *binlogdata.EventSource {
		return &binlogdata.EventSource{File: "binlog.000003", StartPos: pos, EndPos: pos + 50, ServerId: 7, Database: "shop",
			ThreadId: 77, Query: "-- statement at " + strconv.FormatUint(pos, 10)}
	}
	rowEv := func(pos uint64, changes ...*binlogdata.RowChange) *binlogdata.VEvent {
		for i, rc := range changes {
			rc.RowIndex = uint32(i)
		}
		return &binlogdata.VEvent{Type: binlogdata.VEventType_ROW, Timestamp: 1700000000, EventGtid: GTID, Source: src(pos),
			RowEvent: &binlogdata.RowEvent{TableName: "items", RowChanges: changes}}
	}
	fe := FieldEvent("items", ItemFields()...)
	fe.Source = src(150)
	return []*binlogdata.VEvent{
		{Type: binlogdata.VEventType_BEGIN, Timestamp: 1700000000, EventGtid: GTID, Source: src(100)},
		fe,
		rowEv(200, &binlogdata.RowChange{After: row("1", "pen", "1.50")}, &binlogdata.RowChange{After: row("2", "ink", nil)},
			&binlogdata.RowChange{After: row("3", "pad", "-0.05")}),
		rowEv(300, &binlogdata.RowChange{Before: row("1", "pen", "1.50"), After: row("1", "pen", "1.75")},
			&binlogdata.RowChange{Before: row("2", "ink", nil), After: row("20", "ink", "3.00")},
			&binlogdata.RowChange{Before: row("3", "pad", "-0.05"), After: row("3", "pad \"A4\"", "0.00")}),
		rowEv(400, &binlogdata.RowChange{Before: row("1", "pen", "1.75")}, &binlogdata.RowChange{Before: row("20", "ink", "3.00")}),
		{Type: binlogdata.VEventType_COMMIT, Timestamp: 1700000001, EventGtid: GTID, Source: src(500)},
	}
}

// SourceEvents is a copy of table items in one chunk, a rows event of three reads, then
// ItemEvents. SourceWant is what its records but the tombstones say, in order: source.row,
// source.snapshot and op. The copy's schema-change record (no op) comes first; each record
// has its change's row index; only the last read says "last"; the update that moves a row is
// a delete and a create.
func SourceEvents() []*binlogdata.VEvent {
	row := encodertest.Row
	return append(SnapshotEvents(1, []*query.Row{row("1", "a", nil), row("2", "b", nil), row("3", "c", nil)}), ItemEvents()...)
}

// SourceWant: see SourceEvents.
var SourceWant = [][3]string{
	{"0", "true", "<nil>"},
	{"0", "true", "r"}, {"0", "true", "r"}, {"0", "last", "r"},
	{"0", "false", "c"}, {"1", "false", "c"}, {"2", "false", "c"},
	{"0", "false", "u"}, {"1", "false", "d"}, {"1", "false", "c"}, {"2", "false", "u"},
	{"0", "false", "d"}, {"1", "false", "d"},
}
