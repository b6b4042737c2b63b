package vstreamer

import (
	"context"
	"fmt"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/vstream-cdc/vstream/vstreamer/position"
)

// binlogSource is where a stream learns about its server and reads its binlog. In production
// it is always the server itself (serverSource); tests replay binlog events captured from
// servers that cannot run here (MySQL 8.0 and 8.4) through the same stream loop.
type binlogSource interface {
	// inspect reads the server's flavor and positions and checks its binlog settings;
	// bestEffort is the request's field_event_mode BEST_EFFORT.
	inspect(e *Engine, conn *client.Conn, bestEffort bool) (*serverInfo, error)
	// open starts reading the binlog after the transactions in s.pos. The returned function
	// releases the reader.
	open(s *stream, info *serverInfo) (binlogReader, func(), error)
}

// binlogReader hands out decoded binlog events one at a time, as go-mysql's BinlogStreamer does.
type binlogReader interface {
	GetEvent(ctx context.Context) (*replication.BinlogEvent, error)
}

// serverSource reads the server the engine is configured for.
type serverSource struct{}

func (serverSource) inspect(e *Engine, conn *client.Conn, bestEffort bool) (*serverInfo, error) {
	return e.inspect(conn, bestEffort)
}

func (serverSource) open(s *stream, info *serverInfo) (binlogReader, func(), error) {
	syncer := replication.NewBinlogSyncer(syncerConfig(s, info))
	var streamer *replication.BinlogStreamer
	var err error
	if file, pos, ok := s.pos.FilePos(); ok {
		// resolveFilePos has checked the offset fits.
		streamer, err = syncer.StartSync(mysql.Position{Name: file, Pos: uint32(pos)})
	} else {
		streamer, err = syncer.StartSyncGTID(s.pos.Normalized().GTIDSet)
	}
	if err != nil {
		syncer.Close()
		return nil, nil, fmt.Errorf("%w: start binlog dump at %s: %v", ErrUnavailable, s.pos, err)
	}
	return streamer, syncer.Close, nil
}

// syncerConfig is the replication connection of a stream. Its decoding options are also the
// ones a replayed binlog is parsed with, so that both decode alike.
func syncerConfig(s *stream, info *serverInfo) replication.BinlogSyncerConfig {
	var dumpFlags uint16
	if s.withSrc && info.flavor == position.MariaDB {
		// MariaDB sends the SQL of row events only when asked; sources carry it.
		dumpFlags |= replication.BINLOG_SEND_ANNOTATE_ROWS_EVENT
	}
	return replication.BinlogSyncerConfig{
		DumpCommandFlag:         dumpFlags,
		ServerID:                randomServerID(),
		Flavor:                  info.flavor.GoMySQL(),
		Host:                    info.host,
		Port:                    info.port,
		User:                    s.cfg.User,
		Password:                s.cfg.Password,
		TLSConfig:               s.cfg.TLS,
		TimestampStringLocation: time.UTC,
		HeartbeatPeriod:         s.cfg.ServerHeartbeat,
		ReadTimeout:             3 * s.cfg.ServerHeartbeat,
		// Retrying inside go-mysql replays half transactions; the client resumes instead.
		DisableRetrySync: true,
		// MariaDB's COMPRESSED columns, which go-mysql cannot read; and tests' faults.
		RowsEventDecodeFunc: decodeRows(),
		EventCacheCount:     decodedQueue,
		Logger:              s.log.With("component", "binlog"),
	}
}

// source returns where the engine's streams read from.
func (e *Engine) source() binlogSource {
	if e.src != nil {
		return e.src
	}
	return serverSource{}
}
