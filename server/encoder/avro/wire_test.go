package avro

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/server/encoder"
	"github.com/vstream-cdc/vstream/server/encoder/debezium"
	"github.com/vstream-cdc/vstream/server/encoder/debezium/debeziumtest"
)

var itemFields = debeziumtest.ItemFields()

func src(pos uint64) *binlogdata.EventSource {
	return &binlogdata.EventSource{File: "binlog.000003", StartPos: pos, EndPos: pos + 50, ServerId: 7, Database: "shop"}
}

// txnEvents wraps row changes of table items (with fields, default itemFields) in a binlog
// transaction: BEGIN, FIELD, one ROW event, COMMIT.
func txnEvents(fields []*query.Field, changes ...*binlogdata.RowChange) []*binlogdata.VEvent {
	if fields == nil {
		fields = itemFields
	}
	fe := fieldEvent("items", fields...)
	fe.Source = src(150)
	return []*binlogdata.VEvent{
		{Type: binlogdata.VEventType_BEGIN, Timestamp: 1700000000, EventGtid: testGTID, Source: src(100)},
		fe,
		{Type: binlogdata.VEventType_ROW, Timestamp: 1700000000, EventGtid: testGTID, Source: src(200),
			RowEvent: &binlogdata.RowEvent{TableName: "items", RowChanges: changes}},
		{Type: binlogdata.VEventType_COMMIT, Timestamp: 1700000001, EventGtid: testGTID, Source: src(300)},
	}
}

func insert(cells ...any) *binlogdata.RowChange { return &binlogdata.RowChange{After: row(cells...)} }

// records drops the schema messages of a stream.
func records(t testing.TB, msgs []*vstreamv1.EncodedMessage) []*vstreamv1.EncodedMessage {
	var out []*vstreamv1.EncodedMessage
	for _, m := range msgs {
		if !isSchema(t, m) {
			out = append(out, m)
		}
	}
	return out
}

// get walks a decoded datum, unwrapping unions: get(v, "after", "name").
func get(v any, path ...string) any {
	for _, p := range path {
		v = unwrap(v)
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return unwrap(v)
}

// unwrap returns the value of a decoded union branch ({"type name": value}).
func unwrap(v any) any {
	if m, ok := v.(map[string]any); ok && len(m) == 1 {
		for k, x := range m {
			if k == "string" || k == "long" || k == "int" || k == "bytes" || k == "boolean" || k == "float" || k == "double" ||
				k == "array" || strings.Contains(k, ".") {
				return x
			}
		}
	}
	return v
}

// TestFraming checks the bytes of a key and the start of a value against the Avro and
// Confluent wire formats, worked out by hand.
func TestFraming(t *testing.T) {
	e := newEncoder(t, encoder.Params{Database: "shop"}, nil)
	out := encodeAll(t, e, txnEvents(nil, insert("1", "pen", "1.50"), insert("-1", nil, nil), insert("300", "", "-1.28"))...)
	recs := records(t, out)
	if len(out) != 5 || len(recs) != 3 {
		t.Fatalf("%d messages, %d records: want a key and a value schema, then 3 records", len(out), len(recs))
	}
	for i, want := range [][]byte{
		{0, 0, 0, 0, 1, 0x02},       // id 1: zigzag 2
		{0, 0, 0, 0, 1, 0x01},       // id -1: zigzag 1
		{0, 0, 0, 0, 1, 0xd8, 0x04}, // id 300: zigzag 600 = 0x58 | 0x80, 4
	} {
		if !bytes.Equal(recs[i].Key, want) {
			t.Errorf("record %d key % x, want % x", i, recs[i].Key, want)
		}
	}
	for i, want := range [][]byte{
		// frame, before null, after branch 1, id 1, name branch 1 "pen", amount branch 1, bytes 00 96 (150)
		{0, 0, 0, 0, 2, 0x00, 0x02, 0x02, 0x02, 0x06, 'p', 'e', 'n', 0x02, 0x04, 0x00, 0x96},
		// id -1, name null, amount null
		{0, 0, 0, 0, 2, 0x00, 0x02, 0x01, 0x00, 0x00},
		// id 300, name "", amount -128: ff 80 is not minimal, 80 is
		{0, 0, 0, 0, 2, 0x00, 0x02, 0xd8, 0x04, 0x02, 0x00, 0x02, 0x02, 0x80},
	} {
		if !bytes.HasPrefix(recs[i].Value, want) {
			t.Errorf("record %d value starts % x, want % x", i, recs[i].Value[:min(len(want), len(recs[i].Value))], want)
		}
	}
	// The source block follows: version, connector, name as length-prefixed strings.
	rest := recs[0].Value[17:]
	version := "devel"
	wantSource := append([]byte{byte(2 * len(version))}, version...)
	wantSource = append(wantSource, byte(2*len("mysql")))
	wantSource = append(wantSource, "mysql"...)
	if !bytes.HasPrefix(rest, wantSource) {
		t.Errorf("source starts % x, want % x", rest[:len(wantSource)], wantSource)
	}
	_, decs := decodeStream(t, out)
	if get(decs[0].value, "after", "name") != "pen" || get(decs[0].value, "op") != "c" || get(decs[2].value, "after", "amount").(interface{ FloatString(int) string }).FloatString(2) != "-1.28" {
		t.Errorf("decoded: %v", decs[0].value)
	}
}

// TestSchemaMessages follows the schema messages of a stream: each subject's schema is sent
// right before the first record that uses it, again when a FIELD event changed the table, and
// not again when a FIELD event repeats the table as it was.
func TestSchemaMessages(t *testing.T) {
	withNote := append(slices.Clone(itemFields), &query.Field{Name: "note", Type: query.Type_VARCHAR, ColumnType: "varchar(10)", Charset: 45})
	alter := &binlogdata.VEvent{Type: binlogdata.VEventType_DDL, Timestamp: 1700000100, EventGtid: testGTID,
		Statement: "ALTER TABLE items ADD COLUMN note VARCHAR(10)", Source: src(900)}
	var evs []*binlogdata.VEvent
	evs = append(evs, txnEvents(nil, insert("1", "a", nil))...)
	evs = append(evs, txnEvents(nil, insert("2", "b", nil))...)
	evs = append(evs, alter)
	evs = append(evs, txnEvents(withNote, insert("3", "c", nil, "n3"))...)
	evs = append(evs, txnEvents(withNote, insert("4", "d", nil, "n4"))...)
	e := newEncoder(t, encoder.Params{Database: "shop"}, nil)
	out := encodeAll(t, e, evs...)

	// Each entry: a schema message's subject and id, or a record's topic and op.
	var got []string
	for _, m := range out {
		if isSchema(t, m) {
			got = append(got, "schema "+m.Headers[HeaderSubject]+" "+m.Headers[HeaderSchemaID])
		} else {
			got = append(got, "record "+m.Topic)
		}
	}
	want := []string{
		"schema ks.shop.items-key 1", "schema ks.shop.items-value 2", "record ks.shop.items",
		"record ks.shop.items",
		"schema ks-key 3", "schema ks-value 4", "record ks",
		"schema ks.shop.items-value 5", "record ks.shop.items",
		"record ks.shop.items",
	}
	if !slices.Equal(got, want) {
		t.Errorf("stream:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	reg, decs := decodeStream(t, out)
	if len(decs) != 5 {
		t.Fatalf("%d records", len(decs))
	}
	if get(decs[1].value, "after", "name") != "b" || get(decs[2].value, "ddl") != alter.Statement ||
		get(decs[3].value, "after", "note") != "n3" || get(decs[4].value, "after", "note") != "n4" {
		t.Errorf("decoded records: %v", decs)
	}
	if strings.Contains(reg.text[2], `"note"`) || !strings.Contains(reg.text[5], `"note"`) {
		t.Errorf("value schemas before and after the DDL:\n%s\n%s", reg.text[2], reg.text[5])
	}
	if decs[3].keyID != 1 || decs[3].valueID != 5 {
		t.Errorf("after the DDL, key id %d (want the unchanged 1), value id %d (want 5)", decs[3].keyID, decs[3].valueID)
	}

	// A second stream of the same events gets the same ids and bytes.
	again := encodeAll(t, newEncoder(t, encoder.Params{Database: "shop"}, nil), evs...)
	if len(again) != len(out) {
		t.Fatalf("second run: %d messages, first %d", len(again), len(out))
	}
	for i := range out {
		if !proto.Equal(out[i], again[i]) {
			t.Errorf("message %d differs between runs:\n%v\n%v", i, out[i], again[i])
		}
	}
}

// TestIDsPerSchema checks that ids follow the schemas, not the Connect objects or subjects:
// two tables with identical columns still have distinct (differently named) schemas, and a
// table whose columns return to an earlier shape gets its earlier id back, announced again.
func TestIDsPerSchema(t *testing.T) {
	withNote := append(slices.Clone(itemFields), &query.Field{Name: "note", Type: query.Type_VARCHAR, ColumnType: "varchar(10)", Charset: 45})
	other := fieldEvent("other", itemFields...)
	other.Source = src(10)
	var evs []*binlogdata.VEvent
	evs = append(evs, txnEvents(nil, insert("1", nil, nil))...)
	evs = append(evs, other, &binlogdata.VEvent{Type: binlogdata.VEventType_ROW, Timestamp: 1, Source: src(20),
		RowEvent: &binlogdata.RowEvent{TableName: "other", RowChanges: []*binlogdata.RowChange{insert("1", nil, nil)}}})
	evs = append(evs, txnEvents(withNote, insert("2", nil, nil, nil))...)
	evs = append(evs, txnEvents(nil, insert("3", nil, nil))...)
	out := encodeAll(t, newEncoder(t, encoder.Params{Database: "shop"}, map[string]string{"include.schema.changes": "false"}), evs...)
	reg, decs := decodeStream(t, out)
	if len(decs) != 4 {
		t.Fatalf("%d records", len(decs))
	}
	for sub, want := range map[string][]int{
		"ks.shop.items-key": {1}, "ks.shop.items-value": {2, 5, 2},
		"ks.shop.other-key": {3}, "ks.shop.other-value": {4},
	} {
		if !slices.Equal(reg.subjects[sub], want) {
			t.Errorf("subject %s announced ids %v, want %v", sub, reg.subjects[sub], want)
		}
	}
	if len(reg.subjects) != 4 {
		t.Errorf("subjects %v", reg.subjects)
	}
}

func TestTombstones(t *testing.T) {
	del := &binlogdata.RowChange{Before: row("1", "pen", "1.50")}
	out := encodeAll(t, newEncoder(t, encoder.Params{Database: "shop"}, nil), txnEvents(nil, del)...)
	_, decs := decodeStream(t, out)
	if len(decs) != 2 {
		t.Fatalf("%d records, want a delete and its tombstone", len(decs))
	}
	d, tomb := decs[0], decs[1]
	if get(d.value, "op") != "d" || get(d.value, "before", "name") != "pen" || get(d.value, "after") != nil {
		t.Errorf("delete: %v", d.value)
	}
	if !tomb.msg.Tombstone || tomb.msg.Value != nil || !bytes.Equal(tomb.msg.Key, d.msg.Key) || tomb.msg.Topic != d.msg.Topic ||
		len(tomb.msg.Headers) != 0 || get(tomb.key, "id") != 1 {
		t.Errorf("tombstone: %v", tomb.msg)
	}

	out = encodeAll(t, newEncoder(t, encoder.Params{Database: "shop"}, map[string]string{"tombstones.on.delete": "false"}), txnEvents(nil, del)...)
	if recs := records(t, out); len(recs) != 1 || recs[0].Tombstone {
		t.Errorf("tombstones.on.delete=false: %d records", len(recs))
	}

	// Without a primary key, keys are null: no key schema, empty keys, the tombstone too.
	log := []*query.Field{{Name: "a", Type: query.Type_INT32, ColumnType: "int"}}
	fe := fieldEvent("log", log...)
	out = encodeAll(t, newEncoder(t, encoder.Params{Database: "shop"}, nil), fe, &binlogdata.VEvent{Type: binlogdata.VEventType_ROW, Timestamp: 1,
		RowEvent: &binlogdata.RowEvent{TableName: "log", RowChanges: []*binlogdata.RowChange{{Before: row("2")}}}})
	reg, decs := decodeStream(t, out)
	if len(decs) != 2 || decs[0].msg.Key != nil || decs[1].msg.Key != nil || !decs[1].msg.Tombstone || len(reg.subjects) != 1 {
		t.Errorf("without a primary key: %d records, subjects %v", len(decs), reg.subjects)
	}
}

// TestPrimaryKeyChange checks the key headers: the key struct as JSON text.
func TestPrimaryKeyChange(t *testing.T) {
	out := encodeAll(t, newEncoder(t, encoder.Params{Database: "shop"}, nil),
		txnEvents(nil, &binlogdata.RowChange{Before: row("3", "a", "1.00"), After: row("30", "a", "1.00")})...)
	_, decs := decodeStream(t, out)
	if len(decs) != 3 {
		t.Fatalf("%d records, want delete, tombstone, create", len(decs))
	}
	del, tomb, create := decs[0], decs[1], decs[2]
	if get(del.value, "op") != "d" || get(del.key, "id") != 3 || del.msg.Headers["__debezium.newkey"] != `{"id":30}` || len(del.msg.Headers) != 1 {
		t.Errorf("delete: key %v headers %v", del.key, del.msg.Headers)
	}
	if !tomb.msg.Tombstone || get(tomb.key, "id") != 3 || len(tomb.msg.Headers) != 0 {
		t.Errorf("tombstone: %v", tomb.msg)
	}
	if get(create.value, "op") != "c" || get(create.key, "id") != 30 || create.msg.Headers["__debezium.oldkey"] != `{"id":3}` || len(create.msg.Headers) != 1 {
		t.Errorf("create: key %v headers %v", create.key, create.msg.Headers)
	}
}

// snapshotEvents is a copy of table items in chunks, each chunk's rows in one ROW event.
func snapshotEvents(chunks ...[]*query.Row) []*binlogdata.VEvent {
	return debeziumtest.SnapshotEvents(1, chunks...)
}

// TestSnapshotReads checks the snapshot markers rewritten in the Avro bytes, and the schema
// messages of a read that is held back until the next event.
func TestSnapshotReads(t *testing.T) {
	for _, rows := range [][][]*query.Row{
		{{row("1", "a", "1.00"), row("2", "b", nil)}, {row("3", "c", nil)}},
		{{row("1", "a", "1.00")}},
	} {
		// The copy's schema-change record is debezium's TestSnapshotSchemaChange's.
		e := newEncoder(t, encoder.Params{Database: "shop"}, map[string]string{"include.schema.changes": "false"})
		var out []*vstreamv1.EncodedMessage
		firstOut := -1 // messages out after the first ROW event
		for _, ev := range snapshotEvents(rows...) {
			var err error
			if out, err = e.Encode(out, ev); err != nil {
				t.Fatal(err)
			}
			if ev.GetType() == binlogdata.VEventType_ROW && firstOut < 0 {
				firstOut = len(out)
			}
		}
		n := len(rows[0])
		if len(rows) > 1 {
			n += len(rows[1])
		}
		// The first chunk's last read waits, and the schemas with it when it is the first.
		want := 0
		if len(rows[0]) > 1 {
			want = 2 + len(rows[0]) - 1
		}
		if firstOut != want {
			t.Errorf("%d messages after the first ROW event, want %d", firstOut, want)
		}
		if !isSchema(t, out[0]) || !isSchema(t, out[1]) {
			t.Errorf("the copy does not start with its schemas")
		}
		_, decs := decodeStream(t, out)
		if len(decs) != n {
			t.Fatalf("%d records for %d copied rows", len(decs), n)
		}
		for i, d := range decs {
			want := "true"
			if i == n-1 {
				want = "last"
			}
			if get(d.value, "op") != "r" || get(d.value, "source", "snapshot") != want {
				t.Errorf("read %d: op %v snapshot %v, want %s", i, get(d.value, "op"), get(d.value, "source", "snapshot"), want)
			}
		}
	}
	s := NewSerializer(Name, true)
	if err := s.MarkLast(&vstreamv1.EncodedMessage{Value: []byte("true")}); err == nil {
		t.Errorf("MarkLast of a message it did not make")
	}
}

// TestTransactionRecords checks the boundary records of provide.transaction.metadata and the
// envelope's transaction block.
func TestTransactionRecords(t *testing.T) {
	e := newEncoder(t, encoder.Params{Database: "shop"}, map[string]string{"provide.transaction.metadata": "true"})
	out := encodeAll(t, e, txnEvents(nil, insert("1", nil, nil), insert("2", nil, nil))...)
	reg, decs := decodeStream(t, out)
	if len(decs) != 4 {
		t.Fatalf("%d records, want BEGIN, 2 changes, END", len(decs))
	}
	begin, end := decs[0], decs[3]
	if begin.msg.Topic != "ks.transaction" || get(begin.value, "status") != "BEGIN" || get(begin.key, "id") != testGTID {
		t.Errorf("BEGIN: %v %v", begin.key, begin.value)
	}
	colls, _ := get(end.value, "data_collections").([]any)
	if get(end.value, "status") != "END" || get(end.value, "event_count") != int64(2) || len(colls) != 1 ||
		get(colls[0], "data_collection") != "shop.items" || get(colls[0], "event_count") != int64(2) {
		t.Errorf("END: %v", end.value)
	}
	if get(decs[2].value, "transaction", "total_order") != int64(2) {
		t.Errorf("transaction block: %v", get(decs[2].value, "transaction"))
	}
	if len(reg.subjects["ks.transaction-key"]) != 1 || len(reg.subjects["ks.transaction-value"]) != 1 {
		t.Errorf("subjects %v", reg.subjects)
	}
}

func TestOptions(t *testing.T) {
	for _, c := range []struct {
		opts map[string]string
		want string
	}{
		{map[string]string{"schema.name.adjustment.mode": "avro_unicode"}, "none, avro"},
		{map[string]string{"field.name.adjustment.mode": "strict"}, "none, avro"},
		{map[string]string{"decimal.handling.mode": "exact"}, "precise, double, string"},
		{map[string]string{"topic.prefix": "my server"}, "topic.prefix"},
	} {
		if _, err := New(encoder.Params{Options: encoder.NewOptions(c.opts), Keyspace: "ks"}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one mentioning %q", c.opts, err, c.want)
		}
	}
	// schemas.enable belongs to the JSON converter: the registry refuses it as unknown.
	o := encoder.NewOptions(map[string]string{"schemas.enable": "false", "tombstones.on.delete": "false"})
	if _, err := New(encoder.Params{Options: o, Keyspace: "ks"}); err != nil {
		t.Fatal(err)
	}
	err := o.Unknown()
	if err == nil || !strings.Contains(err.Error(), "unknown format option schemas.enable:") || !strings.Contains(err.Error(), "tombstones.on.delete,") {
		t.Errorf("schemas.enable: %v", err)
	}
	// Debezium's default schema.name.adjustment.mode=none can be asked for.
	e := newEncoder(t, encoder.Params{Database: "shop"}, map[string]string{"schema.name.adjustment.mode": "none", "topic.prefix": "a_b"})
	if _, decs := decodeStream(t, encodeAll(t, e, txnEvents(nil, insert("1", nil, nil))...)); len(decs) != 1 {
		t.Errorf("schema.name.adjustment.mode=none with valid names: %d records", len(decs))
	}
}

// TestSerializeErrors checks records the converter cannot write: the error names the place,
// and the schema messages of the failed record are sent with the next record instead.
func TestSerializeErrors(t *testing.T) {
	key := &debezium.Schema{Type: debezium.Struct, Name: "t.Key", Fields: []debezium.Field{{Name: "id", Schema: &debezium.Schema{Type: debezium.Int32}}}}
	value := &debezium.Schema{Type: debezium.Struct, Name: "t.Value", Fields: []debezium.Field{
		{Name: "a", Schema: &debezium.Schema{Type: debezium.String}},
		{Name: "n", Schema: &debezium.Schema{Type: debezium.Int16, Optional: true}}}}
	s := NewSerializer(Name, true)
	for _, c := range []struct {
		value debezium.Value
		want  string
	}{
		{debezium.StructOf(debezium.Null, debezium.Null), "a: null for a required string"},
		{debezium.StructOf(debezium.Str("x"), debezium.Int(1<<40)), "n: 1099511627776 does not fit an Avro int"},
		{debezium.StructOf(debezium.Int(1)), "a: value of kind 1 for an Avro string"},
	} {
		_, err := s.Serialize(&debezium.Record{Topic: "t", KeySchema: key, Key: debezium.StructOf(debezium.Int(1)), ValueSchema: value, Value: c.value})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want %q", err, c.want)
		}
	}
	m, err := s.Serialize(&debezium.Record{Topic: "t", KeySchema: key, Key: debezium.StructOf(debezium.Int(1)), ValueSchema: value,
		Value: debezium.StructOf(debezium.Str("x"), debezium.Null)})
	if err != nil {
		t.Fatal(err)
	}
	out := s.Place([]*vstreamv1.EncodedMessage{m}, 0)
	if len(out) != 3 || out[0].Headers[HeaderSubject] != "t-key" || out[1].Headers[HeaderSubject] != "t-value" || out[2] != m {
		t.Errorf("after failed records, the first good one comes with %d messages", len(out))
	}
	if _, decs := decodeStream(t, out); len(decs) != 1 || get(decs[0].value, "a") != "x" || decs[0].keyID != 1 || decs[0].valueID != 2 {
		t.Errorf("decoded %v", decs)
	}
	// A Connect map has no Debezium use and no Avro form here.
	_, err = s.Serialize(&debezium.Record{Topic: "t", ValueSchema: &debezium.Schema{Type: debezium.Map,
		Keys: &debezium.Schema{Type: debezium.String}, Values: &debezium.Schema{Type: debezium.String}}, Value: debezium.Null})
	if err == nil || !strings.Contains(err.Error(), "no Avro form") {
		t.Errorf("map schema: %v", err)
	}
}
