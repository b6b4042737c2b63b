package server

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/vstreamer"
)

// errRestart stops the engine's stream at a transaction boundary so that it starts again
// with a copy of the tables a Snapshot request named.
var errRestart = errors.New("restarting the stream for a snapshot")

// snapshots follows what a native stream has sent, so that a Snapshot request starts its
// copy exactly where the client is: the engine's stream is stopped once everything sent
// ends at a VGTID outside a transaction, and started again from that VGTID with the tables
// added to its copy state (table_p_ks with no last key: copied from their first row). The
// client sees one stream; what the stopped engine had read past that VGTID and not sent is
// read again.
type snapshots struct {
	mu sync.Mutex
	// pending are the tables asked for and not yet started, with the condition of each
	// (empty: every row).
	pending map[string]string
	// last is the last VGTID sent outside a transaction (or the start position, when it is
	// one); dirty is set when an event other than a heartbeat went out after it, inTxn while
	// a transaction is open.
	last         *binlogdata.VGtid
	dirty, inTxn bool
	// sending is set while a batch goes out; restart once the engine is to stop.
	sending, restart bool
	cancel           context.CancelCauseFunc
}

func newSnapshots(start *binlogdata.VGtid) *snapshots {
	s := &snapshots{}
	if sg := start.GetShardGtids(); len(sg) == 1 && sg[0].GetGtid() != "" && !strings.EqualFold(sg[0].GetGtid(), "current") {
		s.last = start
	}
	return s
}

// run sets the cancel function of the engine stream that runs now.
func (s *snapshots) run(cancel context.CancelCauseFunc) {
	s.mu.Lock()
	s.cancel, s.restart = cancel, false
	s.mu.Unlock()
}

// atBoundary reports whether everything sent ends at s.last. Called with mu held.
func (s *snapshots) atBoundary() bool {
	return s.last != nil && !s.dirty && !s.inTxn
}

// request takes a Snapshot request. When nothing is being sent and the stream is at a
// boundary, the engine stops at once; otherwise after the first batch that ends at one.
// The request was validated (vstreamv1.Snapshot.Validate) by the interceptor.
func (s *snapshots) request(tables []string, where string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending == nil {
		s.pending = map[string]string{}
	}
	for _, t := range tables {
		s.pending[t] = where
	}
	if !s.sending && s.atBoundary() && !s.restart {
		s.restart = true
		s.cancel(errRestart)
	}
}

// before is called before a batch goes out: false when the engine is stopping, and the
// batch must not go out (it is read again after the restart).
func (s *snapshots) before() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.restart {
		return false
	}
	s.sending = true
	return true
}

// after follows a batch that went out and reports whether the engine must stop now.
func (s *snapshots) after(events []*binlogdata.VEvent) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sending = false
	for _, ev := range events {
		switch ev.GetType() {
		case binlogdata.VEventType_HEARTBEAT:
			continue
		case binlogdata.VEventType_BEGIN:
			s.inTxn = true
		case binlogdata.VEventType_COMMIT, binlogdata.VEventType_ROLLBACK:
			s.inTxn = false
		case binlogdata.VEventType_VGTID:
			if !s.inTxn {
				s.last, s.dirty = ev.GetVgtid(), false
				continue
			}
		default:
		}
		s.dirty = true
	}
	if len(s.pending) > 0 && s.atBoundary() && !s.restart {
		s.restart = true
		return true
	}
	return false
}

// restarting reports whether the engine stopped for a snapshot.
func (s *snapshots) restarting() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.restart
}

// next is the request that goes on from the last VGTID sent with the pending tables copied.
func (s *snapshots) next(req vstreamer.Request) vstreamer.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	sg := s.last.GetShardGtids()[0]
	req.Position = sg.GetGtid()
	req.TablesToCopy = nil
	pks := make([]*binlogdata.TableLastPK, 0, len(sg.GetTablePKs())+len(s.pending))
	for _, tp := range sg.GetTablePKs() {
		if _, again := s.pending[tp.GetTableName()]; !again {
			pks = append(pks, proto.CloneOf(tp))
		}
	}
	for _, t := range slices.Sorted(maps.Keys(s.pending)) {
		pks = append(pks, &binlogdata.TableLastPK{TableName: t, Resync: true, Where: s.pending[t]})
	}
	req.TableLastPKs = pks
	s.pending = nil
	return req
}
