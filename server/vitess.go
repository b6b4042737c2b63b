package server

import (
	"context"
	"regexp"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/queryservice"
	"github.com/vstream-cdc/vstream/gen/vtgate"
	"github.com/vstream-cdc/vstream/gen/vtgateservice"
	"github.com/vstream-cdc/vstream/shards"
	"github.com/vstream-cdc/vstream/vstreamer"
)

// tabletHeartbeat is how often a Vitess tablet stream sends HEARTBEAT when idle.
const tabletHeartbeat = 900 * time.Millisecond

// vtgateService serves /vtgateservice.Vitess/VStream: the engine's events with vtgate's
// rewrites (GTID and LASTPK become VGTID, keyspace-qualified table names, shard and final
// COPY_COMPLETED, heartbeats only when asked for, without keyspace or shard).
type vtgateService struct {
	vtgateservice.UnimplementedVitessServer
	srv *Server
}

// queryService serves /queryservice.Query/VStream: tablet-level events (GTID and LASTPK as
// they are, no VGTID, the copy as Vitess's uvstreamer sends it, heartbeats when idle for
// 900 ms).
type queryService struct {
	queryservice.UnimplementedQueryServer
	srv *Server
}

func (v *vtgateService) VStream(req *vtgate.VStreamRequest, stream vtgateservice.Vitess_VStreamServer) error {
	flags := req.GetFlags()
	sel, err := selection(req)
	if err != nil {
		return err
	}
	// A stream of the topology's shards acts as vtgate: the shards' engines send heartbeats
	// only for minimize_skew to keep time by (as tablets do every 900 ms), the merge drops
	// them and sends its own after heartbeat_interval without anything sent.
	//
	// transaction_chunk_size needs nothing more: the merge never holds a transaction back
	// whole, it hands each batch of the engine on as it comes while the shard holds the
	// merge's token, so every transaction goes out as vtgate sends one over the chunk size,
	// contiguous and with no other shard's events in it, whatever the size asked (vtgate
	// ignores the flag under minimize_skew; here the two go together, the skew wait coming
	// at a transaction's start, before the token is taken).
	//
	// stop_on_reshard and include_reshard_journal_events are accepted and never act: they
	// concern the JOURNAL a Vitess tablet writes when a resharding workflow switches
	// traffic, and a topology file cannot change its shards under a running vstreamd, so no
	// stream here ever meets one.
	//
	// stream_keyspace_heartbeats is accepted and has nothing to add: in Vitess it lets the
	// row events of the sidecar _vt.heartbeat table through, which vttablet writes; nothing
	// writes such a table on these servers. A keyspace whose position must move while it is
	// idle needs a writer of its own (pt-heartbeat, say) into a table of its database that
	// the filter names.
	var shardBeat time.Duration
	if flags.GetMinimizeSkew() {
		shardBeat = tabletHeartbeat
	}
	base := vstreamer.Request{Filter: req.GetFilter(), HeartbeatInterval: shardBeat, TablesToCopy: flags.GetTablesToCopy(), VitessCopy: true}
	sources, err := v.srv.clusterSources(req.GetVgtid(), base, sel)
	if err != nil {
		return err
	}
	if sources != nil {
		out := &vtgateSender{stream: stream, rw: vtgateRewrite{qualify: !flags.GetExcludeKeyspaceFromTableName(), multi: true}}
		opts := shards.Options{MinimizeSkew: flags.GetMinimizeSkew(), DropShardHeartbeats: true,
			Heartbeat: time.Duration(flags.GetHeartbeatInterval()) * time.Second}
		return v.srv.runShards(stream.Context(), sources, opts, "vtgate", out.send)
	}
	return v.streamServer(req, stream)
}

// streamServer serves a vtgate request of this server's own keyspaces (databases).
func (v *vtgateService) streamServer(req *vtgate.VStreamRequest, stream vtgateservice.Vitess_VStreamServer) error {
	flags := req.GetFlags()
	starts, err := v.srv.pickShardGtids(req.GetVgtid())
	if err != nil {
		return err
	}
	ereq := vstreamer.Request{
		Keyspace:          starts[0].Keyspace,
		Position:          starts[0].Position,
		TableLastPKs:      starts[0].TableLastPKs,
		Filter:            req.GetFilter(),
		HeartbeatInterval: time.Duration(flags.GetHeartbeatInterval()) * time.Second,
		TablesToCopy:      flags.GetTablesToCopy(),
		VitessCopy:        true,
		// send marshals the events and keeps none of them.
		SendRetainsNothing: true,
	}
	multi := len(starts) > 1
	if multi {
		ereq.Keyspaces = starts
	}
	out := &vtgateSender{stream: stream, rw: vtgateRewrite{qualify: !flags.GetExcludeKeyspaceFromTableName(), shard: v.srv.engine.Config().Shard, multi: multi}}
	return v.srv.runStream(stream.Context(), ereq, "vtgate", out.send)
}

// vtgateSender sends batches to a vtgate client as vtgate's rewrite makes them; it keeps
// the rewrite's state, the rewritten events' buffer and the response, all reused batch
// after batch.
type vtgateSender struct {
	stream vtgateservice.Vitess_VStreamServer
	rw     vtgateRewrite
	out    []*binlogdata.VEvent
	resp   vtgate.VStreamResponse
}

// send is the engine's (or the merge's) SendFunc. A batch the rewrite leaves empty sends
// nothing.
func (s *vtgateSender) send(events []*binlogdata.VEvent) error {
	s.out = s.rw.rewrite(s.out[:0], events)
	if len(s.out) == 0 {
		return nil
	}
	s.resp.Events = s.out
	return s.stream.Send(&s.resp)
}

func (q *queryService) VStream(req *binlogdata.VStreamRequest, stream queryservice.Query_VStreamServer) error {
	if err := q.srv.checkTarget(req.GetTarget()); err != nil {
		return err
	}
	opts := req.GetOptions()
	vcfg, err := parseConfigOverrides(opts.GetConfigOverrides())
	if err != nil {
		return err
	}
	if err := checkEventTypes(opts.GetEventTypes()); err != nil {
		return err
	}
	ereq := vstreamer.Request{
		Keyspace:          req.GetTarget().GetKeyspace(),
		Position:          req.GetPosition(),
		TableLastPKs:      req.GetTableLastPKs(),
		Filter:            req.GetFilter(),
		HeartbeatInterval: tabletHeartbeat,
		TablesToCopy:      opts.GetTablesToCopy(),
		EventTypes:        opts.GetEventTypes(),
		PacketSize:        vcfg.packetSize,
		VitessCopy:        true,
		// send marshals the events and keeps none of them.
		SendRetainsNothing: true,
	}
	resp := &binlogdata.VStreamResponse{}
	var out []*binlogdata.VEvent
	send := func(events []*binlogdata.VEvent) error {
		out = rewriteTablet(out[:0], events)
		if len(out) == 0 {
			return nil
		}
		resp.Events = out
		return stream.Send(resp)
	}
	return q.srv.runStream(stream.Context(), ereq, "tablet", send)
}

// selection reads how a vtgate request chooses a shard's servers. vstreamd has no cell of
// its own, so preferlocalwithalias (the default) prefers the cells named, then any; and
// the servers of one type keep the topology's order, which is what tablet_order inorder
// asks (the requested type first) and one of the orders any allows. Values vtgate does not
// know are refused as vtgate refuses them.
func selection(req *vtgate.VStreamRequest) (shards.Selection, error) {
	flags := req.GetFlags()
	var cells []string
	for c := range strings.SplitSeq(flags.GetCells(), ",") {
		if c = strings.TrimSpace(c); c != "" {
			cells = append(cells, c)
		}
	}
	switch o := strings.ToLower(flags.GetTabletOrder()); o {
	case "", "any", "inorder":
	default:
		return shards.Selection{}, status.Errorf(codes.InvalidArgument, "tablet_order %q: want any (the default) or inorder", flags.GetTabletOrder())
	}
	return cellSelection(strings.ToLower(req.GetTabletType().String()), cells, flags.GetCellPreference())
}

// cellSelection is the selection of servers of tabletType with cells and cell_preference
// as vtgate reads them; values vtgate does not know are refused as vtgate refuses them.
func cellSelection(tabletType string, cells []string, pref string) (shards.Selection, error) {
	sel := shards.Selection{TabletType: tabletType, Cells: cells}
	switch strings.ToLower(pref) {
	case "", "preferlocalwithalias":
	case "onlyspecified":
		sel.OnlyCells = true
	default:
		return sel, status.Errorf(codes.InvalidArgument, "cell_preference %q: want preferlocalwithalias (the default) or onlyspecified", pref)
	}
	return sel, nil
}

// runStream runs an engine stream for one of the Vitess services, with the native service's
// logging and metrics.
// runShards runs a stream of a topology's shards (package shards) as runStream runs the
// engine's.
func (s *Server) runShards(ctx context.Context, sources []shards.Source, opts shards.Options, api string, send vstreamer.SendFunc) error {
	req := sources[0].Request
	release, err := s.admit(req)
	if err != nil {
		return err
	}
	defer release()
	id := s.streamIDs.Add(1)
	log := s.log.With("stream", id, "api", api, "shards", len(sources))
	log.Info("stream starting")
	stats := s.stats.stream(s.streamInfo(ctx, id, api, req, "vevent"))
	for i := range sources {
		sources[i].Request.Observer = stats
		sources[i].Logger = log
	}
	err = shards.StreamWith(ctx, sources, opts, func(events []*binlogdata.VEvent) error {
		serr := send(events)
		stats.sent(events)
		return serr
	})
	stats.done(err)
	log.Info("stream ended", "err", err)
	return toStatus(err)
}

// clusterSources returns the shards a VGtid names when its keyspaces are the topology's
// (nil when they are the engine's); a VGtid naming both is refused.
func (s *Server) clusterSources(v *binlogdata.VGtid, base vstreamer.Request, sel shards.Selection) ([]shards.Source, error) {
	c := s.opts.Cluster
	if c == nil {
		return nil, nil
	}
	in := 0
	for _, sg := range v.GetShardGtids() {
		if c.Serves(sg.GetKeyspace()) {
			in++
		}
	}
	switch {
	case in == 0:
		return nil, nil
	case in < len(v.GetShardGtids()):
		return nil, status.Error(codes.InvalidArgument, "the vgtid names keyspaces of the topology and others; stream them apart")
	}
	sources, err := c.Sources(v, base, sel)
	if err != nil {
		return nil, toStatus(err)
	}
	return sources, nil
}

func (s *Server) runStream(ctx context.Context, req vstreamer.Request, api string, send vstreamer.SendFunc) error {
	release, err := s.admit(req)
	if err != nil {
		return err
	}
	defer release()
	id := s.streamIDs.Add(1)
	log := s.log.With("stream", id, "api", api, "position", req.Position)
	log.Info("stream starting")
	stats := s.stats.stream(s.streamInfo(ctx, id, api, req, "vevent"))
	req.Observer = stats
	err = s.engine.Stream(ctx, req, func(events []*binlogdata.VEvent) error {
		serr := send(events)
		stats.sent(events)
		return serr
	})
	stats.done(err)
	log.Info("stream ended", "err", err)
	return toStatus(err)
}

// pickShardGtids finds the ShardGtids of a vtgate request, one per keyspace of this server
// it names, in the request's order. vtgate accepts an empty shard (all shards), a keyspace
// regex ("/..."), and an empty keyspace with gtid "current" (all keyspaces); a single source
// answers each of them with its own shard. The empty keyspace stands for the configured
// one, and a regex is matched against the keyspaces named in the configuration (not every
// database "*" allows), each keyspace it matches streamed at its gtid.
func (s *Server) pickShardGtids(v *binlogdata.VGtid) ([]vstreamer.KeyspaceStart, error) {
	cfg := s.engine.Config()
	var out []vstreamer.KeyspaceStart
	add := func(sg *binlogdata.ShardGtid, ks string) error {
		if sg.GetShard() != "" && sg.GetShard() != cfg.Shard {
			return status.Errorf(codes.InvalidArgument, "shard %q of keyspace %q in the vgtid is not served here; this server streams shard %q", sg.GetShard(), ks, cfg.Shard)
		}
		for _, k := range out {
			if k.Keyspace == ks {
				return status.Errorf(codes.InvalidArgument, "the vgtid names shard %s/%s twice", ks, cfg.Shard)
			}
		}
		out = append(out, vstreamer.KeyspaceStart{Keyspace: ks, Position: sg.GetGtid(), TableLastPKs: sg.GetTablePKs()})
		return nil
	}
	for _, sg := range v.GetShardGtids() {
		ks := sg.GetKeyspace()
		switch {
		case ks == "" && sg.GetGtid() == vstreamer.CurrentPosition:
			ks = cfg.Keyspace
		case ks == "":
			return nil, status.Errorf(codes.InvalidArgument, "keyspace %q in the vgtid is not served here; name a keyspace (this server streams %s) or give gtid \"current\"",
				ks, strings.Join(s.engine.Keyspaces(), ", "))
		case strings.HasPrefix(ks, "/"):
			re, err := regexp.Compile(strings.Trim(ks, "/"))
			if err != nil {
				return nil, status.Errorf(codes.InvalidArgument, "vgtid keyspace regex %q: %v", ks, err)
			}
			matched := 0
			for _, k := range s.engine.Keyspaces() {
				if k != vstreamer.AllDatabases && re.MatchString(k) {
					if err := add(sg, k); err != nil {
						return nil, err
					}
					matched++
				}
			}
			if matched == 0 {
				return nil, status.Errorf(codes.InvalidArgument, "keyspace %q in the vgtid is not served here; this server streams keyspaces %s shard %q",
					ks, strings.Join(s.engine.Keyspaces(), ", "), cfg.Shard)
			}
			continue
		default:
			if _, err := s.engine.Database(ks); err != nil {
				return nil, toStatus(err)
			}
		}
		if err := add(sg, ks); err != nil {
			return nil, err
		}
	}
	if len(out) == 0 {
		return nil, status.Errorf(codes.InvalidArgument, "the vgtid names no shard; give keyspace %q shard %q with a position (\"current\", a GTID position, or empty to copy)", cfg.Keyspace, cfg.Shard)
	}
	return out, nil
}

// nextVGTID returns the first VGTID event at or after i.
func nextVGTID(events []*binlogdata.VEvent, i int) *binlogdata.VEvent {
	for ; i < len(events); i++ {
		if events[i].GetType() == binlogdata.VEventType_VGTID {
			return events[i]
		}
	}
	return nil
}

// vtgateRewrite turns engine events into what vtgate sends.
type vtgateRewrite struct {
	// qualify names tables keyspace.table, as vtgate does unless the client sets
	// exclude_keyspace_from_table_name.
	qualify bool
	shard   string
	// multi is a stream of several keyspaces, whose engine sends the final COPY_COMPLETED
	// itself once the last keyspace's copy is over.
	multi bool
	// names holds the qualified names made so far: a Vitess-shaped copy sends a ROW event
	// per row, and qualifying each anew was an allocation per row.
	names qualifiedNames
}

// qualifiedNames makes keyspace.table names once per stream and table.
type qualifiedNames struct {
	// last is the name made or found last: the rows of one table come in runs.
	lastKeyspace, lastTable, last string
	made                          map[[2]string]string
}

// name returns keyspace + "." + table.
func (q *qualifiedNames) name(keyspace, table string) string {
	if keyspace == q.lastKeyspace && table == q.lastTable && q.last != "" {
		return q.last
	}
	key := [2]string{keyspace, table}
	name, ok := q.made[key]
	if !ok {
		name = keyspace + "." + table
		if q.made == nil {
			q.made = map[[2]string]string{}
		}
		q.made[key] = name
	}
	q.lastKeyspace, q.lastTable, q.last = keyspace, table, name
	return name
}

// rewrite turns engine events into what vtgate sends. The engine (Request.VitessCopy)
// follows every GTID and LASTPK with the VGTID that stands for it, in the same batch, so the
// VGTID moves into their place. A shard's COPY_COMPLETED is followed by the final one, with
// no keyspace or shard, as vtgate sends once every shard has finished. A table name takes
// the keyspace of its own event: in a stream of several keyspaces they differ.
func (r *vtgateRewrite) rewrite(out, events []*binlogdata.VEvent) []*binlogdata.VEvent {
	for i, ev := range events {
		switch ev.GetType() {
		case binlogdata.VEventType_GTID, binlogdata.VEventType_LASTPK:
			if vg := nextVGTID(events, i+1); vg != nil {
				shard := r.shard
				if shard == "" {
					// Several shards: the event's own.
					shard = ev.GetShard()
				}
				out = append(out, &binlogdata.VEvent{Type: binlogdata.VEventType_VGTID, Vgtid: vg.GetVgtid(),
					Keyspace: ev.GetKeyspace(), Shard: shard, CurrentTime: vg.GetCurrentTime()})
			}
		case binlogdata.VEventType_VGTID:
			// Already moved into the place of its GTID or LASTPK.
		case binlogdata.VEventType_COPY_COMPLETED:
			out = append(out, ev)
			if !r.multi {
				out = append(out, &binlogdata.VEvent{Type: binlogdata.VEventType_COPY_COMPLETED, CurrentTime: ev.GetCurrentTime()})
			}
		case binlogdata.VEventType_FIELD:
			if r.qualify {
				ev.FieldEvent.TableName = r.names.name(ev.GetFieldEvent().GetKeyspace(), ev.FieldEvent.GetTableName())
			}
			out = append(out, ev)
		case binlogdata.VEventType_ROW:
			if r.qualify {
				ev.RowEvent.TableName = r.names.name(ev.GetRowEvent().GetKeyspace(), ev.RowEvent.GetTableName())
			}
			out = append(out, ev)
		case binlogdata.VEventType_HEARTBEAT:
			ev.Keyspace, ev.Shard = "", ""
			out = append(out, ev)
		default:
			out = append(out, ev)
		}
	}
	return out
}

// rewriteTablet turns engine events (Request.VitessCopy) into what a tablet sends: the same,
// without VGTID.
func rewriteTablet(out, events []*binlogdata.VEvent) []*binlogdata.VEvent {
	for _, ev := range events {
		if ev.GetType() != binlogdata.VEventType_VGTID {
			out = append(out, ev)
		}
	}
	return out
}

// admit checks a stream against the server's limits and takes one of its slots.
func (s *Server) admit(req vstreamer.Request) (release func(), err error) {
	if lim := s.opts.Limits.MaxBatchBytes; lim > 0 && int64(req.MaxBatchBytes) > lim {
		return nil, status.Errorf(codes.ResourceExhausted, "max_batch_bytes %d is over the server's limit of %d bytes", req.MaxBatchBytes, lim)
	}
	if lim := s.opts.Limits.MaxBatchBytes; lim > 0 && int64(req.PacketSize) > lim {
		return nil, status.Errorf(codes.ResourceExhausted, "vstream-packet-size %d is over the server's limit of %d bytes", req.PacketSize, lim)
	}
	return s.slots.acquire()
}
