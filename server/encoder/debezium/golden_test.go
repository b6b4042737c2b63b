package debezium

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	"github.com/vstream-cdc/vstream/server/encoder"
)

func readJSON(t *testing.T, file string) any {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return parse(t, b)
}

// The Volcengine DTS Debezium examples (seed 000): the 2.0-2.5 layout, with schema and
// source elided from the examples. The table definition is missing from the seed; the values
// make score a DOUBLE (86.0 is a JSON number) and id the primary key.
func TestGoldenDTS(t *testing.T) {
	fields := []*query.Field{
		{Name: "id", Type: query.Type_INT32, ColumnType: "int(11)", Flags: uint32(query.MySqlFlag_NOT_NULL_FLAG | query.MySqlFlag_PRI_KEY_FLAG)},
		{Name: "name", Type: query.Type_VARCHAR, ColumnType: "varchar(32)", Charset: 45},
		{Name: "score", Type: query.Type_FLOAT64, ColumnType: "double"},
	}
	tom86, tom95 := row("1", "tom", "8.6E+01"), row("1", "tom", "9.5E+01")
	cases := []struct {
		file   string
		clock  int64
		change *binlogdata.RowChange
		op     string
	}{
		{"insert", 1731068683523, &binlogdata.RowChange{After: tom86}, "c"},
		{"update", 1731068693523, &binlogdata.RowChange{Before: tom86, After: tom95}, "u"},
		{"delete", 1731068713052, &binlogdata.RowChange{Before: tom86}, "d"},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			file := "testdata/000-dts-debezium-json-" + c.file + ".partial.json"
			want := readJSON(t, file)
			e := newEncoder(t, encoder.Params{Database: "dts_test", Clock: clockAt(c.clock)}, map[string]string{"debezium.layout": "v2.0"})
			src := &binlogdata.EventSource{File: "binlog.000001", StartPos: 400, ServerId: 1, Database: "dts_test"}
			fe := fieldEvent("score_table", true, fields...)
			fe.Source = src
			out := encodeAll(t, e, fe, &binlogdata.VEvent{Type: binlogdata.VEventType_ROW, Timestamp: c.clock / 1000, Source: src,
				RowEvent: &binlogdata.RowEvent{TableName: "score_table", RowChanges: []*binlogdata.RowChange{c.change}}})
			wantMsgs := 1
			if c.op == "d" {
				wantMsgs = 2
			}
			if len(out) != wantMsgs {
				t.Fatalf("%d messages, want %d", len(out), wantMsgs)
			}
			got := parse(t, out[0].Value)
			// Compare the members the example has; schema and source are elided from it.
			wantPayload := get(want, "payload").(map[string]any)
			for k, v := range wantPayload {
				sameJSON(t, "payload."+k, get(got, "payload", k), v)
			}
			if g, w := keysOf(get(got, "payload")), append(keysOf(wantPayload), "source"); !slices.Equal(g, slices.Sorted(slices.Values(w))) {
				t.Errorf("payload members %v, want the example's plus source: %v", g, w)
			}
			if !strings.Contains(string(out[0].Value), `"score":86.0`) {
				t.Errorf("score is not written as Java double text 86.0:\n%s", out[0].Value)
			}
			if c.op == "d" {
				tomb := out[1]
				if !tomb.Tombstone || tomb.Value != nil || string(tomb.Key) != string(out[0].Key) || tomb.Topic != out[0].Topic {
					t.Errorf("the delete is not followed by a tombstone with its key: %+v", tomb)
				}
			}
		})
	}
}

// The envelope example of seed 002 is Debezium's pre-1.0 layout, which this encoder does not
// produce (formats.md 9.12): schema names without the Value/Envelope suffixes, source with
// server/file/pos/row only, "ts" rather than ts_ms, DATE as org.apache.kafka.connect.data.Date
// (time.precision.mode=connect). What carries over is checked: the row's values and their
// schemas' types and optionality, the schema/payload pairing of before and after, op, the
// binlog coordinates and row number in source, the logical server name and the clock.
func TestGoldenEnvelope002(t *testing.T) {
	want := readJSON(t, "testdata/002-debezium-envelope-insert.json")
	notNull := uint32(query.MySqlFlag_NOT_NULL_FLAG)
	fields := []*query.Field{
		{Name: "order_date", Type: query.Type_DATE, ColumnType: "date", Flags: notNull},
		{Name: "purchaser", Type: query.Type_INT32, ColumnType: "int(11)", Flags: notNull},
		{Name: "quantity", Type: query.Type_INT32, ColumnType: "int(11)", Flags: notNull},
		{Name: "product_id", Type: query.Type_INT32, ColumnType: "int(11)", Flags: notNull},
	}
	e := newEncoder(t, encoder.Params{Database: "connector_test", Keyspace: "kafka-connect-2", Clock: clockAt(1463437199134)}, nil)
	src := &binlogdata.EventSource{File: "mysql-bin.000002", StartPos: 2887680, ServerId: 223344, Database: "connector_test"}
	fe := fieldEvent("orders", true, fields...)
	fe.Source = src
	out := encodeAll(t, e, fe, &binlogdata.VEvent{Type: binlogdata.VEventType_ROW, Timestamp: 1463437199, Source: src,
		RowEvent: &binlogdata.RowEvent{TableName: "orders", RowChanges: []*binlogdata.RowChange{{After: row("2016-02-21", "1003", "1", "107"), RowIndex: 4}}}})
	if len(out) != 1 {
		t.Fatalf("%d messages", len(out))
	}
	got := parse(t, out[0].Value)
	sameJSON(t, "payload.after", get(got, "payload", "after"), get(want, "payload", "after"))
	for _, k := range []string{"before", "op"} {
		sameJSON(t, "payload."+k, get(got, "payload", k), get(want, "payload", k))
	}
	for _, k := range []string{"file", "pos", "row"} {
		sameJSON(t, "payload.source."+k, get(got, "payload", "source", k), get(want, "payload", "source", k))
	}
	sameJSON(t, "payload.source.name", get(got, "payload", "source", "name"), get(want, "payload", "source", "server"))
	sameJSON(t, "payload.ts_ms", get(got, "payload", "ts_ms"), get(want, "payload", "ts"))

	gotFields := schemaFields(t, get(got, "schema"))
	wantFields := schemaFields(t, get(want, "schema"))
	for _, name := range []string{"before", "after", "source", "op"} {
		g, w := gotFields[name], wantFields[name]
		sameJSON(t, "schema "+name+".type", g["type"], w["type"])
		sameJSON(t, "schema "+name+".optional", g["optional"], w["optional"])
	}
	sameJSON(t, "schema source.name", gotFields["source"]["name"], wantFields["source"]["name"])
	for _, image := range []string{"before", "after"} {
		g, w := gotFields[image]["fields"].([]any), wantFields[image]["fields"].([]any)
		if len(g) != len(w) {
			t.Fatalf("%s has %d fields, want %d", image, len(g), len(w))
		}
		for i := range w {
			gf, wf := g[i].(map[string]any), w[i].(map[string]any)
			for _, k := range []string{"field", "type", "optional"} {
				sameJSON(t, image+"."+wf["field"].(string)+"."+k, gf[k], wf[k])
			}
			if wf["name"] == "org.apache.kafka.connect.data.Date" && gf["name"] != DateName {
				// Same days-since-epoch value; the default time.precision.mode names it so.
				t.Errorf("%s.%s is named %v, want %s", image, wf["field"], gf["name"], DateName)
			}
		}
	}
	// No primary key in the example: the key is null.
	if out[0].Key != nil {
		t.Errorf("key %s for a table without a primary key", out[0].Key)
	}
}

// schemaFields indexes a struct schema's fields by name.
func schemaFields(t *testing.T, schema any) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	fs, ok := get(schema, "fields").([]any)
	if !ok {
		t.Fatalf("schema without fields: %s", show(schema))
	}
	for _, f := range fs {
		m := f.(map[string]any)
		out[m["field"].(string)] = m
	}
	return out
}
