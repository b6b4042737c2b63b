package chaos

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v5"

	"github.com/vstream-cdc/vstream/client"
	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	"github.com/vstream-cdc/vstream/internal/testdb"
	"github.com/vstream-cdc/vstream/internal/testkit"
)

// shardImage is what a consumer of a multi-shard stream keeps: each shard's rows, and how
// many times each written value arrived in a row image.
type shardImage struct {
	mu     sync.Mutex
	rows   map[string]map[string]string
	seen   map[string]int
	shards map[string]bool
	copied bool
	// pending holds the events since the last VGTID: a reconnect delivers them again, after
	// a ROLLBACK.
	pending []*binlogdata.VEvent
}

func (im *shardImage) handle(_ context.Context, events []*binlogdata.VEvent) error {
	im.mu.Lock()
	defer im.mu.Unlock()
	for _, ev := range events {
		switch ev.GetType() {
		case binlogdata.VEventType_ROLLBACK:
			im.pending = nil
		case binlogdata.VEventType_VGTID:
			im.apply()
			for _, sg := range ev.GetVgtid().GetShardGtids() {
				im.shards[sg.GetShard()] = true
			}
		case binlogdata.VEventType_COPY_COMPLETED:
			if ev.GetKeyspace() == "" {
				im.copied = true
			}
		default:
			im.pending = append(im.pending, ev)
		}
	}
	return nil
}

// apply applies the events before a VGTID: they will not come again.
func (im *shardImage) apply() {
	for _, ev := range im.pending {
		for _, rc := range ev.GetRowEvent().GetRowChanges() {
			rows := im.rows[ev.GetShard()]
			if rows == nil {
				rows = map[string]string{}
				im.rows[ev.GetShard()] = rows
			}
			if b := rc.GetBefore(); b != nil {
				delete(rows, rowValues(b)[0])
			}
			if a := rc.GetAfter(); a != nil {
				v := rowValues(a)
				rows[v[0]] = v[1]
				im.seen[v[1]]++
			}
		}
	}
	im.pending = im.pending[:0]
}

func rowValues(r *query.Row) []string {
	var out []string
	off := int64(0)
	for _, n := range r.GetLengths() {
		out = append(out, string(r.GetValues()[off:off+max(n, 0)]))
		off += max(n, 0)
	}
	return out
}

// shardWriter writes to one shard's current primary: inserts and updates, each value
// written once.
type shardWriter struct {
	mu      sync.Mutex
	server  *testdb.Server
	shard   string
	rng     *rand.Rand
	seq     int
	stopped bool
}

func (w *shardWriter) txn() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return nil
	}
	stmts := []string{"BEGIN"}
	for range 1 + w.rng.IntN(3) {
		w.seq++
		id := w.rng.IntN(200)
		stmts = append(stmts, fmt.Sprintf("INSERT INTO t VALUES (%d, '%s-%d') ON DUPLICATE KEY UPDATE v = '%s-%d'", id, w.shard, w.seq, w.shard, w.seq))
	}
	return w.server.Exec(append(stmts, "COMMIT")...)
}

// pause stops the writer between transactions; resume goes on on server.
func (w *shardWriter) pause() { w.mu.Lock(); w.stopped = true; w.mu.Unlock() }
func (w *shardWriter) resume(s *testdb.Server) {
	w.mu.Lock()
	w.server, w.stopped = s, false
	w.mu.Unlock()
}

func tableRows(t *testing.T, s *testdb.Server) map[string]string {
	t.Helper()
	conn, err := s.Conn("app")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }() // read only
	r, err := conn.Execute("SELECT id, v FROM t")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for i := range r.RowNumber() {
		id, _ := r.GetString(i, 0)
		v, _ := r.GetString(i, 1)
		out[id] = v
	}
	return out
}

// TestShardsFailover streams a keyspace of two shards from three servers (shard -80's
// primary and its replica, shard 80-'s primary) through vstreamd --topology, from a copy,
// while writers change both shards. Shard -80's primary is killed with SIGKILL once its
// replica has caught up, the replica promoted and written to; vstreamd is killed and
// started again twice. The consumer's image of each shard equals the shard's table, and no
// written value arrived twice.
func TestShardsFailover(t *testing.T) {
	var servers [2]*testdb.Server
	for i := range servers {
		s, err := testdb.Start(testdb.Options{Database: "app"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		if err = s.Exec("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(32))"); err != nil {
			t.Fatal(err)
		}
		servers[i] = s
	}
	replica, err := servers[0].StartReplica()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(replica.Close)
	writers := [2]*shardWriter{{server: servers[0], shard: "-80", rng: rand.New(rand.NewPCG(1, 2))},
		{server: servers[1], shard: "80-", rng: rand.New(rand.NewPCG(3, 4))}}
	for range 100 {
		for _, w := range writers {
			if err = w.txn(); err != nil {
				t.Fatal(err)
			}
		}
	}

	topo := filepath.Join(t.TempDir(), "topology.yaml")
	if err = os.WriteFile(topo, fmt.Appendf(nil, `keyspaces:
  - name: app
    shards:
      - name: "-80"
        servers:
          - {addr: %q, tablet_type: primary}
          - {addr: %q, tablet_type: replica}
      - name: "80-"
        servers:
          - {addr: %q}
`, servers[0].Addr(), replica.Addr(), servers[1].Addr()), 0o600); err != nil {
		t.Fatal(err)
	}
	logFile, err := os.Create(filepath.Join(t.TempDir(), "vstreamd.log"))
	if err != nil {
		t.Fatal(err)
	}
	vs, err := testkit.NewVstreamd(bin, logFile, "--mysql-dsn", servers[1].DSN("app"), "--topology", topo)
	if err != nil {
		t.Fatal(err)
	}
	runVstreamd(t, vs)
	t.Cleanup(vs.Kill)
	addr := vs.Addr

	cl, err := client.Dial(addr, client.Options{Logger: slog.New(slog.DiscardHandler),
		Backoff: func() backoff.BackOff { return backoff.NewConstantBackOff(100 * time.Millisecond) }})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cl.Close() }()
	im := &shardImage{rows: map[string]map[string]string{}, seen: map[string]int{}, shards: map[string]bool{}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- cl.Stream(ctx, client.Request{Position: &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Keyspace: "app"}}},
			Filter: client.ParseTables("t"), CopyChunkRows: 20}, im.handle)
	}()

	logCount := func(what string) int {
		b, _ := os.ReadFile(logFile.Name())
		return strings.Count(string(b), what)
	}
	waitUntil := func(what string, cond func() bool) {
		deadline := time.Now().Add(60 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s; vstreamd log:\n%s", what, tail(logFile.Name()))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitUntil("the copy's end", func() bool { im.mu.Lock(); defer im.mu.Unlock(); return im.copied })
	wctx, wcancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, w := range writers {
		wg.Go(func() {
			for wctx.Err() == nil {
				if err := w.txn(); err != nil {
					t.Error(err)
					return
				}
				time.Sleep(2 * time.Millisecond)
			}
		})
	}
	time.Sleep(300 * time.Millisecond)
	started := logCount("stream starting")
	vs.Kill()
	runVstreamd(t, vs)
	waitUntil("the client's stream on the new vstreamd", func() bool { return logCount("stream starting") > started })
	time.Sleep(300 * time.Millisecond)

	// Failover of shard -80: its writer stops, the replica catches up, the primary dies.
	writers[0].pause()
	if err = replica.WaitCaughtUp(servers[0]); err != nil {
		t.Fatal(err)
	}
	servers[0].Kill()
	if err = replica.Promote(); err != nil {
		t.Fatal(err)
	}
	writers[0].resume(replica)
	// The running stream leaves the dead primary for the replica, between transactions.
	waitUntil("the stream's failover", func() bool { return logCount("shard server lost between transactions") >= 1 })
	time.Sleep(300 * time.Millisecond)
	started = logCount("stream starting")
	vs.Kill()
	runVstreamd(t, vs)
	// A new stream starts on the replica: the primary does not answer.
	waitUntil("the client's stream on the restarted vstreamd", func() bool { return logCount("stream starting") > started })
	time.Sleep(300 * time.Millisecond)
	wcancel()
	wg.Wait()

	want := map[string]map[string]string{"-80": tableRows(t, replica), "80-": tableRows(t, servers[1])}
	equal := func() bool {
		im.mu.Lock()
		defer im.mu.Unlock()
		for shard, rows := range want {
			got := im.rows[shard]
			if len(got) != len(rows) {
				return false
			}
			for id, v := range rows {
				if got[id] != v {
					return false
				}
			}
		}
		return im.copied
	}
	deadline := time.Now().Add(60 * time.Second)
	for !equal() {
		select {
		case err := <-done:
			t.Fatalf("the stream ended: %v; vstreamd log:\n%s", err, tail(logFile.Name()))
		default:
		}
		if time.Now().After(deadline) {
			im.mu.Lock()
			t.Fatalf("the image did not reach the sources: %d and %d rows of %d and %d; vstreamd log:\n%s",
				len(im.rows["-80"]), len(im.rows["80-"]), len(want["-80"]), len(want["80-"]), tail(logFile.Name()))
		}
		time.Sleep(100 * time.Millisecond)
	}
	im.mu.Lock()
	defer im.mu.Unlock()
	var twice []string
	for v, n := range im.seen {
		if n > 1 {
			twice = append(twice, v)
		}
	}
	if len(twice) > 0 {
		t.Fatalf("%d values arrived more than once, e.g. %v", len(twice), twice[:min(len(twice), 10)])
	}
	if !im.shards["-80"] || !im.shards["80-"] {
		t.Fatalf("VGTIDs named shards %v", im.shards)
	}
	t.Logf("vstreamd: %d streams started, %d in-stream failovers", logCount("stream starting"),
		logCount("shard server lost between transactions"))
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}
