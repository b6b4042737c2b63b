package sqlpool

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"

	"github.com/vstream-cdc/vstream/internal/testdb"
	"github.com/vstream-cdc/vstream/internal/testkit"
)

var db *testdb.Server

func TestMain(m *testing.M) {
	os.Exit(testdb.RunTests(m, testdb.Options{Database: "test"}, &db))
}

func newPool(t *testing.T, cfg Config) *Pool {
	t.Helper()
	cfg.Dial = func(context.Context) (*client.Conn, error) { return db.Conn("") }
	if cfg.MaxIdle == 0 {
		cfg.MaxIdle = 4
	}
	if cfg.PingAfter == 0 {
		cfg.PingAfter = time.Hour
	}
	p := New(cfg)
	t.Cleanup(p.Close)
	return p
}

func get(t *testing.T, p *Pool) *client.Conn {
	t.Helper()
	c, err := p.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// open reports whether the server still has the connection of id.
func open(t *testing.T, id uint32) bool {
	t.Helper()
	c, err := db.Conn("")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := c.Execute(fmt.Sprintf("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = %d", id))
	if err != nil {
		t.Fatal(err)
	}
	n, _ := r.GetInt(0, 0)
	return n > 0
}

// TestPutBack: a connection put back without an error is leased again; one put back with an
// error, or found dead by the ping of a long-idle connection, is closed and replaced.
func TestPutBack(t *testing.T) {
	for _, tc := range []struct {
		name string
		// spoil happens to the connection before or as it is put back; it returns the
		// error its use ended with.
		spoil     func(t *testing.T, c *client.Conn) error
		pingAfter time.Duration
		reused    bool
	}{
		{name: "clean use is reused", spoil: func(*testing.T, *client.Conn) error { return nil }, reused: true},
		{name: "use that failed is closed", spoil: func(*testing.T, *client.Conn) error { return errors.New("read failed") }},
		{name: "killed while idle is replaced", pingAfter: time.Nanosecond, spoil: func(t *testing.T, c *client.Conn) error {
			if err := db.Exec(fmt.Sprintf("KILL CONNECTION %d", c.GetConnectionID())); err != nil {
				t.Fatal(err)
			}
			return nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPool(t, Config{PingAfter: tc.pingAfter})
			c := get(t, p)
			id := c.GetConnectionID()
			p.Put(c, tc.spoil(t, c))
			c2 := get(t, p)
			if got := c2.GetConnectionID() == id; got != tc.reused {
				t.Fatalf("second lease reused the connection: %v, want %v", got, tc.reused)
			}
			if _, err := c2.Execute("SELECT 1"); err != nil {
				t.Fatalf("leased connection does not work: %v", err)
			}
			p.Put(c2, nil)
			if !tc.reused {
				testkit.WaitFor(t, 10*time.Second, "the dropped connection to close", func() bool { return !open(t, id) })
			}
			st := p.Stats()
			wantDials := uint64(2)
			if tc.reused {
				wantDials = 1
			}
			if st.Dials != wantDials || st.Leased != 0 || st.Idle != 1 {
				t.Errorf("stats = %+v, want %d dials, none leased, one idle", st, wantDials)
			}
		})
	}
}

// TestIdleBounds: no more than MaxIdle connections are kept, idle ones are closed after
// IdleTimeout, and Close closes the rest.
func TestIdleBounds(t *testing.T) {
	t.Run("max idle", func(t *testing.T) {
		p := newPool(t, Config{MaxIdle: 2})
		conns := []*client.Conn{get(t, p), get(t, p), get(t, p)}
		for _, c := range conns {
			p.Put(c, nil)
		}
		if st := p.Stats(); st.Idle != 2 {
			t.Fatalf("idle = %d, want 2", st.Idle)
		}
		testkit.WaitFor(t, 10*time.Second, "the third connection to close", func() bool { return !open(t, conns[2].GetConnectionID()) })
	})
	t.Run("idle timeout", func(t *testing.T) {
		p := newPool(t, Config{IdleTimeout: 100 * time.Millisecond})
		a, b := get(t, p), get(t, p)
		p.Put(a, nil)
		time.Sleep(60 * time.Millisecond)
		p.Put(b, nil)
		testkit.WaitFor(t, 10*time.Second, "the first to close", func() bool { return !open(t, a.GetConnectionID()) })
		testkit.WaitFor(t, 10*time.Second, "the second to close", func() bool { return !open(t, b.GetConnectionID()) })
		if st := p.Stats(); st.Idle != 0 {
			t.Fatalf("idle = %d after the timeout", st.Idle)
		}
		// The pool still works, and times out again.
		c := get(t, p)
		p.Put(c, nil)
		testkit.WaitFor(t, 10*time.Second, "a later connection to close", func() bool { return !open(t, c.GetConnectionID()) })
	})
	t.Run("close", func(t *testing.T) {
		p := newPool(t, Config{})
		a, b := get(t, p), get(t, p)
		p.Put(a, nil)
		p.Close()
		testkit.WaitFor(t, 10*time.Second, "the idle connection to close", func() bool { return !open(t, a.GetConnectionID()) })
		// A lease that outlives Close is closed when put back; later uses dial.
		p.Put(b, nil)
		testkit.WaitFor(t, 10*time.Second, "the leased connection to close", func() bool { return !open(t, b.GetConnectionID()) })
		c := get(t, p)
		if _, err := c.Execute("SELECT 1"); err != nil {
			t.Fatal(err)
		}
		p.Put(c, nil)
		if st := p.Stats(); st.Idle != 0 || st.Dials != 3 {
			t.Fatalf("stats after close = %+v", st)
		}
	})
}

// TestBusy: past Busy leases, Get waits for a connection put back rather than dial, dials
// when none comes back within Wait, and honours its context while it waits.
func TestBusy(t *testing.T) {
	t.Run("handed over", func(t *testing.T) {
		p := newPool(t, Config{Busy: 1, Wait: 10 * time.Second})
		a := get(t, p)
		got := make(chan *client.Conn, 1)
		go func() { c, _ := p.Get(context.Background()); got <- c }()
		testkit.WaitFor(t, 10*time.Second, "the second Get to wait", func() bool { p.mu.Lock(); defer p.mu.Unlock(); return len(p.waiters) == 1 })
		p.Put(a, nil)
		b := <-got
		if b != a {
			t.Fatal("the waiting Get did not get the connection put back")
		}
		p.Put(b, nil)
		if st := p.Stats(); st.Dials != 1 || st.Reuses != 1 {
			t.Fatalf("stats = %+v, want 1 dial and 1 reuse", st)
		}
	})
	t.Run("waits while the queue moves", func(t *testing.T) {
		// Each holder keeps the one connection for less than Wait, the last waiter longer in
		// all: it still gets the connection rather than dial.
		const hold = 150 * time.Millisecond
		p := newPool(t, Config{Busy: 1, Wait: 2 * hold})
		a := get(t, p)
		const waiters = 4
		got := make(chan *client.Conn, waiters)
		for range waiters {
			go func() {
				c, err := p.Get(context.Background())
				if err != nil {
					t.Error(err)
				}
				time.Sleep(hold)
				p.Put(c, nil)
				got <- c
			}()
		}
		testkit.WaitFor(t, 10*time.Second, "the Gets to wait", func() bool { p.mu.Lock(); defer p.mu.Unlock(); return len(p.waiters) == waiters })
		time.Sleep(hold)
		p.Put(a, nil)
		for range waiters {
			if c := <-got; c != a {
				t.Error("a waiting Get dialed while the connection kept coming back")
			}
		}
		if st := p.Stats(); st.Dials != 1 {
			t.Fatalf("stats = %+v, want 1 dial", st)
		}
	})
	t.Run("dropped", func(t *testing.T) {
		p := newPool(t, Config{Busy: 1, Wait: 10 * time.Second})
		a := get(t, p)
		got := make(chan *client.Conn, 1)
		go func() { c, _ := p.Get(context.Background()); got <- c }()
		testkit.WaitFor(t, 10*time.Second, "the second Get to wait", func() bool { p.mu.Lock(); defer p.mu.Unlock(); return len(p.waiters) == 1 })
		begin := time.Now()
		p.Put(a, errors.New("broken"))
		b := <-got
		if b == nil || b == a || time.Since(begin) > 5*time.Second {
			t.Fatal("the waiting Get did not dial at once in place of the dropped connection")
		}
		p.Put(b, nil)
		if st := p.Stats(); st.Dials != 2 || st.Leased != 0 {
			t.Fatalf("stats = %+v", st)
		}
	})
	t.Run("wait over", func(t *testing.T) {
		p := newPool(t, Config{Busy: 1, Wait: 20 * time.Millisecond})
		a := get(t, p)
		b := get(t, p)
		if a == b {
			t.Fatal("same connection leased twice")
		}
		p.Put(a, nil)
		p.Put(b, nil)
		if st := p.Stats(); st.Dials != 2 || st.Leased != 0 {
			t.Fatalf("stats = %+v", st)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		p := newPool(t, Config{Busy: 1, Wait: 10 * time.Second})
		a := get(t, p)
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() { _, err := p.Get(ctx); errc <- err }()
		testkit.WaitFor(t, 10*time.Second, "the second Get to wait", func() bool { p.mu.Lock(); defer p.mu.Unlock(); return len(p.waiters) == 1 })
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v", err)
		}
		p.Put(a, nil)
		if st := p.Stats(); st.Dials != 1 || st.Idle != 1 || st.Leased != 0 {
			t.Fatalf("stats = %+v", st)
		}
	})
}
