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
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	"google.golang.org/protobuf/proto"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/topology"
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
	// TabletType is the type of server to stream from (empty: primary). A server's type is
	// what it is now, not only what the topology says (see role): a stream moves, at a
	// transaction boundary, off a server that is no longer of this type, such as a demoted
	// primary, to one that is.
	TabletType string
	Request    vstreamer.Request
	// Logger hears of failovers; nil discards.
	Logger *slog.Logger
}

// Options are what vtgate's VStreamFlags ask of the merge itself (the rest of the flags act
// on each shard's request or on the choice of its servers).
type Options struct {
	// MinimizeSkew holds back a shard whose events are more than MaxSkew seconds ahead of
	// the shard that is furthest behind, at a transaction's start, until that shard
	// catches up (minimize_skew). The shards' engines must send heartbeats when idle: an
	// idle shard is caught up, and only its heartbeats say so.
	MinimizeSkew bool
	// SkewTimeout ends the stream when a shard has been held back this long (zero: ten
	// minutes, vtgate's).
	SkewTimeout time.Duration
	// Heartbeat sends a HEARTBEAT with no keyspace, shard or position whenever nothing was
	// sent for this long (heartbeat_interval); zero sends none.
	Heartbeat time.Duration
	// DropShardHeartbeats keeps the shards' own heartbeats from the client: vtgate uses
	// them only to keep time for MinimizeSkew.
	DropShardHeartbeats bool
	// RoleCheck is how often the role of each shard's streamed server is read (zero:
	// DefaultRoleCheck; negative: never). One query per shard per interval: no cost per
	// event.
	RoleCheck time.Duration
}

// DefaultRoleCheck is how often a streamed server's role is read when Options.RoleCheck is
// zero: a demoted primary is left within about this long of its demotion (and of the end of
// the transaction the stream is in), as vtgate leaves a tablet whose type changed at its
// next health report.
const DefaultRoleCheck = time.Second

// MaxSkew is how far ahead, in seconds of event time, a shard may run of the one furthest
// behind under Options.MinimizeSkew. Event times are whole seconds, and a server's clock
// may differ from ours by a rounding too, so two seconds is the least that is not noise
// (vtgate's threshold).
const MaxSkew = 2

// defaultSkewTimeout is vtgate's bound on how long a shard may be held back.
const defaultSkewTimeout = 10 * time.Minute

// Stream runs every source's stream until ctx ends or one fails, and hands their events to
// send as one stream (see the package comment). send is called by one goroutine at a time.
// The first error of a source ends every stream and is returned.
func Stream(ctx context.Context, sources []Source, send vstreamer.SendFunc) error {
	return StreamWith(ctx, sources, Options{}, send)
}

// StreamWith is Stream with the merge's options.
func StreamWith(ctx context.Context, sources []Source, opts Options, send vstreamer.SendFunc) error {
	if len(sources) == 0 {
		return fmt.Errorf("%w: a stream needs at least one shard", vstreamer.ErrBadRequest)
	}
	m := &merge{send: send, token: make(chan struct{}, 1), pos: &binlogdata.VGtid{},
		dropBeats: opts.DropShardHeartbeats, beat: opts.Heartbeat, lastSend: time.Now(), roleCheck: opts.RoleCheck}
	if m.roleCheck == 0 {
		m.roleCheck = DefaultRoleCheck
	}
	if opts.MinimizeSkew {
		m.skew = &skew{ts: make([]int64, len(sources)), laggard: -1, timeout: opts.SkewTimeout}
		if m.skew.timeout <= 0 {
			m.skew.timeout = defaultSkewTimeout
		}
	}
	m.token <- struct{}{}
	for i, src := range sources {
		if len(src.Members) == 0 {
			return fmt.Errorf("%w: shard %d of the stream has no server", vstreamer.ErrBadRequest, i)
		}
		cfg := src.Members[0].Engine.Config()
		sg := &binlogdata.ShardGtid{Keyspace: cfg.Keyspace, Shard: cfg.Shard, Gtid: src.Request.Position,
			TablePKs: src.Request.TableLastPKs}
		m.pos.ShardGtids = append(m.pos.ShardGtids, sg)
		m.shards = append(m.shards, &shard{m: m, index: i, name: cfg.Keyspace + "/" + cfg.Shard, copies: src.Request.Position == "" || len(src.Request.TableLastPKs) > 0,
			vitess: src.Request.VitessCopy})
		if m.shards[i].copies {
			m.copying++
		}
	}
	obsMu := &sync.Mutex{}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	g, gctx := errgroup.WithContext(ctx)
	var beats sync.WaitGroup
	if m.beat > 0 {
		// Not in g: the heartbeats end when the shards' streams have, even without an error.
		beats.Go(func() {
			if err := m.heartbeats(gctx); err != nil {
				cancel(err)
			}
		})
	}
	for i, src := range sources {
		if src.Request.Observer != nil {
			// One observer hears every shard: its calls must not overlap.
			src.Request.Observer = &lockedObserver{mu: obsMu, o: src.Request.Observer}
		}
		sh := m.shards[i]
		g.Go(func() error { return sh.run(gctx, src) })
	}
	err := g.Wait()
	cancel(nil)
	beats.Wait()
	if cause := context.Cause(ctx); err != nil && cause != nil && !errors.Is(cause, context.Canceled) {
		// A heartbeat the client could not take ended the shards' streams.
		return cause
	}
	return err
}

// heartbeats sends a HEARTBEAT whenever nothing went to the client for m.beat, until ctx
// ends. It may come between two batches of a transaction that stalls, as vtgate's does.
func (m *merge) heartbeats(ctx context.Context) error {
	t := time.NewTimer(m.beat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		m.sendMu.Lock()
		idle := time.Since(m.lastSend)
		if idle < m.beat {
			m.sendMu.Unlock()
			t.Reset(m.beat - idle)
			continue
		}
		now := time.Now()
		err := m.send([]*binlogdata.VEvent{{Type: binlogdata.VEventType_HEARTBEAT, Timestamp: now.Unix(), CurrentTime: now.UnixNano()}})
		m.lastSend = now
		m.sendMu.Unlock()
		if err != nil {
			return err
		}
		t.Reset(m.beat)
	}
}

// run streams the shard from the first of its servers of the source's tablet type that
// answers (another one that answers when none of that type does), and moves to another
// server at the same position:
//   - when the server goes away between two transactions;
//   - when the server is no longer of the tablet type (a primary demoted: read-only now)
//     and another server of the shard is (its new primary), at the next transaction
//     boundary (see watch), as vtgate restarts a tablet's stream when its type changes.
//
// A replica has the primary's GTIDs, and the engine refuses a server that lacks the
// position (ErrAhead names what it lacks). A server the shard moved to may lack it only
// for now: a replica still applying what the shard read on the server before it (vtgate
// likewise retries a tablet behind the position). The shard asks it again every
// aheadRetry for up to aheadWait; a server still without the position then ends the
// stream rather than skip what it never had. A server lost inside a transaction ends the
// stream: the part of the transaction sent cannot be taken back, and the client resumes
// from its last VGTID.
func (s *shard) run(ctx context.Context, src Source) error {
	log := src.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg := src.Members[0].Engine.Config()
	name := cfg.Keyspace + "/" + cfg.Shard
	want := src.TabletType
	if want == "" {
		want = topology.Primary
	}
	at := 0
	// moved: the shard left a server; aheadSince: when the server it went on from first
	// lacked the position.
	moved := false
	var aheadSince time.Time
	for {
		m, err := pick(ctx, src.Members, at, want)
		if err != nil {
			return fmt.Errorf("shard %s: %w", name, err)
		}
		req := src.Request
		s.m.mu.Lock()
		sg := s.m.pos.ShardGtids[s.index]
		req.Position, req.TableLastPKs = sg.GetGtid(), sg.GetTablePKs()
		s.m.mu.Unlock()
		s.inTxn, s.dirty = false, false
		sctx, scancel := context.WithCancelCause(ctx)
		s.begin(scancel)
		var watching sync.WaitGroup
		if s.m.roleCheck > 0 && len(src.Members) > 1 {
			watching.Go(func() { s.watch(sctx, src.Members, m, want) })
		}
		err = src.Members[m].Engine.Stream(sctx, req, func(events []*binlogdata.VEvent) error {
			return s.batch(sctx, events)
		})
		scancel(nil)
		watching.Wait()
		midTxn := s.holding
		s.release()
		if ctx.Err() != nil {
			return err
		}
		if !errors.Is(err, vstreamer.ErrAhead) {
			aheadSince = time.Time{}
		}
		addr := src.Members[m].Engine.Config().Addr
		if s.moving.Load() && !midTxn {
			log.Warn("shard server no longer of the stream's tablet type: going on from another server of the shard",
				"shard", name, "server", addr, "tablet_type", want, "position", s.position())
			at, moved = 0, true
			continue
		}
		if err == nil {
			return nil
		}
		if moved && errors.Is(err, vstreamer.ErrAhead) {
			if aheadSince.IsZero() {
				aheadSince = time.Now()
				log.Info("shard server lacks the position yet: waiting for it to catch up",
					"shard", name, "server", addr, "position", req.Position, "err", err)
			}
			if time.Since(aheadSince) < aheadWait {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(aheadRetry):
				}
				at = m
				continue
			}
		}
		if !errors.Is(err, vstreamer.ErrUnavailable) || midTxn || len(src.Members) == 1 {
			return fmt.Errorf("shard %s (%s): %w", name, addr, err)
		}
		log.Warn("shard server lost between transactions: going on from another server of the shard",
			"shard", name, "server", addr, "position", req.Position, "err", err)
		at, moved = (m+1)%len(src.Members), true
	}
}

// aheadWait bounds how long a shard waits for a server it moved to to reach its position,
// and aheadRetry is how often it asks: a replica catches up on the few transactions a move
// outran in milliseconds, and a server that had stopped replicating never does.
const (
	aheadWait  = 5 * time.Second
	aheadRetry = 200 * time.Millisecond
)

// position is the shard's last position.
func (s *shard) position() string {
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	return s.m.pos.ShardGtids[s.index].GetGtid()
}

// role is what a server is now: a server that takes writes is a primary whatever the
// topology says (a promoted replica), a read-only server listed as primary is a replica (a
// demoted primary), and a read-only replica or rdonly is what the topology says.
func role(ctx context.Context, m Member) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	ro, err := m.Engine.ReadOnly(ctx)
	switch {
	case err != nil:
		return "", err
	case !ro:
		return topology.Primary, nil
	case m.TabletType == topology.Primary:
		return topology.Replica, nil
	default:
		return m.TabletType, nil
	}
}

// pick returns the index of the first member from at on (wrapping) whose server answers
// and is of type want now, or when none is, of the first that answers.
func pick(ctx context.Context, members []Member, at int, want string) (int, error) {
	var errs []error
	fallback := -1
	for k := range members {
		i := (at + k) % len(members)
		r, err := role(ctx, members[i])
		if err == nil {
			if r == want {
				return i, nil
			}
			if fallback < 0 {
				fallback = i
			}
			continue
		}
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		errs = append(errs, fmt.Errorf("%s (%s): %w", members[i].Engine.Config().Addr, members[i].TabletType, err))
	}
	if fallback >= 0 {
		return fallback, nil
	}
	return 0, fmt.Errorf("%w: no server of the shard answers: %w", vstreamer.ErrUnavailable, errors.Join(errs...))
}

// watch reads the role of the streamed server (members[cur]) every roleCheck until ctx
// ends. When the server is not of type want (demoted, or a fallback picked when none
// was) and another member is, the shard is told to move (moveAtBoundary). A server that
// does not answer is left to the stream, which fails over when its connection breaks.
func (s *shard) watch(ctx context.Context, members []Member, cur int, want string) {
	t := time.NewTicker(s.m.roleCheck)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if s.moving.Load() {
			// Asked already: the shard was inside a transaction; try again at its end.
			s.moveAtBoundary()
			continue
		}
		if r, err := role(ctx, members[cur]); err != nil || r == want {
			continue
		}
		for i, m := range members {
			if i == cur {
				continue
			}
			if r, err := role(ctx, m); err == nil && r == want {
				s.moving.Store(true)
				s.moveAtBoundary()
				break
			}
		}
	}
}

// begin readies the shard for a stream on a server, which cancel ends.
func (s *shard) begin(cancel context.CancelCauseFunc) {
	s.bmu.Lock()
	defer s.bmu.Unlock()
	s.moving.Store(false)
	s.inBatch = false
	s.cancel = cancel
}

// moveAtBoundary ends the shard's stream on its server when the shard is between
// transactions and not handing a batch on; otherwise the shard's next batch at a boundary
// ends it (batch), or the next call does.
func (s *shard) moveAtBoundary() {
	s.bmu.Lock()
	defer s.bmu.Unlock()
	if !s.inBatch && !s.holding {
		s.cancel(errMove)
	}
}

// errMove ends a shard's stream on a server it is to move off.
var errMove = errors.New("moving to another server of the shard")

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
	// sendMu serialises send between the shard holding the token and the heartbeats;
	// lastSend is when send was last called, guarded by sendMu and kept only when beat > 0.
	sendMu    sync.Mutex
	lastSend  time.Time
	beat      time.Duration
	dropBeats bool
	// skew is nil unless Options.MinimizeSkew.
	skew *skew
	// roleCheck is Options.RoleCheck, with its default.
	roleCheck time.Duration
}

// skew keeps each shard's time for Options.MinimizeSkew.
type skew struct {
	mu sync.Mutex
	// ts is each shard's last event time in our clock's seconds (zero: not heard from yet);
	// laggard is the shard the others wait for (-1: none), and caught is closed when the
	// shards are within MaxSkew again.
	ts      []int64
	laggard int
	caught  chan struct{}
	timeout time.Duration
}

// observe records shard i at the time of ev and returns a channel to wait on when the
// shard must wait for the laggard, else nil. A server's event time is read against its own
// clock (CurrentTime, when the engine read it), so that servers whose clocks differ compare
// fairly. Only shards heard from count: one not yet started holds nobody back, as in vtgate.
func (k *skew) observe(i int, ev *binlogdata.VEvent) chan struct{} {
	k.mu.Lock()
	defer k.mu.Unlock()
	ts := ev.GetTimestamp()
	if ct := ev.GetCurrentTime(); ct > 0 {
		ts = time.Now().Unix() - (ct/int64(time.Second) - ts)
	}
	k.ts[i] = ts
	lo, hi, low := int64(0), int64(0), -1
	for j, t := range k.ts {
		if t == 0 {
			continue
		}
		if low < 0 || t < lo {
			lo, low = t, j
		}
		hi = max(hi, t)
	}
	switch {
	case hi-lo <= MaxSkew:
		if k.laggard >= 0 {
			k.laggard = -1
			close(k.caught)
		}
	case k.laggard != low:
		// The shard furthest behind is another one now, often a waiting shard whose time
		// was taken when it began to wait. vtgate keeps its first laggard until the skew
		// closes, which a waiting shard's stale time can keep from ever happening; here
		// the waiting shards wake and take their times again against the new laggard.
		if k.laggard >= 0 {
			close(k.caught)
		}
		k.laggard, k.caught = low, make(chan struct{})
	}
	// Every shard but the laggard waits while the shards are apart: vtgate's test of the
	// waiting shard's own lead compares with a lowest time it never sets, so in effect
	// that is its rule too.
	if k.laggard < 0 || k.laggard == i {
		return nil
	}
	return k.caught
}

// align waits, under MinimizeSkew, until shard i may hand on an event of ev's time.
func (s *shard) align(ctx context.Context, ev *binlogdata.VEvent, name string) error {
	k := s.m.skew
	for {
		wait := k.observe(s.index, ev)
		if wait == nil || ev.GetType() == binlogdata.VEventType_HEARTBEAT {
			return nil
		}
		t := time.NewTimer(k.timeout)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
			return fmt.Errorf("shard %s held back %v by minimize_skew waiting for a shard that stays more than %d s behind; stream without minimize_skew or fix the lagging server", name, k.timeout, MaxSkew)
		case <-wait:
			t.Stop()
		}
	}
}

// shard is one shard's stream in the merge; only its engine's goroutine uses it.
type shard struct {
	m      *merge
	index  int
	name   string
	copies bool
	// vitess is the Vitess shape (vstreamer.Request.VitessCopy): a VGTID stands before its
	// transaction, in the place of its GTID, so a shard is at a boundary once its
	// transaction is closed.
	vitess bool
	// holding is set while the shard holds the token; inTxn while its transaction is open;
	// dirty when an event other than a heartbeat went out after its last VGTID.
	holding, inTxn, dirty bool
	out                   []*binlogdata.VEvent
	// moving is set when the shard is to move to another server at its next transaction
	// boundary (watch). bmu guards inBatch (a batch is being handed on), holding's changes
	// and cancel (which ends the stream on the current server), so that the stream is only
	// ended between transactions.
	moving  atomic.Bool
	bmu     sync.Mutex
	inBatch bool
	cancel  context.CancelCauseFunc
}

// batch hands a shard's batch on, holding the token until the shard stands at a VGTID
// outside a transaction.
func (s *shard) batch(ctx context.Context, events []*binlogdata.VEvent) error {
	s.bmu.Lock()
	if !s.holding && s.moving.Load() {
		// Between transactions on a server the shard is to move off: nothing more from it.
		s.bmu.Unlock()
		return errMove
	}
	s.inBatch = true
	s.bmu.Unlock()
	defer func() {
		s.bmu.Lock()
		s.inBatch = false
		s.bmu.Unlock()
	}()
	if drop, err := s.atBoundary(ctx, events); drop || err != nil {
		return err
	}
	if !s.holding {
		select {
		case <-s.m.token:
			s.bmu.Lock()
			s.holding = true
			s.bmu.Unlock()
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	s.out = s.relay(s.out[:0], events)
	var err error
	if len(s.out) > 0 {
		s.m.sendMu.Lock()
		err = s.m.send(s.out)
		if s.m.beat > 0 {
			s.m.lastSend = time.Now()
		}
		s.m.sendMu.Unlock()
	}
	clear(s.out)
	if err != nil {
		return err
	}
	if !s.inTxn && (!s.dirty || s.vitess) {
		s.release()
	}
	return nil
}

// atBoundary keeps the shards' times in step before a batch takes the token. At a
// boundary (the shard holds no token) it waits for the other shards under minimize_skew,
// and reports a batch of heartbeats alone to be dropped when the merge drops them: such a
// batch need not take the token. Inside a transaction the shard holds the token: waiting
// would stop the laggard too, so its time is only recorded (vtgate, which buffers a
// transaction whole, waits at its end, without the send lock).
func (s *shard) atBoundary(ctx context.Context, events []*binlogdata.VEvent) (drop bool, err error) {
	if s.holding || (s.m.skew == nil && !s.m.dropBeats) {
		if s.m.skew != nil && len(events) > 0 {
			s.m.skew.observe(s.index, events[len(events)-1])
		}
		return false, nil
	}
	// The time that counts is the batch's last event's that has one, a heartbeat's
	// included (it says the shard has nothing older to send, and never holds it back);
	// a VGTID's is the time of the transaction it ends, already counted, or older.
	var last *binlogdata.VEvent
	for _, ev := range events {
		if ev.GetTimestamp() != 0 && ev.GetType() != binlogdata.VEventType_VGTID {
			last = ev
		}
	}
	beats := !hasOther(events)
	if s.m.skew != nil && last != nil {
		if err := s.align(ctx, last, s.name); err != nil {
			return false, err
		}
	}
	return beats && s.m.dropBeats, nil
}

// relay appends to out the events of a batch the merge sends on: its VGTIDs carry every
// shard's position, a shard's end of its copy becomes the merge's, and heartbeats go only
// when the merge keeps them. It follows the shard's transaction (inTxn) and whether
// anything was sent since its last VGTID (dirty).
func (s *shard) relay(out, events []*binlogdata.VEvent) []*binlogdata.VEvent {
	for _, ev := range events {
		switch ev.GetType() {
		case binlogdata.VEventType_HEARTBEAT:
			if !s.m.dropBeats {
				out = append(out, ev)
			}
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
	return out
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

// hasOther reports whether events has an event other than a heartbeat.
func hasOther(events []*binlogdata.VEvent) bool {
	for _, ev := range events {
		if ev.GetType() != binlogdata.VEventType_HEARTBEAT {
			return true
		}
	}
	return false
}

// release gives the token back if the shard holds it.
func (s *shard) release() {
	s.bmu.Lock()
	defer s.bmu.Unlock()
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
