// Package chaos kills vstreamd and MariaDB at random moments while a Go client streams a
// table copy and the binlog under a concurrent writer, and checks that the client's image
// still equals the source with no transaction applied twice.
package chaos

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
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
	build := exec.Command("go", "build", "-o", bin, "./cmd/vstreamd")
	build.Dir = ".."
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build vstreamd:", err)
		os.Exit(1)
	}
	code := testdb.RunTests(m, testdb.Options{Database: "chaos"}, &db)
	os.RemoveAll(dir)
	os.Exit(code)
}

// vstreamd is a vstreamd process that can be killed and started again on the same address.
type vstreamd struct {
	t    *testing.T
	addr string
	cmd  *exec.Cmd
	log  *os.File
}

func startVstreamd(t *testing.T) *vstreamd {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	v := &vstreamd{t: t, addr: lis.Addr().String()}
	lis.Close()
	v.log, _ = os.Create(filepath.Join(t.TempDir(), "vstreamd.log"))
	v.start()
	t.Cleanup(func() { v.kill() })
	return v
}

func (v *vstreamd) start() {
	v.cmd = exec.Command(bin, "--mysql-dsn", db.DSN("chaos"), "--listen", v.addr)
	v.cmd.Stdout, v.cmd.Stderr = v.log, v.log
	if err := v.cmd.Start(); err != nil {
		v.t.Fatal(err)
	}
}

func (v *vstreamd) kill() { v.signal(os.Kill) }

func (v *vstreamd) signal(sig os.Signal) {
	if v.cmd != nil && v.cmd.Process != nil {
		v.cmd.Process.Signal(sig)
		v.cmd.Wait()
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
			CopyChunkRows: 40,
		}, c.handle)
		cl.Close()
	}()
	return c, cancel
}

// waitCaughtUp waits until the consumer's position is the server's.
func (c *consumer) waitCaughtUp(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		conn, err := db.Conn("chaos")
		if err == nil {
			r, err := conn.Execute("SELECT @@GLOBAL.gtid_binlog_pos")
			if err == nil {
				cur, _ := r.GetString(0, 0)
				_, last, pending := c.state()
				if last != nil && pending == 0 && last.ShardGtids[0].Gtid == "MariaDB/"+cur && len(last.ShardGtids[0].TablePKs) == 0 {
					conn.Close()
					return
				}
			}
			conn.Close()
		}
		if time.Now().After(deadline) {
			_, last, _ := c.state()
			t.Fatalf("the consumer did not catch up; at %v", last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (c *consumer) check(t *testing.T) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.im.Check(t, db, "chaos")
}

// TestKillVstreamd kills vstreamd with SIGKILL at 10 random moments, during the copy and the
// binlog phase, and starts it again; the Go client resumes each time.
func TestKillVstreamd(t *testing.T) {
	applier.SetupWorkload(t, db)
	w := applier.StartWriter(t, db, "chaos", 1, 3*time.Millisecond)
	v := startVstreamd(t)
	c, cancel := startConsumer(t, v.addr)
	defer cancel()
	rng := rand.New(rand.NewPCG(42, 1))
	duringCopy := 0
	for i := 0; i < 10; i++ {
		time.Sleep(time.Duration(50+rng.IntN(400)) * time.Millisecond)
		if copied, _, _ := c.state(); !copied {
			duringCopy++
		}
		v.kill()
		time.Sleep(time.Duration(rng.IntN(200)) * time.Millisecond)
		v.start()
	}
	w.Finish(t)
	c.waitCaughtUp(t)
	c.check(t)
	if duringCopy == 0 || duringCopy == 10 {
		t.Errorf("%d of 10 kills landed during the copy; want some in the copy and some after", duringCopy)
	}
	t.Logf("%d of 10 kills during the copy", duringCopy)
}

// TestTerminateVstreamd stops vstreamd with SIGTERM (a drain: streams end at a transaction
// boundary) at random moments of the copy and the binlog phase, and starts it again.
func TestTerminateVstreamd(t *testing.T) {
	applier.SetupWorkload(t, db)
	w := applier.StartWriter(t, db, "chaos", 3, 3*time.Millisecond)
	v := startVstreamd(t)
	c, cancel := startConsumer(t, v.addr)
	defer cancel()
	rng := rand.New(rand.NewPCG(44, 1))
	duringCopy := 0
	for i := 0; i < 10; i++ {
		time.Sleep(time.Duration(50+rng.IntN(400)) * time.Millisecond)
		if copied, _, _ := c.state(); !copied {
			duringCopy++
		}
		v.signal(syscall.SIGTERM)
		v.start()
	}
	w.Finish(t)
	c.waitCaughtUp(t)
	c.check(t)
	if duringCopy == 0 || duringCopy == 10 {
		t.Errorf("%d of 10 stops landed during the copy; want some in the copy and some after", duringCopy)
	}
}

// TestKillDatabase kills MariaDB with SIGKILL at random moments and restarts it.
func TestKillDatabase(t *testing.T) {
	applier.SetupWorkload(t, db)
	w := applier.StartWriter(t, db, "chaos", 2, 3*time.Millisecond)
	v := startVstreamd(t)
	c, cancel := startConsumer(t, v.addr)
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
}
