package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/internal/testkit"
)

// TestEncodedResponseSize streams a transaction whose messages are tens of megabytes through a
// client with gRPC's default 4 MiB receive limit: responses stay near the stream's max batch
// bytes, and every row arrives once, in order.
func TestEncodedResponseSize(t *testing.T) {
	const rows = 20000
	testkit.MustExec(t, db, "CREATE TABLE bigtx (id INT PRIMARY KEY, a VARCHAR(40), b VARCHAR(40), c BIGINT, d DATETIME(6), e DECIMAL(10,2), f DOUBLE, g TEXT, h INT, i DATE)",
		fmt.Sprintf("INSERT INTO bigtx SELECT seq, 'aaaaaaaaaaaaaaaaaaaaa', 'bbbbbbbbbbbbbbbbbbbbbbbb', seq*1000, NOW(6), 12345.67, 1.5, 'text', seq, CURDATE() FROM %s", db.Seq(rows)))
	cc := dial(t, serve(t, dbConfig(), Options{}))
	for _, c := range []struct {
		name  string
		limit int64 // the request's max_batch_bytes; 0 for the server's default
		want  int   // the bound the responses' messages must keep
	}{
		{"default", 0, 256 << 10},
		{"64KiB", 64 << 10, 64 << 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			st := openStream(t, ctx, cc, &vstreamv1.StreamRequest{Kind: &vstreamv1.StreamRequest_Start{Start: &vstreamv1.Start{
				// The table's copy phase: a snapshot of every row, then the binlog.
				Vgtid:  &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Gtid: ""}}},
				Filter: &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "bigtx"}}},
				Flags:  &vstreamv1.Flags{MaxBatchBytes: c.limit},
				Format: "debezium-json",
			}}})
			next, responses, biggest, total := 1, 0, 0, 0
			for next <= rows {
				resp, err := st.Recv()
				if err != nil {
					t.Fatalf("after row %d: %v", next-1, err)
				}
				responses++
				size, largest := 0, 0
				for _, m := range resp.Messages {
					size += proto.Size(m)
					largest = max(largest, proto.Size(m))
					if !strings.HasSuffix(m.Topic, ".bigtx") {
						continue // the copy's schema-change record
					}
					var v struct {
						Payload struct {
							Op    string
							After struct{ ID int }
						}
					}
					if err := json.Unmarshal(m.Value, &v); err != nil {
						t.Fatal(err)
					}
					if v.Payload.Op != "r" || v.Payload.After.ID != next {
						t.Fatalf("message %s of row %d, want a read of row %d", v.Payload.Op, v.Payload.After.ID, next)
					}
					next++
				}
				// A response ends with the message that reaches the bound.
				if size > c.want+largest {
					t.Fatalf("response of %d bytes of messages, bound %d", size, c.want)
				}
				biggest, total = max(biggest, size), total+size
			}
			// More than one unsplit response could carry to this client.
			if total < 4<<20 {
				t.Errorf("the rows came as %d bytes of messages, want over 4 MiB", total)
			}
			t.Logf("%d responses, the largest %d bytes of messages", responses, biggest)
		})
	}
}
