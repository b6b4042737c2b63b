// Package schema reads table definitions from the server's information_schema and reconciles
// them with what a binlog TABLE_MAP event says about the same table.
//
// The binlog is the authority on the columns of a row at its position: with
// binlog_row_metadata=FULL it carries names, signedness, labels and collations, so a DDL run
// after the event cannot change how the row decodes. The schema only adds what the binlog
// lacks (COLUMN_TYPE text, AUTO_INCREMENT, MariaDB's JSON alias) and only when it still
// describes the same columns; without FULL metadata it supplies the names, after a check that
// the column types agree.
package schema

import (
	"errors"
	"fmt"
	"strings"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/vstream-cdc/vstream/gen/query"
	"github.com/vstream-cdc/vstream/sqltypes"
	"github.com/vstream-cdc/vstream/vstreamer/rowcodec"
)

// ErrMismatch reports that the binlog's columns cannot be matched to the known schema.
var ErrMismatch = errors.New("binlog row does not match the table's schema")

// ColumnInfo is one row of information_schema.COLUMNS, with the extras the stream needs.
type ColumnInfo struct {
	Name        string
	DataType    string
	ColumnType  string
	Nullable    bool
	Key         string
	Extra       string
	CollationID uint64
	// Charset is the character set of character columns ("" for others).
	Charset string
	JSON    bool
	// OctetLength, Precision, Scale and DatetimePrecision are the sizes information_schema
	// reports; they stand in for the binlog's column metadata when there is no binlog event.
	OctetLength       int64
	Precision         int64
	Scale             int64
	DatetimePrecision int64
	// Result is the server's result-set metadata of the column (nil when it could not be read).
	Result *rowcodec.ResultField
}

// Querier runs SQL; *client.Conn satisfies it.
type Querier interface {
	Execute(command string, args ...any) (*mysql.Result, error)
}

var _ Querier = (*client.Conn)(nil)

// loadColumns is Load's query; its collation id expression and extra join are filled in.
const loadColumns = `SELECT c.COLUMN_NAME, c.DATA_TYPE, c.COLUMN_TYPE, c.IS_NULLABLE, c.COLUMN_KEY, c.EXTRA,
		%s, COALESCE(c.CHARACTER_SET_NAME, ''),
		COALESCE(c.CHARACTER_OCTET_LENGTH, 0), COALESCE(c.NUMERIC_PRECISION, 0), COALESCE(c.NUMERIC_SCALE, 0),
		COALESCE(c.DATETIME_PRECISION, 0)
		FROM information_schema.COLUMNS c
		LEFT JOIN information_schema.COLLATIONS co ON co.COLLATION_NAME = c.COLLATION_NAME
		%s
		WHERE c.TABLE_SCHEMA = ? AND c.TABLE_NAME = ?
		ORDER BY c.ORDINAL_POSITION`

// Load reads the columns of db.table in ordinal order. A table that does not exist yields no
// columns and no error.
func Load(q Querier, db, table string) ([]ColumnInfo, error) {
	// MariaDB 10.10 and later give the UCA 14.0.0 collations (utf8mb4_uca1400_ai_ci, ...) ids
	// only in COLLATION_CHARACTER_SET_APPLICABILITY (see Collations): without it such a column
	// would read as id 0, a binary string.
	r, err := q.Execute(fmt.Sprintf(loadColumns, "COALESCE(co.ID, ap.ID, 0)",
		"LEFT JOIN information_schema.COLLATION_CHARACTER_SET_APPLICABILITY ap ON co.ID IS NULL AND ap.FULL_COLLATION_NAME = c.COLLATION_NAME"), db, table)
	if noApplicabilityID(err) {
		r, err = q.Execute(fmt.Sprintf(loadColumns, "COALESCE(co.ID, 0)", ""), db, table)
	}
	if err != nil {
		return nil, fmt.Errorf("load columns of %s.%s: %w", db, table, err)
	}
	defer r.Close()
	cols := make([]ColumnInfo, 0, r.RowNumber())
	for i := 0; i < r.RowNumber(); i++ {
		c := ColumnInfo{}
		c.Name = resultString(r, i, 0)
		c.DataType = resultString(r, i, 1)
		c.ColumnType = resultString(r, i, 2)
		nullable := resultString(r, i, 3)
		c.Nullable = nullable == "YES"
		c.Key = resultString(r, i, 4)
		c.Extra = resultString(r, i, 5)
		c.CollationID, _ = r.GetUint(i, 6)
		c.Charset = resultString(r, i, 7)
		c.OctetLength, _ = r.GetInt(i, 8)
		c.Precision, _ = r.GetInt(i, 9)
		c.Scale, _ = r.GetInt(i, 10)
		c.DatetimePrecision, _ = r.GetInt(i, 11)
		cols = append(cols, c)
	}
	if len(cols) == 0 {
		return nil, nil
	}
	if err := markJSON(q, db, table, cols); err != nil {
		return nil, err
	}
	if err := resultFields(q, db, table, cols); err != nil {
		return nil, err
	}
	return cols, nil
}

// resultLockWait is how long, in seconds, reading a table's result metadata waits for a lock.
const resultLockWait = "1"

// resultFields reads the metadata the server gives the table's columns in a result set, which
// is what Vitess reports in FIELD events: lengths, decimals and flags as the server counts them
// (the connection's results are utf8mb4, see the engine's connect).
//
// Reading them opens the table, which waits while another session holds it under LOCK
// TABLES ... WRITE or a DDL holds its metadata lock; a stream must not wait with it (no
// heartbeat, no other table's rows). So the read waits for resultLockWait at most, and
// otherwise leaves Result unset: the lengths are then worked out from information_schema
// and the binlog (rowcodec), as for a table dropped since.
func resultFields(q Querier, db, table string, cols []ColumnInfo) error {
	sel := "SELECT * FROM " + quoteIdent(db) + "." + quoteIdent(table) + " LIMIT 0"
	// MariaDB's SET STATEMENT; MySQL refuses it as a syntax error and takes the optimizer
	// hint instead, which MariaDB 10.x would read as a comment.
	r, err := q.Execute("SET STATEMENT lock_wait_timeout = " + resultLockWait + " FOR " + sel)
	var me *mysql.MyError
	if errors.As(err, &me) && me.Code == mysql.ER_PARSE_ERROR {
		r, err = q.Execute("SELECT /*+ SET_VAR(lock_wait_timeout = " + resultLockWait + ") */" + sel[len("SELECT"):])
	}
	if err != nil {
		switch {
		case errors.As(err, &me) && me.Code == mysql.ER_NO_SUCH_TABLE:
			// A table dropped since information_schema was read: the binlog describes its rows.
			return nil
		case errors.As(err, &me) && me.Code == mysql.ER_LOCK_WAIT_TIMEOUT:
			return nil
		}
		return fmt.Errorf("read result metadata of %s.%s: %w", db, table, err)
	}
	defer r.Close()
	if len(r.Fields) != len(cols) {
		// The table changed between the two reads; its next read will agree.
		return nil
	}
	for i, f := range r.Fields {
		if !strings.EqualFold(string(f.Name), cols[i].Name) {
			return nil
		}
	}
	for i, f := range r.Fields {
		flags := f.Flag
		if isNum(f.Type) {
			// The server does not send NUM_FLAG; MySQL's client library adds it, and so
			// does Vitess's.
			flags |= mysql.NUM_FLAG
		}
		cols[i].Result = &rowcodec.ResultField{Type: f.Type, Flags: flags, Length: f.ColumnLength, Decimals: f.Decimal}
	}
	return nil
}

// isNum reports the protocol types MySQL's client library counts as numbers.
func isNum(t byte) bool {
	return t <= mysql.MYSQL_TYPE_INT24 && t != mysql.MYSQL_TYPE_TIMESTAMP || t == mysql.MYSQL_TYPE_YEAR || t == mysql.MYSQL_TYPE_NEWDECIMAL
}

func quoteIdent(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

// markJSON finds MariaDB JSON columns: MariaDB stores JSON as LONGTEXT guarded by a
// json_valid() check constraint named after the column.
func markJSON(q Querier, db, table string, cols []ColumnInfo) error {
	r, err := q.Execute(`SELECT CHECK_CLAUSE FROM information_schema.CHECK_CONSTRAINTS
		WHERE CONSTRAINT_SCHEMA = ? AND TABLE_NAME = ?`, db, table)
	if err != nil {
		var me *mysql.MyError
		// MySQL's CHECK_CONSTRAINTS has no TABLE_NAME; JSON is a real type there anyway.
		if errors.As(err, &me) && me.Code == mysql.ER_BAD_FIELD_ERROR {
			return nil
		}
		return fmt.Errorf("load check constraints of %s.%s: %w", db, table, err)
	}
	defer r.Close()
	for i := 0; i < r.RowNumber(); i++ {
		clause := resultString(r, i, 0)
		for j := range cols {
			if cols[j].DataType == "longtext" && strings.EqualFold(clause, "json_valid(`"+strings.ReplaceAll(cols[j].Name, "`", "``")+"`)") {
				cols[j].JSON = true
			}
		}
	}
	return nil
}

// Reconcile completes the binlog's column descriptions with the schema's. hasNames says the
// binlog carried column names. It returns ErrMismatch (wrapped, with the reason) when the
// names must come from the schema but the schema no longer fits the row.
func Reconcile(cols []rowcodec.Column, hasNames bool, info []ColumnInfo) error {
	if hasNames {
		if sameColumns(cols, info) {
			for i := range cols {
				enrich(&cols[i], &info[i], false)
			}
			return nil
		}
		// The table changed after this event: the binlog's columns are right, and each one the
		// schema still has, by name and type, is described by it (a later ADD COLUMN must not
		// turn a UUID column into bytes, or change the FIELD the copy sent).
		for i := range cols {
			for j := range info {
				if strings.EqualFold(cols[i].Name, info[j].Name) && compatible(cols[i].Type, info[j].DataType) {
					enrich(&cols[i], &info[j], false)
					break
				}
			}
		}
		return nil
	}
	if len(info) < len(cols) {
		return fmt.Errorf("%w: binlog has %d columns, schema has %d", ErrMismatch, len(cols), len(info))
	}
	for i := range cols {
		if !compatible(cols[i].Type, info[i].DataType) {
			return fmt.Errorf("%w: column %d is %s in the schema but binlog type %d", ErrMismatch, i+1, info[i].DataType, cols[i].Type)
		}
	}
	for i := range cols {
		cols[i].Name = info[i].Name
		enrich(&cols[i], &info[i], true)
	}
	return nil
}

// Fits reports whether info can describe a row whose binlog columns are cols: as many
// columns, of the same types, and of the same names when the binlog carried them
// (hasNames). A definition from the schema history that fits is the one the row was
// written with; one that does not (a history that missed a DDL) is not used.
func Fits(cols []rowcodec.Column, hasNames bool, info []ColumnInfo) bool {
	if len(cols) != len(info) {
		return false
	}
	for i := range cols {
		if !compatible(cols[i].Type, info[i].DataType) || hasNames && !strings.EqualFold(cols[i].Name, info[i].Name) {
			return false
		}
	}
	return true
}

// NameByPosition names columns @1, @2, ... for BEST_EFFORT streams whose schema does not fit.
func NameByPosition(cols []rowcodec.Column) {
	for i := range cols {
		cols[i].Name = fmt.Sprintf("@%d", i+1)
	}
}

func sameColumns(cols []rowcodec.Column, info []ColumnInfo) bool {
	if len(cols) != len(info) {
		return false
	}
	for i := range cols {
		if !strings.EqualFold(cols[i].Name, info[i].Name) || !compatible(cols[i].Type, info[i].DataType) {
			return false
		}
	}
	return true
}

func enrich(c *rowcodec.Column, ci *ColumnInfo, fromSchema bool) {
	c.ColumnType = ci.ColumnType
	c.Charset = ci.Charset
	c.JSON = ci.JSON
	c.Ext = rowcodec.ExtOf(ci.DataType)
	c.Result = ci.Result
	if fromSchema {
		c.Unsigned = c.Unsigned || sqltypes.Unsigned(ci.ColumnType)
		if ci.CollationID != 0 {
			c.Collation = ci.CollationID
		}
		if c.Type == mysql.MYSQL_TYPE_ENUM || c.Type == mysql.MYSQL_TYPE_SET {
			if len(c.Labels) == 0 {
				c.Labels = sqltypes.Labels(ci.ColumnType)
			}
		}
		c.PrimaryKey = c.PrimaryKey || ci.Key == "PRI"
	}
	c.Nullable = ci.Nullable
	if strings.Contains(ci.Extra, "auto_increment") {
		c.Flags |= uint32(query.MySqlFlag_AUTO_INCREMENT_FLAG)
	}
	switch ci.Key {
	case "PRI":
		c.PrimaryKey = true
	case "UNI":
		c.Flags |= uint32(query.MySqlFlag_UNIQUE_KEY_FLAG | query.MySqlFlag_PART_KEY_FLAG)
	case "MUL":
		c.Flags |= uint32(query.MySqlFlag_MULTIPLE_KEY_FLAG | query.MySqlFlag_PART_KEY_FLAG)
	}
	if sqltypes.Zerofill(ci.ColumnType) {
		c.Flags |= uint32(query.MySqlFlag_ZEROFILL_FLAG)
	}
}

// compatible reports whether a binlog column type can hold a column of the schema's DATA_TYPE:
// both name the same type once the binlog's older and newer codes for one type are folded.
func compatible(t byte, dataType string) bool {
	if t == mysql.MYSQL_TYPE_BLOB && dataType == "json" {
		return true
	}
	return canonical(t) == canonical(binlogType(dataType))
}

// canonical folds the binlog codes that stand for one column type.
func canonical(t byte) byte {
	switch t {
	case mysql.MYSQL_TYPE_TIME:
		return mysql.MYSQL_TYPE_TIME2
	case mysql.MYSQL_TYPE_DATETIME:
		return mysql.MYSQL_TYPE_DATETIME2
	case mysql.MYSQL_TYPE_TIMESTAMP:
		return mysql.MYSQL_TYPE_TIMESTAMP2
	case mysql.MYSQL_TYPE_NEWDATE:
		return mysql.MYSQL_TYPE_DATE
	case mysql.MYSQL_TYPE_DECIMAL:
		return mysql.MYSQL_TYPE_NEWDECIMAL
	case mysql.MYSQL_TYPE_VAR_STRING:
		return mysql.MYSQL_TYPE_VARCHAR
	case mysql.MYSQL_TYPE_TINY_BLOB, mysql.MYSQL_TYPE_MEDIUM_BLOB, mysql.MYSQL_TYPE_LONG_BLOB:
		return mysql.MYSQL_TYPE_BLOB
	}
	return t
}

// Columns describes a table from the schema alone, as the binlog would, for checking filter
// rules before the stream starts.
func Columns(info []ColumnInfo) []rowcodec.Column {
	cols := make([]rowcodec.Column, len(info))
	for i := range info {
		ci := &info[i]
		c := &cols[i]
		c.Name = ci.Name
		c.Type = binlogType(ci.DataType)
		c.Collation = ci.CollationID
		if c.Collation == 0 {
			c.Collation = sqltypes.BinaryCollation
		}
		if c.Type == mysql.MYSQL_TYPE_ENUM || c.Type == mysql.MYSQL_TYPE_SET {
			c.Labels = sqltypes.Labels(ci.ColumnType)
		}
		setMeta(c, ci)
		enrich(c, ci, true)
	}
	return cols
}

// setMeta fills in what a TABLE_MAP event would say of the column's size, so that a table
// described from the schema (the copy phase) reads the same as one described by the binlog.
func setMeta(c *rowcodec.Column, ci *ColumnInfo) {
	switch c.Type {
	case mysql.MYSQL_TYPE_VARCHAR:
		c.Meta = uint16(ci.OctetLength)
	case mysql.MYSQL_TYPE_STRING:
		c.Length = int(ci.OctetLength)
		if e := rowcodec.ExtOf(ci.DataType); e != rowcodec.ExtNone {
			c.Length = e.Size()
		}
	case mysql.MYSQL_TYPE_NEWDECIMAL:
		c.Meta = uint16(ci.Precision)<<8 | uint16(ci.Scale)
		c.Decimals = int(ci.Scale)
	case mysql.MYSQL_TYPE_BIT:
		bits := uint16(ci.Precision)
		c.Meta = bits/8<<8 | bits%8
	case mysql.MYSQL_TYPE_TIME2, mysql.MYSQL_TYPE_DATETIME2, mysql.MYSQL_TYPE_TIMESTAMP2:
		c.Meta = uint16(ci.DatetimePrecision)
		c.Decimals = int(ci.DatetimePrecision)
	case mysql.MYSQL_TYPE_FLOAT, mysql.MYSQL_TYPE_DOUBLE:
		c.Decimals = 31
	case mysql.MYSQL_TYPE_YEAR:
		// The binlog's signedness map counts YEAR as unsigned.
		c.Unsigned = true
	case mysql.MYSQL_TYPE_BLOB:
		switch {
		case strings.HasPrefix(ci.DataType, "tiny"):
			c.Meta = 1
		case strings.HasPrefix(ci.DataType, "medium"):
			c.Meta = 3
		case strings.HasPrefix(ci.DataType, "long"):
			c.Meta = 4
		default:
			c.Meta = 2
		}
	}
}

func binlogType(dataType string) byte {
	switch dataType {
	case "tinyint":
		return mysql.MYSQL_TYPE_TINY
	case "smallint":
		return mysql.MYSQL_TYPE_SHORT
	case "mediumint":
		return mysql.MYSQL_TYPE_INT24
	case "int":
		return mysql.MYSQL_TYPE_LONG
	case "bigint":
		return mysql.MYSQL_TYPE_LONGLONG
	case "float":
		return mysql.MYSQL_TYPE_FLOAT
	case "double":
		return mysql.MYSQL_TYPE_DOUBLE
	case "decimal":
		return mysql.MYSQL_TYPE_NEWDECIMAL
	case "year":
		return mysql.MYSQL_TYPE_YEAR
	case "date":
		return mysql.MYSQL_TYPE_DATE
	case "time":
		return mysql.MYSQL_TYPE_TIME2
	case "datetime":
		return mysql.MYSQL_TYPE_DATETIME2
	case "timestamp":
		return mysql.MYSQL_TYPE_TIMESTAMP2
	case "bit":
		return mysql.MYSQL_TYPE_BIT
	case "json":
		return mysql.MYSQL_TYPE_JSON
	case "enum":
		return mysql.MYSQL_TYPE_ENUM
	case "set":
		return mysql.MYSQL_TYPE_SET
	case "char", "binary", "uuid", "inet4", "inet6":
		// MariaDB's UUID and INET types travel in the binlog as BINARY(16) and BINARY(4).
		return mysql.MYSQL_TYPE_STRING
	case "varchar", "varbinary":
		return mysql.MYSQL_TYPE_VARCHAR
	case "vector":
		return mysql.MYSQL_TYPE_VECTOR
	}
	if strings.HasSuffix(dataType, "text") || strings.HasSuffix(dataType, "blob") {
		return mysql.MYSQL_TYPE_BLOB
	}
	return mysql.MYSQL_TYPE_GEOMETRY
}

// resultString reads a cell as a string the caller may keep: go-mysql's strings alias the
// result's buffer, which goes back to a pool when the result is closed.
func resultString(r *mysql.Result, row, col int) string {
	s, _ := r.GetString(row, col)
	return strings.Clone(s)
}
