package server

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/internal/testkit"
)

// TestMessageTables: in every encoded format a message of a table's rows names the table
// (EncodedMessage.database and .table), in the copy and the binlog, so that a sink can
// route it without decoding it; a message of no one table (transaction records, schema
// changes, canal-protobuf's packets) names none.
func TestMessageTables(t *testing.T) {
	for _, tc := range []struct {
		format string
		opts   map[string]string
		// labeled is false for the formats whose messages hold several tables' rows.
		labeled bool
	}{
		{"debezium-json", map[string]string{"provide.transaction.metadata": "true"}, true},
		{"avro", nil, true},
		{"canal-json", nil, true},
		{"canal-json", map[string]string{"rows_per_message": "event"}, true},
		{"canal-protobuf", nil, false},
		{"drs-json", nil, true},
		{"drs-json-c", nil, true},
		{"streamsets", nil, true},
	} {
		t.Run(tc.format, func(t *testing.T) {
			testkit.MustExec(t, db, "DROP TABLE IF EXISTS mta", "DROP TABLE IF EXISTS mtb",
				"CREATE TABLE mta (id INT PRIMARY KEY, v VARCHAR(32))", "CREATE TABLE mtb (id INT PRIMARY KEY, v VARCHAR(32))",
				"INSERT INTO mta VALUES (1, 'copied-in-qqmtaqq')", "INSERT INTO mtb VALUES (1, 'copied-in-qqmtbqq')")
			cc := dial(t, serve(t, dbConfig(), Options{}))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			st := openStream(t, ctx, cc, &vstreamv1.StreamRequest{Kind: &vstreamv1.StreamRequest_Start{Start: &vstreamv1.Start{
				Vgtid:         &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Gtid: ""}}},
				Filter:        &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "/^mt[ab]$"}}},
				Format:        tc.format,
				FormatOptions: tc.opts,
			}}})
			marker := map[string][]byte{"mta": []byte("qqmtaqq"), "mtb": []byte("qqmtbqq")}
			// counts[table][0] counts copied rows' messages, [1] the binlog's.
			counts := map[string]*[2]int{"mta": {}, "mtb": {}}
			var all []byte
			wrote := false
			done := func() bool {
				if !tc.labeled {
					return bytes.Count(all, []byte("binlog-in-")) >= 2
				}
				return counts["mta"][1] > 0 && counts["mtb"][1] > 0
			}
			for !done() {
				resp, err := st.Recv()
				if err != nil {
					t.Fatal(err)
				}
				for _, m := range resp.Messages {
					all = append(append(all, m.Key...), m.Value...)
					if m.Table == "" {
						if m.Database != "" {
							t.Errorf("message with database %q and no table", m.Database)
						}
						if tc.labeled && (bytes.Contains(m.Value, marker["mta"]) || bytes.Contains(m.Value, marker["mtb"])) {
							t.Errorf("a message of rows names no table: %s", m.Value)
						}
						continue
					}
					if !tc.labeled {
						t.Fatalf("message names table %q: want none in %s", m.Table, tc.format)
					}
					c, ok := counts[m.Table]
					if !ok || m.Database != "test" {
						t.Fatalf("message names %s.%s", m.Database, m.Table)
					}
					other := "mtb"
					if m.Table == "mtb" {
						other = "mta"
					}
					if bytes.Contains(m.Value, marker[other]) {
						t.Errorf("message named %s holds a row of %s: %s", m.Table, other, m.Value)
					}
					switch {
					case bytes.Contains(m.Value, []byte("copied-in-")):
						c[0]++
					case bytes.Contains(m.Value, []byte("binlog-in-")):
						c[1]++
					}
				}
				if !wrote && (bytes.Count(all, []byte("copied-in-")) >= 2) {
					wrote = true
					testkit.MustExec(t, db, "BEGIN", "INSERT INTO mta VALUES (2, 'binlog-in-qqmtaqq')", "INSERT INTO mtb VALUES (2, 'binlog-in-qqmtbqq')", "COMMIT")
				}
			}
			if tc.labeled && (counts["mta"][0] == 0 || counts["mtb"][0] == 0) {
				t.Errorf("copied rows' messages per table: %v %v", counts["mta"], counts["mtb"])
			}
		})
	}
}
