package drs_test

import (
	"encoding/json"
	"math/big"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vstream-cdc/vstream/internal/formattest"
	"github.com/vstream-cdc/vstream/internal/testdb"
	"github.com/vstream-cdc/vstream/server/encoder/drs"
)

func TestMain(m *testing.M) { os.Exit(formattest.Main(m)) }

// message is a DRS message as a consumer reads it.
type message struct {
	JobID      *string              `json:"jobId"`
	ShardID    *string              `json:"shardId"`
	Identifier *string              `json:"identifier"`
	EventID    *string              `json:"eventId"`
	MySQLType  map[string]string    `json:"mysqlType"`
	ID         int64                `json:"id"`
	ES         int64                `json:"es"`
	TS         int64                `json:"ts"`
	Database   string               `json:"database"`
	Table      string               `json:"table"`
	Type       string               `json:"type"`
	IsDDL      bool                 `json:"isDdl"`
	SQL        string               `json:"sql"`
	SQLType    map[string]int       `json:"sqlType"`
	Data       []map[string]*string `json:"data"`
	Old        []map[string]*string `json:"old"`
	PKNames    []string             `json:"pkNames"`
}

// eventIDPatterns are a snapshot point, <file>:<offset>;<GTID set>, by flavor: MariaDB's set
// is domain-server-sequence,..., MySQL's uuid:interval[:interval...],...
var eventIDPatterns = map[testdb.Flavor]*regexp.Regexp{
	testdb.MariaDB: regexp.MustCompile(`^[^:;]+\.\d+:\d+;\d+-\d+-\d+(,\d+-\d+-\d+)*$`),
	testdb.MySQL:   regexp.MustCompile(`^[^:;]+\.\d+:\d+;` + mysqlUUIDSet + `(,` + mysqlUUIDSet + `)*$`),
}

const mysqlUUIDSet = `[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(:\d+(-\d+)?)+`

// TestWorkload streams the shared workload in both variants and rebuilds the table from the
// messages with a decoder of DRS's conventions, not the encoder's code.
func TestWorkload(t *testing.T) {
	for _, format := range []string{drs.NameJSON, drs.NameJSONC} {
		t.Run(format, func(t *testing.T) {
			start := time.Now()
			r := formattest.Run(t, format, nil)
			t.Logf("%d messages, %d source rows", len(r.Messages), len(r.Want))
			jsonc := format == drs.NameJSONC
			image := map[string]formattest.Row{}
			kinds := map[string]int{}
			lastID := int64(0)
			for _, m := range r.Messages {
				if m.Format != format {
					t.Errorf("message format %q", m.Format)
				}
				var f message
				if err := json.Unmarshal(m.Value, &f); err != nil {
					t.Fatalf("message %s: %v", m.Value, err)
				}
				kinds[f.Type]++
				if f.Database != r.Database || f.Table != formattest.Table {
					t.Errorf("database %q table %q in %s", f.Database, f.Table, m.Value)
				}
				fullSync := f.Type == "INIT" || f.Type == "INIT_DDL"
				if (f.JobID != nil) != fullSync {
					t.Errorf("jobId %v in a %s message", f.JobID, f.Type)
				}
				if f.Type == "INIT_DDL" {
					if f.ID != 0 || !strings.HasPrefix(f.SQL, "CREATE TABLE `alltypes` (") || strings.Contains(f.SQL, "\n") ||
						!f.IsDDL || f.MySQLType != nil || f.Data != nil || f.ES != f.TS || *f.EventID != "" {
						t.Errorf("INIT_DDL message %s", m.Value)
					}
					continue
				}
				// Every other message takes the next id.
				if f.ID <= lastID {
					t.Errorf("id %d after %d", f.ID, lastID)
				}
				lastID = f.ID
				if f.TS < start.UnixMilli() || f.TS > time.Now().UnixMilli() || f.ES < start.Add(-time.Minute).UnixMilli() || f.ES > f.TS {
					t.Errorf("es %d ts %d outside the run", f.ES, f.TS)
				}
				if f.IsDDL {
					if f.Type != "DDL" || f.SQL != r.DDL[0] || f.Data != nil || f.Old != nil {
						t.Errorf("DDL message %s", m.Value)
					}
					continue
				}
				if len(f.PKNames) != 1 || f.PKNames[0] != "id" || f.SQL != "" {
					t.Errorf("message header %s", m.Value)
				}
				for name, mt := range f.MySQLType {
					c, ok := r.Column(name)
					if !ok || mt != c.DataType {
						t.Errorf("mysqlType of %s: %q, want %q", name, mt, c.DataType)
					}
				}
				if f.SQLType["dtm"] != 94 || f.SQLType["ts"] != 93 || f.SQLType["bl"] != 2004 {
					t.Errorf("sqlType %v", f.SQLType)
				}
				switch f.Type {
				case "INIT":
					if f.ShardID == nil || f.Identifier == nil || !eventIDPatterns[formattest.Flavor()].MatchString(*f.EventID) {
						t.Errorf("INIT full-sync members %s", m.Value)
					}
					fallthrough
				case "INSERT":
					if f.Old != nil {
						t.Errorf("%s with old: %s", f.Type, m.Value)
					}
					for _, data := range f.Data {
						row := decodeRow(t, r, jsonc, data)
						image[*row["id"]] = row
					}
				case "UPDATE":
					if len(f.Old) != len(f.Data) {
						t.Fatalf("UPDATE with %d old and %d data rows", len(f.Old), len(f.Data))
					}
					for i, data := range f.Data {
						// old is the whole before image.
						if len(f.Old[i]) != len(f.MySQLType) {
							t.Errorf("old has %d of %d columns", len(f.Old[i]), len(f.MySQLType))
						}
						before := decodeRow(t, r, jsonc, f.Old[i])
						row := decodeRow(t, r, jsonc, data)
						if _, ok := image[*before["id"]]; !ok {
							t.Errorf("UPDATE of id %s, which the image lacks", *before["id"])
						}
						delete(image, *before["id"])
						image[*row["id"]] = row
					}
				case "DELETE":
					deleted, other := f.Old, f.Data
					if jsonc {
						deleted, other = f.Data, f.Old
					}
					if other != nil || len(deleted) == 0 {
						t.Errorf("DELETE rows in the wrong member: %s", m.Value)
					}
					for _, old := range deleted {
						row := decodeRow(t, r, jsonc, old)
						delete(image, *row["id"])
					}
				default:
					t.Errorf("type %s in %s", f.Type, m.Value)
				}
			}
			for _, k := range []string{"INIT", "INIT_DDL", "INSERT", "UPDATE", "DELETE", "DDL"} {
				if kinds[k] == 0 {
					t.Errorf("no %s message; got %v", k, kinds)
				}
			}
			if kinds["INIT"] != len(r.CopiedIDs) || kinds["INIT_DDL"] != 1 {
				t.Errorf("%d INIT for %d copied rows, %d INIT_DDL", kinds["INIT"], len(r.CopiedIDs), kinds["INIT_DDL"])
			}
			r.Check(t, image)
		})
	}
}

// decodeRow turns DRS text values back into MariaDB's text form, by the column's type.
func decodeRow(t *testing.T, r *formattest.Result, jsonc bool, data map[string]*string) formattest.Row {
	t.Helper()
	row := formattest.Row{}
	for name, v := range data {
		if v == nil {
			row[name] = nil
			continue
		}
		c, ok := r.Column(name)
		if !ok {
			t.Fatalf("column %s is not in the table", name)
		}
		s := *v
		switch c.DataType {
		case "binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob", "geometry":
			s = string(javaBytes(t, name, s))
		case "bit":
			n, ok := new(big.Int).SetString(s, 10)
			width, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(c.ColumnType, "bit("), ")"))
			if !ok || err != nil {
				t.Fatalf("column %s (%s): bit value %q", name, c.ColumnType, s)
			}
			s = string(n.FillBytes(make([]byte, (width+7)/8)))
		case "timestamp":
			if !jsonc {
				s = epochText(t, name, s)
			}
		}
		row[name] = &s
	}
	return row
}

// javaBytes reads Java's Arrays.toString(byte[]) text.
func javaBytes(t *testing.T, name, s string) []byte {
	t.Helper()
	if len(s) < 2 || s[0] != '[' || s[len(s)-1] != ']' {
		t.Fatalf("column %s: %q is not Java byte-array text", name, s)
	}
	var out []byte
	if inner := s[1 : len(s)-1]; inner != "" {
		for _, p := range strings.Split(inner, ", ") {
			n, err := strconv.ParseInt(p, 10, 8)
			if err != nil {
				t.Fatalf("column %s: %q: %v", name, s, err)
			}
			out = append(out, byte(n))
		}
	}
	return out
}

// epochText turns drs-json's epoch seconds ("1624614713.201") into UTC TIMESTAMP text with the
// same fraction digits; epoch 0 is the zero TIMESTAMP.
func epochText(t *testing.T, name, s string) string {
	t.Helper()
	secs, frac, _ := strings.Cut(s, ".")
	n, err := strconv.ParseInt(secs, 10, 64)
	if err != nil {
		t.Fatalf("column %s: %q is not epoch seconds", name, s)
	}
	text := "0000-00-00 00:00:00"
	if n != 0 {
		text = time.Unix(n, 0).UTC().Format(time.DateTime)
	}
	if frac != "" {
		text += "." + frac
	}
	return text
}
