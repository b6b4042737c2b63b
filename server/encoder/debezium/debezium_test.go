package debezium

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/server/encoder"
	"github.com/vstream-cdc/vstream/server/encoder/debezium/debeziumtest"
	"github.com/vstream-cdc/vstream/server/encoder/encodertest"
)

var pkFlags = uint32(query.MySqlFlag_NOT_NULL_FLAG | query.MySqlFlag_PRI_KEY_FLAG)

var itemFields = debeziumtest.ItemFields()

const testGTID = debeziumtest.GTID

// txnEvents wraps row changes of table items in a binlog transaction: BEGIN (thread 77),
// FIELD, one ROW event, COMMIT.
func txnEvents(changes ...*binlogdata.RowChange) []*binlogdata.VEvent {
	src := func(pos uint64) *binlogdata.EventSource {
		return &binlogdata.EventSource{File: "binlog.000003", StartPos: pos, EndPos: pos + 50, ServerId: 7, Database: "shop"}
	}
	begin := &binlogdata.VEvent{Type: binlogdata.VEventType_BEGIN, Timestamp: 1700000000, EventGtid: testGTID, Source: src(100)}
	begin.Source.ThreadId = 77
	fe := fieldEvent("items", true, itemFields...)
	fe.Source = src(150)
	rowSrc := src(200)
	rowSrc.Query = "insert into items values (1, 'pen', 1.50)"
	return []*binlogdata.VEvent{begin, fe,
		{Type: binlogdata.VEventType_ROW, Timestamp: 1700000000, EventGtid: testGTID, Source: rowSrc,
			RowEvent: &binlogdata.RowEvent{TableName: "items", RowChanges: changes}},
		{Type: binlogdata.VEventType_COMMIT, Timestamp: 1700000001, EventGtid: testGTID, Source: src(300)},
	}
}

func TestOpKinds(t *testing.T) {
	e := newEncoder(t, encoder.Params{Database: "shop", Flavor: "mysql", Keyspace: "srv"}, map[string]string{"source.version": "9.9"})
	out := encodeAll(t, e, txnEvents(
		&binlogdata.RowChange{After: row("1", "pen", "1.50"), RowIndex: 0},
		&binlogdata.RowChange{Before: row("1", "pen", "1.50"), After: row("1", "pencil", ".50"), RowIndex: 1},
		&binlogdata.RowChange{Before: row("1", "pencil", "0.50"), RowIndex: 2},
	)...)
	if len(out) != 4 {
		t.Fatalf("%d messages, want c, u, d and a tombstone", len(out))
	}
	for i, op := range []string{"c", "u", "d"} {
		m := out[i]
		v := parse(t, m.Value)
		if m.Topic != "srv.shop.items" || m.Format != "debezium-json" || m.Tombstone {
			t.Errorf("%s: topic %q format %q tombstone %v", op, m.Topic, m.Format, m.Tombstone)
		}
		sameJSON(t, op+" key", parse(t, m.Key), parse(t, []byte(
			`{"schema":{"type":"struct","fields":[{"type":"int32","optional":false,"field":"id"}],"optional":false,"name":"srv.shop.items.Key"},"payload":{"id":1}}`)))
		if got := get(v, "payload", "op"); got != op {
			t.Errorf("op %v, want %s", got, op)
		}
		if got, want := strings.Join(memberOrder(t, m.Value, "payload"), ","), "before,after,source,transaction,op,ts_ms,ts_us,ts_ns"; got != want {
			t.Errorf("%s: payload members %s, want %s", op, got, want)
		}
		ts := get(v, "payload")
		if ts.(map[string]any)["ts_ms"] != json.Number("1700000000123") || get(v, "payload", "ts_us") != json.Number("1700000000123000") ||
			get(v, "payload", "ts_ns") != json.Number("1700000000123000000") {
			t.Errorf("%s: envelope times %v %v %v", op, get(v, "payload", "ts_ms"), get(v, "payload", "ts_us"), get(v, "payload", "ts_ns"))
		}
		wantSource := `{"version":"9.9","connector":"mysql","name":"srv","ts_ms":1700000000000,"snapshot":"false","db":"shop",
			"sequence":null,"ts_us":1700000000000000,"ts_ns":1700000000000000000,"table":"items","server_id":7,"gtid":"` + testGTID + `",
			"file":"binlog.000003","pos":200,"row":` + string(rune('0'+i)) + `,"thread":77,"query":null}`
		sameJSON(t, op+" source", get(v, "payload", "source"), parse(t, []byte(wantSource)))
		if got := strings.Join(memberOrder(t, m.Value, "payload", "source"), ","); got !=
			"version,connector,name,ts_ms,snapshot,db,sequence,ts_us,ts_ns,table,server_id,gtid,file,pos,row,thread,query" {
			t.Errorf("source members in order %s", got)
		}
		if len(m.Headers) != 0 {
			t.Errorf("%s has headers %v", op, m.Headers)
		}
	}
	pen := parse(t, []byte(`{"id":1,"name":"pen","amount":"AJY="}`))
	pencil := parse(t, []byte(`{"id":1,"name":"pencil","amount":"Mg=="}`))
	v := func(i int, k string) any { return get(parse(t, out[i].Value), "payload", k) }
	sameJSON(t, "c.before", v(0, "before"), nil)
	sameJSON(t, "c.after", v(0, "after"), pen)
	sameJSON(t, "u.before", v(1, "before"), pen)
	sameJSON(t, "u.after", v(1, "after"), pencil)
	sameJSON(t, "d.before", v(2, "before"), pencil)
	sameJSON(t, "d.after", v(2, "after"), nil)
	if tomb := out[3]; !tomb.Tombstone || len(tomb.Value) != 0 || string(tomb.Key) != string(out[2].Key) || tomb.Topic != out[2].Topic {
		t.Errorf("tombstone %+v", tomb)
	}

	// The envelope schema: version 2 in the 2.6 layout, before/after the row struct.
	schema := parse(t, out[0].Value).(map[string]any)["schema"]
	sameJSON(t, "envelope name", get(schema, "name"), "srv.shop.items.Envelope")
	sameJSON(t, "envelope version", get(schema, "version"), json.Number("2"))
	f := schemaFields(t, schema)
	sameJSON(t, "after.name", f["after"]["name"], "srv.shop.items.Value")
	sameJSON(t, "after.optional", f["after"]["optional"], true)
	sameJSON(t, "amount schema", schemaFields(t, f["after"])["amount"], parse(t, []byte(`{"type":"bytes","optional":true,
		"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"2","connect.decimal.precision":"10"},"field":"amount"}`)))
	sameJSON(t, "source.snapshot schema", schemaFields(t, f["source"])["snapshot"], parse(t, []byte(`{"type":"string","optional":true,
		"name":"io.debezium.data.Enum","version":1,"parameters":{"allowed":"true,last,false,incremental"},"default":"false","field":"snapshot"}`)))
}

func TestTombstonesAndSchemasOff(t *testing.T) {
	del := &binlogdata.RowChange{Before: row("4", nil, nil)}
	cases := []struct {
		opts      map[string]string
		messages  int
		schemas   bool
		deleteKey string
	}{
		{nil, 2, true, ""},
		{map[string]string{"tombstones.on.delete": "false"}, 1, true, ""},
		{map[string]string{"schemas.enable": "false"}, 2, false, `{"id":4}`},
		{map[string]string{"schemas.enable": "false", "tombstones.on.delete": "false"}, 1, false, `{"id":4}`},
	}
	for _, c := range cases {
		out := encodeAll(t, newEncoder(t, encoder.Params{Database: "shop"}, c.opts), txnEvents(del)...)
		if len(out) != c.messages {
			t.Errorf("%v: %d messages, want %d", c.opts, len(out), c.messages)
			continue
		}
		v := parse(t, out[0].Value).(map[string]any)
		k := parse(t, out[0].Key).(map[string]any)
		if c.schemas {
			if slices.Compare(keysOf(v), []string{"payload", "schema"}) != 0 || slices.Compare(keysOf(k), []string{"payload", "schema"}) != 0 {
				t.Errorf("%v: value members %v, key members %v", c.opts, keysOf(v), keysOf(k))
			}
			continue
		}
		if v["op"] != "d" || v["schema"] != nil || string(out[0].Key) != c.deleteKey {
			t.Errorf("%v: without schemas the value should be the envelope alone and the key %s:\n%s\n%s", c.opts, c.deleteKey, out[0].Value, out[0].Key)
		}
		if c.messages == 2 && (string(out[1].Key) != c.deleteKey || !out[1].Tombstone) {
			t.Errorf("%v: tombstone %+v", c.opts, out[1])
		}
	}
}

func TestPrimaryKeyChange(t *testing.T) {
	out := encodeAll(t, newEncoder(t, encoder.Params{Database: "shop"}, map[string]string{"schemas.enable": "false"}),
		txnEvents(&binlogdata.RowChange{Before: row("3", "a", "1.00"), After: row("30", "a", "1.00")})...)
	if len(out) != 3 {
		t.Fatalf("%d messages, want delete, tombstone, create", len(out))
	}
	del, tomb, create := out[0], out[1], out[2]
	if get(parse(t, del.Value), "op") != "d" || string(del.Key) != `{"id":3}` || del.Headers["__debezium.newkey"] != `{"id":30}` || len(del.Headers) != 1 {
		t.Errorf("delete: %s key %s headers %v", del.Value, del.Key, del.Headers)
	}
	if !tomb.Tombstone || string(tomb.Key) != `{"id":3}` || len(tomb.Headers) != 0 {
		t.Errorf("tombstone: %+v", tomb)
	}
	if get(parse(t, create.Value), "op") != "c" || string(create.Key) != `{"id":30}` || create.Headers["__debezium.oldkey"] != `{"id":3}` || len(create.Headers) != 1 {
		t.Errorf("create: %s key %s headers %v", create.Value, create.Key, create.Headers)
	}
	sameJSON(t, "delete.before", get(parse(t, del.Value), "before"), parse(t, []byte(`{"id":3,"name":"a","amount":"ZA=="}`)))
	sameJSON(t, "create.after", get(parse(t, create.Value), "after"), parse(t, []byte(`{"id":30,"name":"a","amount":"ZA=="}`)))
	sameJSON(t, "create.before", get(parse(t, create.Value), "before"), nil)

	// With schemas on, the headers carry the key document with its schema.
	out = encodeAll(t, newEncoder(t, encoder.Params{Database: "shop"}, nil),
		txnEvents(&binlogdata.RowChange{Before: row("3", "a", "1.00"), After: row("30", "a", "1.00")})...)
	sameJSON(t, "newkey header", parse(t, []byte(out[0].Headers["__debezium.newkey"])), parse(t, out[2].Key))
	sameJSON(t, "oldkey header", parse(t, []byte(out[2].Headers["__debezium.oldkey"])), parse(t, out[0].Key))
}

func TestNoPrimaryKey(t *testing.T) {
	fields := []*query.Field{{Name: "a", Type: query.Type_INT32, ColumnType: "int"}}
	e := newEncoder(t, encoder.Params{Database: "shop"}, map[string]string{"schemas.enable": "false"})
	out := encodeAll(t, e, fieldEvent("log", true, fields...),
		&binlogdata.VEvent{Type: binlogdata.VEventType_ROW, Timestamp: 1, RowEvent: &binlogdata.RowEvent{TableName: "log",
			RowChanges: []*binlogdata.RowChange{{Before: row("1"), After: row("2")}, {Before: row("2")}}}})
	if len(out) != 3 || get(parse(t, out[0].Value), "op") != "u" || out[0].Key != nil || out[1].Key != nil || !out[2].Tombstone || out[2].Key != nil {
		t.Fatalf("without a primary key: an update stays an update and keys are null; got %d messages", len(out))
	}
}

func TestSchemaChange(t *testing.T) {
	alter := &binlogdata.VEvent{Type: binlogdata.VEventType_DDL, Timestamp: 1700000100, EventGtid: testGTID,
		Statement: "ALTER TABLE items ADD COLUMN note VARCHAR(10)",
		Source:    &binlogdata.EventSource{File: "binlog.000003", StartPos: 900, ServerId: 7, Database: "shop", ThreadId: 12}}
	e := newEncoder(t, encoder.Params{Database: "shop", Flavor: "mariadb", Keyspace: "srv"}, map[string]string{"source.version": "9.9"})
	out := encodeAll(t, e, alter)
	if len(out) != 1 {
		t.Fatalf("%d messages for a DDL", len(out))
	}
	m := out[0]
	if m.Topic != "srv" || m.Tombstone {
		t.Errorf("topic %q", m.Topic)
	}
	sameJSON(t, "key", parse(t, m.Key), parse(t, []byte(`{"schema":{"type":"struct","fields":[{"type":"string","optional":false,"field":"databaseName"}],
		"optional":false,"name":"io.debezium.connector.mariadb.SchemaChangeKey","version":1},"payload":{"databaseName":"shop"}}`)))
	v := parse(t, m.Value)
	sameJSON(t, "payload", get(v, "payload"), parse(t, []byte(`{"source":{"version":"9.9","connector":"mariadb","name":"srv",
		"ts_ms":1700000100000,"snapshot":"false","db":"shop","sequence":null,"ts_us":1700000100000000,"ts_ns":1700000100000000000,
		"table":"items","server_id":7,"gtid":"`+testGTID+`","file":"binlog.000003","pos":900,"row":0,"thread":12,"query":null},
		"ts_ms":1700000000123,"databaseName":"shop","schemaName":null,"ddl":"ALTER TABLE items ADD COLUMN note VARCHAR(10)","tableChanges":[]}`)))
	f := schemaFields(t, get(v, "schema"))
	sameJSON(t, "value schema name", get(v, "schema", "name"), "io.debezium.connector.mariadb.SchemaChangeValue")
	sameJSON(t, "source schema name", f["source"]["name"], "io.debezium.connector.mariadb.Source")
	sameJSON(t, "tableChanges item name", get(f["tableChanges"], "items", "name"), "io.debezium.connector.schema.Change")

	// A qualified table names its database; include.schema.changes=false drops DDL.
	out = encodeAll(t, e, &binlogdata.VEvent{Type: binlogdata.VEventType_DDL, Statement: "DROP TABLE other.t", Source: &binlogdata.EventSource{Database: "shop"}})
	sameJSON(t, "qualified", get(parse(t, out[0].Key), "payload"), map[string]any{"databaseName": "other"})
	out = encodeAll(t, newEncoder(t, encoder.Params{Database: "shop"}, map[string]string{"include.schema.changes": "false"}), alter)
	if len(out) != 0 {
		t.Errorf("include.schema.changes=false: %d messages", len(out))
	}
}

// TestSnapshotSchemaChange checks the schema-change record the copy of a table starts with, as
// Debezium's snapshot writes one per table: its CREATE TABLE and the table, from the FIELD
// event, in tableChanges.
func TestSnapshotSchemaChange(t *testing.T) {
	evs := debeziumtest.SnapshotEvents(1, []*query.Row{row("1", "a", "1.00")})
	evs[1].Source.CreateTable = "CREATE TABLE `items` (\n  `id` int(11) NOT NULL AUTO_INCREMENT ...\n) ENGINE=InnoDB DEFAULT CHARSET=latin1 COLLATE=latin1_swedish_ci"
	fields := evs[1].FieldEvent.Fields
	fields[0].ColumnType, fields[0].Flags = "int(11)", fields[0].Flags|uint32(query.MySqlFlag_AUTO_INCREMENT_FLAG)
	fields = append(fields, &query.Field{Name: "size", Type: query.Type_ENUM, ColumnType: "enum('s','m','l')", Charset: 8,
		Flags: uint32(query.MySqlFlag_NOT_NULL_FLAG)}, &query.Field{Name: "qty", Type: query.Type_UINT32, ColumnType: "int(10) unsigned zerofill"})
	evs[1].FieldEvent.Fields = fields
	evs[2].RowEvent.RowChanges[0].After = row("1", "a", "1.00", "m", "7")
	e := newEncoder(t, encoder.Params{Database: "shop", Flavor: "mariadb", Keyspace: "srv", Clock: encodertest.Clock(1700000000123)},
		map[string]string{"schemas.enable": "false", "source.version": "9.9"})
	out := encodeAll(t, e, evs...)
	if len(out) != 2 || out[0].Topic != "srv" || get(parse(t, out[1].Value), "op") != "r" {
		t.Fatalf("%d messages, want the schema change, then the read", len(out))
	}
	sameJSON(t, "key", parse(t, out[0].Key), map[string]any{"databaseName": "shop"})
	sameJSON(t, "schema change", parse(t, out[0].Value), parse(t, []byte(`{"source":{"version":"9.9","connector":"mariadb","name":"srv",
		"ts_ms":1700000000123,"snapshot":"true","db":"shop","sequence":null,"ts_us":1700000000123000,"ts_ns":1700000000123000000,
		"table":"items","server_id":0,"gtid":null,"file":"binlog.000002","pos":4242,"row":0,"thread":null,"query":null},
		"ts_ms":1700000000123,"databaseName":"shop","schemaName":null,"ddl":`+string(encoder.AppendJSONString(nil, evs[1].Source.CreateTable))+`,
		"tableChanges":[{"type":"CREATE","id":"\"shop\".\"items\"","table":{"defaultCharsetName":"latin1","primaryKeyColumnNames":["id"],"columns":[
		{"name":"id","jdbcType":4,"nativeType":null,"typeName":"INT","typeExpression":"INT","charsetName":null,"length":11,"scale":null,
		 "position":1,"optional":false,"autoIncremented":true,"generated":true,"comment":null,"defaultValueExpression":null,"enumValues":null},
		{"name":"name","jdbcType":12,"nativeType":null,"typeName":"VARCHAR","typeExpression":"VARCHAR","charsetName":"utf8mb4","length":32,"scale":null,
		 "position":2,"optional":true,"autoIncremented":false,"generated":false,"comment":null,"defaultValueExpression":null,"enumValues":null},
		{"name":"amount","jdbcType":3,"nativeType":null,"typeName":"DECIMAL","typeExpression":"DECIMAL","charsetName":null,"length":10,"scale":2,
		 "position":3,"optional":true,"autoIncremented":false,"generated":false,"comment":null,"defaultValueExpression":null,"enumValues":null},
		{"name":"size","jdbcType":1,"nativeType":null,"typeName":"ENUM","typeExpression":"ENUM","charsetName":"latin1","length":null,"scale":null,
		 "position":4,"optional":false,"autoIncremented":false,"generated":false,"comment":null,"defaultValueExpression":null,"enumValues":["s","m","l"]},
		{"name":"qty","jdbcType":4,"nativeType":null,"typeName":"INT UNSIGNED ZEROFILL","typeExpression":"INT UNSIGNED ZEROFILL","charsetName":null,
		 "length":10,"scale":null,"position":5,"optional":true,"autoIncremented":false,"generated":false,"comment":null,"defaultValueExpression":null,"enumValues":null}
		],"comment":null}}]}`)))

	// include.schema.changes=false leaves it out; a binlog FIELD (no CREATE TABLE) writes none.
	if out := encodeAll(t, newEncoder(t, encoder.Params{Database: "shop"}, map[string]string{"include.schema.changes": "false"}), evs...); len(out) != 1 {
		t.Errorf("include.schema.changes=false: %d messages", len(out))
	}
	if out := encodeAll(t, newEncoder(t, encoder.Params{Database: "shop"}, nil), debeziumtest.ItemEvents()...); slices.ContainsFunc(out, func(m *vstreamv1.EncodedMessage) bool { return m.Topic == "shop" }) {
		t.Errorf("a binlog FIELD event wrote a schema change")
	}
}

func TestTruncate(t *testing.T) {
	trunc := &binlogdata.VEvent{Type: binlogdata.VEventType_DDL, Timestamp: 5, Statement: "TRUNCATE TABLE items", Source: &binlogdata.EventSource{Database: "shop"}}
	evs := append(txnEvents(), trunc)
	if out := encodeAll(t, newEncoder(t, encoder.Params{Database: "shop"}, nil), evs...); len(out) != 0 {
		t.Errorf("truncate is skipped by default (skipped.operations=t); got %d messages", len(out))
	}
	out := encodeAll(t, newEncoder(t, encoder.Params{Database: "shop"}, map[string]string{"skipped.operations": "none", "schemas.enable": "false"}), evs...)
	if len(out) != 1 || out[0].Topic != "ks.shop.items" || out[0].Key != nil {
		t.Fatalf("truncate record: %d messages %+v", len(out), out)
	}
	v := parse(t, out[0].Value)
	if get(v, "op") != "t" || get(v, "before") != nil || get(v, "after") != nil || get(v, "source", "table") != "items" {
		t.Errorf("truncate record %s", out[0].Value)
	}
}

func TestSkippedOperations(t *testing.T) {
	out := encodeAll(t, newEncoder(t, encoder.Params{Database: "shop"}, map[string]string{"skipped.operations": "u,d", "schemas.enable": "false"}),
		txnEvents(&binlogdata.RowChange{After: row("1", nil, nil)}, &binlogdata.RowChange{Before: row("1", nil, nil), After: row("1", "x", nil)},
			&binlogdata.RowChange{Before: row("1", "x", nil)})...)
	if len(out) != 1 || get(parse(t, out[0].Value), "op") != "c" {
		t.Errorf("skipped.operations=u,d leaves only the create: %d messages", len(out))
	}
}

// snapshotEvents is a copy of table items in chunks, each chunk's rows in two ROW events.
func snapshotEvents(chunks ...[]*query.Row) []*binlogdata.VEvent {
	return debeziumtest.SnapshotEvents(2, chunks...)
}

func TestSnapshotReads(t *testing.T) {
	// The copy's schema-change record is TestSnapshotSchemaChange's.
	noDDL := map[string]string{"include.schema.changes": "false"}
	e := newEncoder(t, encoder.Params{Database: "shop"}, map[string]string{"schemas.enable": "false", "include.schema.changes": "false"})
	evs := snapshotEvents(
		[]*query.Row{row("1", "a", "1.00"), row("2", "b", "2.00"), row("3", "c", nil)},
		[]*query.Row{row("4", "d", nil), row("5", "e", nil)})
	var out []*vstreamv1.EncodedMessage
	seen := map[int]int{} // messages out after each event
	for i, ev := range evs {
		var err error
		if out, err = e.Encode(out, ev); err != nil {
			t.Fatal(err)
		}
		seen[i] = len(out)
	}
	if len(out) != 5 {
		t.Fatalf("%d messages for 5 copied rows", len(out))
	}
	for i, m := range out {
		v := parse(t, m.Value)
		want := "true"
		if i == 4 {
			want = "last"
		}
		if get(v, "op") != "r" || get(v, "before") != nil || get(v, "after", "id") != json.Number(string(rune('1'+i))) {
			t.Errorf("read %d: %s", i, m.Value)
		}
		src := get(v, "source").(map[string]any)
		if src["snapshot"] != want || src["server_id"] != json.Number("0") || src["thread"] != nil || src["gtid"] != nil ||
			src["file"] != "binlog.000002" || src["pos"] != json.Number("4242") || src["ts_ms"] != json.Number("1700000000123") {
			t.Errorf("read %d source: %v", i, src)
		}
	}
	// The final read leaves only when the copy is known to be complete, and no later.
	final := len(evs) - 2 // the COPY_COMPLETED without a table
	if evs[final].GetType() != binlogdata.VEventType_COPY_COMPLETED || seen[final-1] != 4 || seen[final] != 5 {
		t.Errorf("messages out after each event: %v", seen)
	}
	// A row left behind by a chunk's end is released as an ordinary read.
	firstCommit := slices.IndexFunc(evs, func(ev *binlogdata.VEvent) bool { return ev.GetType() == binlogdata.VEventType_COMMIT })
	if seen[firstCommit] != 3 {
		t.Errorf("after the first chunk's COMMIT %d messages are out, want 3", seen[firstCommit])
	}

	// With schemas the marker is rewritten inside the document, the schema untouched.
	out = encodeAll(t, newEncoder(t, encoder.Params{Database: "shop"}, noDDL), evs...)
	if got := get(parse(t, out[4].Value), "payload", "source", "snapshot"); got != "last" {
		t.Errorf("with schemas, the last read says %v", got)
	}
	if get(parse(t, out[3].Value), "schema") == nil || strings.Contains(string(out[3].Value), `"last"`) {
		t.Errorf("an earlier read was changed: %s", out[3].Value)
	}
}

func TestTransactionMetadata(t *testing.T) {
	e := newEncoder(t, encoder.Params{Database: "shop"}, map[string]string{"provide.transaction.metadata": "true", "schemas.enable": "false"})
	out := encodeAll(t, e, txnEvents(
		&binlogdata.RowChange{After: row("1", nil, nil)},
		&binlogdata.RowChange{After: row("2", nil, nil)},
		&binlogdata.RowChange{Before: row("2", nil, nil)})...)
	// BEGIN, c, c, d, tombstone, END
	if len(out) != 6 {
		t.Fatalf("%d messages", len(out))
	}
	begin, end := out[0], out[5]
	if begin.Topic != "ks.transaction" || string(begin.Key) != `{"id":"`+testGTID+`"}` {
		t.Errorf("BEGIN topic %q key %s", begin.Topic, begin.Key)
	}
	sameJSON(t, "BEGIN", parse(t, begin.Value), parse(t, []byte(`{"status":"BEGIN","id":"`+testGTID+`","event_count":null,"data_collections":null,"ts_ms":1700000000000}`)))
	sameJSON(t, "END", parse(t, end.Value), parse(t, []byte(`{"status":"END","id":"`+testGTID+`","event_count":3,
		"data_collections":[{"data_collection":"shop.items","event_count":3}],"ts_ms":1700000001000}`)))
	for i := 1; i <= 3; i++ {
		sameJSON(t, "transaction block", get(parse(t, out[i].Value), "transaction"), parse(t, []byte(
			`{"id":"`+testGTID+`","total_order":`+string(rune('0'+i))+`,"data_collection_order":`+string(rune('0'+i))+`}`)))
	}
	// Off by default: the block is null and no boundary records are sent.
	out = encodeAll(t, newEncoder(t, encoder.Params{Database: "shop"}, map[string]string{"schemas.enable": "false"}),
		txnEvents(&binlogdata.RowChange{After: row("1", nil, nil)})...)
	if len(out) != 1 || get(parse(t, out[0].Value), "transaction") != nil {
		t.Errorf("transaction metadata off: %d messages", len(out))
	}
}

func TestIncludeQuery(t *testing.T) {
	for _, include := range []bool{false, true} {
		opts := map[string]string{"schemas.enable": "false"}
		var want any
		if include {
			opts["include.query"] = "true"
			want = "insert into items values (1, 'pen', 1.50)"
		}
		out := encodeAll(t, newEncoder(t, encoder.Params{Database: "shop"}, opts), txnEvents(&binlogdata.RowChange{After: row("1", nil, nil)})...)
		if got := get(parse(t, out[0].Value), "source", "query"); got != want {
			t.Errorf("include.query=%v: source.query %v", include, got)
		}
	}
}

func TestOriginalCommitTime(t *testing.T) {
	evs := txnEvents(&binlogdata.RowChange{After: row("1", nil, nil)})
	evs[2].Source.OriginalCommitUs = 1700000000654321
	out := encodeAll(t, newEncoder(t, encoder.Params{Database: "shop"}, map[string]string{"schemas.enable": "false"}), evs...)
	src := get(parse(t, out[0].Value), "source")
	if get(src, "ts_ms") != json.Number("1700000000654") || get(src, "ts_us") != json.Number("1700000000654321") || get(src, "ts_ns") != json.Number("1700000000654321000") {
		t.Errorf("source times from original_commit_timestamp: %v", src)
	}
}

func TestOptions(t *testing.T) {
	bad := []struct {
		opts    map[string]string
		keyspce string
		want    string
	}{
		{map[string]string{"decimal.handling.mode": "exact"}, "ks", "precise, double, string"},
		{map[string]string{"debezium.layout": "v1.9"}, "ks", "v2.6, v2.0"},
		{map[string]string{"binary.handling.mode": "raw"}, "ks", "base64-url-safe"},
		{map[string]string{"bigint.unsigned.handling.mode": "string"}, "ks", "long, precise"},
		{map[string]string{"time.precision.mode": "connect"}, "ks", "adaptive_time_microseconds"},
		{map[string]string{"tinyint.schema": "boolean"}, "ks", "int16, int8"},
		{map[string]string{"schema.name.adjustment.mode": "strict"}, "ks", "none, avro"},
		{map[string]string{"skipped.operations": "c,x"}, "ks", "skipped.operations"},
		{map[string]string{"tombstones.on.delete": "yes"}, "ks", "true or false"},
		{map[string]string{"schemas.enable": "sometimes"}, "ks", "true or false"},
		{nil, "", "topic.prefix is required"},
		{map[string]string{"topic.prefix": "my server"}, "ks", "topic.prefix"},
	}
	for _, c := range bad {
		_, err := New(encoder.Params{Options: encoder.NewOptions(c.opts), Keyspace: c.keyspce})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v (keyspace %q): error %v, want one mentioning %q", c.opts, c.keyspce, err, c.want)
		}
	}
	o := encoder.NewOptions(map[string]string{"schemas.enable": "false", "colour": "blue"})
	if _, err := New(encoder.Params{Options: o, Keyspace: "ks"}); err != nil {
		t.Fatal(err)
	}
	if err := o.Unknown(); err == nil || !strings.Contains(err.Error(), "colour") || !strings.Contains(err.Error(), "topic.prefix") {
		t.Errorf("unknown option: %v", err)
	}
	// topic.prefix overrides the keyspace.
	out := encodeAll(t, newEncoder(t, encoder.Params{Database: "shop", Keyspace: "ks"}, map[string]string{"topic.prefix": "prod.mysql-1"}),
		txnEvents(&binlogdata.RowChange{After: row("1", nil, nil)})...)
	if out[0].Topic != "prod.mysql-1.shop.items" || get(parse(t, out[0].Value), "payload", "source", "name") != "prod.mysql-1" {
		t.Errorf("topic %q", out[0].Topic)
	}
}

func TestErrors(t *testing.T) {
	e := newEncoder(t, encoder.Params{Database: "shop"}, nil)
	if _, err := e.Encode(nil, &binlogdata.VEvent{Type: binlogdata.VEventType_ROW, RowEvent: &binlogdata.RowEvent{TableName: "nope"}}); err == nil ||
		!strings.Contains(err.Error(), "before its FIELD") {
		t.Errorf("ROW before FIELD: %v", err)
	}
	encodeAll(t, e, fieldEvent("items", true, itemFields...))
	_, err := e.Encode(nil, &binlogdata.VEvent{Type: binlogdata.VEventType_ROW, RowEvent: &binlogdata.RowEvent{TableName: "items",
		RowChanges: []*binlogdata.RowChange{{After: row("x1", nil, nil)}}}})
	if err == nil || !strings.Contains(err.Error(), "column id") {
		t.Errorf("bad integer cell: %v", err)
	}
	_, err = e.Encode(nil, fieldEvent("odd", true, &query.Field{Name: "e", Type: query.Type_EXPRESSION}))
	if err == nil || !strings.Contains(err.Error(), "no Debezium mapping") {
		t.Errorf("unmapped type: %v", err)
	}
}

// A column of a type no column can have (an expression's, a tuple's) is an error naming the
// table and the column, in the row schema and in the snapshot's table change alike.
func TestTypeNoColumnHas(t *testing.T) {
	for _, typ := range []query.Type{query.Type_EXPRESSION, query.Type_TUPLE, query.Type_NULL_TYPE} {
		tbl := &encoder.Table{Name: "odd", Labels: make([][]string, 2), Fields: []*query.Field{
			{Name: "id", Type: query.Type_INT32, ColumnType: "int(11)"}, {Name: "e", Type: typ}}}
		_, err := NewTableSchema(&Config{}, "shop", tbl, true)
		if err == nil || !strings.Contains(err.Error(), "table odd: column e") || !strings.Contains(err.Error(), typ.String()) {
			t.Errorf("%s: row schema: %v", typ, err)
		}
		_, err = tableChange("CREATE", "shop", tbl, "", nil)
		if err == nil || !strings.Contains(err.Error(), "table odd: column e") || !strings.Contains(err.Error(), typ.String()) {
			t.Errorf("%s: table change: %v", typ, err)
		}
	}
}

// A BLOB or TEXT column that a NOBLOB row image left out (data_columns) reads
// __debezium_unavailable_value, as the MySQL and MariaDB connectors write it (the text in a
// TEXT column, its bytes in a BLOB column); another column left out (MINIMAL) stays null, and a
// real NULL stays null.
func TestColumnsNotLogged(t *testing.T) {
	fields := []*query.Field{
		{Name: "id", Type: query.Type_INT32, ColumnType: "int(11)", Flags: uint32(query.MySqlFlag_PRI_KEY_FLAG)},
		{Name: "blb", Type: query.Type_BLOB, ColumnType: "blob", Charset: 63},
		{Name: "txt", Type: query.Type_TEXT, ColumnType: "text", Charset: 45},
		{Name: "val", Type: query.Type_VARCHAR, ColumnType: "varchar(4)", Charset: 45},
		{Name: "n", Type: query.Type_TEXT, ColumnType: "text", Charset: 45},
	}
	e := newEncoder(t, encoder.Params{Database: "shop", Flavor: "mariadb"}, nil)
	out := encodeAll(t, e, fieldEvent("t", true, fields...), &binlogdata.VEvent{Type: binlogdata.VEventType_ROW, Timestamp: 1700000000,
		RowEvent: &binlogdata.RowEvent{TableName: "t", RowChanges: []*binlogdata.RowChange{{
			Before: row("1", nil, nil, "aaa", "x"), After: row("1", nil, nil, nil, nil),
			DataColumns: &binlogdata.RowChange_Bitmap{Count: 5, Cols: []byte{0b10001}}}}}})
	after := get(parse(t, out[0].Value), "payload", "after")
	want := parse(t, []byte(`{"id":1,"blb":"X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ==","txt":"__debezium_unavailable_value","val":null,"n":null}`))
	sameJSON(t, "after", after, want)
}
