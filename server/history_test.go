package server

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/internal/testdb"
	"github.com/vstream-cdc/vstream/internal/testkit"
	"github.com/vstream-cdc/vstream/position"
	"github.com/vstream-cdc/vstream/vstreamer"
	"github.com/vstream-cdc/vstream/vstreamer/history"
)

// serveWithHistory serves an engine keeping a schema history in a new directory, once its
// tracker has recorded the tables; it returns the address and the directory.
func serveWithHistory(t *testing.T) (string, string) {
	t.Helper()
	cfg := dbConfig()
	cfg.SchemaHistoryDir = t.TempDir()
	e, err := vstreamer.NewEngine(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := e.RunSchemaHistory(ctx); err != nil {
			t.Errorf("RunSchemaHistory: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	deadline := time.Now().Add(15 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(cfg.SchemaHistoryDir, history.CheckpointFile)); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the schema history tracker did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
	addr, _ := serveEngine(t, e, Options{})
	return addr, cfg.SchemaHistoryDir
}

// waitHistory waits until the checkpoint of the history in dir holds pos, the position
// just after a DDL (the tracker writes its checkpoint at each DDL, and at most once a second
// otherwise).
func waitHistory(t *testing.T, dir, pos string) {
	t.Helper()
	want, err := position.Parse(pos)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		var cp struct {
			Position string `json:"position"`
		}
		if data, rerr := os.ReadFile(filepath.Join(dir, history.CheckpointFile)); rerr == nil && json.Unmarshal(data, &cp) == nil {
			if got, perr := position.Parse(cp.Position); perr == nil && got.Contains(want) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the schema history did not reach %s", pos)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// firstRowMessage streams table from pos in format and returns the value of the first
// message of a row change, decoded, with the fields that vary between runs (times) removed.
func firstRowMessage(t *testing.T, cc *grpc.ClientConn, pos, table, format string) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st := openStream(t, ctx, cc, &vstreamv1.StreamRequest{Kind: &vstreamv1.StreamRequest_Start{Start: &vstreamv1.Start{
		Vgtid:  &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Gtid: pos}}},
		Filter: &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: table}}},
		Format: format,
	}}})
	for {
		resp, err := st.Recv()
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range resp.Messages {
			var v map[string]any
			if err := json.Unmarshal(m.Value, &v); err != nil {
				t.Fatalf("%s message: %v: %s", format, err, m.Value)
			}
			if strings.Contains(string(m.Value), `"isDdl":true`) || strings.Contains(string(m.Value), `"ddl"`) || m.Tombstone {
				continue
			}
			dropVolatile(v)
			return v
		}
	}
}

// dropVolatile removes the times a message carries, at any depth.
func dropVolatile(v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			switch k {
			case "ts", "es", "ts_ms", "ts_us", "ts_ns":
				delete(x, k)
			default:
				dropVolatile(c)
			}
		}
	case []any:
		for _, c := range x {
			dropVolatile(c)
		}
	}
}

// TestSchemaHistoryFormats resumes canal-json and Debezium streams from before an ALTER:
// with a schema history their messages, type metadata included (canal's mysqlType and
// sqlType, Debezium's schema), are those of a stream that read the rows before the ALTER ran.
func TestSchemaHistoryFormats(t *testing.T) {
	historyAddr, historyDir := serveWithHistory(t)
	withHistory := dial(t, historyAddr)
	plain := dial(t, serve(t, dbConfig(), Options{}))
	for _, format := range []string{"canal-json", "debezium-json"} {
		t.Run(format, func(t *testing.T) {
			table := "shf_" + strings.ReplaceAll(format, "-", "_")
			start := serverPosition(t)
			testkit.MustExec(t, db, "CREATE TABLE "+table+" (id BIGINT PRIMARY KEY AUTO_INCREMENT, n INT, s VARCHAR(50), j JSON, d DECIMAL(6,2))")
			// The tracker describes a table when it reads its DDL (and then checkpoints): the
			// ALTER must come after that, or the history holds the altered table.
			waitHistory(t, historyDir, serverPosition(t))
			testkit.MustExec(t, db, "INSERT INTO "+table+" (n, s, j, d) VALUES (1, 'x', '{\"a\": 1}', 2.50)")
			before := firstRowMessage(t, plain, start, table, format)
			testkit.MustExec(t, db, "ALTER TABLE "+table+" MODIFY s VARCHAR(80), MODIFY j LONGTEXT, MODIFY n BIGINT")

			got := firstRowMessage(t, withHistory, start, table, format)
			if !reflect.DeepEqual(got, before) {
				g, _ := json.Marshal(got)
				b, _ := json.Marshal(before)
				t.Errorf("resumed with the history:\n%s\nread before the ALTER:\n%s", g, b)
			}
			// On MySQL, Debezium's schema of these rows is the same without a history: the
			// binlog's own JSON and INT types describe them as they were, and the schema
			// carries no lengths.
			shows := format != "debezium-json" || db.Flavor() != testdb.MySQL
			if now := firstRowMessage(t, plain, start, table, format); shows && reflect.DeepEqual(now, before) {
				t.Errorf("without a history the message is the same; the case shows nothing")
			}
		})
	}
}

func serverPosition(t *testing.T) string {
	t.Helper()
	pos, err := db.Position()
	if err != nil {
		t.Fatal(err)
	}
	return pos
}
