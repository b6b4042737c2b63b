package canalproto

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	canalpb "github.com/vstream-cdc/vstream/gen/canal"
	"github.com/vstream-cdc/vstream/gen/query"
	"github.com/vstream-cdc/vstream/server/encoder"
)

var ordersFields = []*query.Field{
	{Name: "id", Type: query.Type_INT32, ColumnType: "int(11)", Flags: uint32(query.MySqlFlag_NOT_NULL_FLAG | query.MySqlFlag_PRI_KEY_FLAG)},
	{Name: "customer", Type: query.Type_VARCHAR, ColumnType: "varchar(64)", Charset: 45},
	{Name: "amount", Type: query.Type_DECIMAL, ColumnType: "decimal(10,2)", Decimals: 2},
}

func src(file string, start, end uint64) *binlogdata.EventSource {
	return &binlogdata.EventSource{File: file, StartPos: start, EndPos: end, ServerId: 7, Database: "shop"}
}

// txnEvents is one binlog transaction of the orders table as the stream sends it.
func txnEvents(xid uint64, changes ...*binlogdata.RowChange) []*binlogdata.VEvent {
	begin := src("mariadb-bin.000003", 1000, 1080)
	begin.ThreadId, begin.GtidSet = 42, "0-7-100"
	rows := src("mariadb-bin.000003", 1180, 1260)
	rows.TableId, rows.RowsEventOrdinal = 71, 1
	commit := src("mariadb-bin.000003", 1260, 1291)
	commit.Xid = xid
	return []*binlogdata.VEvent{
		{Type: binlogdata.VEventType_BEGIN, Timestamp: 1700000001, EventGtid: "0-7-100", Source: begin},
		{Type: binlogdata.VEventType_FIELD, EventGtid: "0-7-100", Source: src("mariadb-bin.000003", 1080, 1180),
			FieldEvent: &binlogdata.FieldEvent{TableName: "orders", Fields: ordersFields, EnumSetStringValues: true}},
		{Type: binlogdata.VEventType_ROW, Timestamp: 1700000001, EventGtid: "0-7-100", Source: rows,
			RowEvent: &binlogdata.RowEvent{TableName: "orders", RowChanges: changes}},
		{Type: binlogdata.VEventType_GTID, Timestamp: 1700000001, Gtid: "MariaDB/0-7-100", EventGtid: "0-7-100"},
		{Type: binlogdata.VEventType_COMMIT, Timestamp: 1700000001, EventGtid: "0-7-100", Source: commit},
		{Type: binlogdata.VEventType_VGTID},
	}
}

func TestTransactionPacket(t *testing.T) {
	e := newEncoder(t, nil)
	out := encode(t, e, txnEvents(555,
		&binlogdata.RowChange{After: row("1", "ann", "10.50")},
		&binlogdata.RowChange{After: row("2", nil, "0.00")})...)
	if len(out) != 1 {
		t.Fatalf("%d messages for one transaction, want 1", len(out))
	}
	m := out[0]
	if m.Format != Name || string(m.Key) != "shop" {
		t.Errorf("format %q key %q", m.Format, m.Key)
	}
	p, msgs, ents := decodePacket(t, m.Value)
	if p.GetVersion() != 1 || p.GetType() != canalpb.PacketType_MESSAGES || p.GetCompression() != canalpb.Compression_NONE ||
		p.GetMagicNumberPresent() != nil {
		t.Errorf("packet %v", p)
	}
	if msgs.GetBatchId() != 1 {
		t.Errorf("batch_id %d, want 1", msgs.GetBatchId())
	}
	var types []canalpb.EntryType
	for _, d := range ents {
		types = append(types, d.entry.GetEntryType())
	}
	if want := []canalpb.EntryType{canalpb.EntryType_TRANSACTIONBEGIN, canalpb.EntryType_ROWDATA, canalpb.EntryType_TRANSACTIONEND}; !equal(types, want) {
		t.Fatalf("entries %v, want %v", types, want)
	}

	begin, rows, end := ents[0], ents[1], ents[2]
	if tb := begin.store.(*canalpb.TransactionBegin); tb.GetThreadId() != 42 || tb.GetTransactionId() != "" {
		t.Errorf("TransactionBegin %v", tb)
	}
	if te := end.store.(*canalpb.TransactionEnd); te.GetTransactionId() != "555" {
		t.Errorf("TransactionEnd %v", te)
	}
	for _, c := range []struct {
		name           string
		h              *canalpb.Header
		offset, length int64
		schema, table  string
		eventType      canalpb.EventType
		hasEventType   bool
		props          map[string]string
	}{
		{"begin", begin.entry.GetHeader(), 1000, 80, "", "", 0, false, map[string]string{"curtGtid": "0-7-100"}},
		{"rows", rows.entry.GetHeader(), 1180, 80, "shop", "orders", canalpb.EventType_INSERT, true, map[string]string{"curtGtid": "0-7-100", "rowsCount": "2"}},
		{"end", end.entry.GetHeader(), 1260, 31, "", "", 0, false, map[string]string{"curtGtid": "0-7-100"}},
	} {
		h := c.h
		if h.GetVersionPresent() == nil || h.GetVersion() != 1 || h.GetSourceTypePresent() == nil || h.GetSourceType() != canalpb.Type_MYSQL ||
			h.GetLogfileName() != "mariadb-bin.000003" || h.GetLogfileOffset() != c.offset || h.GetEventLength() != c.length ||
			h.GetServerId() != 7 || h.GetServerenCode() != "UTF-8" || h.GetExecuteTime() != 1700000001000 ||
			h.GetSchemaName() != c.schema || h.GetTableName() != c.table || h.GetGtid() != "0-7-100" {
			t.Errorf("%s header %v", c.name, h)
		}
		if (h.GetEventTypePresent() != nil) != c.hasEventType || h.GetEventType() != c.eventType {
			t.Errorf("%s header eventType %v present %v", c.name, h.GetEventType(), h.GetEventTypePresent() != nil)
		}
		if got := pairs(h.GetProps()); !equalMap(got, c.props) {
			t.Errorf("%s header props %v, want %v", c.name, got, c.props)
		}
	}

	rc := rows.rowChange()
	if rc.GetTableId() != 71 || rc.GetEventTypePresent() == nil || rc.GetEventType() != canalpb.EventType_INSERT ||
		rc.GetIsDdlPresent() == nil || rc.GetIsDdl() || rc.GetSql() != "" || len(rc.GetRowDatas()) != 2 {
		t.Fatalf("RowChange %v", rc)
	}
	for _, rd := range rc.GetRowDatas() {
		if len(rd.GetBeforeColumns()) != 0 || len(rd.GetAfterColumns()) != 3 {
			t.Fatalf("insert RowData %v", rd)
		}
	}
	second := rc.GetRowDatas()[1].GetAfterColumns()
	want := []*canalpb.Column{
		{Index: 0, SqlType: 4, Name: "id", IsKey: true, Updated: true, IsNullPresent: &canalpb.Column_IsNull{IsNull: false}, Value: "2", MysqlType: "int(11)"},
		{Index: 1, SqlType: 12, Name: "customer", Updated: true, IsNullPresent: &canalpb.Column_IsNull{IsNull: true}, MysqlType: "varchar(64)"},
		{Index: 2, SqlType: 3, Name: "amount", Updated: true, IsNullPresent: &canalpb.Column_IsNull{IsNull: false}, Value: "0.00", MysqlType: "decimal(10,2)"},
	}
	for i := range want {
		if !proto.Equal(second[i], want[i]) {
			t.Errorf("insert column %d = %v, want %v", i, second[i], want[i])
		}
	}

	// The next transaction is the next batch.
	out = encode(t, e, txnEvents(556, &binlogdata.RowChange{Before: row("1", "ann", "10.50")})...)
	if _, msgs, _ := decodePacket(t, out[0].Value); msgs.GetBatchId() != 2 {
		t.Errorf("second batch_id %d, want 2", msgs.GetBatchId())
	}
}

func TestUpdateAndDeleteColumns(t *testing.T) {
	fields := []*query.Field{
		{Name: "id", Type: query.Type_UINT64, ColumnType: "bigint(20) unsigned", Flags: uint32(query.MySqlFlag_PRI_KEY_FLAG)},
		{Name: "f", Type: query.Type_FLOAT32, ColumnType: "float"},
		{Name: "d", Type: query.Type_FLOAT64, ColumnType: "double"},
		{Name: "b", Type: query.Type_BIT, ColumnType: "bit(10)"},
		{Name: "e", Type: query.Type_ENUM, ColumnType: "enum('x','y')"},
		{Name: "s", Type: query.Type_SET, ColumnType: "set('a','b','c')"},
		{Name: "bin", Type: query.Type_BINARY, ColumnType: "binary(4)", Charset: 63},
		{Name: "ts", Type: query.Type_TIMESTAMP, ColumnType: "timestamp(3)", Decimals: 3},
		{Name: "j", Type: query.Type_JSON, ColumnType: "json"},
		{Name: "n", Type: query.Type_VARCHAR, ColumnType: "varchar(5)"},
	}
	e := newEncoder(t, map[string]string{"render_zone": "Asia/Shanghai", "packet": "none"})
	before := row("18446744073709551615", "8.6E+01", "1.2510357E+07", "\x02\xaa", "y", "a,c", "\x01\xff\x00\x00", "2024-01-01 00:00:00.500", nil, nil)
	after := row("18446744073709551615", "8.6E+01", "1.5E-05", "\x02\xaa", "", "", "\x01\xff\x00\x00", "2024-01-01 00:00:00.500", nil, "x")
	out := encode(t, e,
		&binlogdata.VEvent{Type: binlogdata.VEventType_FIELD, FieldEvent: &binlogdata.FieldEvent{TableName: "t", Fields: fields}},
		&binlogdata.VEvent{Type: binlogdata.VEventType_ROW, Timestamp: 5, Source: src("b.1", 4, 90),
			RowEvent: &binlogdata.RowEvent{TableName: "t", RowChanges: []*binlogdata.RowChange{{Before: before, After: after}}}},
		&binlogdata.VEvent{Type: binlogdata.VEventType_ROW, Timestamp: 6, Source: src("b.1", 90, 150),
			RowEvent: &binlogdata.RowEvent{TableName: "t", RowChanges: []*binlogdata.RowChange{{Before: after}}}},
		&binlogdata.VEvent{Type: binlogdata.VEventType_COMMIT, Timestamp: 6, Source: src("b.1", 150, 181)},
	)
	if len(out) != 3 {
		t.Fatalf("%d messages, want update, delete and end entries", len(out))
	}
	upd := decodeEntry(t, out[0].Value)
	if upd.entry.GetHeader().GetEventType() != canalpb.EventType_UPDATE || upd.rowChange().GetEventType() != canalpb.EventType_UPDATE {
		t.Fatalf("update entry %v", upd.entry.GetHeader())
	}
	if string(out[0].Key) != "shop.t:18446744073709551615" {
		t.Errorf("update key %q", out[0].Key)
	}
	rd := upd.rowChange().GetRowDatas()[0]
	type col struct {
		value   string
		null    bool
		sqlType int32
		updated bool
	}
	wantBefore := []col{{"18446744073709551615", false, 3, false}, {"86.0", false, 7, false}, {"1.2510357E7", false, 8, false},
		{"682", false, -7, false}, {"2", false, 4, false}, {"5", false, -7, false}, {"\u0001\u00ff", false, 2004, false},
		{"2024-01-01 08:00:00.500", false, 93, false}, {"", true, 1111, false}, {"", true, 12, false}}
	wantAfter := []col{{"18446744073709551615", false, 3, false}, {"86.0", false, 7, false}, {"1.5E-5", false, 8, true},
		{"682", false, -7, false}, {"0", false, 4, true}, {"0", false, -7, true}, {"\u0001\u00ff", false, 2004, false},
		{"2024-01-01 08:00:00.500", false, 93, false}, {"", true, 1111, false}, {"x", false, 12, true}}
	check := func(what string, cols []*canalpb.Column, want []col) {
		t.Helper()
		if len(cols) != len(want) {
			t.Fatalf("%s: %d columns, want %d", what, len(cols), len(want))
		}
		for i, c := range cols {
			got := col{c.GetValue(), c.GetIsNull(), c.GetSqlType(), c.GetUpdated()}
			if got != want[i] || c.GetIsNullPresent() == nil || c.GetIndex() != int32(i) || c.GetName() != fields[i].Name ||
				c.GetMysqlType() != fields[i].ColumnType || c.GetIsKey() != (i == 0) {
				t.Errorf("%s column %d (%s): %+v, want %+v (%v)", what, i, fields[i].Name, got, want[i], c)
			}
		}
	}
	check("update before", rd.GetBeforeColumns(), wantBefore)
	check("update after", rd.GetAfterColumns(), wantAfter)

	del := decodeEntry(t, out[1].Value)
	if del.entry.GetHeader().GetEventType() != canalpb.EventType_DELETE || len(del.rowChange().GetRowDatas()[0].GetAfterColumns()) != 0 {
		t.Fatalf("delete entry %v", del.entry)
	}
	for i := range wantAfter {
		wantAfter[i].updated = false
	}
	check("delete before", del.rowChange().GetRowDatas()[0].GetBeforeColumns(), wantAfter)
	if h := del.entry.GetHeader(); h.GetExecuteTime() != 6000 || h.GetLogfileOffset() != 90 || h.GetEventLength() != 60 {
		t.Errorf("delete header %v", h)
	}
}

func TestDDL(t *testing.T) {
	ddlSrc := src("b.2", 500, 620)
	ddlSrc.GtidSet, ddlSrc.ThreadId = "0-7-101", 42
	for _, c := range []struct {
		sql, session                 string
		eventType                    canalpb.EventType
		schema, table, ddlSchemaName string
	}{
		{"ALTER TABLE orders ADD COLUMN note VARCHAR(10)", "shop", canalpb.EventType_ALTER, "shop", "orders", "shop"},
		{"CREATE TABLE t2 (id INT PRIMARY KEY)", "shop", canalpb.EventType_CREATE, "shop", "t2", "shop"},
		{"DROP TABLE shop.t2", "other", canalpb.EventType_ERASE, "shop", "t2", "other"},
		{"TRUNCATE TABLE orders", "shop", canalpb.EventType_TRUNCATE, "shop", "orders", "shop"},
		{"RENAME TABLE orders TO orders_old", "shop", canalpb.EventType_RENAME, "shop", "orders", "shop"},
		{"CREATE INDEX i ON orders (customer)", "shop", canalpb.EventType_CINDEX, "shop", "orders", "shop"},
		{"ALTER TABLE orders DROP INDEX i", "shop", canalpb.EventType_DINDEX, "shop", "orders", "shop"},
		{"CREATE DATABASE x", "", canalpb.EventType_QUERY, "shop", "", ""},
	} {
		e := newEncoder(t, nil)
		s := proto.CloneOf(ddlSrc)
		s.Database = c.session
		out := encode(t, e,
			&binlogdata.VEvent{Type: binlogdata.VEventType_GTID, Timestamp: 1700000002, Gtid: "MariaDB/0-7-101", EventGtid: "0-7-101"},
			&binlogdata.VEvent{Type: binlogdata.VEventType_DDL, Timestamp: 1700000002, Statement: c.sql, EventGtid: "0-7-101", Source: s},
			&binlogdata.VEvent{Type: binlogdata.VEventType_VGTID})
		if len(out) != 1 {
			t.Fatalf("%s: %d messages", c.sql, len(out))
		}
		_, msgs, ents := decodePacket(t, out[0].Value)
		if len(ents) != 1 || msgs.GetBatchId() != 1 {
			t.Fatalf("%s: %d entries", c.sql, len(ents))
		}
		h, rc := ents[0].entry.GetHeader(), ents[0].rowChange()
		if ents[0].entry.GetEntryType() != canalpb.EntryType_ROWDATA || h.GetEventType() != c.eventType || h.GetSchemaName() != c.schema ||
			h.GetTableName() != c.table || h.GetLogfileOffset() != 500 || h.GetEventLength() != 120 || h.GetExecuteTime() != 1700000002000 ||
			h.GetGtid() != "0-7-101" {
			t.Errorf("%s: header %v", c.sql, h)
		}
		if rc.GetEventType() != c.eventType || rc.GetIsDdlPresent() == nil || !rc.GetIsDdl() || rc.GetSql() != c.sql ||
			rc.GetDdlSchemaName() != c.ddlSchemaName || len(rc.GetRowDatas()) != 0 || rc.GetTableId() != 0 {
			t.Errorf("%s: RowChange %v", c.sql, rc)
		}
	}
}

// copyChunk is a copy chunk as the stream sends it: snapshot source, no binlog time.
func copyChunk() []*binlogdata.VEvent {
	snap := &binlogdata.EventSource{File: "b.3", StartPos: 4242, EndPos: 4242, Database: "shop", GtidSet: "0-7-99", Snapshot: true}
	fieldSrc := proto.CloneOf(snap)
	fieldSrc.CreateTable = "CREATE TABLE `orders` (...)"
	return []*binlogdata.VEvent{
		{Type: binlogdata.VEventType_BEGIN, Source: snap},
		{Type: binlogdata.VEventType_FIELD, Source: fieldSrc, FieldEvent: &binlogdata.FieldEvent{TableName: "orders", Fields: ordersFields}},
		{Type: binlogdata.VEventType_ROW, Source: snap, RowEvent: &binlogdata.RowEvent{TableName: "orders",
			RowChanges: []*binlogdata.RowChange{{After: row("1", "ann", "1.00")}, {After: row("2", "bob", "2.00")}}}},
		{Type: binlogdata.VEventType_LASTPK},
		{Type: binlogdata.VEventType_COMMIT},
		{Type: binlogdata.VEventType_VGTID},
	}
}

func TestSnapshotRows(t *testing.T) {
	out := encode(t, newEncoder(t, nil), copyChunk()...)
	if len(out) != 1 {
		t.Fatalf("%d messages for a copy chunk", len(out))
	}
	_, _, ents := decodePacket(t, out[0].Value)
	if len(ents) != 3 {
		t.Fatalf("%d entries", len(ents))
	}
	for _, d := range ents {
		h := d.entry.GetHeader()
		if h.GetLogfileName() != "b.3" || h.GetLogfileOffset() != 4242 || h.GetEventLength() != 0 || h.GetExecuteTime() != clockMs ||
			h.GetGtid() != "0-7-99" || len(pairs(h.GetProps())) != 0 && d.entry.GetEntryType() != canalpb.EntryType_ROWDATA {
			t.Errorf("%v header %v", d.entry.GetEntryType(), h)
		}
	}
	rc := ents[1].rowChange()
	if rc.GetEventType() != canalpb.EventType_INSERT || len(rc.GetRowDatas()) != 2 || rc.GetRowDatas()[1].GetAfterColumns()[1].GetValue() != "bob" {
		t.Errorf("copied rows %v", rc)
	}
	if te := ents[2].store.(*canalpb.TransactionEnd); te.GetTransactionId() != "0" {
		t.Errorf("copy chunk end %v", te)
	}

	if out := encode(t, newEncoder(t, map[string]string{"snapshot_as_insert": "false"}), copyChunk()...); len(out) != 0 {
		t.Errorf("snapshot_as_insert=false: %d messages", len(out))
	}
}

func TestPacking(t *testing.T) {
	events := txnEvents(9, &binlogdata.RowChange{After: row("3", "cy", "3.00")}, &binlogdata.RowChange{After: row("4", "di", "4.00")})
	// A delete in the same rows event splits the entry: canal's entries have one event type.
	events[2].RowEvent.RowChanges = append(events[2].RowEvent.RowChanges, &binlogdata.RowChange{Before: row("1", "ann", "1.00")})
	type msg struct {
		entries []canalpb.EntryType
		key     string
	}
	B, R, E, G := canalpb.EntryType_TRANSACTIONBEGIN, canalpb.EntryType_ROWDATA, canalpb.EntryType_TRANSACTIONEND, canalpb.EntryType_GTIDLOG
	for _, c := range []struct {
		name string
		opts map[string]string
		want []msg
	}{
		{"transaction", nil, []msg{{[]canalpb.EntryType{B, R, R, E}, "shop"}}},
		{"filtered", map[string]string{"filter_transaction_entries": "true"}, []msg{{[]canalpb.EntryType{R, R}, "shop"}}},
		{"gtid first", map[string]string{"gtid_entries": "true"}, []msg{{[]canalpb.EntryType{G, B, R, R, E}, "shop"}}},
		{"entry", map[string]string{"packet": "entry"}, []msg{{[]canalpb.EntryType{B}, "shop"}, {[]canalpb.EntryType{R}, "shop.orders:3"},
			{[]canalpb.EntryType{R}, "shop.orders:1"}, {[]canalpb.EntryType{E}, "shop"}}},
		{"entry gtid", map[string]string{"packet": "entry", "gtid_entries": "true", "filter_transaction_entries": "true"},
			[]msg{{[]canalpb.EntryType{R}, "shop.orders:3"}, {[]canalpb.EntryType{R}, "shop.orders:1"}, {[]canalpb.EntryType{G}, "shop"}}},
		{"split", map[string]string{"max_packet_bytes": "100"}, []msg{{[]canalpb.EntryType{B, R, R}, "shop"}, {[]canalpb.EntryType{E}, "shop"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := encode(t, newEncoder(t, c.opts), events...)
			if len(out) != len(c.want) {
				t.Fatalf("%d messages, want %d", len(out), len(c.want))
			}
			for i, m := range out {
				_, msgs, ents := decodePacket(t, m.Value)
				var got []canalpb.EntryType
				for _, d := range ents {
					got = append(got, d.entry.GetEntryType())
				}
				if !equal(got, c.want[i].entries) || string(m.Key) != c.want[i].key || msgs.GetBatchId() != int64(i+1) {
					t.Errorf("message %d: entries %v key %q batch %d, want %v key %q batch %d", i, got, m.Key, msgs.GetBatchId(),
						c.want[i].entries, c.want[i].key, i+1)
				}
				for _, d := range ents {
					if d.entry.GetEntryType() == G {
						if p := d.store.(*canalpb.Pair); p.GetKey() != "gtid" || p.GetValue() != "0-7-100" ||
							d.entry.GetHeader().GetEventType() != canalpb.EventType_GTID {
							t.Errorf("GTIDLOG %v %v", d.entry.GetHeader(), p)
						}
					}
				}
			}
		})
	}

	// packet=none: bare entries, the same ones.
	out := encode(t, newEncoder(t, map[string]string{"packet": "none"}), events...)
	entries := encode(t, newEncoder(t, map[string]string{"packet": "entry"}), events...)
	if len(out) != len(entries) {
		t.Fatalf("%d bare entries, %d packets", len(out), len(entries))
	}
	for i := range out {
		_, msgs, _ := decodePacket(t, entries[i].Value)
		if string(out[i].Value) != string(msgs.GetMessages()[0]) || string(out[i].Key) != string(entries[i].Key) {
			t.Errorf("bare entry %d differs from the packet's", i)
		}
	}
}

// Transactions that change no streamed row are not sent, nor is what precedes an OTHER event.
func TestEmptyTransactions(t *testing.T) {
	events := txnEvents(3)
	events = append(events,
		&binlogdata.VEvent{Type: binlogdata.VEventType_GTID, Gtid: "MariaDB/0-7-102", EventGtid: "0-7-102"},
		&binlogdata.VEvent{Type: binlogdata.VEventType_OTHER, Statement: "GRANT ALL ON x.* TO y"})
	for _, opts := range []map[string]string{nil, {"packet": "entry", "gtid_entries": "true"}, {"packet": "none"}} {
		if out := encode(t, newEncoder(t, opts), events...); len(out) != 0 {
			t.Errorf("%v: %d messages for an empty transaction", opts, len(out))
		}
	}
}

// The bytes are protobuf's canonical encoding as canal's Java writer makes it: each message's
// fields in field-number order, minimal lengths, nothing the generated types do not know, and
// reading them back gives the same message.
func TestCanonicalRoundTrip(t *testing.T) {
	long := strings.Repeat("é", 300) // content lengths past one length byte
	events := txnEvents(1, &binlogdata.RowChange{After: row("1", long, "1.00")},
		&binlogdata.RowChange{After: row("-2", "", "-0.01")})
	events = append(events, &binlogdata.VEvent{Type: binlogdata.VEventType_DDL, Timestamp: 9, Statement: "ALTER TABLE orders ADD COLUMN " + long + " INT",
		Source: src("b", 1, 2)})
	for _, opts := range []map[string]string{nil, {"gtid_entries": "true"}, {"packet": "none"}} {
		for _, m := range encode(t, newEncoder(t, opts), events...) {
			var wire [][]byte
			var msgs []proto.Message
			if opts["packet"] == "none" {
				d := decodeEntry(t, m.Value)
				msgs = append(msgs, d.entry, d.store)
				wire = append(wire, m.Value, d.entry.GetStoreValue())
			} else {
				p, ms, ents := decodePacket(t, m.Value)
				msgs = append(msgs, p, ms)
				wire = append(wire, m.Value, p.GetBody())
				for i, d := range ents {
					msgs = append(msgs, d.entry, d.store)
					wire = append(wire, ms.GetMessages()[i], d.entry.GetStoreValue())
				}
			}
			for i, msg := range msgs {
				if proto.Size(msg) != len(wire[i]) {
					t.Errorf("%T: %d bytes, protobuf's size of what they decode to is %d", msg, len(wire[i]), proto.Size(msg))
				}
				inOrder(t, msg.ProtoReflect().Descriptor(), wire[i])
				noUnknown(t, msg.ProtoReflect())
				again := msg.ProtoReflect().New().Interface()
				b, err := proto.Marshal(msg)
				if err == nil {
					err = proto.Unmarshal(b, again)
				}
				if err != nil || !proto.Equal(msg, again) {
					t.Errorf("%T does not survive a round trip: %v", msg, err)
				}
			}
		}
	}
}

// inOrder checks that a message's fields, and those of the messages inside it, come in
// field-number order.
func inOrder(t *testing.T, md protoreflect.MessageDescriptor, b []byte) {
	t.Helper()
	last := protowire.Number(0)
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			t.Fatalf("%s: bad tag", md.FullName())
		}
		if num < last {
			t.Errorf("%s: field %d after field %d", md.FullName(), num, last)
		}
		last = num
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			t.Fatalf("%s: bad field %d", md.FullName(), num)
		}
		if fd := md.Fields().ByNumber(num); fd != nil && fd.Message() != nil && typ == protowire.BytesType {
			v, _ := protowire.ConsumeBytes(b[n:])
			inOrder(t, fd.Message(), v)
		}
		b = b[n+m:]
	}
}

func noUnknown(t *testing.T, m protoreflect.Message) {
	t.Helper()
	if len(m.GetUnknown()) > 0 {
		t.Errorf("%s has unknown fields %x", m.Descriptor().FullName(), m.GetUnknown())
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.Message() == nil:
		case fd.IsList():
			for i := 0; i < v.List().Len(); i++ {
				noUnknown(t, v.List().Get(i).Message())
			}
		default:
			noUnknown(t, v.Message())
		}
		return true
	})
}

func TestErrors(t *testing.T) {
	e := newEncoder(t, nil)
	_, err := e.Encode(nil, &binlogdata.VEvent{Type: binlogdata.VEventType_ROW, RowEvent: &binlogdata.RowEvent{TableName: "nope"}})
	if err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("ROW before FIELD: %v", err)
	}
	events := txnEvents(1, &binlogdata.RowChange{After: row("1", "a", "x")})
	events[1].FieldEvent.Fields = []*query.Field{ordersFields[0], ordersFields[1], {Name: "amount", Type: query.Type_FLOAT64, ColumnType: "double"}}
	out, err := e.Encode(nil, events[0])
	for _, ev := range events[1:3] {
		if err == nil {
			out, err = e.Encode(out, ev)
		}
	}
	if err == nil || !strings.Contains(err.Error(), "amount") {
		t.Fatalf("bad double: %v", err)
	}
	// The failed rows event left nothing behind: the transaction still ends cleanly.
	out, err = e.Encode(out, events[4])
	if err != nil || len(out) != 0 {
		t.Errorf("after a failed row: %d messages, %v", len(out), err)
	}

	for opts, want := range map[string]map[string]string{
		"transaction, entry, none": {"packet": "batch"},
		"max_packet_bytes":         {"max_packet_bytes": "0"},
		"want true or false":       {"gtid_entries": "yes"},
		"render_zone":              {"render_zone": "Nowhere/Town"},
	} {
		o := encoder.NewOptions(want)
		if _, err := New(encoder.Params{Options: o}); err == nil || !strings.Contains(err.Error(), opts) {
			t.Errorf("options %v: %v", want, err)
		}
	}
	o := encoder.NewOptions(map[string]string{"colour": "blue"})
	if _, err := New(encoder.Params{Options: o}); err != nil {
		t.Fatal(err)
	}
	if err := o.Unknown(); err == nil || !strings.Contains(err.Error(), "filter_transaction_entries") {
		t.Errorf("unknown option: %v", err)
	}
}

func pairs(ps []*canalpb.Pair) map[string]string {
	m := map[string]string{}
	for _, p := range ps {
		m[p.GetKey()] = p.GetValue()
	}
	return m
}

func equal[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func equalMap(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// A column that a NOBLOB or MINIMAL row image left out (data_columns) is left out of
// afterColumns, as canal's parser lists only the columns a binlog row holds.
func TestColumnsNotLogged(t *testing.T) {
	fields := []*query.Field{
		{Name: "id", Type: query.Type_INT32, ColumnType: "int(11)", Flags: uint32(query.MySqlFlag_PRI_KEY_FLAG)},
		{Name: "blb", Type: query.Type_BLOB, ColumnType: "blob", Charset: 63},
		{Name: "val", Type: query.Type_VARCHAR, ColumnType: "varchar(4)"},
	}
	out := encode(t, newEncoder(t, map[string]string{"packet": "none"}),
		&binlogdata.VEvent{Type: binlogdata.VEventType_FIELD, FieldEvent: &binlogdata.FieldEvent{TableName: "t", Fields: fields}},
		&binlogdata.VEvent{Type: binlogdata.VEventType_ROW, Timestamp: 5, Source: src("b.1", 4, 90),
			RowEvent: &binlogdata.RowEvent{TableName: "t", RowChanges: []*binlogdata.RowChange{{Before: row("1", nil, "aaa"), After: row("1", nil, "bbb"),
				DataColumns: &binlogdata.RowChange_Bitmap{Count: 3, Cols: []byte{0b101}}}}}},
		&binlogdata.VEvent{Type: binlogdata.VEventType_COMMIT, Timestamp: 6, Source: src("b.1", 90, 120)},
	)
	rd := decodeEntry(t, out[0].Value).rowChange().GetRowDatas()[0]
	var names []string
	for _, c := range rd.GetAfterColumns() {
		names = append(names, c.GetName())
	}
	if len(rd.GetBeforeColumns()) != 3 || strings.Join(names, ",") != "id,val" {
		t.Errorf("before has %d columns, after has %v; want 3 and id,val", len(rd.GetBeforeColumns()), names)
	}
}
