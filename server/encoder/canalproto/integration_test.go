package canalproto_test

import (
	"fmt"
	"math/big"
	"os"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/vstream-cdc/vstream/internal/formattest"
)

func TestMain(m *testing.M) { os.Exit(formattest.Main(m)) }

// TestWorkload streams the shared workload as canal protobuf and rebuilds the table from the
// entries, read with protoc alone: --decode_raw for the structure (checked against the spec's
// field tables), --decode with canal's .proto files for the strings.
func TestWorkload(t *testing.T) {
	r := formattest.Run(t, "canal-protobuf", nil)
	t.Logf("%d messages, %d source rows", len(r.Messages), len(r.Want))
	image := map[string]formattest.Row{}
	events := map[string]int{}
	var batch uint64
	var copiedIDs []string
	for i, m := range r.Messages {
		if m.GetFormat() != "canal-protobuf" {
			t.Errorf("message %d format %q", i, m.GetFormat())
		}
		raw := decodeRaw(t, m.GetValue())
		checkSpec(t, fmt.Sprintf("message%d", i), "Packet", raw, map[string]int{})
		rawEntries := all(sub(t, raw, 5), 2)

		pkt := decodeTyped(t, m.GetValue(), "Packet")
		if field(t, pkt, "version") == nil || field(t, pkt, "version").u != 1 || ident(t, pkt, "type") != "MESSAGES" || ident(t, pkt, "compression") != "NONE" {
			t.Errorf("message %d: packet %v", i, pkt)
		}
		body := decodeTyped(t, []byte(text(t, pkt, "body")), "Messages")
		if b := field(t, body, "batch_id").u; b != batch+1 {
			t.Errorf("message %d: batch_id %d after %d", i, b, batch)
		}
		batch = field(t, body, "batch_id").u
		serialized := named(body, "messages")
		if len(serialized) != len(rawEntries) {
			t.Fatalf("message %d: %d entries, --decode_raw saw %d", i, len(serialized), len(rawEntries))
		}
		var types []string
		for j, se := range serialized {
			entry := decodeTyped(t, se.s, "Entry")
			typ := ident(t, entry, "entryType")
			types = append(types, typ)
			if want := map[string]uint64{"TRANSACTIONBEGIN": 1, "ROWDATA": 2, "TRANSACTIONEND": 3}[typ]; varint(t, rawEntries[j].fields(t), 2) != want {
				t.Errorf("message %d entry %d: %s, --decode_raw read type %d", i, j, typ, varint(t, rawEntries[j].fields(t), 2))
			}
			if typ != "ROWDATA" {
				continue
			}
			h := field(t, entry, "header").sub
			rc := decodeTyped(t, []byte(text(t, entry, "storeValue")), "RowChange")
			ev := ident(t, rc, "eventType")
			events[ev]++
			if ident(t, h, "eventType") != ev || text(t, h, "schemaName") != r.Database || text(t, h, "tableName") != formattest.Table ||
				ident(t, h, "sourceType") != "MYSQL" || field(t, h, "version").u != 1 || text(t, h, "serverenCode") != "UTF-8" {
				t.Errorf("message %d: header %v of a %s entry", i, h, ev)
			}
			if ident(t, rc, "isDdl") == "true" {
				if ev != "ALTER" || text(t, rc, "sql") != r.DDL[0] || text(t, rc, "ddlSchemaName") != r.Database || len(types) > 1 || len(serialized) > 1 {
					t.Errorf("message %d: DDL entry %v", i, rc)
				}
				continue
			}
			if ident(t, rc, "isDdl") != "false" {
				t.Errorf("message %d: isDdl not set on a %s entry", i, ev)
			}
			// Copied rows carry the snapshot's position (no event length) and the encode time;
			// binlog rows their event's offsets and binlog seconds.
			copied := field(t, h, "eventLength") == nil
			if text(t, h, "logfileName") == "" || !copied && field(t, h, "executeTime").u%1000 != 0 || copied && ev != "INSERT" {
				t.Errorf("message %d: rows header %v", i, h)
			}
			rawRows := all(sub(t, rawEntries[j].fields(t), 3), 12)
			rows := named(rc, "rowDatas")
			if len(rows) != len(rawRows) {
				t.Fatalf("message %d: %d rows, --decode_raw saw %d", i, len(rows), len(rawRows))
			}
			for k, rd := range rows {
				beforeCols, afterCols := named(rd.sub, "beforeColumns"), named(rd.sub, "afterColumns")
				sameColumns(t, beforeCols, all(rawRows[k].fields(t), 1))
				sameColumns(t, afterCols, all(rawRows[k].fields(t), 2))
				before, after := readColumns(t, beforeCols), readColumns(t, afterCols)
				switch ev {
				case "INSERT":
					image[rowID(t, after)] = after
					if copied {
						copiedIDs = append(copiedIDs, rowID(t, after))
					}
				case "UPDATE":
					delete(image, rowID(t, before))
					image[rowID(t, after)] = after
					checkUpdated(t, beforeCols, afterCols)
				case "DELETE":
					delete(image, rowID(t, before))
				default:
					t.Errorf("message %d: event type %s", i, ev)
				}
			}
		}
		// A packet is a whole transaction, or a DDL.
		txn := len(types) >= 3 && types[0] == "TRANSACTIONBEGIN" && types[len(types)-1] == "TRANSACTIONEND"
		if !txn && !(len(types) == 1 && types[0] == "ROWDATA") {
			t.Errorf("message %d: entry types %v", i, types)
		}
	}
	for _, ev := range []string{"INSERT", "UPDATE", "DELETE", "ALTER"} {
		if events[ev] == 0 {
			t.Errorf("no %s entry; got %v", ev, events)
		}
	}
	if strings.Join(copiedIDs, ",") != strings.Join(r.CopiedIDs, ",") {
		t.Errorf("copied rows %v, want %v", copiedIDs, r.CopiedIDs)
	}
	r.Check(t, image)
}

// rowID is a decoded row's id.
func rowID(t *testing.T, row formattest.Row) string {
	t.Helper()
	id := row["id"]
	if id == nil {
		t.Fatalf("row without an id: %v", row)
	}
	return *id
}

// sameColumns checks what --decode and --decode_raw read of the same columns agree, where
// --decode_raw printed strings as strings.
func sameColumns(t *testing.T, typed, raw []*rawField) {
	t.Helper()
	if len(typed) != len(raw) {
		t.Fatalf("%d columns, --decode_raw saw %d", len(typed), len(raw))
	}
	for i := range typed {
		c, rc := typed[i].sub, raw[i].fields(t)
		for num, name := range map[int]string{3: "name", 8: "value", 10: "mysqlType"} {
			if f := one(t, rc, num); f != nil && f.kind == rawString && string(f.s) != text(t, c, name) {
				t.Errorf("column %d %s: %q, --decode_raw read %q", i, name, text(t, c, name), f.s)
			}
		}
		if sqlType := field(t, c, "sqlType"); sqlType != nil && sqlType.u != varint(t, rc, 2) {
			t.Errorf("column %d sqlType: %d, --decode_raw read %d", i, int64(sqlType.u), int64(varint(t, rc, 2)))
		}
		if (ident(t, c, "isNull") == "true") != (varint(t, rc, 6) == 1) || one(t, rc, 6) == nil {
			t.Errorf("column %d isNull: %s, --decode_raw read %v", i, ident(t, c, "isNull"), one(t, rc, 6))
		}
	}
}

// readColumns turns a RowData's columns into MariaDB's text form, by the conventions canal's
// consumers use (mysqlType tells how a value is written).
func readColumns(t *testing.T, cols []*rawField) formattest.Row {
	t.Helper()
	row := formattest.Row{}
	for i, c := range cols {
		fs := c.sub
		name, mysqlType := text(t, fs, "name"), text(t, fs, "mysqlType")
		if index := field(t, fs, "index"); i > 0 && (index == nil || int(index.u) != i) {
			t.Errorf("column %s at place %d has index %v", name, i, index)
		}
		switch ident(t, fs, "isNull") {
		case "true":
			if text(t, fs, "value") != "" {
				t.Errorf("NULL column %s has value %q", name, text(t, fs, "value"))
			}
			row[name] = nil
		case "false":
			v := fromCanal(t, name, mysqlType, text(t, fs, "value"))
			row[name] = &v
		default:
			t.Errorf("column %s lacks isNull", name)
		}
	}
	return row
}

// checkUpdated checks canal's updated flags: an update's after column is updated exactly when
// its value differs from the before column's; before columns never are.
func checkUpdated(t *testing.T, before, after []*rawField) {
	t.Helper()
	for i := range after {
		b, a := before[i].sub, after[i].sub
		differs := ident(t, b, "isNull") != ident(t, a, "isNull") || text(t, b, "value") != text(t, a, "value")
		if (ident(t, a, "updated") == "true") != differs || ident(t, b, "updated") == "true" {
			t.Errorf("column %s: updated %q/%q, values %q -> %q", text(t, a, "name"), ident(t, b, "updated"), ident(t, a, "updated"),
				text(t, b, "value"), text(t, a, "value"))
		}
	}
}

func fromCanal(t *testing.T, name, mysqlType, s string) string {
	t.Helper()
	base := mysqlType
	if i := strings.IndexByte(base, '('); i >= 0 {
		base = base[:i]
	}
	switch base {
	case "binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob", "geometry":
		// ISO-8859-1 text: each character is one byte.
		b := make([]byte, 0, len(s))
		for _, r := range s {
			if r > 0xff || r == utf8.RuneError {
				t.Fatalf("column %s: %q is not ISO-8859-1 text", name, s)
			}
			b = append(b, byte(r))
		}
		return string(b)
	case "bit":
		n, ok := new(big.Int).SetString(s, 10)
		width, err := strconv.Atoi(strings.TrimSuffix(mysqlType[len("bit("):], ")"))
		if !ok || err != nil {
			t.Fatalf("column %s: bit value %q of %s", name, s, mysqlType)
		}
		return string(n.FillBytes(make([]byte, (width+7)/8)))
	case "enum":
		idx, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("column %s: enum index %q", name, s)
		}
		if idx == 0 {
			return ""
		}
		return labels(mysqlType)[idx-1]
	case "set":
		mask, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("column %s: set mask %q", name, s)
		}
		var parts []string
		for i, l := range labels(mysqlType) {
			if mask&(1<<i) != 0 {
				parts = append(parts, l)
			}
		}
		return strings.Join(parts, ",")
	}
	return s
}

// labels reads the members of "enum('a','b')" (the workload's members hold no quotes or commas).
func labels(columnType string) []string {
	inner := columnType[strings.IndexByte(columnType, '(')+1 : strings.LastIndexByte(columnType, ')')]
	var out []string
	for _, p := range strings.Split(inner, ",") {
		out = append(out, strings.Trim(p, "'"))
	}
	return out
}
