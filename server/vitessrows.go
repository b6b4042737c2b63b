package server

import (
	"context"
	"strconv"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
	"github.com/vstream-cdc/vstream/gen/queryservice"
	"github.com/vstream-cdc/vstream/vstreamer"
)

// rowsHeartbeat is how often Vitess's row streamer sends a heartbeat while it reads.
const rowsHeartbeat = 10 * time.Second

// checkTarget refuses a tablet request for a keyspace this server does not stream or another
// shard than its own. The empty keyspace is the configured one.
func (s *Server) checkTarget(t *query.Target) error {
	if _, err := s.engine.Database(t.GetKeyspace()); err != nil {
		return toStatus(err)
	}
	cfg := s.engine.Config()
	if t.GetShard() != "" && t.GetShard() != cfg.Shard {
		return status.Errorf(codes.InvalidArgument, "target %s/%s is not served here; this server serves %s/%s",
			t.GetKeyspace(), t.GetShard(), cfg.Keyspace, cfg.Shard)
	}
	return nil
}

// runRead runs one of the tablet's snapshot reads (VStreamRows, VStreamTables,
// VStreamResults, BinlogDumpGTID) under the server's stream limit, with logging.
func (s *Server) runRead(ctx context.Context, api string, target *query.Target, read func(context.Context) error) error {
	if err := s.checkTarget(target); err != nil {
		return err
	}
	release, err := s.slots.acquire()
	if err != nil {
		return err
	}
	defer release()
	id := s.streamIDs.Add(1)
	log := s.log.With("stream", id, "api", api)
	log.Info("read starting")
	err = read(ctx)
	log.Info("read ended", "err", err)
	return toStatus(err)
}

// packetSize reads Vitess's "vstream-packet-size" override (the bytes of rows per response)
// from a request's options; zero when it is not given.
func (s *Server) packetSize(opts *binlogdata.VStreamOptions) (int, error) {
	for _, k := range []string{"vstream-packet-size", "vstream_packet_size"} {
		v, ok := opts.GetConfigOverrides()[k]
		if !ok {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return 0, status.Errorf(codes.InvalidArgument, "config override %s=%q: want a positive number of bytes", k, v)
		}
		if lim := s.opts.Limits.MaxBatchBytes; lim > 0 && int64(n) > lim {
			return 0, status.Errorf(codes.ResourceExhausted, "config override %s=%d is over the server's limit of %d bytes", k, n, lim)
		}
		return n, nil
	}
	return 0, nil
}

func (q *queryService) VStreamRows(req *binlogdata.VStreamRowsRequest, stream queryservice.Query_VStreamRowsServer) error {
	return q.srv.runRead(stream.Context(), "rows", req.GetTarget(), func(ctx context.Context) error {
		size, err := q.srv.packetSize(req.GetOptions())
		if err != nil {
			return err
		}
		ereq := vstreamer.RowsRequest{Keyspace: req.GetTarget().GetKeyspace(), Query: req.GetQuery(), LastPK: req.GetLastpk(), HeartbeatInterval: rowsHeartbeat, MaxBatchBytes: size}
		resp := &binlogdata.VStreamRowsResponse{}
		return q.srv.engine.StreamRows(ctx, ereq, func(b *vstreamer.RowsBatch) error {
			*resp = binlogdata.VStreamRowsResponse{Fields: b.Fields, Pkfields: b.PKFields, Gtid: b.GTID,
				Rows: b.Rows, Lastpk: b.LastPK, Heartbeat: b.Heartbeat}
			return stream.Send(resp)
		})
	})
}

func (q *queryService) VStreamTables(req *binlogdata.VStreamTablesRequest, stream queryservice.Query_VStreamTablesServer) error {
	return q.srv.runRead(stream.Context(), "tables", req.GetTarget(), func(ctx context.Context) error {
		resp := &binlogdata.VStreamTablesResponse{}
		gtid := ""
		// Vitess's table stream has no heartbeat field: none is asked for.
		return q.srv.engine.StreamTables(ctx, vstreamer.TablesRequest{Keyspace: req.GetTarget().GetKeyspace()}, func(b *vstreamer.RowsBatch) error {
			if b.GTID != "" {
				gtid = b.GTID
			}
			// Every response of Vitess's table stream carries the snapshot's gtid.
			*resp = binlogdata.VStreamTablesResponse{TableName: b.Table, Fields: b.Fields, Pkfields: b.PKFields, Gtid: gtid,
				Rows: b.Rows, Lastpk: b.LastPK}
			return stream.Send(resp)
		})
	})
}

func (q *queryService) VStreamResults(req *binlogdata.VStreamResultsRequest, stream queryservice.Query_VStreamResultsServer) error {
	return q.srv.runRead(stream.Context(), "results", req.GetTarget(), func(ctx context.Context) error {
		resp := &binlogdata.VStreamResultsResponse{}
		return q.srv.engine.StreamResults(ctx, vstreamer.ResultsRequest{Keyspace: req.GetTarget().GetKeyspace(), Query: req.GetQuery()}, func(b *vstreamer.RowsBatch) error {
			*resp = binlogdata.VStreamResultsResponse{Fields: b.Fields, Gtid: b.GTID, Rows: b.Rows}
			return stream.Send(resp)
		})
	})
}

func (q *queryService) BinlogDumpGTID(req *binlogdata.BinlogDumpGTIDRequest, stream queryservice.Query_BinlogDumpGTIDServer) error {
	if req.GetFlags() > 0xffff {
		return status.Errorf(codes.InvalidArgument, "flags %#x: the dump command's flags are 16 bits", req.GetFlags())
	}
	return q.srv.runRead(stream.Context(), "binlog-dump", req.GetTarget(), func(ctx context.Context) error {
		ereq := vstreamer.DumpRequest{GTIDSet: req.GetGtidSet(), BinlogFile: req.GetBinlogFilename(), BinlogPos: req.GetBinlogPosition(),
			Flags: uint16(req.GetFlags())}
		resp := &binlogdata.BinlogDumpResponse{}
		return q.srv.engine.StreamDump(ctx, ereq, func(raw []byte) error {
			resp.Raw = raw
			return stream.Send(resp)
		})
	})
}
