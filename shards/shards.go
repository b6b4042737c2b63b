// Package shards plays vtgate's part in a stream of several shards: it runs one engine
// stream per shard, each on the server that holds the shard, and hands their events on as
// one stream, as vtgate merges its tablets' streams.
//
// The merge keeps what a vtgate client relies on:
//   - a transaction is never split: once a shard's stream has handed on a BEGIN, no other
//     shard's events come until that shard's stream stands at a VGTID outside a
//     transaction, even when the transaction spans several batches;
//   - every VGTID carries the position of every shard of the stream (the one that moved,
//     the others as they last were), table copy state included, so a client resumes the
//     whole stream from any VGTID;
//   - a shard's copy ends with a COPY_COMPLETED that names the shard, and once every shard
//     that copies has ended its copy, one COPY_COMPLETED with no keyspace and shard follows.
package shards

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	"google.golang.org/protobuf/proto"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/vstreamer"
)

// Member is a server of a shard: the engine that reads it (its Config names the keyspace
// and shard its events carry) and what the server is.
type Member struct {
	Engine     *vstreamer.Engine
	TabletType string
	Cell       string
}

// Source is one shard of a stream: the servers that hold it, in the order to try them, and
// what to stream.
type Source struct {
	Members []Member
	Request vstreamer.Request
	// Logger hears of failovers; nil discards.
	Logger *slog.Logger
}

// Stream runs every source's stream until ctx ends or one fails, and hands their events to
// send as one stream (see the package comment). send is called by one goroutine at a time.
// The first error of a source ends every stream and is returned.
func Stream(ctx context.Context, sources []Source, send vstreamer.SendFunc) error {
	if len(sources) == 0 {
		return fmt.Errorf("%w: a stream needs at least one shard", vstreamer.ErrBadRequest)
	}
	m := &merge{send: send, token: make(chan struct{}, 1), pos: &binlogdata.VGtid{}}
	m.token <- struct{}{}
	for i, src := range sources {
		if len(src.Members) == 0 {
			return fmt.Errorf("%w: shard %d of the stream has no server", vstreamer.ErrBadRequest, i)
		}
		cfg := src.Members[0].Engine.Config()
		sg := &binlogdata.ShardGtid{Keyspace: cfg.Keyspace, Shard: cfg.Shard, Gtid: src.Request.Position,
			TablePKs: src.Request.TableLastPKs}
		m.pos.ShardGtids = append(m.pos.ShardGtids, sg)
		m.shards = append(m.shards, &shard{m: m, index: i, copies: src.Request.Position == "" || len(src.Request.TableLastPKs) > 0,
			vitess: src.Request.VitessCopy})
		if m.shards[i].copies {
			m.copying++
		}
	}
	obsMu := &sync.Mutex{}
	g, gctx := errgroup.WithContext(ctx)
	for i, src := range sources {
		if src.Request.Observer != nil {
			// One observer hears every shard: its calls must not overlap.
			src.Request.Observer = &lockedObserver{mu: obsMu, o: src.Request.Observer}
		}
		sh := m.shards[i]
		g.Go(func() error { return sh.run(gctx, src) })
	}
	return g.Wait()
}

// run streams the shard from the first of its servers that answers, and when that server
// goes away between two transactions, from the next one that answers, at the same
// position: a replica has the primary's GTIDs, and the engine refuses a server that lacks
// the position (ErrAhead names what it lacks). A server lost inside a transaction ends
// the stream: the part of the transaction sent cannot be taken back, and the client
// resumes from its last VGTID.
func (s *shard) run(ctx context.Context, src Source) error {
	log := src.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg := src.Members[0].Engine.Config()
	name := cfg.Keyspace + "/" + cfg.Shard
	at := 0
	for {
		m, err := pick(ctx, src.Members, at)
		if err != nil {
			return fmt.Errorf("shard %s: %w", name, err)
		}
		req := src.Request
		s.m.mu.Lock()
		sg := s.m.pos.ShardGtids[s.index]
		req.Position, req.TableLastPKs = sg.GetGtid(), sg.GetTablePKs()
		s.m.mu.Unlock()
		s.inTxn, s.dirty = false, false
		err = src.Members[m].Engine.Stream(ctx, req, func(events []*binlogdata.VEvent) error {
			return s.batch(ctx, events)
		})
		midTxn := s.holding
		s.release()
		if err == nil || ctx.Err() != nil {
			return err
		}
		if !errors.Is(err, vstreamer.ErrUnavailable) || midTxn || len(src.Members) == 1 {
			return fmt.Errorf("shard %s (%s): %w", name, src.Members[m].Engine.Config().Addr, err)
		}
		log.Warn("shard server lost between transactions: going on from another server of the shard",
			"shard", name, "server", src.Members[m].Engine.Config().Addr, "position", req.Position, "err", err)
		at = (m + 1) % len(src.Members)
	}
}

// pick returns the index of the first member from at on (wrapping) whose server answers.
func pick(ctx context.Context, members []Member, at int) (int, error) {
	var errs []error
	for k := range members {
		i := (at + k) % len(members)
		pctx, cancel := context.WithTimeout(ctx, pingTimeout)
		err := members[i].Engine.Ping(pctx)
		cancel()
		if err == nil {
			return i, nil
		}
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		errs = append(errs, fmt.Errorf("%s (%s): %w", members[i].Engine.Config().Addr, members[i].TabletType, err))
	}
	return 0, fmt.Errorf("%w: no server of the shard answers: %w", vstreamer.ErrUnavailable, errors.Join(errs...))
}

// pingTimeout bounds how long a server may take to answer before the next is tried.
const pingTimeout = 3 * time.Second

// merge is the state the shards' streams share.
type merge struct {
	send vstreamer.SendFunc
	// token is held by the shard whose events go out; a shard inside a transaction keeps it
	// across its batches.
	token chan struct{}
	// pos is every shard's last position, guarded by mu: a shard reads its own when it
	// starts again on another server.
	mu     sync.Mutex
	pos    *binlogdata.VGtid
	shards []*shard
	// copying counts the shards whose copy has not ended, guarded by token.
	copying int
}

// shard is one shard's stream in the merge; only its engine's goroutine uses it.
type shard struct {
	m      *merge
	index  int
	copies bool
	// vitess is the Vitess shape (vstreamer.Request.VitessCopy): a VGTID stands before its
	// transaction, in the place of its GTID, so a shard is at a boundary once its
	// transaction is closed.
	vitess bool
	// holding is set while the shard holds the token; inTxn while its transaction is open;
	// dirty when an event other than a heartbeat went out after its last VGTID.
	holding, inTxn, dirty bool
	out                   []*binlogdata.VEvent
}

// batch hands a shard's batch on, holding the token until the shard stands at a VGTID
// outside a transaction.
func (s *shard) batch(ctx context.Context, events []*binlogdata.VEvent) error {
	if !s.holding {
		select {
		case <-s.m.token:
			s.holding = true
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	out := s.out[:0]
	for _, ev := range events {
		switch ev.GetType() {
		case binlogdata.VEventType_HEARTBEAT:
			out = append(out, ev)
			continue
		case binlogdata.VEventType_BEGIN:
			s.inTxn = true
		case binlogdata.VEventType_COMMIT, binlogdata.VEventType_ROLLBACK:
			// A transaction's end leaves dirty as it was: a copy packet's VGTID comes
			// before its COMMIT.
			s.inTxn = false
			out = append(out, ev)
			continue
		case binlogdata.VEventType_VGTID:
			out = append(out, s.vgtid(ev))
			s.dirty = false
			continue
		case binlogdata.VEventType_COPY_COMPLETED:
			switch {
			case ev.GetKeyspace() == "":
				// The engine's end of its whole copy is this shard's: vtgate's final one
				// comes once every shard's has.
				out = append(out, s.copyCompleted()...)
				continue
			case ev.GetLastPKEvent().GetTableLastPK().GetTableName() == "":
				// A Vitess-shaped copy's end of the shard's copy.
				out = append(out, s.copyCompleted()...)
				continue
			}
		default:
		}
		s.dirty = true
		out = append(out, ev)
	}
	s.out = out
	err := s.m.send(out)
	clear(s.out)
	if err != nil {
		return err
	}
	if !s.inTxn && (!s.dirty || s.vitess) {
		s.release()
	}
	return nil
}

// vgtid replaces a shard's VGTID with one that carries every shard's position.
func (s *shard) vgtid(ev *binlogdata.VEvent) *binlogdata.VEvent {
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	if sg := ev.GetVgtid().GetShardGtids(); len(sg) > 0 {
		s.m.pos.ShardGtids[s.index] = sg[0]
	}
	out := proto.CloneOf(ev)
	out.Vgtid = proto.CloneOf(s.m.pos)
	return out
}

// copyCompleted is the shard's COPY_COMPLETED, and the stream's once every shard's copy
// has ended.
func (s *shard) copyCompleted() []*binlogdata.VEvent {
	sg := s.m.pos.ShardGtids[s.index]
	out := []*binlogdata.VEvent{{Type: binlogdata.VEventType_COPY_COMPLETED, Keyspace: sg.GetKeyspace(), Shard: sg.GetShard()}}
	if s.copies {
		s.copies = false
		if s.m.copying--; s.m.copying == 0 {
			out = append(out, &binlogdata.VEvent{Type: binlogdata.VEventType_COPY_COMPLETED})
		}
	}
	return out
}

// release gives the token back if the shard holds it.
func (s *shard) release() {
	if s.holding {
		s.holding = false
		s.m.token <- struct{}{}
	}
}

// lockedObserver serialises the calls of several shards' streams to one observer.
type lockedObserver struct {
	mu *sync.Mutex
	o  vstreamer.Observer
}

func (l *lockedObserver) Position(pos string, binlogTime time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.o.Position(pos, binlogTime)
}

func (l *lockedObserver) CopyProgress(table string, copied, estimated int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.o.CopyProgress(table, copied, estimated)
}
