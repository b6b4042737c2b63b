package vstreamer

import (
	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	"github.com/vstream-cdc/vstream/vstreamer/rowcodec"
)

// rowMem is the memory one rows event's ROW event is built in: its rows' values and
// lengths, its RowChanges, their rows and the pointers to them, and rowcodec's images of
// the event.
type rowMem struct {
	vals    []byte
	lens    []int64
	changes []binlogdata.RowChange
	qrows   []query.Row
	ptrs    []*binlogdata.RowChange
	images  rowcodec.Images
}

// size is the bytes m holds.
func (m *rowMem) size() int {
	return cap(m.vals) + 8*cap(m.lens) + 64*cap(m.changes) + 80*cap(m.qrows) + 8*cap(m.ptrs)
}

// rowMemKeep bounds the bytes of sent ROW events a stream keeps for its next ones: about
// what one batch of the default size holds. More than that goes to the collector.
const rowMemKeep = 1 << 20

// rowMems lets a stream whose send keeps nothing of a batch once it returns
// (Request.SendRetainsNothing) build its ROW events in the memory of ROW events already
// sent, instead of allocating it anew for every rows event: a single-row transaction's
// event was a few allocations and a few hundred bytes, which the collector then had to find.
// A ROW event's memory is held from when its event joins the batch until that batch's send
// returns (outbox.flush); a batch handed to the copy's sender goroutine lets its memory go
// to the collector instead, as that send returns later.
type rowMems struct {
	free      []*rowMem
	freeBytes int
	held      []*rowMem
}

// get returns memory to build a ROW event in: a sent event's when there is one.
func (r *rowMems) get() *rowMem {
	if r == nil {
		return &rowMem{}
	}
	n := len(r.free)
	if n == 0 {
		return &rowMem{}
	}
	m := r.free[n-1]
	r.free[n-1] = nil
	r.free = r.free[:n-1]
	r.freeBytes -= m.size()
	return m
}

// hold keeps m until the batch its event joined has been sent.
func (r *rowMems) hold(m *rowMem) {
	if r != nil {
		r.held = append(r.held, m)
	}
}

// put takes back m, which no event refers to.
func (r *rowMems) put(m *rowMem) {
	if r == nil {
		return
	}
	if sz := m.size(); r.freeBytes+sz <= rowMemKeep {
		r.free = append(r.free, m)
		r.freeBytes += sz
	}
}

// sent frees the memory of the events of a batch whose send has returned.
func (r *rowMems) sent() {
	if r == nil {
		return
	}
	for i, m := range r.held {
		r.put(m)
		r.held[i] = nil
	}
	r.held = r.held[:0]
}

// handedOff forgets the memory of the events of a batch another goroutine sends: it is the
// collector's once that send is done.
func (r *rowMems) handedOff() {
	if r == nil {
		return
	}
	clear(r.held)
	r.held = r.held[:0]
}

// bytesFor returns b emptied when it holds n bytes, else a new slice of capacity n.
func bytesFor(b []byte, n int) []byte {
	if cap(b) >= n {
		return b[:0]
	}
	return make([]byte, 0, n)
}

// lengthsFor returns l emptied when it holds n lengths, else a new slice of capacity n.
func lengthsFor(l []int64, n int) []int64 {
	if cap(l) >= n {
		return l[:0]
	}
	return make([]int64, 0, n)
}

// changesFor returns n zeroed RowChanges, in c when it holds them.
func changesFor(c []binlogdata.RowChange, n int) []binlogdata.RowChange {
	if cap(c) >= n {
		c = c[:n]
		clear(c)
		return c
	}
	return make([]binlogdata.RowChange, n)
}

// rowsFor returns q emptied when it holds n rows, else a new slice of capacity n.
func rowsFor(q []query.Row, n int) []query.Row {
	if cap(q) >= n {
		clear(q[:cap(q)])
		return q[:0]
	}
	return make([]query.Row, 0, n)
}

// ptrsFor returns n RowChange pointers, in p when it holds them.
func ptrsFor(p []*binlogdata.RowChange, n int) []*binlogdata.RowChange {
	if cap(p) >= n {
		return p[:n]
	}
	return make([]*binlogdata.RowChange, n)
}
