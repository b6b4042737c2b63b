package shards

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	"github.com/vstream-cdc/vstream/internal/testdb"
	"github.com/vstream-cdc/vstream/internal/testkit"
	"github.com/vstream-cdc/vstream/vstreamer"
)

// Two servers, each the primary of one shard of keyspace commerce.
var servers [2]*testdb.Server

var shardNames = [2]string{"-80", "80-"}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	for i := range servers {
		s, err := testdb.Start(testdb.Options{Database: "commerce"})
		if err != nil {
			fmt.Fprintln(os.Stderr, "start the database server:", err)
			return 1
		}
		defer s.Close()
		servers[i] = s
	}
	return m.Run()
}

func engines(t *testing.T) [2]*vstreamer.Engine {
	t.Helper()
	var out [2]*vstreamer.Engine
	for i, s := range servers {
		e, err := vstreamer.NewEngine(vstreamer.Config{Addr: s.Addr(), User: s.User(), Password: s.Password(),
			Database: "commerce", Keyspace: "commerce", Shard: shardNames[i], MaxBatchBytes: 2048})
		if err != nil {
			t.Fatal(err)
		}
		out[i] = e
	}
	return out
}

// collector keeps a merged stream's events.
type collector struct {
	mu     sync.Mutex
	events []*binlogdata.VEvent
}

func (c *collector) send(events []*binlogdata.VEvent) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events = append(c.events, events...)
	return nil
}

func (c *collector) snapshot() []*binlogdata.VEvent {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*binlogdata.VEvent(nil), c.events...)
}

// waitPositioned waits for a VGTID that gives each of the stream's shards a position of
// its own (not "current").
func (c *collector) waitPositioned(t *testing.T, shards int) {
	t.Helper()
	testkit.WaitFor(t, 30*time.Second, "every shard's first position", func() bool {
		for _, ev := range c.snapshot() {
			sg := ev.GetVgtid().GetShardGtids()
			if len(sg) == shards && !slices.ContainsFunc(sg, func(g *binlogdata.ShardGtid) bool { return g.GetGtid() == "current" }) {
				return true
			}
		}
		return false
	})
}

// rows are the rows the events insert or copy, as shard/id=value, in stream order.
func rows(events []*binlogdata.VEvent) []string {
	var out []string
	for _, ev := range events {
		for _, rc := range ev.GetRowEvent().GetRowChanges() {
			if a := rc.GetAfter(); a != nil {
				c := cells(a)
				out = append(out, ev.GetShard()+"/"+c[0]+"="+c[1])
			}
		}
	}
	return out
}

func cells(row *query.Row) []string {
	var out []string
	off := int64(0)
	for _, n := range row.GetLengths() {
		out = append(out, string(row.GetValues()[off:off+max(n, 0)]))
		off += max(n, 0)
	}
	return out
}

// checkMerged fails t unless no transaction of one shard has another shard's events in
// it, and every VGTID names both shards.
func checkMerged(t *testing.T, events []*binlogdata.VEvent) {
	t.Helper()
	open := ""
	for i, ev := range events {
		switch ev.GetType() {
		case binlogdata.VEventType_BEGIN:
			open = ev.GetShard()
		case binlogdata.VEventType_COMMIT:
			open = ""
		case binlogdata.VEventType_VGTID:
			if sg := ev.GetVgtid().GetShardGtids(); len(sg) != 2 || sg[0].GetShard() != "-80" || sg[1].GetShard() != "80-" {
				t.Fatalf("event %d: VGTID %v does not name both shards", i, ev.GetVgtid())
			}
		case binlogdata.VEventType_HEARTBEAT:
			continue
		case binlogdata.VEventType_COPY_COMPLETED:
			if ev.GetShard() == "" {
				// The stream's own, which comes in the transaction of the last chunk copied,
				// as a one-shard stream's does.
				continue
			}
		default:
		}
		if open != "" && ev.GetShard() != open {
			t.Fatalf("event %d (%s of shard %s) inside a transaction of shard %s", i, ev.GetType(), ev.GetShard(), open)
		}
	}
}

// write runs n transactions on each server at once: each inserts rows of a transaction's
// own, some of them enough rows to span several batches.
func write(t *testing.T, table string, from, n int) []string {
	t.Helper()
	var wg sync.WaitGroup
	var want []string
	var mu sync.Mutex
	for i, s := range servers {
		wg.Go(func() {
			for k := from; k < from+n; k++ {
				width := 1 + k%3
				if k%4 == 0 {
					// Several batches of the engine's (MaxBatchBytes 2048).
					width = 300
				}
				var values []string
				mu.Lock()
				for j := range width {
					id := k*1000 + j
					values = append(values, fmt.Sprintf("(%d, 'v%d')", id, id))
					want = append(want, fmt.Sprintf("%s/%d=v%d", shardNames[i], id, id))
				}
				mu.Unlock()
				// A statement per 50 rows: a rows event each, so that a wide transaction
				// spans several of the engine's batches.
				stmts := []string{"BEGIN"}
				for len(values) > 0 {
					part := values[:min(50, len(values))]
					values = values[len(part):]
					stmts = append(stmts, "INSERT INTO "+table+" VALUES "+strings.Join(part, ","))
				}
				if err := s.Exec(append(stmts, "COMMIT")...); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return want
}

func sameSet(t *testing.T, got, want []string) {
	t.Helper()
	seen := map[string]int{}
	for _, g := range got {
		seen[g]++
	}
	for _, w := range want {
		if seen[w] != 1 {
			t.Fatalf("row %s delivered %d times, want once (%d rows delivered, %d written)", w, seen[w], len(got), len(want))
		}
		delete(seen, w)
	}
	if len(seen) > 0 {
		t.Fatalf("%d rows delivered that were not written, e.g. %v", len(seen), seen)
	}
}

func streamFrom(ctx context.Context, es [2]*vstreamer.Engine, pos *binlogdata.VGtid, table string, c *collector) chan error {
	var sources []Source
	for i, e := range es {
		sg := pos.GetShardGtids()[i]
		sources = append(sources, Source{Members: []Member{{Engine: e, TabletType: "primary"}}, Request: vstreamer.Request{Position: sg.GetGtid(), TableLastPKs: sg.GetTablePKs(),
			Filter: &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: table}}}, CopyChunkRows: 25}})
	}
	done := make(chan error, 1)
	go func() { done <- Stream(ctx, sources, c.send) }()
	return done
}

func startPos(gtid string) *binlogdata.VGtid {
	return &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Keyspace: "commerce", Shard: "-80", Gtid: gtid}, {Keyspace: "commerce", Shard: "80-", Gtid: gtid}}}
}

// Transactions written to two shards at once reach the merged stream whole, every row
// once; a stream resumed from a VGTID in the middle delivers exactly the rest.
func TestMergedStream(t *testing.T) {
	for _, s := range servers {
		if err := s.Exec("DROP TABLE IF EXISTS merged", "CREATE TABLE merged (id INT PRIMARY KEY, v VARCHAR(16))"); err != nil {
			t.Fatal(err)
		}
	}
	es := engines(t)
	c := &collector{}
	ctx, cancel := context.WithCancel(context.Background())
	done := streamFrom(ctx, es, startPos("current"), "merged", c)
	c.waitPositioned(t, 2)
	want := write(t, "merged", 1, 20)
	testkit.WaitFor(t, 30*time.Second, "the first rows", func() bool { return len(rows(c.snapshot())) >= len(want) })
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	first := c.snapshot()
	checkMerged(t, first)
	sameSet(t, rows(first), want)

	// Resume from a VGTID after some of the rows: the rest, once.
	var mid *binlogdata.VGtid
	cut := 0
	for i, ev := range first {
		if ev.GetType() == binlogdata.VEventType_VGTID && len(rows(first[:i])) >= len(want)/2 {
			mid, cut = ev.GetVgtid(), i
			break
		}
	}
	if mid == nil {
		t.Fatal("no VGTID past half the rows")
	}
	more := write(t, "merged", 21, 10)
	c2 := &collector{}
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	done = streamFrom(ctx, es, mid, "merged", c2)
	rest := append(rows(first[cut:]), more...)
	testkit.WaitFor(t, 30*time.Second, "the rest of the rows", func() bool { return len(rows(c2.snapshot())) >= len(rest) })
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	checkMerged(t, c2.snapshot())
	sameSet(t, rows(c2.snapshot()), rest)
}

// A copy of both shards: every row once, a COPY_COMPLETED naming each shard, then one for
// the whole stream, after which the shards' changes follow.
func TestMergedCopy(t *testing.T) {
	for _, s := range servers {
		if err := s.Exec("DROP TABLE IF EXISTS copied", "CREATE TABLE copied (id INT PRIMARY KEY, v VARCHAR(16))"); err != nil {
			t.Fatal(err)
		}
	}
	want := write(t, "copied", 1, 12)
	es := engines(t)
	c := &collector{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := streamFrom(ctx, es, startPos(""), "copied", c)
	final := func() int {
		for i, ev := range c.snapshot() {
			if ev.GetType() == binlogdata.VEventType_COPY_COMPLETED && ev.GetKeyspace() == "" {
				return i
			}
		}
		return -1
	}
	testkit.WaitFor(t, 30*time.Second, "the copy's end", func() bool { return final() >= 0 })
	more := write(t, "copied", 13, 3)
	testkit.WaitFor(t, 30*time.Second, "the changes after the copy", func() bool { return len(rows(c.snapshot())) >= len(want)+len(more) })
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	events := c.snapshot()
	checkMerged(t, events)
	sameSet(t, rows(events), append(want, more...))
	var shardsDone []string
	for _, ev := range events[:final()] {
		if ev.GetType() == binlogdata.VEventType_COPY_COMPLETED && ev.GetKeyspace() != "" && ev.GetLastPKEvent() == nil {
			shardsDone = append(shardsDone, ev.GetShard())
		}
	}
	if len(shardsDone) != 2 || shardsDone[0] == shardsDone[1] {
		t.Fatalf("COPY_COMPLETED of shards %v before the stream's, want one of each", shardsDone)
	}
	if n := strings.Count(fmt.Sprint(rows(events[:final()])), "="); n != len(want) {
		t.Fatalf("%d rows before the copy's end, want the %d copied", n, len(want))
	}
}

// A shard whose primary is killed -9 between transactions goes on from its replica at the
// same position, inside the same merged stream: every row written to the primary before the
// kill and to the promoted replica after it arrives once, with the other shard's rows.
func TestMergedFailover(t *testing.T) {
	primary, err := testdb.Start(testdb.Options{Database: "commerce"})
	if err != nil {
		t.Fatal(err)
	}
	defer primary.Close()
	if err = primary.Exec("CREATE TABLE fo (id INT PRIMARY KEY, v VARCHAR(16))"); err != nil {
		t.Fatal(err)
	}
	replica, err := primary.StartReplica()
	if err != nil {
		t.Fatal(err)
	}
	defer replica.Close()
	if err = servers[1].Exec("DROP TABLE IF EXISTS fo", "CREATE TABLE fo (id INT PRIMARY KEY, v VARCHAR(16))"); err != nil {
		t.Fatal(err)
	}
	engine := func(s *testdb.Server, shard string) *vstreamer.Engine {
		e, err := vstreamer.NewEngine(vstreamer.Config{Addr: s.Addr(), User: s.User(), Password: s.Password(),
			Database: "commerce", Keyspace: "commerce", Shard: shard})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	filter := &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "fo"}}}
	sources := []Source{
		{Members: []Member{{Engine: engine(primary, "-80"), TabletType: "primary"}, {Engine: engine(replica, "-80"), TabletType: "replica"}},
			Request: vstreamer.Request{Position: "current", Filter: filter}},
		{Members: []Member{{Engine: engine(servers[1], "80-"), TabletType: "primary"}}, Request: vstreamer.Request{Position: "current", Filter: filter}},
	}
	c := &collector{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- Stream(ctx, sources, c.send) }()
	c.waitPositioned(t, 2)
	var want []string
	insert := func(s *testdb.Server, shard string, from, to int) {
		for id := from; id < to; id++ {
			if err := s.Exec(fmt.Sprintf("INSERT INTO fo VALUES (%d, 'v%d')", id, id)); err != nil {
				t.Fatal(err)
			}
			want = append(want, fmt.Sprintf("%s/%d=v%d", shard, id, id))
		}
	}
	insert(primary, "-80", 1, 30)
	insert(servers[1], "80-", 1, 30)
	if err = replica.WaitCaughtUp(primary); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 30*time.Second, "the rows before the kill", func() bool { return len(rows(c.snapshot())) >= len(want) })
	primary.Kill()
	if err = replica.Promote(); err != nil {
		t.Fatal(err)
	}
	insert(replica, "-80", 30, 60)
	insert(servers[1], "80-", 30, 40)
	testkit.WaitFor(t, 30*time.Second, "the rows after the failover", func() bool {
		select {
		case err := <-done:
			t.Fatalf("the stream ended: %v", err)
		default:
		}
		return len(rows(c.snapshot())) >= len(want)
	})
	cancel()
	<-done
	events := c.snapshot()
	checkMerged(t, events)
	sameSet(t, rows(events), want)
}
