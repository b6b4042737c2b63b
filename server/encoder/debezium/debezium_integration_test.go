package debezium_test

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vstream-cdc/vstream/internal/formattest"
	"github.com/vstream-cdc/vstream/internal/testdb"
)

func TestMain(m *testing.M) { os.Exit(formattest.Main(m)) }

// schemaNode is a Connect schema as JsonConverter writes it.
type schemaNode struct {
	Type       string            `json:"type"`
	Fields     []schemaNode      `json:"fields"`
	Optional   bool              `json:"optional"`
	Name       string            `json:"name"`
	Parameters map[string]string `json:"parameters"`
	Field      string            `json:"field"`
}

type document struct {
	Schema  *schemaNode     `json:"schema"`
	Payload json.RawMessage `json:"payload"`
}

type envelope struct {
	Before map[string]json.RawMessage `json:"before"`
	After  map[string]json.RawMessage `json:"after"`
	Source map[string]any             `json:"source"`
	Op     string                     `json:"op"`
	// Schema-change records.
	DDL          string `json:"ddl"`
	DatabaseName string `json:"databaseName"`
	TableChanges []struct {
		Type  string
		ID    string
		Table struct {
			DefaultCharsetName    string
			PrimaryKeyColumnNames []string
			Columns               []struct {
				Name, TypeName string
				JdbcType       int
				CharsetName    *string
				Length, Scale  *int
				Position       int
				Optional       bool
				EnumValues     []string
			}
		}
	} `json:"tableChanges"`
}

// checkCreate checks the schema-change record of the copied table: its CREATE TABLE and the
// table in tableChanges, column by column, against the source's columns.
func checkCreate(t *testing.T, r *formattest.Result, env envelope, value []byte) {
	t.Helper()
	if !strings.HasPrefix(env.DDL, "CREATE TABLE `"+formattest.Table+"`") || env.Source["snapshot"] != "true" || len(env.TableChanges) != 1 {
		t.Fatalf("the copy's schema change %s", value)
	}
	tc := env.TableChanges[0]
	if tc.Type != "CREATE" || tc.ID != `"`+r.Database+`"."`+formattest.Table+`"` || tc.Table.DefaultCharsetName != "utf8mb4" ||
		!slices.Equal(tc.Table.PrimaryKeyColumnNames, []string{"id"}) {
		t.Errorf("table change %s", value)
	}
	// The table at the copy has every column but the one the DDL adds last.
	if len(tc.Table.Columns) != len(r.Columns)-1 {
		t.Fatalf("%d columns in the table change, the table had %d", len(tc.Table.Columns), len(r.Columns)-1)
	}
	for i, c := range tc.Table.Columns {
		src := r.Columns[i]
		// MariaDB reports JSON columns as longtext.
		if c.Name != src.Name || c.Position != i+1 || !strings.EqualFold(strings.Fields(c.TypeName)[0], src.DataType) && c.TypeName != "JSON" {
			t.Errorf("column %d: %+v, source %+v", i, c, src)
		}
	}
	byName := map[string]int{}
	for i, c := range tc.Table.Columns {
		byName[c.Name] = i
	}
	col := func(name string) string {
		c := tc.Table.Columns[byName[name]]
		cs, l, sc := "<nil>", "<nil>", "<nil>"
		if c.CharsetName != nil {
			cs = *c.CharsetName
		}
		if c.Length != nil {
			l = strconv.Itoa(*c.Length)
		}
		if c.Scale != nil {
			sc = strconv.Itoa(*c.Scale)
		}
		return fmt.Sprintf("%s %d %s %s %s %v %v", c.TypeName, c.JdbcType, cs, l, sc, c.Optional, c.EnumValues)
	}
	// An integer's length is its display width, which MySQL no longer keeps: its column type
	// is int where MariaDB's is int(11).
	width := func(w string) string {
		if formattest.Flavor() == testdb.MySQL {
			return "<nil>"
		}
		return w
	}
	for name, want := range map[string]string{
		"id":   "INT 4 <nil> " + width("11") + " <nil> false []",
		"iu":   "INT UNSIGNED 4 <nil> " + width("10") + " <nil> true []",
		"ti":   "TINYINT 5 <nil> " + width("4") + " <nil> true []",
		"dec1": "DECIMAL 3 <nil> 10 2 true []",
		"ts":   "TIMESTAMP 2014 <nil> 3 <nil> true []",
		"dtm6": "DATETIME 93 <nil> 6 <nil> true []",
		"vc":   "VARCHAR 12 utf8mb4 64 <nil> true []",
		"gk":   "VARCHAR 12 gbk 20 <nil> true []",
		"tx":   "TEXT 12 utf8mb4 <nil> <nil> true []",
		"bl":   "BLOB 2004 <nil> <nil> <nil> true []",
		"e":    "ENUM 1 utf8mb4 <nil> <nil> true [a b c]",
		"j":    "JSON 1111 <nil> <nil> <nil> true []",
		"g":    "GEOMETRY 1111 <nil> <nil> <nil> true []",
	} {
		if got := col(name); got != want {
			t.Errorf("column %s: %s, want %s", name, got, want)
		}
	}
}

// TestWorkload streams the shared workload as debezium-json and rebuilds the table from the
// messages with a decoder written from Debezium's documented conventions (encoding/json and
// the schema each message carries), not from the encoder's code.
func TestWorkload(t *testing.T) {
	r := formattest.Run(t, "debezium-json", nil)
	t.Logf("%d messages, %d source rows", len(r.Messages), len(r.Want))
	prefix := r.Database // the server's keyspace, topic.prefix by default
	topic := prefix + "." + r.Database + "." + formattest.Table
	image := map[string]formattest.Row{}
	ops := map[string]int{}
	var snapshots []string
	var lastDeleteKey []byte
	for i, m := range r.Messages {
		if m.Format != "debezium-json" {
			t.Fatalf("message %d has format %q", i, m.Format)
		}
		if m.Tombstone {
			if m.Topic != topic || len(m.Value) != 0 || lastDeleteKey == nil || string(m.Key) != string(lastDeleteKey) {
				t.Errorf("tombstone %d does not follow a delete of its key: %+v", i, m)
			}
			lastDeleteKey = nil
			ops["tombstone"]++
			continue
		}
		if lastDeleteKey != nil {
			t.Errorf("message %d: a delete is not followed by its tombstone", i)
			lastDeleteKey = nil
		}
		var doc document
		if err := json.Unmarshal(m.Value, &doc); err != nil || doc.Schema == nil {
			t.Fatalf("message %d is not a schema+payload document: %v\n%s", i, err, m.Value)
		}
		var env envelope
		if err := json.Unmarshal(doc.Payload, &env); err != nil {
			t.Fatalf("message %d payload: %v", i, err)
		}
		if m.Topic == prefix {
			ops["schema change"]++
			if env.DatabaseName != r.Database || doc.Schema.Name != "io.debezium.connector."+formattest.Connector()+".SchemaChangeValue" {
				t.Errorf("schema change %s", m.Value)
			}
			if ops["schema change"] == 1 {
				// The copy's: the table as created, before the workload's DDL.
				checkCreate(t, r, env, m.Value)
			} else if env.DDL != r.DDL[0] || len(env.TableChanges) != 0 || env.Source["snapshot"] != "false" {
				t.Errorf("schema change %s", m.Value)
			}
			continue
		}
		if m.Topic != topic {
			t.Fatalf("message %d on topic %q", i, m.Topic)
		}
		ops[env.Op]++
		if env.Source["connector"] != formattest.Connector() || env.Source["db"] != r.Database || env.Source["table"] != formattest.Table || env.Source["name"] != prefix {
			t.Errorf("message %d source %v", i, env.Source)
		}
		var rowSchema *schemaNode
		for j := range doc.Schema.Fields {
			if doc.Schema.Fields[j].Field == "after" {
				rowSchema = &doc.Schema.Fields[j]
			}
		}
		if rowSchema == nil {
			t.Fatalf("message %d: no after in the envelope schema", i)
		}
		key := decodeKey(t, m.Key)
		switch env.Op {
		case "r", "c", "u":
			row := decodeRow(t, r, rowSchema, env.After)
			if *row["id"] != key {
				t.Errorf("message %d: key id %s for row id %s", i, key, *row["id"])
			}
			image[*row["id"]] = row
			if env.Op == "r" {
				snapshots = append(snapshots, env.Source["snapshot"].(string))
			} else if env.Source["snapshot"] != "false" {
				t.Errorf("message %d: a change after the copy says snapshot %v", i, env.Source["snapshot"])
			}
			if env.Op == "c" && m.Headers["__debezium.oldkey"] != "" {
				ops["key change"]++
			}
		case "d":
			row := decodeRow(t, r, rowSchema, env.Before)
			if *row["id"] != key {
				t.Errorf("message %d: key id %s for deleted id %s", i, key, *row["id"])
			}
			delete(image, *row["id"])
			lastDeleteKey = m.Key
		default:
			t.Errorf("message %d: op %q", i, env.Op)
		}
	}
	for _, k := range []string{"r", "c", "u", "d", "tombstone", "schema change", "key change"} {
		if ops[k] == 0 {
			t.Errorf("no %s record; got %v", k, ops)
		}
	}
	if want := slices.Repeat([]string{"true"}, len(r.CopiedIDs)-1); len(snapshots) != len(r.CopiedIDs) ||
		!slices.Equal(snapshots[:len(snapshots)-1], want) || snapshots[len(snapshots)-1] != "last" {
		t.Errorf("snapshot markers of the copied rows %v, want true... then last", snapshots)
	}
	r.Check(t, image)
}

func decodeKey(t *testing.T, key []byte) string {
	t.Helper()
	var k struct {
		Payload struct {
			ID json.Number `json:"id"`
		} `json:"payload"`
	}
	if err := json.Unmarshal(key, &k); err != nil {
		t.Fatalf("key %s: %v", key, err)
	}
	return k.Payload.ID.String()
}

// decodeRow turns a row struct back into MariaDB's text values, using the field schemas the
// message carries and the source's column types for what the schema leaves open
// (unsignedness, fractional digits).
func decodeRow(t *testing.T, r *formattest.Result, s *schemaNode, data map[string]json.RawMessage) formattest.Row {
	t.Helper()
	row := formattest.Row{}
	for _, f := range s.Fields {
		raw, ok := data[f.Field]
		if !ok {
			t.Fatalf("row lacks field %s", f.Field)
		}
		if string(raw) == "null" {
			row[f.Field] = nil
			continue
		}
		col, ok := r.Column(f.Field)
		if !ok {
			t.Fatalf("field %s is not a column of the source", f.Field)
		}
		v, err := decodeValue(f, col, raw)
		if err != nil {
			t.Fatalf("column %s (%s): %s: %v", f.Field, col.ColumnType, raw, err)
		}
		row[f.Field] = &v
	}
	return row
}

func decodeValue(f schemaNode, col formattest.Column, raw json.RawMessage) (string, error) {
	var n json.Number
	var s string
	var b bool
	num := func() (int64, error) {
		if err := json.Unmarshal(raw, &n); err != nil {
			return 0, err
		}
		return n.Int64()
	}
	str := func() (string, error) { return s, json.Unmarshal(raw, &s) }
	b64 := func() ([]byte, error) {
		if _, err := str(); err != nil {
			return nil, err
		}
		return base64.StdEncoding.DecodeString(s)
	}
	fsp := 0
	if i := strings.IndexByte(col.ColumnType, '('); i >= 0 && (col.DataType == "datetime" || col.DataType == "timestamp" || col.DataType == "time") {
		fsp, _ = strconv.Atoi(strings.TrimSuffix(col.ColumnType[i+1:], ")"))
	}
	frac := func(tm time.Time) string {
		if fsp == 0 {
			return ""
		}
		return "." + fmt.Sprintf("%06d", tm.Nanosecond()/1000)[:fsp]
	}
	switch f.Name {
	case "org.apache.kafka.connect.data.Decimal":
		bs, err := b64()
		if err != nil {
			return "", err
		}
		unscaled := new(big.Int).SetBytes(bs)
		if len(bs) > 0 && bs[0]&0x80 != 0 {
			unscaled.Sub(unscaled, new(big.Int).Lsh(big.NewInt(1), uint(8*len(bs))))
		}
		scale, _ := strconv.Atoi(f.Parameters["scale"])
		return new(big.Rat).SetFrac(unscaled, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)).FloatString(scale), nil
	case "io.debezium.time.Date":
		d, err := num()
		return time.Unix(d*86400, 0).UTC().Format("2006-01-02"), err
	case "io.debezium.time.Timestamp", "io.debezium.time.MicroTimestamp":
		v, err := num()
		tm := time.UnixMilli(v).UTC()
		if f.Name == "io.debezium.time.MicroTimestamp" {
			tm = time.UnixMicro(v).UTC()
		}
		return tm.Format("2006-01-02 15:04:05") + frac(tm), err
	case "io.debezium.time.ZonedTimestamp":
		if _, err := str(); err != nil {
			return "", err
		}
		tm, err := time.Parse(time.RFC3339Nano, s)
		return tm.UTC().Format("2006-01-02 15:04:05") + frac(tm), err
	case "io.debezium.time.MicroTime":
		us, err := num()
		sign := ""
		if us < 0 {
			sign, us = "-", -us
		}
		secs := us / 1e6
		out := fmt.Sprintf("%s%02d:%02d:%02d", sign, secs/3600, secs/60%60, secs%60)
		if fsp > 0 {
			out += "." + fmt.Sprintf("%06d", us%1e6)[:fsp]
		}
		return out, err
	case "io.debezium.data.Bits":
		bs, err := b64()
		slices.Reverse(bs)
		return string(bs), err
	case "io.debezium.data.geometry.Geometry", "io.debezium.data.geometry.Point":
		var g struct {
			WKB  []byte `json:"wkb"`
			SRID *int32 `json:"srid"`
		}
		if err := json.Unmarshal(raw, &g); err != nil {
			return "", err
		}
		var srid uint32
		if g.SRID != nil {
			srid = uint32(*g.SRID)
		}
		return string(append(binary.LittleEndian.AppendUint32(nil, srid), g.WKB...)), nil
	case "io.debezium.time.Year", "io.debezium.data.Enum", "io.debezium.data.EnumSet", "io.debezium.data.Json", "":
	default:
		return "", fmt.Errorf("unknown semantic type %s", f.Name)
	}
	switch f.Type {
	case "int8", "int16", "int32", "int64":
		v, err := num()
		if strings.HasSuffix(col.ColumnType, "unsigned") && v < 0 {
			return strconv.FormatUint(uint64(v), 10), err
		}
		return strconv.FormatInt(v, 10), err
	case "float", "double":
		return string(raw), json.Unmarshal(raw, &n)
	case "string":
		return str()
	case "bytes":
		bs, err := b64()
		return string(bs), err
	case "boolean":
		if err := json.Unmarshal(raw, &b); err != nil {
			return "", err
		}
		if b {
			return "\x01", nil
		}
		return "\x00", nil
	}
	return "", fmt.Errorf("unknown type %s", f.Type)
}
