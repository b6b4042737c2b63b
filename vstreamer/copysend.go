package vstreamer

import (
	"sync/atomic"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
)

// batchSender sends a copy chunk's full batches of rows from a goroutine of its own, so that
// the chunk's next rows are read from the server and encoded while the batch before them is
// marshalled and written to the client. It sends the batches in the order they were handed
// over, one at a time under the stream's send lock, and the chunk waits for it before adding
// its closing events: the stream's sends stay in order and never overlap.
type batchSender struct {
	out   *outbox
	table string
	// queue holds the batch waiting while another is sent: at most two batches are in
	// flight, so a slow client still holds the read back.
	queue chan sendItem
	// mems takes the memory of sent packets back for reuse (copier.mems); nil when it is
	// not reused.
	mems chan *copyMem
	// spare returns sent batches' slices for the next batches.
	spare chan []*binlogdata.VEvent
	done  chan struct{}
	// err is the first failed send; the stream goroutine reads it once failed is set or done
	// is closed. Batches after a failed send are dropped.
	err    error
	failed atomic.Bool
	closed bool
}

// sendItem is a batch to send and, when packets reuse memory, the memory of its rows.
type sendItem struct {
	batch []*binlogdata.VEvent
	mem   *copyMem
}

func (o *outbox) newBatchSender(table string, mems chan *copyMem) *batchSender {
	b := &batchSender{
		out: o, table: table, mems: mems,
		queue: make(chan sendItem, 1),
		spare: make(chan []*binlogdata.VEvent, 2),
		done:  make(chan struct{}),
	}
	go b.run()
	return b
}

func (b *batchSender) run() {
	defer close(b.done)
	for it := range b.queue {
		batch := it.batch
		if b.err == nil {
			if b.err = b.sendOne(batch); b.err != nil {
				b.failed.Store(true)
			}
		}
		clear(batch)
		if it.mem != nil && b.err == nil {
			// Sent, and the send kept nothing of it: its memory is free again.
			select {
			case b.mems <- it.mem:
			default:
			}
		}
		select {
		case b.spare <- batch[:0]:
		default:
		}
	}
}

// sendOne sends one batch; a panic in the send ends the stream as one of the copy's.
func (b *batchSender) sendOne(batch []*binlogdata.VEvent) (err error) {
	defer catch(&err, StageCopy, func(pe *PanicError) { pe.Table = b.table })
	return b.out.sendLocked(batch)
}

// push hands a full batch over, with the memory of its rows to reuse once it is sent (nil
// when not reused), and returns an empty slice for the next one, or the error of
// an earlier send.
func (b *batchSender) push(batch []*binlogdata.VEvent, mem *copyMem) ([]*binlogdata.VEvent, error) {
	if b.failed.Load() {
		return nil, b.err
	}
	b.queue <- sendItem{batch, mem}
	select {
	case next := <-b.spare:
		return next, nil
	default:
		return make([]*binlogdata.VEvent, 0, cap(batch)), nil
	}
}

// wait sends what was handed over and stops the goroutine, returning the first send error.
// It may be called again.
func (b *batchSender) wait() error {
	if b == nil {
		return nil
	}
	if !b.closed {
		b.closed = true
		close(b.queue)
	}
	<-b.done
	return b.err
}
