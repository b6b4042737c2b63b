package fanout

import (
	"context"
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"
)

// pushDumps makes the test binlog's dumps Pushers, as the engine's are.
var pushDumps bool

// pushing is a dump that decodes on a goroutine of its own and hands each event to the hub
// there, as go-mysql's synchronous handler does; its stop does not wait for that goroutine.
type pushing struct {
	*dump
	stop   func()
	ready  chan struct{}
	handle func(*replication.BinlogEvent) error
	errs   chan error
	done   chan struct{}
}

func newPushing(d *dump, stop func()) (Source, func(), error) {
	p := &pushing{dump: d, stop: stop, ready: make(chan struct{}), errs: make(chan error, 1), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		select {
		case <-p.ready:
		case <-d.ctx.Done():
			p.errs <- context.Canceled
			return
		}
		for {
			ev, err := d.GetEvent(d.ctx)
			if err == nil {
				err = p.handle(ev)
			}
			if err != nil {
				p.errs <- err
				return
			}
		}
	}()
	return p, stop, nil
}

func (p *pushing) Push(ctx context.Context, handle func(*replication.BinlogEvent) error) error {
	p.handle = handle
	close(p.ready)
	var err error
	select {
	case err = <-p.errs:
	case <-ctx.Done():
		err = ctx.Err()
	}
	p.stop()
	<-p.done
	return err
}

// TestPushedDumps runs the hub tests with dumps that push their events from their own
// goroutine: a catch-up hub hands over from inside a push, and a hub stops its dump while a
// push waits for the hub's lock or for room in the ring.
func TestPushedDumps(t *testing.T) {
	pushDumps = true
	defer func() { pushDumps = false }()
	for name, test := range map[string]func(*testing.T){
		"FellBehindMidTransaction": TestFellBehindMidTransaction,
		"PendingMissed":            TestPendingMissed,
		"CatchUpHandsOver":         TestCatchUpHandsOver,
		"AloneReadAhead":           TestAloneReadAhead,
	} {
		t.Run(name, test)
	}
}
