package avro_test

import (
	"encoding/binary"
	"fmt"
	"math/big"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	hamba "github.com/hamba/avro/v2"

	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/internal/formattest"
)

func TestMain(m *testing.M) { os.Exit(formattest.Main(m)) }

// consumer reads a stream the way a client without a schema registry would: schema messages
// fill its id → schema map, records are decoded with hamba/avro against the schema their frame
// names. It knows the format from its documentation (the header names are spelled out here),
// not from the encoder's code.
type consumer struct {
	t       *testing.T
	schemas map[int]hamba.Schema
	// current is the id each subject was last announced with.
	current map[string]int
}

func (c *consumer) schemaMessage(m *vstreamv1.EncodedMessage) bool {
	if m.Headers["vstream.message"] != "schema" {
		return false
	}
	id, err := strconv.Atoi(m.Headers["vstream.schema.id"])
	if err != nil {
		c.t.Fatalf("schema message with id %q", m.Headers["vstream.schema.id"])
	}
	s, err := hamba.ParseWithCache(string(m.Value), "", &hamba.SchemaCache{})
	if err != nil {
		c.t.Fatalf("schema %d: %v\n%s", id, err, m.Value)
	}
	c.schemas[id] = s
	c.current[m.Headers["vstream.schema.subject"]] = id
	return true
}

// datum decodes a Confluent-framed datum of a subject. The subject must have been announced
// with the frame's id before.
func (c *consumer) datum(b []byte, subject string) (int, hamba.Schema, any) {
	c.t.Helper()
	if len(b) < 5 || b[0] != 0 {
		c.t.Fatalf("%s: not a Confluent frame: % x", subject, b[:min(len(b), 8)])
	}
	id := int(binary.BigEndian.Uint32(b[1:5]))
	s, ok := c.schemas[id]
	if !ok || c.current[subject] != id {
		c.t.Fatalf("%s: record with schema %d, which no earlier schema message announced for it (%d)", subject, id, c.current[subject])
	}
	r := hamba.NewReader(nil, 0).Reset(b[5:])
	v := r.ReadNext(s)
	if r.Error != nil {
		c.t.Fatalf("%s: decoding with schema %d: %v", subject, id, r.Error)
	}
	return id, s, v
}

// branch returns the value and schema of a decoded union (or the value itself).
func branch(s hamba.Schema, v any) (hamba.Schema, any) {
	u, ok := s.(*hamba.UnionSchema)
	if !ok || v == nil {
		return s, v
	}
	for _, b := range u.Types() {
		if b.Type() != hamba.Null {
			for _, x := range v.(map[string]any) {
				return b, x
			}
		}
	}
	return s, v
}

func field(rec hamba.Schema, name string) hamba.Schema {
	if ref, ok := rec.(*hamba.RefSchema); ok {
		rec = ref.Schema()
	}
	for _, f := range rec.(*hamba.RecordSchema).Fields() {
		if f.Name() == name {
			return f.Type()
		}
	}
	return nil
}

func TestWorkload(t *testing.T) {
	r := formattest.Run(t, "avro", nil)
	t.Logf("%d messages, %d source rows", len(r.Messages), len(r.Want))
	prefix := r.Database
	topic := prefix + "." + r.Database + "." + formattest.Table
	c := &consumer{t: t, schemas: map[int]hamba.Schema{}, current: map[string]int{}}
	image := map[string]formattest.Row{}
	ops := map[string]int{}
	var snapshots []string
	var deleteKey []byte
	valueIDs := map[int]bool{} // value schema ids of the table's records before the DDL
	var afterDDL []int
	ddlSeen := false
	for i, m := range r.Messages {
		if m.Format != "avro" {
			t.Fatalf("message %d has format %q", i, m.Format)
		}
		if c.schemaMessage(m) {
			ops["schema"]++
			continue
		}
		if m.Tombstone {
			if m.Topic != topic || len(m.Value) != 0 || deleteKey == nil || string(m.Key) != string(deleteKey) {
				t.Errorf("tombstone %d does not follow a delete of its key", i)
			}
			c.datum(m.Key, m.Topic+"-key")
			deleteKey = nil
			ops["tombstone"]++
			continue
		}
		if deleteKey != nil {
			t.Errorf("message %d: a delete is not followed by its tombstone", i)
			deleteKey = nil
		}
		id, vs, v := c.datum(m.Value, m.Topic+"-value")
		env := v.(map[string]any)
		if m.Topic == prefix {
			ops["schema change"]++
			_, ddl := branch(field(vs, "ddl"), env["ddl"])
			changes, _ := env["tableChanges"].([]any)
			if ops["schema change"] == 1 {
				// The copy's: CREATE TABLE, and the table (before the workload's DDL) in
				// tableChanges.
				text, _ := ddl.(string)
				if !strings.HasPrefix(text, "CREATE TABLE `"+formattest.Table+"`") || len(changes) != 1 {
					t.Fatalf("the copy's schema change %v", env)
				}
				change := changes[0].(map[string]any)
				changeSchema := field(vs, "tableChanges").(*hamba.ArraySchema).Items()
				_, table := branch(field(changeSchema, "table"), change["table"])
				cols, _ := table.(map[string]any)["columns"].([]any)
				if change["type"] != "CREATE" || len(cols) != len(r.Columns)-1 ||
					cols[0].(map[string]any)["name"] != "id" || cols[0].(map[string]any)["jdbcType"] != 4 {
					t.Errorf("the copy's table change %v", change)
				}
				continue
			}
			if ddl != r.DDL[0] || len(changes) != 0 {
				t.Errorf("schema change %v", env)
			}
			ddlSeen = true
			continue
		}
		if m.Topic != topic {
			t.Fatalf("message %d on topic %q", i, m.Topic)
		}
		if ddlSeen {
			afterDDL = append(afterDDL, id)
		} else {
			valueIDs[id] = true
		}
		_, _, k := c.datum(m.Key, m.Topic+"-key")
		key := fmt.Sprint(k.(map[string]any)["id"])
		op := env["op"].(string)
		ops[op]++
		source := env["source"].(map[string]any)
		_, snapshot := branch(field(field(vs, "source"), "snapshot"), source["snapshot"])
		_, table := branch(field(field(vs, "source"), "table"), source["table"])
		if source["connector"] != formattest.Connector() || source["db"] != r.Database || table != formattest.Table || source["name"] != prefix {
			t.Errorf("message %d source %v", i, source)
		}
		switch op {
		case "r", "c", "u":
			rs, after := branch(field(vs, "after"), env["after"])
			row := decodeRow(t, r, rs, after)
			if *row["id"] != key {
				t.Errorf("message %d: key id %s for row id %s", i, key, *row["id"])
			}
			image[*row["id"]] = row
			if op == "r" {
				snapshots = append(snapshots, snapshot.(string))
			} else if snapshot != "false" {
				t.Errorf("message %d: a change after the copy says snapshot %v", i, snapshot)
			}
			if op == "c" && m.Headers["__debezium.oldkey"] != "" {
				ops["key change"]++
			}
		case "d":
			rs, before := branch(field(vs, "before"), env["before"])
			row := decodeRow(t, r, rs, before)
			if *row["id"] != key {
				t.Errorf("message %d: key id %s for deleted id %s", i, key, *row["id"])
			}
			delete(image, *row["id"])
			deleteKey = m.Key
		default:
			t.Errorf("message %d: op %q", i, op)
		}
	}
	for _, k := range []string{"schema", "r", "c", "u", "d", "tombstone", "schema change", "key change"} {
		if ops[k] == 0 {
			t.Errorf("no %s message; got %v", k, ops)
		}
	}
	if len(r.Messages) == 0 || r.Messages[0].Headers["vstream.message"] != "schema" {
		t.Errorf("the stream does not start with a schema message")
	}
	// The DDL added a column: the records after it use a value schema no record before it did,
	// one with the new column.
	if len(afterDDL) == 0 || valueIDs[afterDDL[0]] || len(valueIDs) != 1 {
		t.Errorf("value schema ids before the DDL %v, after %v", valueIDs, afterDDL)
	} else if row := field(c.schemas[afterDDL[0]], "after"); row == nil || field(row.(*hamba.UnionSchema).Types()[1], "extra") == nil {
		t.Errorf("the value schema after the DDL has no column extra")
	}
	if want := slices.Repeat([]string{"true"}, len(r.CopiedIDs)-1); len(snapshots) != len(r.CopiedIDs) ||
		!slices.Equal(snapshots[:len(snapshots)-1], want) || snapshots[len(snapshots)-1] != "last" {
		t.Errorf("snapshot markers of the copied rows %v, want true... then last", snapshots)
	}
	r.Check(t, image)
}

// decodeRow turns a decoded row record back into MariaDB's text values, led by the Avro
// schema's connect.name properties and the source's column types (for unsignedness and
// fractional digits).
func decodeRow(t *testing.T, r *formattest.Result, s hamba.Schema, v any) formattest.Row {
	t.Helper()
	if ref, ok := s.(*hamba.RefSchema); ok {
		s = ref.Schema()
	}
	rec := s.(*hamba.RecordSchema)
	data := v.(map[string]any)
	row := formattest.Row{}
	for _, f := range rec.Fields() {
		fs, fv := branch(f.Type(), data[f.Name()])
		if fv == nil {
			row[f.Name()] = nil
			continue
		}
		col, ok := r.Column(f.Name())
		if !ok {
			t.Fatalf("field %s is not a column of the source", f.Name())
		}
		text, err := decodeValue(fs, col, fv)
		if err != nil {
			t.Fatalf("column %s (%s): %v: %v", f.Name(), col.ColumnType, fv, err)
		}
		row[f.Name()] = &text
	}
	return row
}

func decodeValue(s hamba.Schema, col formattest.Column, v any) (string, error) {
	if ref, ok := s.(*hamba.RefSchema); ok {
		s = ref.Schema()
	}
	var name string
	if p, ok := s.(interface{ Prop(string) any }); ok {
		name, _ = p.Prop("connect.name").(string)
	}
	fsp := 0
	if i := strings.IndexByte(col.ColumnType, '('); i >= 0 && (col.DataType == "datetime" || col.DataType == "timestamp" || col.DataType == "time") {
		fsp, _ = strconv.Atoi(strings.TrimSuffix(col.ColumnType[i+1:], ")"))
	}
	frac := func(us int64) string {
		if fsp == 0 {
			return ""
		}
		return "." + fmt.Sprintf("%06d", us)[:fsp]
	}
	long := func() int64 {
		switch x := v.(type) {
		case int:
			return int64(x)
		case int64:
			return x
		}
		panic(fmt.Sprintf("%T is not an integer", v))
	}
	switch name {
	case "org.apache.kafka.connect.data.Decimal":
		d := s.(*hamba.PrimitiveSchema).Logical().(*hamba.DecimalLogicalSchema)
		return v.(*big.Rat).FloatString(d.Scale()), nil
	case "io.debezium.time.Date":
		return time.Unix(long()*86400, 0).UTC().Format("2006-01-02"), nil
	case "io.debezium.time.Timestamp":
		tm := time.UnixMilli(long()).UTC()
		return tm.Format("2006-01-02 15:04:05") + frac(int64(tm.Nanosecond()/1000)), nil
	case "io.debezium.time.MicroTimestamp":
		tm := time.UnixMicro(long()).UTC()
		return tm.Format("2006-01-02 15:04:05") + frac(int64(tm.Nanosecond()/1000)), nil
	case "io.debezium.time.ZonedTimestamp":
		tm, err := time.Parse(time.RFC3339Nano, v.(string))
		return tm.UTC().Format("2006-01-02 15:04:05") + frac(int64(tm.Nanosecond()/1000)), err
	case "io.debezium.time.MicroTime":
		us := long()
		sign := ""
		if us < 0 {
			sign, us = "-", -us
		}
		secs := us / 1e6
		return fmt.Sprintf("%s%02d:%02d:%02d", sign, secs/3600, secs/60%60, secs%60) + frac(us%1e6), nil
	case "io.debezium.data.Bits":
		b := slices.Clone(v.([]byte))
		slices.Reverse(b)
		return string(b), nil
	case "io.debezium.data.geometry.Geometry", "io.debezium.data.geometry.Point":
		g := v.(map[string]any)
		var srid uint32
		if x, ok := g["srid"].(map[string]any); ok {
			srid = uint32(x["int"].(int))
		}
		wkb := g["wkb"]
		if x, ok := wkb.(map[string]any); ok {
			wkb = x["bytes"]
		}
		return string(append(binary.LittleEndian.AppendUint32(nil, srid), wkb.([]byte)...)), nil
	case "io.debezium.time.Year", "io.debezium.data.Enum", "io.debezium.data.EnumSet", "io.debezium.data.Json", "":
	default:
		return "", fmt.Errorf("unknown semantic type %s", name)
	}
	switch s.Type() {
	case hamba.Int, hamba.Long:
		n := long()
		if strings.HasSuffix(col.ColumnType, "unsigned") && n < 0 {
			return strconv.FormatUint(uint64(n), 10), nil
		}
		return strconv.FormatInt(n, 10), nil
	case hamba.Float:
		return strconv.FormatFloat(float64(v.(float32)), 'g', -1, 32), nil
	case hamba.Double:
		return strconv.FormatFloat(v.(float64), 'g', -1, 64), nil
	case hamba.String:
		return v.(string), nil
	case hamba.Bytes:
		return string(v.([]byte)), nil
	case hamba.Boolean:
		if v.(bool) {
			return "\x01", nil
		}
		return "\x00", nil
	}
	return "", fmt.Errorf("unexpected Avro type %s", s.Type())
}
