package render

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/sqltypes"
)

func TestUseColor(t *testing.T) {
	tests := []struct {
		name     string
		terminal bool
		env      map[string]string
		want     bool
	}{
		{"terminal", true, nil, true},
		{"pipe", false, nil, false},
		{"NO_COLOR on a terminal", true, map[string]string{"NO_COLOR": "1"}, false},
		{"NO_COLOR piped", false, map[string]string{"NO_COLOR": "1"}, false},
		{"empty NO_COLOR is unset", true, map[string]string{"NO_COLOR": ""}, true},
		{"dumb terminal", true, map[string]string{"TERM": "dumb"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := UseColor(tt.terminal, func(k string) string { return tt.env[k] }); got != tt.want {
				t.Errorf("UseColor = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDefaultAndParseOutput(t *testing.T) {
	if DefaultOutput(true) != Text || DefaultOutput(false) != JSON {
		t.Errorf("defaults: terminal %s, pipe %s", DefaultOutput(true), DefaultOutput(false))
	}
	for _, o := range Outputs {
		if got, err := ParseOutput(string(o)); err != nil || got != o {
			t.Errorf("ParseOutput(%s) = %s, %v", o, got, err)
		}
	}
	if _, err := ParseOutput("yaml"); err == nil || !strings.Contains(err.Error(), "want text, json or protojson") {
		t.Errorf("ParseOutput(yaml) = %v", err)
	}
}

// TestValues is table-driven over every sqltypes kind: the JSON value and the text of a cell.
func TestValues(t *testing.T) {
	const latin1 = 8 // latin1_swedish_ci
	tests := []struct {
		kind    sqltypes.Kind
		charset uint32
		cell    string
		json    string
		text    string
	}{
		{sqltypes.KindInt8, 0, "-128", `-128`, `-128`},
		{sqltypes.KindUint8, 0, "255", `255`, `255`},
		{sqltypes.KindInt16, 0, "-32768", `-32768`, `-32768`},
		{sqltypes.KindUint16, 0, "65535", `65535`, `65535`},
		{sqltypes.KindInt24, 0, "-8388608", `-8388608`, `-8388608`},
		{sqltypes.KindUint24, 0, "16777215", `16777215`, `16777215`},
		{sqltypes.KindInt32, 0, "-2147483648", `-2147483648`, `-2147483648`},
		{sqltypes.KindUint32, 0, "4294967295", `4294967295`, `4294967295`},
		{sqltypes.KindInt64, 0, "9007199254740992", `9007199254740992`, `9007199254740992`},
		{sqltypes.KindInt64, 0, "-9007199254740993", `"-9007199254740993"`, `-9007199254740993`},
		{sqltypes.KindUint64, 0, "18446744073709551615", `"18446744073709551615"`, `18446744073709551615`},
		{sqltypes.KindFloat32, 0, "1.100000023841858", `1.1`, `1.1`},
		{sqltypes.KindFloat64, 0, "1.25E+00", `1.25`, `1.25`},
		{sqltypes.KindFloat64, 0, "-1e300", `-1e+300`, `-1e+300`},
		{sqltypes.KindDecimal, 0, "-12.50", `"-12.50"`, `-12.50`},
		{sqltypes.KindYear, 0, "2024", `2024`, `2024`},
		{sqltypes.KindDate, 0, "2024-02-29", `"2024-02-29"`, `"2024-02-29"`},
		{sqltypes.KindDateTime, 0, "2024-02-29 01:02:03.500", `"2024-02-29 01:02:03.500"`, `"2024-02-29 01:02:03.500"`},
		{sqltypes.KindTimestamp, 0, "2024-02-29 01:02:03", `"2024-02-29 01:02:03"`, `"2024-02-29 01:02:03"`},
		{sqltypes.KindTime, 0, "-838:59:59", `"-838:59:59"`, `"-838:59:59"`},
		{sqltypes.KindChar, 45, "ab", `"ab"`, `"ab"`},
		{sqltypes.KindVarChar, 45, "say \"hi\"", `"say \"hi\""`, `"say \"hi\""`},
		{sqltypes.KindVarChar, latin1, "caf\xe9", `"café"`, `"café"`},
		{sqltypes.KindText, 45, "line\nbreak", `"line\nbreak"`, `"line\nbreak"`},
		{sqltypes.KindText, 45, "bell\x07 tab\t back\\", `"bell\u0007 tab\t back\\"`, `"bell\a tab\t back\\"`},
		{sqltypes.KindVarChar, 45, "a\xffb€", `"a\ufffdb€"`, `"a\xffb€"`},
		{sqltypes.KindBinary, 63, "\x00\xff", `"AP8="`, `0x00ff`},
		{sqltypes.KindVarBinary, 63, "ab", `"YWI="`, `0x6162`},
		{sqltypes.KindBlob, 63, "\x01", `"AQ=="`, `0x01`},
		{sqltypes.KindBit, 63, "\x01\x02", `258`, `258`},
		{sqltypes.KindBit, 63, "\xff\xff\xff\xff\xff\xff\xff\xff", `"18446744073709551615"`, `18446744073709551615`},
		{sqltypes.KindEnum, 45, "red", `"red"`, `"red"`},
		{sqltypes.KindSet, 45, "a,b", `"a,b"`, `"a,b"`},
		{sqltypes.KindJSON, 63, `{"a": [1, 2]}`, `{"a":[1,2]}`, `{"a": [1, 2]}`},
		{sqltypes.KindGeometry, 63, "\x00\x01", `"AAE="`, `0x0001`},
		{sqltypes.KindVector, 63, "\x00\x00\x80\x3f", `"AACAPw=="`, `0x0000803f`},
	}
	covered := map[sqltypes.Kind]bool{}
	for _, tt := range tests {
		covered[tt.kind] = true
		t.Run(tt.kind.String()+"/"+tt.cell, func(t *testing.T) {
			f := &query.Field{Name: "c", Type: tt.kind.Type(), Charset: tt.charset}
			got := string(AppendJSON(nil, f, []byte(tt.cell)))
			if got != tt.json {
				t.Errorf("json = %s, want %s", got, tt.json)
			}
			if !json.Valid([]byte(got)) {
				t.Errorf("json %s is not valid", got)
			}
			if got := string(AppendText(nil, f, []byte(tt.cell))); got != tt.text {
				t.Errorf("text = %s, want %s", got, tt.text)
			}
		})
	}
	for k := sqltypes.KindInt8; k <= sqltypes.KindVector; k++ {
		if !covered[k] {
			t.Errorf("kind %s has no case", k)
		}
		f := &query.Field{Type: k.Type()}
		if got := string(AppendJSON(nil, f, nil)); got != "null" {
			t.Errorf("%s NULL json = %s", k, got)
		}
		if got := string(AppendText(nil, f, nil)); got != "NULL" {
			t.Errorf("%s NULL text = %s", k, got)
		}
	}
}

func row(cells ...any) *query.Row {
	r := &query.Row{}
	for _, c := range cells {
		if c == nil {
			r.Lengths = append(r.Lengths, -1)
			continue
		}
		s := c.(string)
		r.Lengths = append(r.Lengths, int64(len(s)))
		r.Values = append(r.Values, s...)
	}
	return r
}

// transaction is a binlog transaction as the server sends it: rows first, then the GTID,
// COMMIT and the position.
func transaction() []*binlogdata.VEvent {
	ev := func(typ binlogdata.VEventType) *binlogdata.VEvent {
		return &binlogdata.VEvent{Type: typ, Timestamp: 1700000000, Keyspace: "demo", Shard: "0"}
	}
	field := ev(binlogdata.VEventType_FIELD)
	field.FieldEvent = &binlogdata.FieldEvent{TableName: "t", Fields: []*query.Field{
		{Name: "id", Type: query.Type_INT32, Flags: uint32(query.MySqlFlag_PRI_KEY_FLAG)},
		{Name: "name", Type: query.Type_VARCHAR, Charset: 45},
		{Name: "n", Type: query.Type_INT32},
	}}
	rows := ev(binlogdata.VEventType_ROW)
	rows.RowEvent = &binlogdata.RowEvent{TableName: "t", RowChanges: []*binlogdata.RowChange{
		{After: row("1", "a", nil)},
		{Before: row("1", "a", nil), After: row("1", "a", "5")},
		{Before: row("1", "a", "5")},
	}}
	gtid := ev(binlogdata.VEventType_GTID)
	gtid.Gtid = "MariaDB/0-1-9"
	vgtid := ev(binlogdata.VEventType_VGTID)
	vgtid.Vgtid = &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Keyspace: "demo", Shard: "0", Gtid: "MariaDB/0-1-9"}}}
	return []*binlogdata.VEvent{ev(binlogdata.VEventType_BEGIN), field, rows, gtid, ev(binlogdata.VEventType_COMMIT), vgtid}
}

func render(t *testing.T, r Renderer, batches ...[]*binlogdata.VEvent) []string {
	t.Helper()
	var lines []string
	for _, b := range batches {
		if err := r.Events(b, func(l []byte) error { lines = append(lines, string(l)); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	return lines
}

func TestText(t *testing.T) {
	tx := transaction()
	got := render(t, New(Text, Options{}), tx[:3], tx[3:])
	// The times are the local clock's; only what follows them is compared.
	want := []string{
		`demo.t insert id=1 name="a" n=NULL`,
		`demo.t update id=1 n: NULL -> 5`,
		`demo.t delete id=1 name="a" n=5`,
		`commit MariaDB/0-1-9`,
	}
	if len(got) != len(want) {
		t.Fatalf("lines:\n%s", strings.Join(got, "\n"))
	}
	for i := range want {
		if _, rest, _ := strings.Cut(got[i], " "); rest != want[i] || strings.Contains(got[i], "\x1b") {
			t.Errorf("line %d = %q, want <time> %s", i, got[i], want[i])
		}
	}
	colored := render(t, New(Text, Options{Color: true}), tx)
	if !strings.Contains(colored[0], green+"insert"+reset) || !strings.Contains(colored[2], red+"delete"+reset) {
		t.Errorf("coloured lines lack their colours: %q", colored)
	}
}

// TestJSONHoldsUntilPosition: rows print when their transaction's position arrives, with its
// GTID; a rolled-back transaction prints nothing.
func TestJSONHoldsUntilPosition(t *testing.T) {
	tx := transaction()
	r := New(JSON, Options{})
	if got := render(t, r, tx[:3]); len(got) != 0 {
		t.Fatalf("printed before the position: %q", got)
	}
	if got := render(t, r, []*binlogdata.VEvent{{Type: binlogdata.VEventType_ROLLBACK}}, tx); len(got) != 3 {
		t.Fatalf("after rollback and again: %d lines:\n%s", len(got), strings.Join(got, "\n"))
	} else {
		want := `{"keyspace":"demo","table":"t","op":"update","before":{"id":1,"name":"a","n":null},"after":{"id":1,"name":"a","n":5},` +
			`"gtid":"MariaDB/0-1-9","position":{"shardGtids":[{"keyspace":"demo","shard":"0","gtid":"MariaDB/0-1-9"}]},"timestamp":"2023-11-14T22:13:20Z"}`
		if got[1] != want {
			t.Errorf("update line:\n%s\nwant:\n%s", got[1], want)
		}
	}
	// A position with no row before it prints as a position of its own.
	got := render(t, r, tx[5:])
	if len(got) != 1 || !strings.HasPrefix(got[0], `{"op":"position","position":{`) {
		t.Errorf("bare position: %q", got)
	}
}

func TestRowBeforeField(t *testing.T) {
	tx := transaction()
	for _, o := range []Output{Text, JSON} {
		err := New(o, Options{}).Events([]*binlogdata.VEvent{tx[0], tx[2]}, func([]byte) error { return nil })
		if err == nil || !strings.Contains(err.Error(), "before its FIELD event") {
			t.Errorf("%s: %v", o, err)
		}
	}
}

func TestMessages(t *testing.T) {
	pos := &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Keyspace: "demo", Shard: "0", Gtid: "MariaDB/0-1-9"}}}
	msgs := []*vstreamv1.EncodedMessage{
		{Format: "avro", Topic: "demo.t", Value: []byte(`{"type":"record"}`), Headers: map[string]string{"vstream.schema.id": "1", "vstream.schema.subject": "demo.t-value"}, Position: pos},
		{Format: "avro", Topic: "demo.t", Key: []byte{0, 0, 0, 0, 1, 2}, Value: []byte{0, 0, 0, 0, 2, 4}, Position: pos},
		{Format: "avro", Topic: "demo.t", Key: []byte{0, 0, 0, 0, 1, 2}, Tombstone: true, Position: pos},
	}
	lines := func(o Output) []string {
		var out []string
		if err := New(o, Options{}).Messages(msgs, func(l []byte) error { out = append(out, string(l)); return nil }); err != nil {
			t.Fatal(err)
		}
		return out
	}
	wantJSON := []string{
		`{"format":"avro","topic":"demo.t","headers":{"vstream.schema.id":"1","vstream.schema.subject":"demo.t-value"},"value":{"type":"record"},"position":{"shardGtids":[{"keyspace":"demo","shard":"0","gtid":"MariaDB/0-1-9"}]}}`,
		`{"format":"avro","topic":"demo.t","key_base64":"AAAAAAEC","value_base64":"AAAAAAIE","position":{"shardGtids":[{"keyspace":"demo","shard":"0","gtid":"MariaDB/0-1-9"}]}}`,
		`{"format":"avro","topic":"demo.t","key_base64":"AAAAAAEC","tombstone":true,"position":{"shardGtids":[{"keyspace":"demo","shard":"0","gtid":"MariaDB/0-1-9"}]}}`,
	}
	if got := lines(JSON); strings.Join(got, "\n") != strings.Join(wantJSON, "\n") {
		t.Errorf("json:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantJSON, "\n"))
	}
	wantText := []string{
		`position MariaDB/0-1-9`,
		`demo.t vstream.schema.id=1 vstream.schema.subject=demo.t-value {"type":"record"}`,
		`demo.t key=0x000000000102 0x000000000204`,
		`demo.t key=0x000000000102 tombstone`,
	}
	if got := lines(Text); strings.Join(got, "\n") != strings.Join(wantText, "\n") {
		t.Errorf("text:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantText, "\n"))
	}
	for i, l := range lines(ProtoJSON) {
		if !strings.Contains(l, `"topic":"demo.t"`) || !strings.Contains(l, `"position":`) {
			t.Errorf("protojson line %d lacks topic or position: %s", i, l)
		}
	}
}

// TestCopyAndOtherEvents: a copy's progress, heartbeats and DDL in both outputs.
func TestCopyAndOtherEvents(t *testing.T) {
	vg := &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Keyspace: "demo", Shard: "0", Gtid: "MariaDB/0-1-9",
		TablePKs: []*binlogdata.TableLastPK{{TableName: "a", Completed: true}, {TableName: "b"}}}}}
	events := []*binlogdata.VEvent{
		{Type: binlogdata.VEventType_VGTID, Vgtid: vg},
		{Type: binlogdata.VEventType_COPY_COMPLETED, Keyspace: "demo", LastPKEvent: &binlogdata.LastPKEvent{TableLastPK: &binlogdata.TableLastPK{TableName: "b"}}},
		{Type: binlogdata.VEventType_COPY_COMPLETED},
		{Type: binlogdata.VEventType_HEARTBEAT, Timestamp: 1700000000},
		{Type: binlogdata.VEventType_GTID, Gtid: "MariaDB/0-1-10"},
		{Type: binlogdata.VEventType_DDL, Keyspace: "demo", Statement: "DROP TABLE x"},
	}
	text := render(t, New(Text, Options{}), events)
	wantText := []string{"position MariaDB/0-1-9 (copying b)", "copy of demo.b completed", "copy completed", "ddl DROP TABLE x"}
	if strings.Join(text, "\n") != strings.Join(wantText, "\n") {
		t.Errorf("text:\n%s\nwant:\n%s", strings.Join(text, "\n"), strings.Join(wantText, "\n"))
	}
	end := &binlogdata.VEvent{Type: binlogdata.VEventType_VGTID, Vgtid: &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Gtid: "MariaDB/0-1-10"}}}}
	js := render(t, New(JSON, Options{}), append(events[1:], end))
	wantJSON := []string{
		`{"op":"copy_completed","keyspace":"demo","table":"b"}`,
		`{"op":"copy_completed","keyspace":"","table":""}`,
		`{"op":"heartbeat","timestamp":"2023-11-14T22:13:20Z"}`,
		`{"op":"ddl","keyspace":"demo","statement":"DROP TABLE x","gtid":"MariaDB/0-1-10","position":{"shardGtids":[{"gtid":"MariaDB/0-1-10"}]},"timestamp":null}`,
	}
	if strings.Join(js, "\n") != strings.Join(wantJSON, "\n") {
		t.Errorf("json:\n%s\nwant:\n%s", strings.Join(js, "\n"), strings.Join(wantJSON, "\n"))
	}
}

// TestCopyCompletedAfterRows: a copy's last chunk sends its rows, LASTPK, COPY_COMPLETED and
// then the VGTID that closes the rows; the JSON output keeps that order.
func TestCopyCompletedAfterRows(t *testing.T) {
	tx := transaction()
	var events []*binlogdata.VEvent
	for _, ev := range tx {
		if ev.GetType() == binlogdata.VEventType_VGTID {
			events = append(events,
				&binlogdata.VEvent{Type: binlogdata.VEventType_LASTPK},
				&binlogdata.VEvent{Type: binlogdata.VEventType_COPY_COMPLETED, Keyspace: "demo", LastPKEvent: &binlogdata.LastPKEvent{TableLastPK: &binlogdata.TableLastPK{TableName: "t"}}},
				&binlogdata.VEvent{Type: binlogdata.VEventType_COPY_COMPLETED})
		}
		events = append(events, ev)
	}
	js := render(t, New(JSON, Options{}), events)
	if len(js) < 3 {
		t.Fatalf("json: %d lines, want rows and two copy completions:\n%s", len(js), strings.Join(js, "\n"))
	}
	n := len(js)
	if !strings.HasPrefix(js[0], `{"keyspace":"demo","table":"t"`) ||
		js[n-2] != `{"op":"copy_completed","keyspace":"demo","table":"t"}` ||
		js[n-1] != `{"op":"copy_completed","keyspace":"","table":""}` {
		t.Errorf("json, want the rows then the copy completions:\n%s", strings.Join(js, "\n"))
	}
}

// TestPartialImage: the columns a partial after image left out are not shown as NULL.
func TestPartialImage(t *testing.T) {
	tx := transaction()
	rows := tx[2].GetRowEvent()
	rows.RowChanges = []*binlogdata.RowChange{{
		Before:      row("1", "a", "4"),
		After:       row("1", nil, "5"),
		DataColumns: &binlogdata.RowChange_Bitmap{Count: 3, Cols: []byte{0b101}},
	}}
	text := render(t, New(Text, Options{}), tx)
	if _, rest, _ := strings.Cut(text[0], " "); rest != "demo.t update id=1 n: 4 -> 5" {
		t.Errorf("text = %q", text[0])
	}
	js := render(t, New(JSON, Options{}), tx)
	if !strings.Contains(js[0], `"after":{"id":1,"n":5}`) {
		t.Errorf("json = %s", js[0])
	}
}
