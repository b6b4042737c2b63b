package debezium

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/server/encoder"
	"github.com/vstream-cdc/vstream/sqltypes"
)

// jdbcTypes are the java.sql.Types codes Debezium's MySQL DDL parser gives the column types
// (its data type resolver): TINYINT is SMALLINT, TIMESTAMP is TIMESTAMP_WITH_TIMEZONE, the
// TEXT types are VARCHAR, ENUM and SET are CHAR, JSON and the spatial types OTHER.
var jdbcTypes = map[string]int64{
	"char": 1, "enum": 1, "set": 1,
	"varchar": 12, "tinytext": 12, "text": 12, "mediumtext": 12, "longtext": 12,
	"tinyint": 5, "smallint": 5, "mediumint": 4, "int": 4, "integer": 4, "bigint": -5,
	"real": 7, "double": 8, "float": 6, "decimal": 3, "numeric": 2, "bit": -7,
	"date": 91, "time": 92, "datetime": 93, "timestamp": 2014, "year": 4,
	"binary": -2, "varbinary": -3, "tinyblob": 2004, "blob": 2004, "mediumblob": 2004, "longblob": 2004,
	"bool": 16, "boolean": 16,
	"json": 1111, "geometry": 1111, "point": 1111, "linestring": 1111, "polygon": 1111, "multipoint": 1111,
	"multilinestring": 1111, "multipolygon": 1111, "geometrycollection": 1111,
}

// jdbcOther is java.sql.Types.OTHER, for a type the table above does not name.
const jdbcOther = 1111

var defaultCharset = regexp.MustCompile(`(?i)\bDEFAULT CHARSET=(\w+)`)

// tableChange is the io.debezium.connector.schema.Change of a table as a FIELD event
// describes it: its columns, key and character sets. The FIELD event does not carry column
// comments or defaults; they are null.
func tableChange(typ, db string, t *encoder.Table, createTable string, collations *sqltypes.Charsets) (Value, error) {
	cols := make([]Value, len(t.Fields))
	for i, f := range t.Fields {
		c, err := columnChange(f, i+1, t.Labels[i], collations)
		if err != nil {
			return Value{}, fmt.Errorf("table %s: %w", t.Name, err)
		}
		cols[i] = c
	}
	defCharset := Null
	if m := defaultCharset.FindStringSubmatch(createTable); m != nil {
		defCharset = Str(strings.ToLower(m[1]))
	}
	pk := make([]Value, len(t.PKNames))
	for i, n := range t.PKNames {
		pk[i] = Str(n)
	}
	table := StructOf(defCharset, ArrayOf(pk...), ArrayOf(cols...), Null)
	return StructOf(Str(typ), Str(`"`+db+`"."`+t.Name+`"`), table), nil
}

// columnChange is the io.debezium.connector.schema.Column of a column at a position
// (from 1); a type no column can have is an error naming the column.
func columnChange(f *query.Field, position int, labels []string, collations *sqltypes.Charsets) (Value, error) {
	kind, err := sqltypes.KindOf(f.GetType())
	if err != nil {
		return Value{}, fmt.Errorf("column %s: %w", f.GetName(), err)
	}
	base, args := columnType(f.GetColumnType())
	if kind == sqltypes.KindJSON {
		// MariaDB keeps JSON as LONGTEXT; its DDL said JSON.
		base, args = "json", nil
	}
	jdbc, ok := jdbcTypes[base]
	if !ok {
		jdbc = jdbcOther
	}
	// The type's name with its attributes, as Debezium writes it: INT UNSIGNED ZEROFILL.
	name := strings.ToUpper(base)
	if sqltypes.Unsigned(f.GetColumnType()) {
		name += " UNSIGNED"
	}
	if sqltypes.Zerofill(f.GetColumnType()) {
		name += " ZEROFILL"
	}
	length, scale := Null, Null
	if len(args) > 0 {
		length = Int(int64(args[0]))
	}
	if len(args) > 1 {
		scale = Int(int64(args[1]))
	}
	charset := Null
	switch kind {
	case sqltypes.KindChar, sqltypes.KindVarChar, sqltypes.KindText, sqltypes.KindEnum, sqltypes.KindSet:
		if n := collations.Name(f.GetCharset()); n != "" && n != "binary" {
			charset = Str(n)
		}
	case sqltypes.KindInt8, sqltypes.KindUint8, sqltypes.KindInt16, sqltypes.KindUint16,
		sqltypes.KindInt24, sqltypes.KindUint24, sqltypes.KindInt32, sqltypes.KindUint32,
		sqltypes.KindInt64, sqltypes.KindUint64, sqltypes.KindFloat32, sqltypes.KindFloat64,
		sqltypes.KindDecimal, sqltypes.KindYear, sqltypes.KindDate, sqltypes.KindDateTime,
		sqltypes.KindTimestamp, sqltypes.KindTime, sqltypes.KindBinary, sqltypes.KindVarBinary,
		sqltypes.KindBlob, sqltypes.KindBit, sqltypes.KindJSON, sqltypes.KindGeometry, sqltypes.KindVector:
		// Numbers, temporal types, bytes and JSON have no character set.
	}
	enumValues := Null
	if kind == sqltypes.KindEnum || kind == sqltypes.KindSet {
		vals := make([]Value, len(labels))
		for i, l := range labels {
			vals[i] = Str(l)
		}
		enumValues = ArrayOf(vals...)
	}
	flags := f.GetFlags()
	optional := flags&uint32(query.MySqlFlag_NOT_NULL_FLAG) == 0
	auto := flags&uint32(query.MySqlFlag_AUTO_INCREMENT_FLAG) != 0
	// Debezium marks an auto-increment column generated as well.
	return StructOf(Str(f.GetName()), Int(jdbc), Null, Str(name), Str(name), charset, length, scale,
		Int(int64(position)), Bool(optional), Bool(auto), Bool(auto), Null, Null, enumValues), nil
}

// snapshotSchemaChange appends the schema-change record Debezium's snapshot writes for each
// captured table: its CREATE TABLE, with the table in tableChanges.
func (r *Records) snapshotSchemaChange(out []*vstreamv1.EncodedMessage, ev *binlogdata.VEvent, db string, t *encoder.Table) ([]*vstreamv1.EncodedMessage, error) {
	src := ev.GetSource()
	now := r.p.Clock()
	info := SourceInfo{Micros: now.UnixMicro(), Snapshot: SnapshotTrue, DB: db, Table: t.Name, File: src.GetFile(),
		Pos: int64(src.GetStartPos())}
	r.scratch.src = info.AppendValues(r.scratch.src[:0], &r.cfg)
	change, err := tableChange("CREATE", db, t, src.GetCreateTable(), r.cfg.Collations)
	if err != nil {
		return out, err
	}
	rec := Record{Topic: r.cfg.Prefix, KeySchema: r.schemaChangeKey, Key: StructOf(Str(db)), ValueSchema: r.schemaChangeValue,
		Value: StructOf(StructOf(r.scratch.src...), Int(now.UnixMilli()), Str(db), Null, Str(src.GetCreateTable()),
			ArrayOf(change))}
	m, err := r.ser.Serialize(&rec)
	if err != nil {
		return out, err
	}
	return append(out, m), nil
}
