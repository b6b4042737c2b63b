package vstreamer

import (
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/vstream-cdc/vstream/vstreamer/fanout"
)

// fairEvery bounds how many events nextEvent takes from a backlog before it looks at the
// drain, heartbeat and pending-position channels again.
const fairEvery = 16

// intake is what the stream goroutine keeps of the events it takes from the reader
// goroutine's queue (see stream.nextEvent): how many it took without the full select, and
// the run of transactions it is handing out one at a time.
type intake struct {
	// quick counts the events nextEvent took without its full select since it last ran it.
	quick int
	// ends is what is left of a run of transactions the shared reader handed out by their
	// ends as one event (fanout.TxnEnds). nextEvent hands them out one at a time, as pair,
	// before any event queued behind them: the loops handle each as they would one the
	// reader had handed out alone (the heartbeat, the lone VGTID, the flush, a copy's
	// snapshot come between two as between two such events).
	ends     []fanout.Ends
	pair     replication.BinlogEvent
	pairEnds fanout.TxnEnds
}

// running reports transactions of a run still to hand out.
func (in *intake) running() bool { return len(in.ends) > 0 }

// unrun returns ev, or the first transaction of the run of them it is (see ends).
func (in *intake) unrun(ev *replication.BinlogEvent) *replication.BinlogEvent {
	if run, ok := ev.Event.(*fanout.TxnEnds); ok && len(run.Txns) > 1 {
		in.ends = run.Txns
		return in.nextEnd()
	}
	return ev
}

// nextEnd hands out the next transaction of the run in ends, in pair: the loops handle it
// before they call nextEvent again.
func (in *intake) nextEnd() *replication.BinlogEvent {
	in.pairEnds.Txns = in.ends[:1]
	in.pair = replication.BinlogEvent{Header: in.ends[0].Last.Header, Event: &in.pairEnds}
	if in.ends = in.ends[1:]; len(in.ends) == 0 {
		in.ends = nil
	}
	return &in.pair
}
