package vstreamer

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/vstream-cdc/vstream/position"
	"github.com/vstream-cdc/vstream/vstreamer/fanout"
)

// binlogSource is where a stream learns about its server and reads its binlog. In production
// it is always the server itself (serverSource); tests replay binlog events captured from
// servers that cannot run here (MySQL 8.0 and 8.4) through the same stream loop.
type binlogSource interface {
	// inspect reads the server's flavor and positions and checks its binlog settings;
	// bestEffort is the request's field_event_mode BEST_EFFORT.
	inspect(ctx context.Context, e *Engine, bestEffort bool) (*serverInfo, error)
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

func (serverSource) inspect(ctx context.Context, e *Engine, bestEffort bool) (*serverInfo, error) {
	return e.inspect(ctx, bestEffort)
}

func (serverSource) open(s *stream, info *serverInfo) (binlogReader, func(), error) {
	s.log.Info("binlog reader", "reader", ReaderOwn)
	s.readerKind(ReaderOwn)
	cfg := syncerConfig(s.cfg, info, s.withSrc, s.log.With("component", "binlog"))
	src, stop, err := s.eng.openDump(cfg, s.cursor.pos, s.eng.dumpPlace(info, s.cursor.pos))
	if err != nil {
		return nil, nil, err
	}
	return src, stop, nil
}

// openDump opens a replication connection and starts its dump after the transactions in pos
// (or at pos's file and offset), at place when it is not nil (see headplace.go). The dump is
// read raw and decoded by payloadReader, which hands out a MySQL compressed transaction's
// events as they are decompressed and decodes a table's repeated TABLE_MAP once. A dump whose
// config has a SynchronousEventHandler pushes its events to it from go-mysql's reading
// goroutine, decoded alike.
func (e *Engine) openDump(cfg replication.BinlogSyncerConfig, pos position.Position, place *headPlace) (binlogReader, func(), error) {
	cfg.RawModeEnabled = true
	push := cfg.SynchronousEventHandler
	if push != nil && place != nil {
		push = &placeCheckedHandler{next: push, e: e, h: place}
	}
	if push != nil {
		push = &payloadReader{push: push, parser: newParser(cfg), cfg: cfg}
	}
	cfg.SynchronousEventHandler = push
	syncer := replication.NewBinlogSyncer(watchReads(cfg))
	var streamer *replication.BinlogStreamer
	var err error
	if file, off, ok := pos.FilePos(); ok {
		// resolveFilePos has checked the offset fits.
		streamer, err = syncer.StartSync(mysql.Position{Name: file, Pos: uint32(off)})
	} else if place != nil {
		logDumpStart(cfg.Logger, pos, place)
		streamer, err = syncer.StartSync(mysql.Position{Name: place.file, Pos: place.offset})
	} else {
		// The syncer adds the GTIDs it reads to the set it is given (MySQL's, in its own
		// goroutine, ahead of the stream): a set shared with pos would move the stream's
		// position past transactions it has not sent.
		streamer, err = syncer.StartSyncGTID(pos.Normalized().Clone().GTIDSet)
	}
	if err != nil {
		syncer.Close()
		return nil, nil, fmt.Errorf("%w: start binlog dump at %s: %v", ErrUnavailable, pos, err)
	}
	if push != nil {
		// The streamer only reports the dump's end. Close waits for the handler, which may
		// wait for the one stopping the dump.
		return streamer, func() { go syncer.Close() }, nil
	}
	var src binlogReader = newPayloadReader(streamer, cfg)
	if place != nil {
		src = &placeChecked{binlogReader: src, e: e, h: place}
	}
	return src, syncer.Close, nil
}

// The readers a stream reads the binlog from (Observer's ReaderObserver, and the log).
const (
	// ReaderShared: the engine's one reader at the server's head, shared by every stream
	// there.
	ReaderShared = string(fanout.Shared)
	// ReaderCatchUp: a reader started for streams behind the shared one (a resume from an
	// old position, a stream that fell behind); it hands them to the shared reader once it
	// reaches it.
	ReaderCatchUp = string(fanout.CatchUp)
	// ReaderOwn: a connection of the stream's own (file positions, or Config.OwnReaders).
	ReaderOwn = "own"
)

// sharedSource reads through the engine's pool of shared readers.
type sharedSource struct{}

func (sharedSource) inspect(ctx context.Context, e *Engine, bestEffort bool) (*serverInfo, error) {
	return e.inspect(ctx, bestEffort)
}

func (sharedSource) open(s *stream, info *serverInfo) (binlogReader, func(), error) {
	e := s.eng
	// Every stream of a hub reads the same dump, so the dump asks for what any of them may
	// want: MariaDB's annotate rows events, which the streams without sources ignore.
	open := e.sharedDump(syncerConfig(s.cfg, info, true, e.cfg.Logger.With("component", "binlog")), info)
	onKind := func(k fanout.Kind) {
		s.log.Info("binlog reader", "reader", string(k))
		s.readerKind(string(k))
	}
	if s.cursor.atCurrent {
		// "current" is wherever the shared reader is: streams that start together then
		// share it even when the server's head moved between them.
		if c, pos, ok := e.readers.AttachHead(open, onKind); ok {
			s.cursor.pos = pos
			s.leaveOut(c)
			return c, c.Close, nil
		}
	}
	atHead := s.cursor.pos.Contains(info.current) && info.current.Contains(s.cursor.pos)
	c := e.readers.Attach(s.cursor.pos, atHead, open, onKind)
	s.leaveOut(c)
	return c, c.Close, nil
}

// leaveOut has the shared reader leave out the events of the tables the stream does not
// send, as the stream's own reader goroutine would (unsent): the cursor decides once per
// table, where that goroutine would look at each event.
func (s *stream) leaveOut(c *fanout.Cursor) {
	if s.withSrc {
		// Sources count every rows event of a transaction.
		return
	}
	c.LeaveOut(func(t *fanout.Table) bool { return s.leavesOut(t.DB, t.Name) }, unsentTypes...)
}

// sharedDump opens the dumps of the shared readers with cfg, at info's head place when
// one starts at its position. A dump pushes its events to the hub from go-mysql's reading
// goroutine (see openDump): a transaction then reaches its streams through one hand-over
// between goroutines, not two.
func (e *Engine) sharedDump(cfg replication.BinlogSyncerConfig, info *serverInfo) fanout.OpenFunc {
	return func(pos position.Position, push func(*replication.BinlogEvent) error) (fanout.Source, func(), error) {
		// Every dump its own replica id: the server drops a connection whose id is reused.
		c := cfg
		c.ServerID = randomServerID()
		if push != nil {
			c.SynchronousEventHandler = pushTo(push)
		}
		return e.openDump(c, pos, e.dumpPlace(info, pos))
	}
}

// pushTo is go-mysql's handler of a dump's events in its own goroutine.
type pushTo func(*replication.BinlogEvent) error

func (p pushTo) HandleEvent(ev *replication.BinlogEvent) error { return p(ev) }

// readerKind tells the observer which reader serves the stream.
func (s *stream) readerKind(kind string) {
	if o, ok := s.observer.(ReaderObserver); ok {
		o.Reader(kind)
	}
}

// ReaderObserver is an Observer that also hears which reader serves the stream: ReaderShared,
// ReaderCatchUp or ReaderOwn. Reader is called when the stream starts and whenever that
// changes, from the stream's binlog reading goroutine.
type ReaderObserver interface {
	Reader(kind string)
}

// syncerConfig is a replication connection. Its decoding options are also the ones a
// replayed binlog is parsed with, so that both decode alike. annotate asks MariaDB for the
// SQL of row events, which sources carry.
func syncerConfig(c *Config, info *serverInfo, annotate bool, log *slog.Logger) replication.BinlogSyncerConfig {
	var dumpFlags uint16
	if annotate && info.flavor == position.MariaDB {
		dumpFlags |= replication.BINLOG_SEND_ANNOTATE_ROWS_EVENT
	}
	return replication.BinlogSyncerConfig{
		DumpCommandFlag:         dumpFlags,
		ServerID:                randomServerID(),
		Flavor:                  info.flavor.GoMySQL(),
		Host:                    info.host,
		Port:                    info.port,
		User:                    c.User,
		Password:                c.Password,
		TLSConfig:               c.TLS,
		TimestampStringLocation: time.UTC,
		HeartbeatPeriod:         c.ServerHeartbeat,
		ReadTimeout:             3 * c.ServerHeartbeat,
		// Retrying inside go-mysql replays half transactions; the client resumes instead.
		DisableRetrySync: true,
		// The stream keeps its own position: go-mysql's copy of its GTID set on every XID
		// and query event (BinlogEvent.GSet) was a set cloned per transaction for nobody.
		DiscardGTIDSet: true,
		// MariaDB's COMPRESSED columns, which go-mysql cannot read; and tests' faults.
		RowsEventDecodeFunc: decodeRows(),
		EventCacheCount:     decodedQueue,
		Logger:              log,
	}
}

// source returns where the engine's streams read from.
func (e *Engine) source() binlogSource {
	switch {
	case e.src != nil:
		return e.src
	case e.filePos() || e.cfg.OwnReaders:
		// A shared reader meets streams at GTID positions.
		return serverSource{}
	default:
		return sharedSource{}
	}
}
