// Package sqlpool keeps a few idle SQL connections to the source server for short uses
// (inspecting the server, reading table definitions), so that streams starting together do
// not each pay a connection's setup: TCP, authentication, session settings and the growth of
// its buffers on its first results.
//
// go-mysql's client.Pool does not fit: it dials a connection as soon as it is made and keeps
// redialing in the background while the server is down, and it dials with its own timeout
// and no session settings.
package sqlpool

import (
	"context"
	"sync"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
)

// Config says how the pool dials and how much it keeps.
type Config struct {
	// Dial opens a connection ready for use (its session settings applied).
	Dial func(ctx context.Context) (*client.Conn, error)
	// MaxIdle bounds the connections kept idle; more are closed when put back.
	MaxIdle int
	// IdleTimeout closes a connection idle for this long.
	IdleTimeout time.Duration
	// Busy is how many connections may be leased before Get waits for one to come back
	// instead of dialing another: a burst of short uses then shares a few connections. Get
	// waits while connections keep coming back, and dials once none has for Wait: uses
	// stuck on the server delay the others by Wait at most.
	Busy int
	Wait time.Duration
	// PingAfter is how long a connection may have been idle before Get checks it still
	// answers: the server may have closed it (a restart, wait_timeout, KILL).
	PingAfter time.Duration
}

// Stats counts what the pool did.
type Stats struct {
	// Dials are the connections opened, Reuses the leases of an idle one.
	Dials, Reuses uint64
	// Idle and Leased are the connections idle and leased now.
	Idle, Leased int
}

// Pool is a pool of SQL connections. Its zero value is not usable; see New.
type Pool struct {
	cfg Config

	mu     sync.Mutex
	idle   []idleConn // most recently used last
	leased int
	// waiters wait for a connection put back while Busy are leased, first come first served.
	waiters []chan *client.Conn
	closed  bool
	reaper  *time.Timer
	stats   Stats
	// returned is when a leased connection last came back (Put), which a waiting Get
	// takes as progress.
	returned time.Time
}

type idleConn struct {
	conn  *client.Conn
	since time.Time
}

// New returns a pool that dials with cfg.Dial when it has no idle connection.
func New(cfg Config) *Pool {
	return &Pool{cfg: cfg}
}

// Get leases a connection: an idle one if the pool has one, else a new one. The caller gives
// it back with Put.
func (p *Pool) Get(ctx context.Context) (*client.Conn, error) {
	for {
		p.mu.Lock()
		if n := len(p.idle); n > 0 {
			ic := p.idle[n-1]
			p.idle[n-1] = idleConn{}
			p.idle = p.idle[:n-1]
			p.leased++
			p.stats.Reuses++
			p.mu.Unlock()
			if time.Since(ic.since) >= p.cfg.PingAfter && !alive(ctx, ic.conn) {
				p.drop(ic.conn)
				continue
			}
			return ic.conn, nil
		}
		if p.cfg.Busy > 0 && p.leased >= p.cfg.Busy && !p.closed {
			w := make(chan *client.Conn, 1)
			p.waiters = append(p.waiters, w)
			p.mu.Unlock()
			// nil: none came back in time, or one was dropped, and the caller dials.
			if conn := p.await(ctx, w); conn != nil {
				return conn, nil
			}
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			p.mu.Lock()
		}
		p.leased++
		p.stats.Dials++
		p.mu.Unlock()
		conn, err := p.cfg.Dial(ctx)
		if err != nil {
			p.mu.Lock()
			p.leased--
			p.mu.Unlock()
			return nil, err
		}
		return conn, nil
	}
}

// await waits for a connection handed to w while connections keep coming back: nil when
// none came back for Wait, or ctx ended, and w is then no longer waiting.
func (p *Pool) await(ctx context.Context, w chan *client.Conn) *client.Conn {
	t := time.NewTimer(p.cfg.Wait)
	defer t.Stop()
	for {
		select {
		case conn := <-w:
			return conn
		case <-ctx.Done():
		case <-t.C:
			p.mu.Lock()
			quiet := time.Since(p.returned)
			p.mu.Unlock()
			if quiet < p.cfg.Wait {
				// Others were served meanwhile: the queue moves.
				t.Reset(p.cfg.Wait - quiet)
				continue
			}
		}
		break
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, x := range p.waiters {
		if x == w {
			p.waiters = append(p.waiters[:i], p.waiters[i+1:]...)
			return nil
		}
	}
	// Put handed one over meanwhile: it is the caller's.
	return <-w
}

// alive pings a connection that sat idle, bounded by ctx.
func alive(ctx context.Context, conn *client.Conn) bool {
	if d, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(d)
	} else {
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	}
	err := conn.Ping()
	_ = conn.SetDeadline(time.Time{})
	return err == nil
}

// Put gives back a leased connection. err is the error its use ended with, if any: a
// connection that saw one may be broken or left in an unknown state, and is closed.
func (p *Pool) Put(conn *client.Conn, err error) {
	if err != nil {
		p.drop(conn)
		return
	}
	p.mu.Lock()
	p.returned = time.Now()
	if len(p.waiters) > 0 {
		// Still leased, by the waiter now.
		w := p.waiters[0]
		p.waiters = p.waiters[1:]
		p.stats.Reuses++
		p.mu.Unlock()
		w <- conn
		return
	}
	p.leased--
	if p.closed || len(p.idle) >= p.cfg.MaxIdle {
		p.mu.Unlock()
		_ = conn.Close() // idle and not wanted: nothing is lost
		return
	}
	p.idle = append(p.idle, idleConn{conn: conn, since: time.Now()})
	if p.reaper == nil && p.cfg.IdleTimeout > 0 {
		p.reaper = time.AfterFunc(p.cfg.IdleTimeout, p.reap)
	}
	p.mu.Unlock()
}

// drop closes a leased connection that is not coming back; a Get waiting for one dials in
// its place.
func (p *Pool) drop(conn *client.Conn) {
	p.mu.Lock()
	p.leased--
	var w chan *client.Conn
	if len(p.waiters) > 0 {
		w = p.waiters[0]
		p.waiters = p.waiters[1:]
	}
	p.mu.Unlock()
	_ = conn.Close() // broken or in an unknown state: nothing on it is wanted
	if w != nil {
		w <- nil
	}
}

// reap closes the connections idle for IdleTimeout and runs again when the oldest left is due.
func (p *Pool) reap() {
	now := time.Now()
	p.mu.Lock()
	var old []idleConn
	keep := p.idle[:0]
	for _, ic := range p.idle {
		if now.Sub(ic.since) >= p.cfg.IdleTimeout {
			old = append(old, ic)
		} else {
			keep = append(keep, ic)
		}
	}
	clear(p.idle[len(keep):])
	p.idle = keep
	p.reaper = nil
	if len(p.idle) > 0 && !p.closed {
		p.reaper = time.AfterFunc(p.cfg.IdleTimeout-now.Sub(p.idle[0].since), p.reap)
	}
	p.mu.Unlock()
	for _, ic := range old {
		_ = ic.conn.Close() // idle: nothing on it is wanted
	}
}

// Close closes the idle connections. Connections leased now are closed when put back, and
// Get dials a new connection for each later use.
func (p *Pool) Close() {
	p.mu.Lock()
	idle := p.idle
	p.idle = nil
	p.closed = true
	if p.reaper != nil {
		p.reaper.Stop()
		p.reaper = nil
	}
	p.mu.Unlock()
	for _, ic := range idle {
		_ = ic.conn.Close() // idle: nothing on it is wanted
	}
}

// Stats returns the pool's counts.
func (p *Pool) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stats
	s.Idle, s.Leased = len(p.idle), p.leased
	return s
}
