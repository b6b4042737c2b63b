package vstreamer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/go-mysql-org/go-mysql/client"

	"github.com/vstream-cdc/vstream/filter"
	"github.com/vstream-cdc/vstream/position"
	"github.com/vstream-cdc/vstream/vstreamer/schema"
)

// Stream runs one change stream until ctx ends, send fails, or the binlog breaks. It returns
// nil only when ctx was cancelled or send returned io.EOF.
//
// Its setup goes in phases: parse the request (parseRequest), plan each keyspace's database
// and filter (planKeyspaces), inspect the server, plan the copy (planCopy), resolve where
// the binlog stream starts (resolveStart), check the tables the rules name (checkTables),
// build the stream (newStream) and its copies (startCopies); then the stream runs.
func (e *Engine) Stream(ctx context.Context, req Request, send SendFunc) (err error) {
	// A stream its caller cancels ends without an error wherever the cancel finds it: in
	// the setup's queries as much as in the stream.
	defer func() {
		if ctx.Err() != nil && errors.Is(err, context.Canceled) {
			err = nil
		}
	}()
	select {
	case <-e.drain:
		return fmt.Errorf("%w: not starting new streams", ErrShuttingDown)
	default:
	}
	plan, err := e.parseRequest(&req)
	if err != nil {
		return err
	}
	// The setup's queries lease a pooled connection at the first of them and give it back
	// before the inspection and once the tables are checked: a stream that only streams
	// does not hold one.
	setup := &lazyConn{e: e, ctx: ctx}
	defer func() { setup.release(err) }()
	if err = e.planKeyspaces(setup, plan); err != nil {
		return err
	}
	// Not held while waiting for the inspection, which leases one of its own.
	setup.release(nil)
	info, err := e.source().inspect(ctx, e, plan.keyspaces[0].filter.BestEffort())
	if err != nil {
		return err
	}
	plan.planCopy(&req)
	start, current, err := e.resolveStart(plan, info)
	if err != nil {
		return err
	}
	if err = plan.checkTables(setup, req.TablesToCopy); err != nil {
		return err
	}
	setup.release(nil)
	s, err := e.newStream(ctx, &req, send, plan, start)
	if err != nil {
		return err
	}
	defer s.closeCopies()
	if err = s.startCopies(plan); err != nil {
		return err
	}
	err = s.run(ctx, info, current)
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// streamPlan is what a stream's setup works out before the stream starts: the keyspaces it
// streams, the one position they start at, and what each copies.
type streamPlan struct {
	starts   []KeyspaceStart
	startPos string
	dbs      []string
	filters  []*filter.Filter
	// keyspaces are the keyspaces streamed, in the client's order (planKeyspaces).
	keyspaces []*keyspaceStream
	// copy is the copy request every keyspace's is made from (copyFor); copied are the
	// databases whose copy is full or resumed, listed the databases copying at all
	// (tables_to_copy alone adds tables to a running stream).
	copy           copyRequest
	copied, listed []string
}

// parseRequest checks the request and fills in its defaults, and resolves each keyspace's
// database and filter: everything that needs no query of the server.
func (e *Engine) parseRequest(req *Request) (*streamPlan, error) {
	if err := checkSize(req); err != nil {
		return nil, err
	}
	if err := copyOptions(req, e.cfg); err != nil {
		return nil, err
	}
	starts, startPos, err := keyspaceStarts(req)
	if err != nil {
		return nil, err
	}
	dbs, filters, err := e.keyspaceFilters(starts, req.Filter, req.ColumnMasks)
	if err != nil {
		return nil, err
	}
	if req.FailureMode, err = ParseFailureMode(req.FailureMode); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadOption, err)
	}
	return &streamPlan{starts: starts, startPos: startPos, dbs: dbs, filters: filters}, nil
}

// planKeyspaces reads each keyspace's database and labels: every use of cfg after it is a
// keyspace's.
func (e *Engine) planKeyspaces(setup *lazyConn, p *streamPlan) error {
	p.keyspaces = make([]*keyspaceStream, len(p.starts))
	for i, ks := range p.starts {
		cfg, err := e.keyspaceConfig(setup.get, p.dbs[i])
		if err != nil {
			return err
		}
		p.keyspaces[i] = &keyspaceStream{cfg: cfg, filter: p.filters[i], lastPKs: ks.TableLastPKs,
			fieldsFor: make(map[string]*tablePlan), copyPlans: make(map[string]*tablePlan)}
	}
	return nil
}

// planCopy works out the copy the request asks of each keyspace.
func (p *streamPlan) planCopy(req *Request) {
	p.copy = copyRequest{
		emptyPosition: strings.TrimSpace(p.startPos) == "",
		tablesToCopy:  req.TablesToCopy,
		withoutKey:    req.CopyTablesWithoutKey,
		chunkRows:     req.CopyChunkRows,
		parallelism:   req.CopyParallelism,
		// One throttle paces every keyspace's copy: the bound is the stream's.
		throttle:   newCopyThrottle(req.CopyMaxRowsPerSecond),
		vitess:     req.VitessCopy,
		reuse:      req.SendRetainsNothing,
		othersCopy: len(p.keyspaces) > 1,
	}
	for _, k := range p.keyspaces {
		if p.copyFor(k).wanted() {
			p.listed = append(p.listed, k.cfg.Database)
		}
		if p.copies(k) {
			p.copied = append(p.copied, k.cfg.Database)
		}
	}
}

// copyFor is keyspace k's copy request.
func (p *streamPlan) copyFor(k *keyspaceStream) copyRequest {
	r := p.copy
	r.lastPKs = k.lastPKs
	return r
}

// copies reports a full or resumed copy of keyspace k.
func (p *streamPlan) copies(k *keyspaceStream) bool {
	return p.copy.emptyPosition || len(k.lastPKs) > 0
}

// copying reports a stream that copies tables at all.
func (p *streamPlan) copying() bool { return len(p.listed) > 0 }

// resolveStart is where the binlog stream starts, and whether that is the server's current
// position (see stream.atCurrent).
func (e *Engine) resolveStart(p *streamPlan, info *serverInfo) (position.Position, bool, error) {
	pos := p.startPos
	if p.copy.emptyPosition {
		// A fresh copy may start anywhere before its first snapshot: no change is forwarded
		// for a table before its rows are copied.
		pos = CurrentPosition
	}
	if e.filePos() && p.copying() {
		return position.Position{}, false, errCopyFilePos
	}
	start, current, err := resolve(pos, info)
	if err != nil {
		return position.Position{}, false, err
	}
	return start, current && !p.copying(), nil
}

// checkTables checks the tables the rules name. A full or resumed copy needs its named tables
// now; a binlog stream plans a named table when it appears, as Vitess does. A rule of a
// stream of several keyspaces names a table of any of them.
func (p *streamPlan) checkTables(setup *lazyConn, tablesToCopy []string) error {
	for _, k := range p.keyspaces {
		if err := checkTables(setup.get, k.cfg.Database, k.filter, p.copies(k) && len(p.keyspaces) == 1); err != nil {
			return err
		}
	}
	if len(p.keyspaces) == 1 {
		return nil
	}
	conn, err := setup.get()
	if err != nil {
		return err
	}
	return checkNamedTables(conn, p.copied, p.keyspaces[0].filter, p.listed, tablesToCopy)
}

// newStream builds the stream of the plan, from start.
func (e *Engine) newStream(ctx context.Context, req *Request, send SendFunc, p *streamPlan, start position.Position) (*stream, error) {
	s := &stream{
		eng:       e,
		keyspaces: p.keyspaces,
		log:       e.cfg.Logger.With("stream_start", start.String()),
		sql:       e.sqlUse(ctx),
		cursor:    cursor{pos: start, start: start.Clone()},
		plans:     make(map[uint64]*tablePlan),
		beats:     heartbeat{interval: req.HeartbeatInterval},
		drain:     drainWatch{ch: e.drain},
		observer:  req.Observer,
		withSrc:   req.WithSource,
		failMode:  req.FailureMode,
		skip:      skips{enabled: req.SkipEmptyTransactions},
		lag:       lagGate{max: req.CopyMaxReplicationLag},
	}
	s.use(p.keyspaces[0])
	if err := s.out.init(req, send, e.cfg.MaxBatchBytes); err != nil {
		return nil, err
	}
	if !p.copy.emptyPosition {
		// The client knows the position it gave.
		s.out.gtidSent = start.String()
	}
	return s, nil
}

// startCopies sets up each keyspace's copy, if it copies; closeCopies ends them, also those
// set up before one failed.
func (s *stream) startCopies(p *streamPlan) error {
	for _, k := range s.keyspaces {
		kreq := p.copyFor(k)
		if !kreq.wanted() {
			continue
		}
		s.use(k)
		var err error
		if k.copy, err = s.newCopier(kreq); err != nil {
			return err
		}
		s.copy = k.copy
	}
	if p.copy.emptyPosition && s.multi() && s.nextCopy() == nil {
		return fmt.Errorf("%w: nothing to copy: the filter selects no table of keyspaces %s; give a position to stream from", filter.ErrInvalid, strings.Join(p.dbs, ", "))
	}
	s.use(s.keyspaces[0])
	return nil
}

// closeCopies closes the keyspaces' copies, the last set up first.
func (s *stream) closeCopies() {
	for i := len(s.keyspaces) - 1; i >= 0; i-- {
		s.keyspaces[i].copy.close()
	}
}

// checkTables fails up front when a rule's select or keyrange does not fit a table it selects
// now, and, for a copy, when a named rule's table does not exist. Without a copy a named
// rule, like a regex, picks up a table created later in the stream.
func checkTables(sqlConn func() (*client.Conn, error), db string, f *filter.Filter, copying bool) error {
	for _, r := range f.Rules() {
		if !copying || r.IsRegex() || r.Exclude() {
			continue
		}
		conn, err := sqlConn()
		if err != nil {
			return err
		}
		res, err := conn.Execute("SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?", db, r.Match)
		if err != nil {
			return fmt.Errorf("%w: check table %s: %v", ErrUnavailable, r.Match, err)
		}
		n := res.RowNumber()
		res.Close()
		if n == 0 {
			return fmt.Errorf("%w: rule %d (match %q): table %s is not present in the database %s; create it, or start from a position to stream it once it is created",
				filter.ErrInvalid, r.Index+1, r.Match, r.Match, db)
		}
	}
	needs := false
	for _, r := range f.Rules() {
		needs = needs || r.NeedsColumns()
	}
	if !needs {
		return nil
	}
	conn, err := sqlConn()
	if err != nil {
		return err
	}
	res, err := conn.Execute("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_TYPE = 'BASE TABLE'", db)
	if err != nil {
		return fmt.Errorf("%w: list tables: %v", ErrUnavailable, err)
	}
	var tables []string
	for i := 0; i < res.RowNumber(); i++ {
		t := resultString(res, i, 0)
		tables = append(tables, t)
	}
	res.Close()
	for _, t := range tables {
		r := f.Table(t)
		if r == nil || !r.NeedsColumns() {
			continue
		}
		info, err := schema.Load(conn, db, t)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
		fields, pk := tableFields(db, t, schema.Columns(info))
		if _, err := f.Plan(t, fields, pk); err != nil {
			return err
		}
	}
	return nil
}
