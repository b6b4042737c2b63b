// Package chaos kills vstreamd and the database (MariaDB or MySQL) at random moments while a Go client streams a
// table copy and the binlog under a concurrent writer, and checks that the client's image
// still equals the source with no transaction applied twice.
package chaos

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v5"

	"github.com/vstream-cdc/vstream/client"
	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/internal/applier"
	"github.com/vstream-cdc/vstream/internal/testdb"
	"github.com/vstream-cdc/vstream/internal/testkit"
	"github.com/vstream-cdc/vstream/position"
)

var (
	db  *testdb.Server
	bin string
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "chaos")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "vstreamd")
	sinkBin = filepath.Join(dir, "vstream-sink")
	if err := testkit.Build(dir, "./cmd/vstreamd", "./cmd/vstream-sink"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := testdb.RunTests(m, testdb.Options{Database: "chaos"}, &db)
	os.RemoveAll(dir)
	os.Exit(code)
}

// startVstreamd starts vstreamd on a port of its own; args are added to its command line.
// It is killed when the test ends.
func startVstreamd(t *testing.T, args ...string) *testkit.Vstreamd {
	t.Helper()
	log, err := os.Create(filepath.Join(t.TempDir(), "vstreamd.log"))
	if err != nil {
		t.Fatal(err)
	}
	v, err := testkit.NewVstreamd(bin, log, append([]string{"--mysql-dsn", db.DSN("chaos")}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	runVstreamd(t, v)
	t.Cleanup(v.Kill)
	return v
}

// runVstreamd runs v (again): it does not wait for it to listen, the client retries.
func runVstreamd(t *testing.T, v *testkit.Vstreamd) {
	t.Helper()
	if err := v.Start(); err != nil {
		t.Fatal(err)
	}
}

// consumer streams with the Go client into an image.
type consumer struct {
	mu  sync.Mutex
	im  *applier.Image
	err chan error
}

func (c *consumer) handle(_ context.Context, evs []*binlogdata.VEvent) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ev := range evs {
		c.im.Add(ev)
	}
	return nil
}

func (c *consumer) state() (copied bool, last *binlogdata.VGtid, pending int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.im.Copied, c.im.Last, c.im.Pending()
}

func startConsumer(t *testing.T, addr string) (*consumer, context.CancelFunc) {
	cl, err := client.Dial(addr, client.Options{
		Logger:  slog.New(slog.DiscardHandler),
		Backoff: func() backoff.BackOff { return backoff.NewConstantBackOff(50 * time.Millisecond) },
	})
	if err != nil {
		t.Fatal(err)
	}
	c := &consumer{im: applier.New(applier.WorkloadKeys), err: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		c.err <- cl.Stream(ctx, client.Request{
			Position:      &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Gtid: ""}}},
			Filter:        &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "/^cp_"}}},
			CopyChunkRows: 5,
		}, c.handle)
		cl.Close()
	}()
	return c, cancel
}

// waitCaughtUp waits until the consumer's position is the server's. The two are compared
// as GTID sets, not as text: MySQL may write a set's intervals differently from the stream.
func (c *consumer) waitCaughtUp(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if cur, err := db.Position(); err == nil {
			_, last, pending := c.state()
			if last != nil && pending == 0 && len(last.ShardGtids[0].TablePKs) == 0 && samePosition(last.ShardGtids[0].Gtid, cur) {
				return
			}
		}
		if time.Now().After(deadline) {
			_, last, _ := c.state()
			t.Fatalf("the consumer did not catch up; at %v", last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// samePosition reports whether two positions name the same GTID set.
func samePosition(a, b string) bool {
	pa, err := position.Parse(a)
	if err != nil {
		return false
	}
	pb, err := position.Parse(b)
	return err == nil && pa.Equal(pb)
}

// waitCopyStarted waits until the consumer holds a position inside the copy.
func (c *consumer) waitCopyStarted(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, last, _ := c.state(); last != nil && len(last.ShardGtids[0].TablePKs) > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the copy did not start")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitCopied waits until the consumer has the whole copy.
func (c *consumer) waitCopied(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if copied, _, _ := c.state(); copied {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the copy did not finish")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// restarts stops vstreamd n times during the copy (the first right after the copy starts,
// then at random moments until it is done) and n times after it, starting it again each time.
func restarts(t *testing.T, v *testkit.Vstreamd, c *consumer, sig os.Signal, seed uint64, n int) (duringCopy int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	c.waitCopyStarted(t)
	for i := 0; i < n; i++ {
		if copied, _, _ := c.state(); copied {
			break
		}
		_ = v.Signal(sig)
		duringCopy++
		runVstreamd(t, v)
		time.Sleep(time.Duration(20+rng.IntN(100)) * time.Millisecond)
	}
	c.waitCopied(t)
	for i := 0; i < n; i++ {
		time.Sleep(time.Duration(50+rng.IntN(300)) * time.Millisecond)
		_ = v.Signal(sig)
		time.Sleep(time.Duration(rng.IntN(100)) * time.Millisecond)
		runVstreamd(t, v)
	}
	return duringCopy
}

func (c *consumer) check(t *testing.T) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.im.Check(t, db, "chaos")
}

// TestStopVstreamd kills vstreamd with SIGKILL, or stops it with SIGTERM (a drain: streams end
// at a transaction boundary), 10 times: up to 5 during the copy (the first right after it
// starts) and 5 in the binlog phase, at random moments, starting it again each time; the Go
// client resumes each time.
func TestStopVstreamd(t *testing.T) {
	for _, c := range []struct {
		name string
		sig  os.Signal
		seed uint64
	}{
		{"SIGKILL", os.Kill, 42},
		{"SIGTERM", syscall.SIGTERM, 44},
	} {
		t.Run(c.name, func(t *testing.T) {
			applier.SetupWorkload(t, db)
			w := applier.StartWriter(t, db, "chaos", c.seed, 3*time.Millisecond)
			v := startVstreamd(t)
			cons, cancel := startConsumer(t, v.Addr)
			defer cancel()
			during := restarts(t, v, cons, c.sig, c.seed, 5)
			w.Finish(t)
			cons.waitCaughtUp(t)
			cons.check(t)
			checkMySQLWorkload(t)
			if during == 0 {
				t.Error("no stop landed during the copy")
			}
			t.Logf("%d stops during the copy, 5 after", during)
		})
	}
}

// TestKillDatabase kills the database server (mariadbd or mysqld) with SIGKILL 10 times at random moments and restarts it.
func TestKillDatabase(t *testing.T) {
	applier.SetupWorkload(t, db)
	w := applier.StartWriter(t, db, "chaos", 2, 3*time.Millisecond)
	v := startVstreamd(t)
	c, cancel := startConsumer(t, v.Addr)
	defer cancel()
	rng := rand.New(rand.NewPCG(43, 1))
	for i := 0; i < 10; i++ {
		time.Sleep(time.Duration(100+rng.IntN(400)) * time.Millisecond)
		db.Kill()
		if err := db.Restart(); err != nil {
			t.Fatal(err)
		}
	}
	w.Finish(t)
	c.waitCaughtUp(t)
	c.check(t)
	checkMySQLWorkload(t)
}

// checkMySQLWorkload fails a test on MySQL whose workload wrote no compressed transaction, no
// partial JSON update or no tagged GTID: the replay's equality is only worth as much as what
// went through it.
func checkMySQLWorkload(t *testing.T) {
	t.Helper()
	if db.Flavor() != testdb.MySQL {
		return
	}
	counts, tagged := applier.MySQLLogged(t, db)
	if counts["Transaction_payload"] == 0 || counts["Update_rows_partial"] == 0 || !tagged {
		t.Errorf("the MySQL workload logged %d compressed transactions, %d partial JSON updates, tagged GTIDs %v; want some of each",
			counts["Transaction_payload"], counts["Update_rows_partial"], tagged)
	}
	t.Logf("through compressed transactions (%d), partial JSON updates (%d) and tagged GTIDs", counts["Transaction_payload"], counts["Update_rows_partial"])
}
