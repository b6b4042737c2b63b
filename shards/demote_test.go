package shards

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/internal/testdb"
	"github.com/vstream-cdc/vstream/internal/testkit"
	"github.com/vstream-cdc/vstream/vstreamer"
)

// syncBuffer is a log destination several goroutines write.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// commerceEngine is an engine for one shard of keyspace commerce on s.
func commerceEngine(t *testing.T, s *testdb.Server, shard string) *vstreamer.Engine {
	t.Helper()
	e, err := vstreamer.NewEngine(vstreamer.Config{Addr: s.Addr(), User: s.User(), Password: s.Password(),
		Database: "commerce", Keyspace: "commerce", Shard: shard})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// A switchover under a writer: shard -80's primary is demoted (read-only, replicating from
// its replica) and the replica promoted, while a writer commits two-row transactions to
// whichever is the primary. The merged stream leaves the demoted server for the new
// primary at a transaction boundary, at the same position: every row the writer committed
// arrives once, each transaction whole, and rows written to the new primary once the
// demoted one has stopped replicating arrive too (the stream is on the new primary). A
// stream of tablet_type replica moves likewise off the promoted replica to the demoted
// primary (Vitess's "tablet type changed" case of its health check handling). When
// the replica had not applied all of the primary's transactions, the move is refused as
// ErrAhead naming the shard, rather than skip what the new primary never had.
func TestMergedDemotion(t *testing.T) {
	cases := []struct {
		name string
		// behind: the replica stops replicating before the primary's last transactions and
		// is promoted without them.
		behind bool
		// tabletType is the type streamed (empty: primary). A stream of replicas moves off
		// the promoted replica to the demoted primary, now a replica.
		tabletType string
	}{
		{name: "switchover"},
		{name: "replica promoted", tabletType: "replica"},
		{name: "new primary lacks the position", behind: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			primary, err := testdb.Start(testdb.Options{Database: "commerce"})
			if err != nil {
				t.Fatal(err)
			}
			defer primary.Close()
			if err = primary.Exec("CREATE TABLE dm (id INT PRIMARY KEY, v VARCHAR(16))"); err != nil {
				t.Fatal(err)
			}
			replica, err := primary.StartReplica()
			if err != nil {
				t.Fatal(err)
			}
			defer replica.Close()
			if err = servers[1].Exec("DROP TABLE IF EXISTS dm", "CREATE TABLE dm (id INT PRIMARY KEY, v VARCHAR(16))"); err != nil {
				t.Fatal(err)
			}
			engine := func(s *testdb.Server, shard string) *vstreamer.Engine { return commerceEngine(t, s, shard) }
			logs := &syncBuffer{}
			filter := &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "dm"}}}
			sources := []Source{
				{Members: []Member{{Engine: engine(primary, "-80"), TabletType: "primary"}, {Engine: engine(replica, "-80"), TabletType: "replica"}},
					TabletType: c.tabletType, Request: vstreamer.Request{Position: "current", Filter: filter}, Logger: slog.New(slog.NewTextHandler(logs, nil))},
				{Members: []Member{{Engine: engine(servers[1], "80-"), TabletType: "primary"}}, Request: vstreamer.Request{Position: "current", Filter: filter}},
			}
			col := &collector{}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() {
				done <- StreamWith(ctx, sources, Options{RoleCheck: 200 * time.Millisecond}, col.send)
			}()
			col.waitPositioned(t, 2)

			// The writer commits two-row transactions to the shard's primary of the moment
			// until stopped; the switchover holds it (writes wait for the new primary).
			var (
				wmu    sync.Mutex
				target = primary
				want   []string
				next   atomic.Int64
			)
			write := func() error {
				wmu.Lock()
				defer wmu.Unlock()
				k := int(next.Add(1))
				a, b := 2*k, 2*k+1
				if err := target.Exec("BEGIN", fmt.Sprintf("INSERT INTO dm VALUES (%d, 'v%d'), (%d, 'v%d')", a, a, b, b), "COMMIT"); err != nil {
					return err
				}
				want = append(want, fmt.Sprintf("-80/%d=v%d", a, a), fmt.Sprintf("-80/%d=v%d", b, b))
				return nil
			}
			stop := make(chan struct{})
			var writer sync.WaitGroup
			writer.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					if err := write(); err != nil {
						t.Error(err)
						return
					}
					time.Sleep(5 * time.Millisecond)
				}
			})
			for id := 1; id <= 10; id++ {
				if err := servers[1].Exec(fmt.Sprintf("INSERT INTO dm VALUES (%d, 'w%d')", id, id)); err != nil {
					t.Fatal(err)
				}
				wmu.Lock()
				want = append(want, fmt.Sprintf("80-/%d=w%d", id, id))
				wmu.Unlock()
			}
			time.Sleep(500 * time.Millisecond)

			// The switchover, with the writer held.
			wmu.Lock()
			if c.behind {
				if err := replica.StopReplication(); err != nil {
					t.Fatal(err)
				}
				k := int(next.Add(1))
				if err := primary.Exec(fmt.Sprintf("INSERT INTO dm VALUES (%d, 'lost')", 2*k)); err != nil {
					t.Fatal(err)
				}
				if err := primary.Exec("SET GLOBAL read_only = ON"); err != nil {
					t.Fatal(err)
				}
			} else {
				if err := primary.Exec("SET GLOBAL read_only = ON"); err != nil {
					t.Fatal(err)
				}
				if err := replica.WaitCaughtUp(primary); err != nil {
					t.Fatal(err)
				}
			}
			if err := replica.Promote(); err != nil {
				t.Fatal(err)
			}
			if !c.behind {
				if err := primary.Demote(replica); err != nil {
					t.Fatal(err)
				}
			}
			target = replica
			wmu.Unlock()

			if c.behind {
				close(stop)
				writer.Wait()
				select {
				case err := <-done:
					if !errors.Is(err, vstreamer.ErrAhead) || !strings.Contains(err.Error(), "shard commerce/-80 ("+replica.Addr()+")") {
						t.Fatalf("stream ended with %v, want ErrAhead naming shard commerce/-80 on the new primary", err)
					}
				case <-time.After(30 * time.Second):
					t.Fatal("the stream did not end on the new primary lacking the position")
				}
				return
			}

			testkit.WaitFor(t, 30*time.Second, "the move to the server of the type", func() bool {
				return strings.Contains(logs.String(), "no longer of the stream's tablet type")
			})
			time.Sleep(300 * time.Millisecond)
			close(stop)
			writer.Wait()
			// Rows that reach the server the stream is to be on alone: only a stream on it
			// sees them. The new primary's once the demoted one stops replicating; the
			// demoted one's (the test user writes through read_only), which the new primary
			// does not replicate.
			if err := primary.WaitCaughtUp(replica); err != nil {
				t.Fatal(err)
			}
			onlyOn := replica
			if c.tabletType == "replica" {
				onlyOn = primary
			} else if err := primary.StopReplication(); err != nil {
				t.Fatal(err)
			}
			wmu.Lock()
			target = onlyOn
			wmu.Unlock()
			for range 5 {
				if err := write(); err != nil {
					t.Fatal(err)
				}
			}
			testkit.WaitFor(t, 30*time.Second, "every row", func() bool {
				select {
				case err := <-done:
					t.Fatalf("the stream ended: %v", err)
				default:
				}
				return len(rows(col.snapshot())) >= len(want)
			})
			time.Sleep(200 * time.Millisecond)
			cancel()
			if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
				t.Fatal(err)
			}
			events := col.snapshot()
			checkMerged(t, events)
			checkPairs(t, events)
			sameSet(t, rows(events), want)
			// The replay equals the source: the server streamed last holds exactly the rows
			// streamed.
			n, err := countRows(onlyOn)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Count(strings.Join(rows(events), " "), "-80/"); got != n {
				t.Fatalf("%d rows of -80 streamed, %s has %d", got, onlyOn.Addr(), n)
			}
			t.Logf("%d transactions, moved: %s", next.Load(), firstLine(logs.String(), "no longer"))
		})
	}
}

// checkPairs fails t unless each of shard -80's transactions has both rows of a writer's
// transaction (ids 2k and 2k+1), and nothing else.
func checkPairs(t *testing.T, events []*binlogdata.VEvent) {
	t.Helper()
	var txn []string
	for _, ev := range events {
		switch ev.GetType() {
		case binlogdata.VEventType_BEGIN:
			txn = nil
		case binlogdata.VEventType_ROW:
			if ev.GetShard() == "-80" {
				txn = append(txn, rows([]*binlogdata.VEvent{ev})...)
			}
		case binlogdata.VEventType_COMMIT:
			if len(txn) != 0 && len(txn) != 2 {
				t.Fatalf("a transaction of -80 with rows %v, want a writer's two", txn)
			}
			txn = nil
		default:
		}
	}
}

func countRows(s *testdb.Server) (int, error) {
	c, err := s.Conn("commerce")
	if err != nil {
		return 0, err
	}
	defer c.Close()
	r, err := c.Execute("SELECT COUNT(*) FROM dm")
	if err != nil {
		return 0, err
	}
	defer r.Close()
	n, err := r.GetInt(0, 0)
	return int(n), err
}

func firstLine(s, with string) string {
	for l := range strings.SplitSeq(s, "\n") {
		if strings.Contains(l, with) {
			return l
		}
	}
	return ""
}
