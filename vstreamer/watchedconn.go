package vstreamer

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"
)

// watchTicks is how many times per timeout a watched connection looks at its reads: a read
// that waits fails between timeout and timeout*(1+1/watchTicks) after its last byte.
const watchTicks = 4

// watchReads has a replication connection's reads watched from a goroutine of its own instead
// of by go-mysql's ReadTimeout, which sets the socket's read deadline three times per binlog
// event (a clock read and a timer change under the poller's lock each): an eighth of
// vstreamd's CPU streaming small transactions. A read that waits cfg.ReadTimeout without a
// byte fails with a timeout, as it would have under the deadline; a connection that is not
// being read (the stream is busy sending) is not timed, where the deadline set after the last
// event could expire while no read waited.
func watchReads(cfg replication.BinlogSyncerConfig) replication.BinlogSyncerConfig {
	timeout := cfg.ReadTimeout
	if timeout <= 0 {
		return cfg
	}
	dial := cfg.Dialer
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	cfg.ReadTimeout = 0
	cfg.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return newWatchedConn(c, timeout), nil
	}
	return cfg
}

// watchedConn is a connection whose reads fail once one waited longer than its timeout.
type watchedConn struct {
	net.Conn
	// reads counts reads begun and reads ended: odd while a read waits.
	reads     atomic.Uint64
	closed    chan struct{}
	closeOnce sync.Once
}

func newWatchedConn(c net.Conn, timeout time.Duration) *watchedConn {
	w := &watchedConn{Conn: c, closed: make(chan struct{})}
	go w.watch(timeout)
	return w
}

func (w *watchedConn) Read(p []byte) (int, error) {
	w.reads.Add(1)
	n, err := w.Conn.Read(p)
	w.reads.Add(1)
	return n, err
}

func (w *watchedConn) Close() error {
	w.closeOnce.Do(func() { close(w.closed) })
	return w.Conn.Close()
}

// watch fails the waiting read, through the read deadline, once the same read has waited for
// watchTicks looks in a row, and stops when the connection closes.
func (w *watchedConn) watch(timeout time.Duration) {
	t := time.NewTicker(timeout / watchTicks)
	defer t.Stop()
	last, still := w.reads.Load(), 0
	for {
		select {
		case <-w.closed:
			return
		case <-t.C:
		}
		n := w.reads.Load()
		if n%2 == 1 && n == last {
			still++
		} else {
			still = 0
		}
		last = n
		if still >= watchTicks {
			// The waiting read returns a timeout, and so does every read after it: the
			// connection is treated as broken.
			_ = w.SetReadDeadline(time.Now())
			return
		}
	}
}
