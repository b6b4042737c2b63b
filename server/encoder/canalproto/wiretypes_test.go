package canalproto_test

import (
	"fmt"
	"testing"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/server/encoder"
	"github.com/vstream-cdc/vstream/server/encoder/canalproto"
	"github.com/vstream-cdc/vstream/server/encoder/encodertest"
)

// specField is a field of the format spec's tables: varint (int32, int64, bool, enum) or
// length-delimited (string, bytes, message); msg names the message a field holds.
type specField struct {
	varint   bool
	msg      string
	repeated bool
}

var (
	varintField = specField{varint: true}
	stringField = specField{}
)

func msgField(name string) specField  { return specField{msg: name} }
func listField(name string) specField { return specField{msg: name, repeated: true} }

// canalSpec is formats.md 6.2 and 6.3. storeValue holds the message its entry's entryType
// names.
var canalSpec = map[string]map[int]specField{
	"Packet":   {1: varintField, 2: varintField, 3: varintField, 4: varintField, 5: msgField("Messages")},
	"Messages": {1: varintField, 2: listField("Entry")},
	"Entry":    {1: msgField("Header"), 2: varintField, 3: msgField("storeValue")},
	"Header": {1: varintField, 2: stringField, 3: varintField, 4: varintField, 5: stringField, 6: varintField,
		7: varintField, 8: stringField, 9: stringField, 10: varintField, 11: varintField, 12: listField("Pair"), 13: stringField},
	"Column": {1: varintField, 2: varintField, 3: stringField, 4: varintField, 5: varintField, 6: varintField,
		7: listField("Pair"), 8: stringField, 9: varintField, 10: stringField},
	"RowData":          {1: listField("Column"), 2: listField("Column"), 3: listField("Pair")},
	"RowChange":        {1: varintField, 2: varintField, 10: varintField, 11: stringField, 12: listField("RowData"), 13: listField("Pair"), 14: stringField},
	"TransactionBegin": {1: varintField, 2: stringField, 3: listField("Pair"), 4: varintField},
	"TransactionEnd":   {1: varintField, 2: stringField, 3: listField("Pair")},
	"Pair":             {1: stringField, 2: stringField},
}

// present are the fields the spec says are always set (the *_present oneofs, and Packet's
// type and body).
var present = map[string][]int{
	"Packet":    {2, 3, 4, 5},
	"Messages":  {1},
	"Entry":     {1, 2},
	"Header":    {1, 7},
	"Column":    {6},
	"RowChange": {2, 10},
}

// storeValueOf is the message an entry's storeValue holds, by EntryType.
var storeValueOf = map[uint64]string{1: "TransactionBegin", 2: "RowChange", 3: "TransactionEnd", 5: "Pair"}

// checkSpec checks every field of a message as protoc printed it against the spec, and counts
// the messages seen by name.
func checkSpec(t *testing.T, path, name string, fs []*rawField, seen map[string]int) {
	t.Helper()
	seen[name]++
	spec := canalSpec[name]
	count := map[int]int{}
	for _, f := range fs {
		count[f.num]++
		sf, ok := spec[f.num]
		where := fmt.Sprintf("%s.%d", path, f.num)
		switch {
		case !ok:
			t.Errorf("%s: %s has no field %d", where, name, f.num)
			continue
		case sf.varint && f.kind != rawVarint:
			t.Errorf("%s: want a varint, protoc read wire kind %d", where, f.kind)
			continue
		case !sf.varint && !f.lengthDelimited():
			t.Errorf("%s: want length-delimited, protoc read wire kind %d", where, f.kind)
			continue
		}
		if sf.msg == "" {
			continue
		}
		msg := sf.msg
		if msg == "storeValue" {
			msg = storeValueOf[varint(t, fs, 2)]
			if msg == "" {
				t.Errorf("%s: storeValue of entry type %d", where, varint(t, fs, 2))
				continue
			}
		}
		checkSpec(t, where+"("+msg+")", msg, f.fields(t), seen)
	}
	for num, n := range count {
		if n > 1 && !spec[num].repeated {
			t.Errorf("%s: field %d of %s appears %d times", path, num, name, n)
		}
	}
	for _, num := range present[name] {
		if count[num] == 0 {
			t.Errorf("%s: %s lacks field %d, which is always set", path, name, num)
		}
	}
}

func testEncoder(t *testing.T, opts map[string]string) *canalproto.Encoder {
	t.Helper()
	return encodertest.New(t, canalproto.New, encoder.Params{Database: "shop", Clock: encodertest.Clock(1700000000999)}, opts)
}

var cells = encodertest.Row

func encodeAll(t *testing.T, e *canalproto.Encoder, evs ...*binlogdata.VEvent) []*vstreamv1.EncodedMessage {
	t.Helper()
	var out []*vstreamv1.EncodedMessage
	for _, ev := range evs {
		var err error
		if out, err = e.Encode(out, ev); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestWireTypes decodes the encoder's output with protoc --decode_raw and checks field
// numbers, wire types and presence against formats.md 6.2 and 6.3, then some values.
func TestWireTypes(t *testing.T) {
	fields := []*query.Field{
		{Name: "id", Type: query.Type_INT64, ColumnType: "bigint(20)", Flags: uint32(query.MySqlFlag_PRI_KEY_FLAG)},
		{Name: "b", Type: query.Type_BIT, ColumnType: "bit(3)"},
		{Name: "note", Type: query.Type_VARCHAR, ColumnType: "varchar(10)"},
	}
	source := func(start, end uint64) *binlogdata.EventSource {
		return &binlogdata.EventSource{File: "mysql-bin.000009", StartPos: start, EndPos: end, ServerId: 3, Database: "shop",
			TableId: 88, ThreadId: 12, Xid: 99, GtidSet: "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5"}
	}
	events := []*binlogdata.VEvent{
		{Type: binlogdata.VEventType_BEGIN, Timestamp: 1700000005, EventGtid: "3e11fa47-71ca-11e1-9e33-c80aa9429562:5", Source: source(100, 180)},
		{Type: binlogdata.VEventType_FIELD, FieldEvent: &binlogdata.FieldEvent{TableName: "items", Fields: fields}},
		{Type: binlogdata.VEventType_ROW, Timestamp: 1700000005, Source: source(250, 330), RowEvent: &binlogdata.RowEvent{TableName: "items",
			RowChanges: []*binlogdata.RowChange{{Before: cells("1", "\x05", "UTF-8"), After: cells("1", "\x02", nil)}}}},
		{Type: binlogdata.VEventType_GTID, Gtid: "MySQL56/3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5", EventGtid: "3e11fa47-71ca-11e1-9e33-c80aa9429562:5"},
		{Type: binlogdata.VEventType_COMMIT, Timestamp: 1700000005, Source: source(330, 361)},
		{Type: binlogdata.VEventType_DDL, Timestamp: 1700000006, Statement: "ALTER TABLE items ADD COLUMN x INT", Source: source(361, 470)},
	}
	out := encodeAll(t, testEncoder(t, map[string]string{"gtid_entries": "true"}), events...)
	if len(out) != 2 {
		t.Fatalf("%d messages, want the transaction's and the DDL's", len(out))
	}
	seen := map[string]int{}
	var entries [][]*rawField
	for i, m := range out {
		pkt := decodeRaw(t, m.Value)
		checkSpec(t, fmt.Sprintf("message%d", i), "Packet", pkt, seen)
		if varint(t, pkt, 2) != 1 || varint(t, pkt, 3) != 7 || varint(t, pkt, 4) != 1 || one(t, pkt, 1) != nil {
			t.Errorf("packet version/type/compression/magic: %d %d %d %v", varint(t, pkt, 2), varint(t, pkt, 3), varint(t, pkt, 4), one(t, pkt, 1))
		}
		body := sub(t, pkt, 5)
		if varint(t, body, 1) != uint64(i+1) {
			t.Errorf("batch_id %d, want %d", varint(t, body, 1), i+1)
		}
		for _, e := range all(body, 2) {
			entries = append(entries, e.fields(t))
		}
	}
	for _, name := range []string{"Messages", "Entry", "Header", "Pair", "RowChange", "RowData", "Column", "TransactionBegin", "TransactionEnd"} {
		if seen[name] == 0 {
			t.Errorf("no %s was checked", name)
		}
	}

	var types []uint64
	for _, e := range entries {
		types = append(types, varint(t, e, 2))
	}
	if fmt.Sprint(types) != "[5 1 2 3 2]" {
		t.Fatalf("entry types %v, want GTIDLOG, TRANSACTIONBEGIN, ROWDATA, TRANSACTIONEND, ROWDATA", types)
	}

	// The rows entry, field by field.
	h := sub(t, entries[2], 1)
	if varint(t, h, 1) != 1 || str(t, h, 2) != "mysql-bin.000009" || varint(t, h, 3) != 250 || varint(t, h, 4) != 3 ||
		str(t, h, 5) != "UTF-8" || varint(t, h, 6) != 1700000005000 || varint(t, h, 7) != 2 || str(t, h, 8) != "shop" ||
		str(t, h, 9) != "items" || varint(t, h, 10) != 80 || varint(t, h, 11) != 2 || str(t, h, 13) != "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5" {
		t.Errorf("rows header %v", h)
	}
	props := map[string]string{}
	for _, p := range all(h, 12) {
		props[str(t, p.fields(t), 1)] = str(t, p.fields(t), 2)
	}
	if props["rowsCount"] != "1" {
		t.Errorf("header props %v", props)
	}
	rc := sub(t, entries[2], 3)
	if varint(t, rc, 1) != 88 || varint(t, rc, 2) != 2 || varint(t, rc, 10) != 0 || len(all(rc, 12)) != 1 {
		t.Errorf("RowChange %v", rc)
	}
	rd := sub(t, rc, 12)
	before, after := all(rd, 1), all(rd, 2)
	if len(before) != 3 || len(after) != 3 {
		t.Fatalf("%d before and %d after columns", len(before), len(after))
	}
	type col struct {
		index               uint64
		sqlType             int32
		name                string
		isKey, updated, nul uint64
		value, mysqlType    string
	}
	read := func(f *rawField) col {
		c := f.fields(t)
		return col{varint(t, c, 1), int32(varint(t, c, 2)), str(t, c, 3), varint(t, c, 4), varint(t, c, 5), varint(t, c, 6), str(t, c, 8), str(t, c, 10)}
	}
	wantBefore := []col{{0, -5, "id", 1, 0, 0, "1", "bigint(20)"}, {1, -7, "b", 0, 0, 0, "5", "bit(3)"}, {2, 12, "note", 0, 0, 0, "UTF-8", "varchar(10)"}}
	wantAfter := []col{{0, -5, "id", 1, 0, 0, "1", "bigint(20)"}, {1, -7, "b", 0, 1, 0, "2", "bit(3)"}, {2, 12, "note", 0, 1, 1, "", "varchar(10)"}}
	for i := range wantBefore {
		if got := read(before[i]); got != wantBefore[i] {
			t.Errorf("before column %d: %+v, want %+v", i, got, wantBefore[i])
		}
		if got := read(after[i]); got != wantAfter[i] {
			t.Errorf("after column %d: %+v, want %+v", i, got, wantAfter[i])
		}
	}

	if g := sub(t, entries[0], 3); str(t, g, 1) != "gtid" || str(t, g, 2) != "3e11fa47-71ca-11e1-9e33-c80aa9429562:5" ||
		varint(t, sub(t, entries[0], 1), 11) != 12 {
		t.Errorf("GTIDLOG entry %v", entries[0])
	}
	if tb := sub(t, entries[1], 3); varint(t, tb, 4) != 12 || one(t, sub(t, entries[1], 1), 11) != nil {
		t.Errorf("TRANSACTIONBEGIN entry %v", entries[1])
	}
	if te := sub(t, entries[3], 3); str(t, te, 2) != "99" {
		t.Errorf("TRANSACTIONEND entry %v", entries[3])
	}
	ddl := sub(t, entries[4], 3)
	if varint(t, sub(t, entries[4], 1), 11) != 5 || varint(t, ddl, 2) != 5 || varint(t, ddl, 10) != 1 ||
		str(t, ddl, 11) != "ALTER TABLE items ADD COLUMN x INT" || str(t, ddl, 14) != "shop" {
		t.Errorf("DDL entry %v", entries[4])
	}
}
