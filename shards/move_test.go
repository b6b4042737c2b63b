package shards

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/internal/testdb"
	"github.com/vstream-cdc/vstream/internal/testkit"
	"github.com/vstream-cdc/vstream/vstreamer"
)

// TestMoveWaitsForServerCatchingUp: a shard moves off its demoted primary to a server made
// writable before it has applied the primary's last transaction, which the stream has
// sent. The server lacks the stream's position until its replication resumes a second
// later; the shard waits for it rather than end the stream, then streams what is written
// there. (A server that never gets the position ends the stream with ErrAhead:
// TestMergedDemotion's "new primary lacks the position".)
func TestMoveWaitsForServerCatchingUp(t *testing.T) {
	primary, err := testdb.Start(testdb.Options{Database: "commerce"})
	if err != nil {
		t.Fatal(err)
	}
	defer primary.Close()
	testkit.MustExec(t, primary, "CREATE TABLE mw (id INT PRIMARY KEY, v VARCHAR(16))")
	replica, err := primary.StartReplica()
	if err != nil {
		t.Fatal(err)
	}
	defer replica.Close()
	logs := &syncBuffer{}
	src := Source{Members: []Member{{Engine: commerceEngine(t, primary, "-80"), TabletType: "primary"}, {Engine: commerceEngine(t, replica, "-80"), TabletType: "replica"}},
		Request: vstreamer.Request{Position: "current", Filter: &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "mw"}}}},
		Logger:  slog.New(slog.NewTextHandler(logs, nil))}
	col := &collector{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- StreamWith(ctx, []Source{src}, Options{RoleCheck: 100 * time.Millisecond}, col.send) }()
	got := func(want ...string) func() bool {
		return func() bool {
			select {
			case err := <-done:
				t.Fatalf("the stream ended: %v", err)
			default:
			}
			return slices.Equal(rows(col.snapshot()), want)
		}
	}
	col.waitPositioned(t, 1)
	if err := replica.StopReplication(); err != nil {
		t.Fatal(err)
	}
	testkit.MustExec(t, primary, "INSERT INTO mw VALUES (1, 'a')")
	testkit.WaitFor(t, 30*time.Second, "the primary's row", got("-80/1=a"))
	// The primary turns read-only and the replica writable, its replication still stopped.
	testkit.MustExec(t, primary, "SET GLOBAL read_only = ON")
	testkit.MustExec(t, replica, "SET GLOBAL read_only = OFF")
	testkit.WaitFor(t, 30*time.Second, "the shard to wait for the server", func() bool {
		return strings.Contains(logs.String(), "lacks the position yet")
	})
	time.Sleep(time.Second)
	select {
	case err := <-done:
		t.Fatalf("the stream ended while the server caught up: %v", err)
	default:
	}
	if err := replica.StartReplication(); err != nil {
		t.Fatal(err)
	}
	if err := replica.WaitCaughtUp(primary); err != nil {
		t.Fatal(err)
	}
	testkit.MustExec(t, replica, "INSERT INTO mw VALUES (2, 'b')")
	testkit.WaitFor(t, 30*time.Second, "the row written on the server moved to", got("-80/1=a", "-80/2=b"))
	cancel()
	<-done
}
