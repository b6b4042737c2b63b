package avro

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	hamba "github.com/hamba/avro/v2"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	"github.com/vstream-cdc/vstream/server/encoder"
	"github.com/vstream-cdc/vstream/server/encoder/debezium"
)

const notNull = uint32(query.MySqlFlag_NOT_NULL_FLAG)

func fld(typ query.Type, columnType string, flags uint32) *query.Field {
	f := &query.Field{Name: "c", Type: typ, ColumnType: columnType, Flags: flags, Charset: 45}
	switch typ {
	case query.Type_BINARY, query.Type_VARBINARY, query.Type_BLOB, query.Type_BIT, query.Type_GEOMETRY:
		f.Charset = 63
	}
	return f
}

// Semantic types as formats.md 10.1 says AvroData writes them: the primitive type with the
// Connect name, version and parameters as properties.
const (
	decimalAvro = `{"type":"bytes","scale":2,"precision":10,"connect.version":1,"connect.parameters":{"scale":"2","connect.decimal.precision":"10"},
		"connect.name":"org.apache.kafka.connect.data.Decimal","logicalType":"decimal"}`
	geometryAvro = `{"type":"record","name":"Geometry","namespace":"io.debezium.data.geometry","fields":[
		{"name":"wkb","type":"bytes"},{"name":"srid","type":["null","int"],"default":null}],
		"connect.doc":"Geometry","connect.version":1,"connect.name":"io.debezium.data.geometry.Geometry"}`
	pointAvro = `{"type":"record","name":"Point","namespace":"io.debezium.data.geometry","fields":[
		{"name":"x","type":"double"},{"name":"y","type":"double"},{"name":"wkb","type":["null","bytes"],"default":null},
		{"name":"srid","type":["null","int"],"default":null}],
		"connect.doc":"Geometry (POINT)","connect.version":1,"connect.name":"io.debezium.data.geometry.Point"}`
)

func semantic(typ, name string) string {
	return `{"type":"` + typ + `","connect.version":1,"connect.name":"` + name + `"}`
}

func opt(t string) string { return `["null",` + t + `]` }

// schemaCases covers every Connect schema the debezium package gives a column: each case is
// a column's FIELD metadata, the options, and the Avro field it becomes.
var schemaCases = []struct {
	name  string
	field *query.Field
	opts  map[string]string
	// avro is the field's Avro type; optional ones have a null default.
	avro string
}{
	{"tinyint int16", fld(query.Type_INT8, "tinyint(4)", 0), nil, opt(`{"type":"int","connect.type":"int16"}`)},
	{"tinyint int8 required", fld(query.Type_INT8, "tinyint", notNull), map[string]string{"tinyint.schema": "int8"}, `{"type":"int","connect.type":"int8"}`},
	{"tinyint unsigned", fld(query.Type_UINT8, "tinyint unsigned", 0), nil, opt(`{"type":"int","connect.type":"int16"}`)},
	{"smallint", fld(query.Type_INT16, "smallint", notNull), nil, `{"type":"int","connect.type":"int16"}`},
	{"smallint unsigned", fld(query.Type_UINT16, "smallint unsigned", 0), nil, opt(`"int"`)},
	{"mediumint", fld(query.Type_INT24, "mediumint", 0), nil, opt(`"int"`)},
	{"int", fld(query.Type_INT32, "int", notNull), nil, `"int"`},
	{"int unsigned", fld(query.Type_UINT32, "int unsigned", 0), nil, opt(`"long"`)},
	{"bigint", fld(query.Type_INT64, "bigint", 0), nil, opt(`"long"`)},
	{"bigint unsigned long", fld(query.Type_UINT64, "bigint unsigned", 0), nil, opt(`"long"`)},
	{"bigint unsigned precise", fld(query.Type_UINT64, "bigint unsigned", 0), map[string]string{"bigint.unsigned.handling.mode": "precise"},
		opt(`{"type":"bytes","scale":0,"precision":20,"connect.version":1,"connect.parameters":{"scale":"0","connect.decimal.precision":"20"},
		"connect.name":"org.apache.kafka.connect.data.Decimal","logicalType":"decimal"}`)},
	{"float", fld(query.Type_FLOAT32, "float", 0), nil, opt(`"float"`)},
	{"float(M,D)", fld(query.Type_FLOAT32, "float(7,4)", 0), nil, opt(`"double"`)},
	{"double", fld(query.Type_FLOAT64, "double", notNull), nil, `"double"`},
	{"decimal precise", fld(query.Type_DECIMAL, "decimal(10,2)", 0), nil, opt(decimalAvro)},
	{"decimal required", fld(query.Type_DECIMAL, "decimal(10,2)", notNull), nil, decimalAvro},
	{"decimal double", fld(query.Type_DECIMAL, "decimal(10,2)", 0), map[string]string{"decimal.handling.mode": "double"}, opt(`"double"`)},
	{"decimal string", fld(query.Type_DECIMAL, "decimal(10,2)", 0), map[string]string{"decimal.handling.mode": "string"}, opt(`"string"`)},
	{"date", fld(query.Type_DATE, "date", 0), nil, opt(semantic("int", "io.debezium.time.Date"))},
	{"time", fld(query.Type_TIME, "time(6)", 0), nil, opt(semantic("long", "io.debezium.time.MicroTime"))},
	{"datetime", fld(query.Type_DATETIME, "datetime", 0), nil, opt(semantic("long", "io.debezium.time.Timestamp"))},
	{"datetime(6)", fld(query.Type_DATETIME, "datetime(6)", notNull), nil, semantic("long", "io.debezium.time.MicroTimestamp")},
	{"timestamp", fld(query.Type_TIMESTAMP, "timestamp(3)", 0), nil, opt(semantic("string", "io.debezium.time.ZonedTimestamp"))},
	{"year", fld(query.Type_YEAR, "year(4)", 0), nil, opt(semantic("int", "io.debezium.time.Year"))},
	{"varchar", fld(query.Type_VARCHAR, "varchar(64)", 0), nil, opt(`"string"`)},
	{"text required", fld(query.Type_TEXT, "text", notNull), nil, `"string"`},
	{"binary", fld(query.Type_BINARY, "binary(4)", 0), nil, opt(`"bytes"`)},
	{"blob", fld(query.Type_BLOB, "blob", notNull), nil, `"bytes"`},
	{"blob base64", fld(query.Type_BLOB, "blob", 0), map[string]string{"binary.handling.mode": "base64"}, opt(`"string"`)},
	{"varbinary hex", fld(query.Type_VARBINARY, "varbinary(4)", 0), map[string]string{"binary.handling.mode": "hex"}, opt(`"string"`)},
	{"bit(1)", fld(query.Type_BIT, "bit(1)", 0), nil, opt(`"boolean"`)},
	{"bit(10)", fld(query.Type_BIT, "bit(10)", 0), nil,
		opt(`{"type":"bytes","connect.version":1,"connect.parameters":{"length":"10"},"connect.name":"io.debezium.data.Bits"}`)},
	{"enum", fld(query.Type_ENUM, "enum('a','b','c')", 0), nil,
		opt(`{"type":"string","connect.version":1,"connect.parameters":{"allowed":"a,b,c"},"connect.name":"io.debezium.data.Enum"}`)},
	{"set", fld(query.Type_SET, "set('x','y','z')", notNull), nil,
		`{"type":"string","connect.version":1,"connect.parameters":{"allowed":"x,y,z"},"connect.name":"io.debezium.data.EnumSet"}`},
	{"json", fld(query.Type_JSON, "json", 0), nil, opt(semantic("string", "io.debezium.data.Json"))},
	{"geometry", fld(query.Type_GEOMETRY, "linestring", 0), nil, opt(geometryAvro)},
	{"geometry required", fld(query.Type_GEOMETRY, "geometry", notNull), nil, geometryAvro},
	{"point", fld(query.Type_GEOMETRY, "point", 0), nil, opt(pointAvro)},
	{"vector", fld(query.Type_VECTOR, "vector(2)", 0), nil,
		opt(`{"type":"array","items":"float","connect.version":1,"connect.name":"io.debezium.data.FloatVector"}`)},
}

// tableSchema returns the Connect schemas of a table after its FIELD event.
func tableSchema(t *testing.T, e *Encoder, table string, fields ...*query.Field) *debezium.TableSchema {
	t.Helper()
	fe := fieldEvent(table, fields...)
	fe.Source = &binlogdata.EventSource{Database: "db"}
	encodeAll(t, e, fe)
	ts := e.records.Table(table)
	if ts == nil {
		t.Fatal("no table schema after the FIELD event")
	}
	return ts
}

// avroField returns a field of a record schema's JSON.
func avroField(t *testing.T, record any, name string) map[string]any {
	t.Helper()
	r, _ := record.(map[string]any)
	fields, _ := r["fields"].([]any)
	for _, f := range fields {
		if m, _ := f.(map[string]any); m["name"] == name {
			return m
		}
	}
	t.Fatalf("record has no field %s: %s", name, show(record))
	return nil
}

func TestSchemaTypes(t *testing.T) {
	for _, c := range schemaCases {
		t.Run(c.name, func(t *testing.T) {
			e := newEncoder(t, encoder.Params{Database: "db"}, c.opts)
			ts := tableSchema(t, e, "t", c.field)
			text, err := Convert(ts.Row, true)
			if err != nil {
				t.Fatal(err)
			}
			// The row struct is optional: a union of null and the record.
			u, ok := parseJSON(t, []byte(text)).([]any)
			if !ok || len(u) != 2 || u[0] != "null" {
				t.Fatalf("row schema is not [null, record]: %s", text)
			}
			want := map[string]any{"name": "c", "type": parseJSON(t, []byte(c.avro))}
			if c.field.Flags&notNull == 0 {
				want["default"] = nil
			}
			if c.field.Type == query.Type_GEOMETRY {
				// AvroData copies the Connect doc of a field's schema to the field.
				want["doc"] = "Geometry"
				if strings.Contains(c.field.ColumnType, "point") {
					want["doc"] = "Geometry (POINT)"
				}
			}
			sameJSON(t, c.name, avroField(t, u[1], "c"), want)
			if _, err := hamba.ParseWithCache(text, "", &hamba.SchemaCache{}); err != nil {
				t.Errorf("not valid Avro: %v\n%s", err, text)
			}
		})
	}
}

// TestSchemaEnvelope compares a table's key and envelope schemas with golden files written
// from formats.md 10.1: the row struct is defined once (before) and referred to by name
// (after), source.snapshot is [T, "null"] with the Connect default, unions default to null.
func TestSchemaEnvelope(t *testing.T) {
	for _, c := range []struct {
		file   string
		opts   map[string]string
		flavor string
	}{
		{"items-v2.6.avsc", nil, "mysql"},
		{"items-v2.0-mariadb.avsc", map[string]string{"debezium.layout": "v2.0"}, "mariadb"},
	} {
		t.Run(c.file, func(t *testing.T) {
			e := newEncoder(t, encoder.Params{Database: "db", Keyspace: "srv", Flavor: c.flavor}, c.opts)
			ts := tableSchema(t, e, "items",
				&query.Field{Name: "id", Type: query.Type_INT32, ColumnType: "int", Flags: pkFlags},
				&query.Field{Name: "name", Type: query.Type_VARCHAR, ColumnType: "varchar(32)", Charset: 45})
			want, err := os.ReadFile(filepath.Join("testdata", c.file))
			if err != nil {
				t.Fatal(err)
			}
			docs := strings.SplitN(string(want), "\n\n", 2)
			key, err := Convert(ts.Key, true)
			if err != nil {
				t.Fatal(err)
			}
			sameJSON(t, "key", parseJSON(t, []byte(key)), parseJSON(t, []byte(docs[0])))
			env, err := Convert(ts.Envelope, true)
			if err != nil {
				t.Fatal(err)
			}
			sameJSON(t, "envelope", parseJSON(t, []byte(env)), parseJSON(t, []byte(docs[1])))
		})
	}
}

// TestSchemaOthers converts the schemas of schema-change and transaction records (arrays of
// structs, optional arrays, optional array items, nested optional structs) and checks them
// with the Avro parser and at their distinctive places.
func TestSchemaOthers(t *testing.T) {
	cfg, err := debezium.ReadConfig(encoder.Params{Keyspace: "srv", Flavor: "mysql", Options: encoder.NewOptions(map[string]string{"schema.name.adjustment.mode": "avro"})})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		schema *debezium.Schema
		check  func(t *testing.T, doc any)
	}{
		{"schema change key", debezium.SchemaChangeKeySchema(&cfg), func(t *testing.T, doc any) {
			sameJSON(t, "key", doc, parseJSON(t, []byte(`{"type":"record","name":"SchemaChangeKey","namespace":"io.debezium.connector.mysql",
				"fields":[{"name":"databaseName","type":"string"}],"connect.version":1,"connect.name":"io.debezium.connector.mysql.SchemaChangeKey"}`)))
		}},
		{"schema change value", debezium.SchemaChangeValueSchema(&cfg), func(t *testing.T, doc any) {
			changes := avroField(t, doc, "tableChanges")["type"].(map[string]any)
			if changes["type"] != "array" {
				t.Fatalf("tableChanges: %s", show(changes))
			}
			change := changes["items"]
			table := avroField(t, change, "table")["type"].([]any)
			pk := avroField(t, table[1], "primaryKeyColumnNames")
			sameJSON(t, "primaryKeyColumnNames", pk, parseJSON(t, []byte(`{"name":"primaryKeyColumnNames","type":["null",{"type":"array","items":"string"}],"default":null}`)))
			columns := avroField(t, table[1], "columns")["type"].(map[string]any)
			sameJSON(t, "column.optional", avroField(t, columns["items"], "optional"),
				parseJSON(t, []byte(`{"name":"optional","type":["null","boolean"],"default":null}`)))
		}},
		{"transaction value", debezium.TransactionValueSchema(&cfg), func(t *testing.T, doc any) {
			sameJSON(t, "data_collections", avroField(t, doc, "data_collections"), parseJSON(t, []byte(`{"name":"data_collections","type":["null",
				{"type":"array","items":["null",{"type":"record","name":"collection","namespace":"event","fields":[
				{"name":"data_collection","type":"string"},{"name":"event_count","type":"long"}],"connect.version":1,"connect.name":"event.collection"}]}],
				"default":null}`)))
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			text, err := Convert(c.schema, true)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := hamba.ParseWithCache(text, "", &hamba.SchemaCache{}); err != nil {
				t.Fatalf("not valid Avro: %v\n%s", err, text)
			}
			c.check(t, parseJSON(t, []byte(text)))
		})
	}
}

// TestSchemaNames checks the name adjustments: the Connect names of a table whose prefix,
// table and column names Avro does not allow, with the adjustments on (the default) and off.
func TestSchemaNames(t *testing.T) {
	fields := []*query.Field{
		{Name: "id", Type: query.Type_INT32, ColumnType: "int", Flags: pkFlags},
		{Name: "näme-1", Type: query.Type_VARCHAR, ColumnType: "varchar(3)", Charset: 45},
		{Name: "2nd.col", Type: query.Type_INT32, ColumnType: "int"},
	}
	e := newEncoder(t, encoder.Params{Database: "db", Keyspace: "my-srv"}, nil)
	ts := tableSchema(t, e, "order-items", fields...)
	text, err := Convert(ts.Envelope, true)
	if err != nil {
		t.Fatal(err)
	}
	doc := parseJSON(t, []byte(text))
	if got := doc.(map[string]any)["namespace"]; got != "my_srv.db.order_items" {
		t.Errorf("envelope namespace %v", got)
	}
	rowType := avroField(t, doc, "before")["type"].([]any)[1]
	var names []string
	for _, f := range rowType.(map[string]any)["fields"].([]any) {
		names = append(names, f.(map[string]any)["name"].(string))
	}
	if got := strings.Join(names, ","); got != "id,n_me_1,_nd_col" {
		t.Errorf("field names %s", got)
	}
	if _, err := hamba.ParseWithCache(text, "", &hamba.SchemaCache{}); err != nil {
		t.Errorf("not valid Avro: %v", err)
	}

	// Without field name adjustment the schema is refused when its first record is written.
	e = newEncoder(t, encoder.Params{Database: "db", Keyspace: "srv"}, map[string]string{"field.name.adjustment.mode": "none"})
	fe := fieldEvent("t", fields...)
	_, err = e.Encode(nil, fe)
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Encode(nil, &binlogdata.VEvent{Type: binlogdata.VEventType_ROW, Timestamp: 1,
		RowEvent: &binlogdata.RowEvent{TableName: "t", RowChanges: []*binlogdata.RowChange{{After: row("1", "a", "2")}}}})
	if err == nil || !strings.Contains(err.Error(), "not valid Avro") {
		t.Errorf("an invalid field name was not refused: %v", err)
	}
	// Without schema name adjustment, a prefix Avro does not allow is refused the same way.
	e = newEncoder(t, encoder.Params{Database: "db", Keyspace: "my-srv"}, map[string]string{"schema.name.adjustment.mode": "none"})
	encodeAll(t, e, fieldEvent("t", fields[0]))
	_, err = e.Encode(nil, &binlogdata.VEvent{Type: binlogdata.VEventType_ROW, Timestamp: 1,
		RowEvent: &binlogdata.RowEvent{TableName: "t", RowChanges: []*binlogdata.RowChange{{After: row("1")}}}})
	if err == nil || !strings.Contains(err.Error(), "not valid Avro") {
		t.Errorf("an invalid record name was not refused: %v", err)
	}
	// Two columns that become the same Avro name cannot both be fields.
	e = newEncoder(t, encoder.Params{Database: "db"}, nil)
	ts = tableSchema(t, e, "t", fields[0], &query.Field{Name: "a-b", Type: query.Type_INT32, ColumnType: "int"},
		&query.Field{Name: "a_b", Type: query.Type_INT32, ColumnType: "int"})
	if _, err := Convert(ts.Row, true); err == nil || !strings.Contains(err.Error(), `"a_b"`) {
		t.Errorf("colliding field names: %v", err)
	}
}

// TestCheckCache checks that the schema texts found valid are remembered across streams and
// that invalid ones are not: each stream that uses an invalid schema fails.
func TestCheckCache(t *testing.T) {
	valid := `{"type":"record","name":"CheckCache","fields":[{"name":"a","type":"long"}]}`
	invalid := `{"type":"record","name":"Check-Cache","fields":[{"name":"a","type":"long"}]}`
	for i := range 2 {
		if err := check(valid); err != nil {
			t.Fatalf("check %d of a valid schema: %v", i, err)
		}
		if err := check(invalid); err == nil {
			t.Fatalf("check %d of an invalid schema passed", i)
		}
	}
	checked.Lock()
	defer checked.Unlock()
	if !checked.texts[valid] || checked.texts[invalid] {
		t.Errorf("remembered: valid %v, invalid %v", checked.texts[valid], checked.texts[invalid])
	}
}
