package canaljson_test

import (
	"encoding/json"
	"math/big"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/vstream-cdc/vstream/internal/formattest"
)

func TestMain(m *testing.M) { os.Exit(formattest.Main(m)) }

// flat is canal's flat message as a consumer reads it.
type flat struct {
	Database  string               `json:"database"`
	Table     string               `json:"table"`
	PKNames   []string             `json:"pkNames"`
	IsDDL     bool                 `json:"isDdl"`
	Type      string               `json:"type"`
	SQL       string               `json:"sql"`
	SQLType   map[string]int       `json:"sqlType"`
	MySQLType map[string]string    `json:"mysqlType"`
	Data      []map[string]*string `json:"data"`
	Old       []map[string]*string `json:"old"`
}

// TestWorkload streams the shared workload in both profiles and rebuilds the table from the
// messages with a decoder that knows canal's conventions, not the encoder's code.
func TestWorkload(t *testing.T) {
	for _, profile := range []string{"canal", "dts"} {
		t.Run(profile, func(t *testing.T) {
			r := formattest.Run(t, "canal-json", map[string]string{"profile": profile})
			t.Logf("%d messages, %d source rows", len(r.Messages), len(r.Want))
			image := map[string]formattest.Row{}
			kinds := map[string]int{}
			for _, m := range r.Messages {
				var f flat
				if err := json.Unmarshal(m.Value, &f); err != nil {
					t.Fatalf("message %s: %v", m.Value, err)
				}
				kinds[f.Type]++
				if f.IsDDL {
					if f.SQL != r.DDL[0] || f.Table != formattest.Table || f.Database != r.Database {
						t.Errorf("DDL message %s", m.Value)
					}
					continue
				}
				if f.Database != r.Database || f.Table != formattest.Table || len(f.PKNames) != 1 || f.PKNames[0] != "id" {
					t.Errorf("message header %s", m.Value)
				}
				for i, data := range f.Data {
					row := decodeRow(t, f, data)
					switch f.Type {
					case "INSERT":
						image[*row["id"]] = row
					case "UPDATE":
						id := *row["id"]
						if old := f.Old[i]; old["id"] != nil && *old["id"] != id {
							delete(image, *old["id"])
						}
						image[id] = row
					case "DELETE":
						delete(image, *row["id"])
					default:
						t.Errorf("type %s in %s", f.Type, m.Value)
					}
				}
				if profile == "dts" && f.Type == "UPDATE" {
					// DTS's old is the whole before image.
					for _, old := range f.Old {
						if len(old) != len(f.MySQLType) {
							t.Errorf("dts old has %d of %d columns: %v", len(old), len(f.MySQLType), old)
						}
					}
				}
			}
			for _, k := range []string{"INSERT", "UPDATE", "DELETE", "ALTER"} {
				if kinds[k] == 0 {
					t.Errorf("no %s message; got %v", k, kinds)
				}
			}
			r.Check(t, image)
		})
	}
}

// decodeRow turns canal's text values back into MariaDB's text form.
func decodeRow(t *testing.T, f flat, data map[string]*string) formattest.Row {
	t.Helper()
	row := formattest.Row{}
	for name, v := range data {
		if v == nil {
			row[name] = nil
			continue
		}
		mt := f.MySQLType[name]
		base := mt
		if i := strings.IndexByte(mt, '('); i >= 0 {
			base = mt[:i]
		}
		s := *v
		switch base {
		case "binary", "varbinary", "blob", "tinyblob", "mediumblob", "longblob", "geometry":
			b := make([]byte, 0, len(s))
			for _, r := range s {
				if r > 0xff {
					t.Fatalf("column %s: %q is not ISO-8859-1 text", name, s)
				}
				b = append(b, byte(r))
			}
			s = string(b)
		case "bit":
			n, ok := new(big.Int).SetString(s, 10)
			width, _ := strconv.Atoi(mt[len("bit(") : len(mt)-1])
			if !ok {
				t.Fatalf("column %s: bit value %q", name, s)
			}
			b := make([]byte, (width+7)/8)
			s = string(n.FillBytes(b))
		case "enum":
			idx, err := strconv.Atoi(s)
			if err != nil {
				t.Fatalf("column %s: enum index %q", name, s)
			}
			labels := formattest.Members(mt)
			s = ""
			if idx > 0 {
				s = labels[idx-1]
			}
		case "set":
			mask, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				t.Fatalf("column %s: set mask %q", name, s)
			}
			var parts []string
			for i, l := range formattest.Members(mt) {
				if mask&(1<<i) != 0 {
					parts = append(parts, l)
				}
			}
			s = strings.Join(parts, ",")
		}
		row[name] = &s
	}
	return row
}
