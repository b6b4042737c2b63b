package vstreamer

import (
	"context"
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"
)

// TestWatchedConn: a read that waits longer than the timeout fails with a timeout, as under
// go-mysql's read deadline; reads that keep getting bytes, and a connection left unread for
// longer than the timeout between reads, do not.
func TestWatchedConn(t *testing.T) {
	const timeout = 200 * time.Millisecond
	tests := []struct {
		name string
		// gaps: the other end writes a byte after each, while the test reads them.
		gaps []time.Duration
		// pause is how long the test leaves the connection unread before its first read.
		pause time.Duration
		// fails tells whether a read is to fail with a timeout.
		fails bool
	}{
		{name: "bytes within the timeout", gaps: []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 150 * time.Millisecond, 100 * time.Millisecond}},
		// The stream may be busy sending while nothing reads: that is not silence.
		{name: "unread longer than the timeout", pause: 3 * timeout, gaps: []time.Duration{10 * time.Millisecond, 10 * time.Millisecond}},
		{name: "silent longer than the timeout", gaps: []time.Duration{50 * time.Millisecond, 3 * timeout}, fails: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := net.Pipe()
			defer b.Close()
			cfg := watchReads(replication.BinlogSyncerConfig{ReadTimeout: timeout, Dialer: func(context.Context, string, string) (net.Conn, error) {
				return a, nil
			}})
			if cfg.ReadTimeout != 0 {
				t.Fatalf("ReadTimeout %v left to go-mysql, which sets a deadline per packet", cfg.ReadTimeout)
			}
			c, err := cfg.Dialer(context.Background(), "tcp", "server")
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			go func() {
				for _, g := range tt.gaps {
					time.Sleep(g)
					if _, err := b.Write([]byte{1}); err != nil {
						return
					}
				}
			}()
			time.Sleep(tt.pause)
			start := time.Now()
			var readErr error
			for range tt.gaps {
				if _, readErr = c.Read(make([]byte, 1)); readErr != nil {
					break
				}
			}
			switch {
			case tt.fails && !errors.Is(readErr, os.ErrDeadlineExceeded):
				t.Fatalf("read error %v, want a timeout", readErr)
			case tt.fails:
				// Failed after the silence, not before it and not long after (the bound is loose for a
				// loaded machine).
				if d := time.Since(start); d < 50*time.Millisecond+timeout || d > 50*time.Millisecond+5*timeout {
					t.Errorf("the read failed after %v, want %v to %v", d, 50*time.Millisecond+timeout, 50*time.Millisecond+5*timeout)
				}
			case readErr != nil:
				t.Fatalf("read failed: %v", readErr)
			}
		})
	}
}
