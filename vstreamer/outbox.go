package vstreamer

import (
	"fmt"
	"sync"
	"time"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
)

// outbox is the batch of events a stream puts together and the send that takes it: what
// bounds a batch (maxBatch, packetSize, vitessPacket), which event types go out, and the
// lock that orders the stream goroutine's sends with the heartbeats sent beside it.
type outbox struct {
	send SendFunc

	batch     []*binlogdata.VEvent
	batchSize int
	maxBatch  int
	// packetSize is Vitess's vstream-packet-size when the client set it, and rowBytes the
	// row values in the batch, which it bounds (see Request.PacketSize).
	packetSize int
	rowBytes   int
	// vitessPacket bounds a Vitess-shaped copy packet: the bytes of its rows' values.
	vitessPacket int
	// types is the set of event types sent, as bits; zero sends every type.
	types uint64
	// inChunk is set while a copy chunk is read: its events are sent whatever types says.
	inChunk bool
	// gtidSent is the position of the last GTID event sent, so that a copy tells the client
	// its snapshot's position only when it moved (Vitess's shape).
	gtidSent string
	// flushes counts the batches sent, so that a savepoint knows whether its events went out.
	flushes uint64
	// mems, when the send retains nothing (Request.SendRetainsNothing), is the memory of the
	// ROW events in the batch, free again once it has been sent; nil otherwise.
	mems *rowMems

	// sendMu orders calls of send: the stream goroutine's, and heartbeats sent while it waits
	// on a long read (heartbeatWhile). lastSend is read and written under it.
	sendMu   sync.Mutex
	lastSend time.Time
	// failed, under sendMu, is a panic of the heartbeat goroutine: every later send returns it.
	failed error
}

// init sets the bounds and event types req asks for, and the send; maxBatch is the
// engine's bound, which the request's replaces.
func (o *outbox) init(req *Request, send SendFunc, maxBatch int) error {
	o.send, o.maxBatch, o.packetSize = send, maxBatch, req.PacketSize
	if req.SendRetainsNothing {
		o.mems = &rowMems{}
	}
	if req.MaxBatchBytes > 0 {
		o.maxBatch = req.MaxBatchBytes
	}
	for _, t := range req.EventTypes {
		if t < 0 || t >= 64 {
			return fmt.Errorf("%w: event type %d is not a VEventType", ErrBadRequest, t)
		}
		o.types |= 1 << t
	}
	o.vitessPacket = VitessPacketSize
	if req.PacketSize > 0 {
		o.vitessPacket = req.PacketSize
	} else if req.MaxBatchBytes > 0 {
		o.vitessPacket = req.MaxBatchBytes
	}
	return nil
}

// wants reports whether events of type t are sent.
func (o *outbox) wants(t binlogdata.VEventType) bool {
	return o.types == 0 || o.inChunk || t == binlogdata.VEventType_VGTID || o.types&(1<<t) != 0
}

// overBatch reports a batch of binlog events to send now for its size. With a packet size
// the ROW events bound their values themselves (rows); the rest of the batch (events of many
// small transactions read back to back) is still bounded by the batch size.
func (o *outbox) overBatch() bool {
	if o.packetSize > 0 {
		return o.batchSize-o.rowBytes >= o.maxBatch
	}
	return o.batchSize >= o.maxBatch
}

// copyBatchFull reports a batch of copied rows to send now, by Vitess's row streamer's rule
// when the client set a packet size.
func (o *outbox) copyBatchFull() bool {
	if o.packetSize > 0 {
		return o.rowBytes >= o.packetSize
	}
	return o.batchSize >= o.maxBatch
}

// flush sends the batch, if any, and starts the next.
func (o *outbox) flush() error {
	if len(o.batch) == 0 {
		return nil
	}
	err := o.sendLocked(o.batch)
	if err == nil {
		o.mems.sent()
	}
	o.flushes++
	clear(o.batch)
	o.batch = o.batch[:0]
	o.batchSize = 0
	o.rowBytes = 0
	return err
}

// sendLocked sends under sendMu, released even if send panics: the heartbeat goroutine must
// not be left waiting for it while the stream unwinds.
func (o *outbox) sendLocked(batch []*binlogdata.VEvent) error {
	o.sendMu.Lock()
	defer o.sendMu.Unlock()
	if o.failed != nil {
		return o.failed
	}
	err := o.send(batch)
	o.lastSend = time.Now()
	return err
}

// fail makes every later send of the stream return *err, when set.
func (o *outbox) fail(err *error) {
	if *err == nil {
		return
	}
	o.sendMu.Lock()
	o.failed = *err
	o.sendMu.Unlock()
}
