package vstreamer

import (
	"sync"
	"time"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/internal/faults"
)

// heartbeat is a stream's heartbeat: the interval the client asked for (zero: none), and the
// timer that wakes the stream goroutine once it has sent nothing for that long.
type heartbeat struct {
	interval time.Duration
	timer    *time.Timer
}

// start arms the timer of a stream that has a heartbeat.
func (h *heartbeat) start() {
	if h.interval > 0 {
		h.timer = time.NewTimer(h.interval)
	}
}

// stop stops the timer.
func (h *heartbeat) stop() {
	if h.timer != nil {
		h.timer.Stop()
	}
}

// tick is the timer's channel, nil without a heartbeat.
func (h *heartbeat) tick() <-chan time.Time {
	if h.timer == nil {
		return nil
	}
	return h.timer.C
}

// due reports, once the timer fired, whether o has sent nothing for the interval; when it
// has, the timer is armed again for the rest of the interval. The caller that sends the
// heartbeat rearms it.
func (h *heartbeat) due(o *outbox) bool {
	o.sendMu.Lock()
	idle := time.Since(o.lastSend)
	o.sendMu.Unlock()
	if idle >= h.interval {
		return true
	}
	h.timer.Reset(h.interval - idle)
	return false
}

// rearm arms the timer for a full interval after a heartbeat was sent.
func (h *heartbeat) rearm() { h.timer.Reset(h.interval) }

// while sends heartbeats on o from a second goroutine while the stream goroutine is blocked
// in a long server-side read, labelled with keyspace and shard; table names the table being
// read when the goroutine panics. It returns the function that stops it.
func (h *heartbeat) while(o *outbox, keyspace, shard string, table func() string) (stop func()) {
	if h.interval <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		// A panic here ends the stream at the stream goroutine's next send.
		var failed error
		defer o.fail(&failed)
		defer catch(&failed, StageHeartbeat, func(pe *PanicError) { pe.Table = table() })
		t := time.NewTicker(h.interval / 2)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			h.beat(o, keyspace, shard, table)
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}

// beat sends a heartbeat on o when it has sent nothing for the interval (the heartbeat
// goroutine of while).
func (h *heartbeat) beat(o *outbox, keyspace, shard string, table func() string) {
	o.sendMu.Lock()
	defer o.sendMu.Unlock()
	if time.Since(o.lastSend) < h.interval || o.failed != nil {
		return
	}
	if faults.Enabled() {
		faults.At(faults.Heartbeat, table(), nil)
	}
	now := nowNanos()
	ev := &binlogdata.VEvent{Type: binlogdata.VEventType_HEARTBEAT, Timestamp: now / int64(time.Second),
		CurrentTime: now, Keyspace: keyspace, Shard: shard}
	// A failed send surfaces on the stream goroutine's next send.
	if o.send([]*binlogdata.VEvent{ev}) == nil {
		o.lastSend = time.Now()
	}
}
