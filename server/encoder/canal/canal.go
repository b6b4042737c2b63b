// Package canal holds what canal's output formats (canal JSON, canal protobuf) share: the text
// canal gives a column value, the java.sql.Types code it reports for it, its kinds of DDL,
// how it prints column types, and the options that tune these.
package canal

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	"github.com/vstream-cdc/vstream/position"
	"github.com/vstream-cdc/vstream/server/encoder"
	"github.com/vstream-cdc/vstream/sqltext"
	"github.com/vstream-cdc/vstream/sqltypes"
)

// Options are the value-rendering options every canal format takes.
type Options struct {
	// Zone is where TIMESTAMP values are printed as wall-clock text.
	Zone *time.Location
	// BaseType prints column types without sizes ("bigint unsigned", not "bigint(20) unsigned").
	BaseType bool
	// Collations give the character sets text is converted from (nil: the default ids).
	Collations *sqltypes.Charsets
}

// ReadOptions reads the shared options:
//
//	render_zone  time zone for TIMESTAMP text (default: the source server's, see encoder.RenderZone)
//	mysql_type   full (COLUMN_TYPE, default) or base (int, varchar, bigint unsigned)
func ReadOptions(p encoder.Params) (Options, error) {
	var opts Options
	var err error
	if opts.Zone, err = encoder.RenderZone(p); err != nil {
		return opts, err
	}
	mt, err := p.Options.String("mysql_type", "full", "full", "base")
	if err != nil {
		return opts, err
	}
	opts.BaseType = mt == "base"
	opts.Collations = p.Collations
	return opts, nil
}

// MySQLType is the column type as canal prints it: COLUMN_TYPE, or without sizes when
// BaseType is set ("bigint(20) unsigned" -> "bigint unsigned").
func (o Options) MySQLType(columnType string) string {
	if !o.BaseType {
		return columnType
	}
	open := strings.IndexByte(columnType, '(')
	if open < 0 {
		return columnType
	}
	end := strings.LastIndexByte(columnType, ')')
	if end < open {
		return columnType[:open]
	}
	return columnType[:open] + columnType[end+1:]
}

// GTIDSet is a position as canal writes it in header.gtid: the bare GTID set, without the
// flavor prefix ("MariaDB/", "MySQL56/") positions carry.
func GTIDSet(pos string) string { return position.Bare(pos) }

// ExecuteTime is canal's event time in milliseconds: the binlog header's seconds × 1000.
// Copied rows have no binlog time; they get the encode time.
func ExecuteTime(ev *binlogdata.VEvent, clock func() time.Time) int64 {
	if ev.GetTimestamp() == 0 {
		return clock().UnixMilli()
	}
	return ev.GetTimestamp() * 1000
}

// SQLType is the java.sql.Types code canal gives a column from its type alone: the code of a
// NULL value, and of any value that unsigned promotion does not lift.
func SQLType(f *query.Field, null bool) int {
	k, err := sqltypes.KindOf(f.GetType())
	if err != nil {
		// No column has the type; AppendValue refuses its values. BLOB, as canal has it for
		// what it does not know.
		return 2004
	}
	return sqlType(f, k, null)
}

// sqlType is SQLType of a column of kind k.
func sqlType(f *query.Field, k sqltypes.Kind, null bool) int {
	switch k {
	case sqltypes.KindInt8, sqltypes.KindUint8:
		return -6
	case sqltypes.KindInt16, sqltypes.KindUint16:
		return 5
	case sqltypes.KindInt24, sqltypes.KindUint24, sqltypes.KindInt32, sqltypes.KindUint32:
		return 4
	case sqltypes.KindInt64, sqltypes.KindUint64:
		return -5
	case sqltypes.KindDecimal:
		return 3
	case sqltypes.KindFloat32:
		return 7
	case sqltypes.KindFloat64:
		return 8
	case sqltypes.KindBit:
		return -7
	case sqltypes.KindDate:
		return 91
	case sqltypes.KindDateTime, sqltypes.KindTimestamp:
		return 93
	case sqltypes.KindTime:
		return 92
	case sqltypes.KindYear:
		return 12
	case sqltypes.KindChar:
		return 1
	case sqltypes.KindVarChar:
		return 12
	case sqltypes.KindText:
		return 2005
	case sqltypes.KindEnum:
		return 4
	case sqltypes.KindSet:
		if null {
			return 2004
		}
		return -7
	case sqltypes.KindJSON:
		if MariaDBJSON(f) {
			// MariaDB's JSON is a LONGTEXT, which canal reads as a CLOB.
			return 2005
		}
		if null {
			return 1111
		}
		return 12
	case sqltypes.KindBinary, sqltypes.KindVarBinary, sqltypes.KindBlob, sqltypes.KindGeometry, sqltypes.KindVector:
		// Binary strings, blobs, geometry and vectors: BLOB.
	}
	return 2004
}

// MariaDBJSON reports a MariaDB JSON column: a LONGTEXT with a json_valid check, which
// information_schema (and so column_type) calls longtext.
func MariaDBJSON(f *query.Field) bool {
	return f.GetType() == query.Type_JSON && strings.EqualFold(f.GetColumnType(), "longtext")
}

// promotion is the value above which canal reports an unsigned column with a wider type's
// code (Java has no unsigned integers).
func promotion(t query.Type) (limit uint64, code int) {
	switch t {
	case query.Type_UINT8:
		return 127, 5
	case query.Type_UINT16:
		return 32767, 4
	case query.Type_UINT32:
		return 2147483647, -5
	case query.Type_UINT64:
		return 9223372036854775807, 3
	default:
		// Signed and non-integer types are not promoted.
	}
	return 0, 0
}

// timestampLayouts are the wall-clock layouts of TIMESTAMP text by fraction digits.
var timestampLayouts = [...]string{
	"2006-01-02 15:04:05", "2006-01-02 15:04:05.0", "2006-01-02 15:04:05.00", "2006-01-02 15:04:05.000",
	"2006-01-02 15:04:05.0000", "2006-01-02 15:04:05.00000", "2006-01-02 15:04:05.000000",
}

// AppendValue appends canal's text of a non-NULL cell of column f (labels: the members of an
// ENUM or SET column) and returns the cell's java.sql.Types code, which for unsigned columns
// depends on the value.
func (o Options) AppendValue(dst []byte, f *query.Field, labels []string, cell []byte) ([]byte, int, error) {
	k, err := sqltypes.KindOf(f.GetType())
	if err != nil {
		return dst, 0, fmt.Errorf("column %s: %w", f.GetName(), err)
	}
	code := sqlType(f, k, false)
	switch k {
	case sqltypes.KindUint8, sqltypes.KindUint16, sqltypes.KindUint32, sqltypes.KindUint64:
		if limit, wider := promotion(f.GetType()); limit > 0 {
			if v, err := strconv.ParseUint(string(cell), 10, 64); err == nil && v > limit {
				code = wider
			}
		}
	case sqltypes.KindFloat32, sqltypes.KindFloat64:
		bits := 64
		if k == sqltypes.KindFloat32 {
			bits = 32
		}
		x, err := strconv.ParseFloat(string(cell), bits)
		if err != nil {
			return dst, 0, fmt.Errorf("column %s: %q is not a number", f.GetName(), cell)
		}
		return encoder.AppendJavaFloat(dst, x, bits), code, nil
	case sqltypes.KindDecimal:
		// Keep the leading zero some writers leave out (".50", "-.50").
		if len(cell) > 0 && cell[0] == '.' {
			dst = append(dst, '0')
		} else if len(cell) > 1 && cell[0] == '-' && cell[1] == '.' {
			dst = append(dst, '-', '0')
			cell = cell[1:]
		}
	case sqltypes.KindBit:
		return strconv.AppendUint(dst, sqltypes.BitValue(cell), 10), code, nil
	case sqltypes.KindTimestamp:
		return o.appendTimestamp(dst, cell), code, nil
	case sqltypes.KindEnum:
		return strconv.AppendInt(dst, int64(sqltypes.EnumIndex(labels, cell)), 10), code, nil
	case sqltypes.KindSet:
		return strconv.AppendUint(dst, sqltypes.SetMask(labels, cell), 10), code, nil
	case sqltypes.KindBinary:
		// canal prints BINARY(n) as the binlog has it, without the zero padding.
		for len(cell) > 0 && cell[len(cell)-1] == 0 {
			cell = cell[:len(cell)-1]
		}
		return sqltypes.AppendISOLatin1(dst, cell), code, nil
	case sqltypes.KindVarBinary, sqltypes.KindBlob, sqltypes.KindGeometry, sqltypes.KindVector:
		// Bytes (SQLType's BLOB): ISO-8859-1 text gives them back without loss.
		return sqltypes.AppendISOLatin1(dst, cell), code, nil
	case sqltypes.KindInt8, sqltypes.KindInt16, sqltypes.KindInt24, sqltypes.KindInt32, sqltypes.KindInt64,
		sqltypes.KindUint24, sqltypes.KindYear, sqltypes.KindDate, sqltypes.KindDateTime, sqltypes.KindTime,
		sqltypes.KindChar, sqltypes.KindVarChar, sqltypes.KindText, sqltypes.KindJSON:
		// Integers, temporal types, JSON and text: the cell's text, below.
	}
	// Text as Java strings hold it: decoded from the column's character set.
	return o.Collations.Text(f).Append(dst, cell), code, nil
}

// appendTimestamp renders a UTC TIMESTAMP cell in the render zone, keeping its fraction digits.
func (o Options) appendTimestamp(dst, cell []byte) []byte {
	if o.Zone == nil || o.Zone == time.UTC {
		return append(dst, cell...)
	}
	d, err := sqltypes.ParseDateTime(cell)
	if err != nil || d.IsZeroDate() || d.FracDigits >= len(timestampLayouts) {
		return append(dst, cell...)
	}
	tm := time.Date(d.Year, time.Month(d.Month), d.Day, d.Hour, d.Minute, d.Second, d.Micro*1000, time.UTC)
	return tm.In(o.Zone).AppendFormat(dst, timestampLayouts[d.FracDigits])
}

// AppendKey appends the start of a suggested partition key for a row, database.table; each
// primary-key value follows through AppendKeyPart.
func AppendKey(dst []byte, database, table string) []byte {
	dst = append(dst, database...)
	dst = append(dst, '.')
	return append(dst, table...)
}

// AppendKeyPart appends a primary-key value's text to a key (empty for NULL).
func AppendKeyPart[T string | []byte](dst []byte, value T) []byte {
	dst = append(dst, ':')
	return append(dst, value...)
}

// DDL reads what canal reports for a DDL statement: its kind (4.2 of the format spec:
// CREATE, ALTER, ERASE, CINDEX, DINDEX, TRUNCATE, RENAME or QUERY) and the schema and table it
// changes. defaultDB is the schema of an unqualified table.
func DDL(sql, defaultDB string) (kind, db, table string) {
	db = defaultDB
	if _, tables, ok := sqltext.Classify(sql); ok && len(tables) > 0 {
		table = tables[0].Name
		if tables[0].DB != "" {
			db = tables[0].DB
		}
	}
	return DDLType(sql), db, table
}

// DDLType is canal's kind of a DDL statement, as its DDL parser assigns it.
func DDLType(sql string) string {
	w := sqltext.Keywords(sql, 64)
	at := func(i int) string {
		if i < len(w) {
			return w[i]
		}
		return ""
	}
	i := 1
	switch at(0) {
	case "CREATE":
		if at(i) == "OR" {
			i += 2
		}
		for at(i) == "TEMPORARY" || at(i) == "UNIQUE" || at(i) == "FULLTEXT" || at(i) == "SPATIAL" || at(i) == "ONLINE" {
			i++
		}
		switch at(i) {
		case "TABLE":
			return "CREATE"
		case "INDEX":
			return "CINDEX"
		}
	case "ALTER":
		if at(i) != "TABLE" {
			break
		}
		rest := w[min(len(w), 2):]
		switch {
		case containsSeq(rest, "ADD", "INDEX"), containsSeq(rest, "ADD", "KEY"), containsSeq(rest, "ADD", "UNIQUE"),
			containsSeq(rest, "ADD", "FULLTEXT"), containsSeq(rest, "ADD", "SPATIAL"):
			return "CINDEX"
		case containsSeq(rest, "DROP", "INDEX"), containsSeq(rest, "DROP", "KEY"), containsSeq(rest, "DROP", "CONSTRAINT"),
			containsSeq(rest, "DROP", "PRIMARY"), containsSeq(rest, "DROP", "FOREIGN"):
			return "DINDEX"
		case containsSeq(rest, "RENAME") && !containsSeq(rest, "RENAME", "COLUMN") && !containsSeq(rest, "RENAME", "INDEX") &&
			!containsSeq(rest, "RENAME", "KEY") && !strings.Contains(sql, ","):
			return "RENAME"
		}
		return "ALTER"
	case "DROP":
		if at(i) == "TEMPORARY" {
			i++
		}
		switch at(i) {
		case "TABLE":
			return "ERASE"
		case "INDEX":
			return "DINDEX"
		}
	case "TRUNCATE":
		return "TRUNCATE"
	case "RENAME":
		if at(i) == "TABLE" {
			return "RENAME"
		}
	}
	return "QUERY"
}

func containsSeq(w []string, seq ...string) bool {
	for i := 0; i+len(seq) <= len(w); i++ {
		match := true
		for j, s := range seq {
			if w[i+j] != s {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}
