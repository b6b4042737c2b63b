// Package vstreamer is the change-stream engine: it reads a MySQL or MariaDB binlog as a
// replica and turns it into Vitess VEvents (BEGIN, FIELD, ROW, GTID, COMMIT, DDL, OTHER,
// HEARTBEAT, VGTID), handed out in batches through a callback. It knows nothing of gRPC.
package vstreamer

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/vstream-cdc/vstream/filter"
	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/internal/coalesce"
	"github.com/vstream-cdc/vstream/position"
	"github.com/vstream-cdc/vstream/vstreamer/fanout"
	"github.com/vstream-cdc/vstream/vstreamer/history"
	"github.com/vstream-cdc/vstream/vstreamer/schema"
	"github.com/vstream-cdc/vstream/vstreamer/sqlpool"
)

// Sentinel errors the server maps to status codes. Errors returned by Stream wrap one of them
// (or position.ErrBadPosition / filter.ErrInvalid) when the cause is known.
var (
	// ErrUnavailable: the database cannot be reached or the connection broke; retry later.
	ErrUnavailable = errors.New("database unavailable")
	// ErrPurged: the server no longer has the binlogs the position needs.
	ErrPurged = errors.New("position purged")
	// ErrAhead: the position holds transactions the server has not executed. Its text is
	// Vitess's for the case: vtgate looks for it in a tablet's InvalidArgument error to try
	// another tablet instead of failing the stream.
	ErrAhead = errors.New("GTIDSet Mismatch")
	// ErrFlavor: the position's flavor is not the server's.
	ErrFlavor = errors.New("position flavor does not match the server")
	// ErrServerConfig: the server's binlog settings cannot support a change stream.
	ErrServerConfig = errors.New("server binlog configuration unsupported")
	// ErrUnsupportedEvent: the binlog holds an event the engine cannot turn into changes and
	// may not skip (it can carry row changes); the stream ends rather than lose them.
	ErrUnsupportedEvent = errors.New("unsupported binlog event")
	// ErrSchema: a binlog row cannot be matched to its table's columns.
	ErrSchema = errors.New("schema mismatch")
	// ErrBadRequest: the request asks for something that cannot be served as given.
	ErrBadRequest = errors.New("invalid request")
	// ErrShuttingDown: the engine is draining; the stream ended between transactions and the
	// client resumes from its last position elsewhere or later.
	ErrShuttingDown = errors.New("server shutting down")
)

// CurrentPosition is the position keyword for "start now".
const CurrentPosition = "current"

// Config says which server to stream from and how to label its events.
type Config struct {
	// ColumnMasks apply to every stream and row read, before a request's own (filter.Mask):
	// the columns they name never leave the server in clear.
	ColumnMasks []filter.Mask
	// Addr is host:port of the MySQL or MariaDB server.
	Addr     string
	User     string
	Password string
	// Database is the schema whose tables are streamed; it is also the default keyspace.
	Database string
	// Keyspace and Shard label every event; Keyspace defaults to Database, Shard to "0".
	Keyspace string
	// Databases are the other databases of the server clients may stream, each under its
	// own name as keyspace (Request.Keyspace); AllDatabases ("*") allows every one but the
	// system schemas. Empty allows Database only.
	Databases []string
	Shard     string
	// Flavor forces "mariadb" or "mysql"; empty detects it from the server's version.
	Flavor string
	// Positions is PositionsGTID (or empty) or PositionsFilePos: whether streams start from
	// and send GTID positions or FilePos/<file>:<offset> positions.
	Positions string
	// TLS, when set, is used for both the SQL and the replication connection.
	TLS *tls.Config
	// DialTimeout bounds connecting to the server (default 5s).
	DialTimeout time.Duration
	// ServerHeartbeat is the replication heartbeat period asked of the server (default 2s);
	// a connection silent for three periods is treated as broken.
	ServerHeartbeat time.Duration
	// MaxBatchBytes bounds the approximate encoded size of one batch (default 256 KiB).
	MaxBatchBytes int
	// VSchema, when set, is the keyspace's VSchema: every stream takes tables' keyspace ids
	// (keyrange rules, in_keyrange, keyspace_id()) from their vindexes in it. Without one a
	// keyspace id is the hash of a primary key of one integer column.
	VSchema *filter.VSchema
	// SchemaHistoryDir, when set, keeps a schema history there (see RunSchemaHistory): streams
	// then describe rows with the table definitions in force where the rows were written.
	SchemaHistoryDir string
	// OwnReaders gives every stream a binlog connection of its own, as before shared readers:
	// by default the streams at one position share one connection and its decoding (see
	// vstreamer/fanout). Streams under file positions always read on their own.
	OwnReaders bool
	// CopyParallelism, CopyMaxRowsPerSecond and CopyMaxReplicationLag are the defaults of
	// the Request fields of those names, for requests that leave them zero. CopyParallelism
	// zero means 1: one table at a time, the copy's order before parallel copies, which
	// clients that read a copy table by table may expect.
	CopyParallelism       int
	CopyMaxRowsPerSecond  int64
	CopyMaxReplicationLag time.Duration
	Logger                *slog.Logger
}

// Validate fills defaults and reports the first bad field.
func (c *Config) Validate() error {
	if c.Addr == "" {
		return errors.New("config: mysql address is empty")
	}
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		return fmt.Errorf("config: mysql address %q: %w", c.Addr, err)
	}
	if c.User == "" {
		return errors.New("config: mysql user is empty")
	}
	if c.Database == "" {
		return errors.New("config: database is empty; name it in the DSN (user:pass@tcp(host:port)/db)")
	}
	switch strings.ToLower(c.Flavor) {
	case "", "mariadb", "mysql":
		c.Flavor = strings.ToLower(c.Flavor)
	default:
		return fmt.Errorf("config: flavor %q: want mariadb or mysql (or empty to detect)", c.Flavor)
	}
	switch strings.ToLower(c.Positions) {
	case "", PositionsGTID:
		c.Positions = PositionsGTID
	case PositionsFilePos:
		c.Positions = PositionsFilePos
	default:
		return fmt.Errorf("config: positions %q: want %s or %s", c.Positions, PositionsGTID, PositionsFilePos)
	}
	if c.Positions == PositionsFilePos && c.SchemaHistoryDir != "" {
		// The history is keyed by GTID set; a FilePos stream could never find its place in it.
		return errors.New("config: a schema history records GTID positions and cannot serve positions filepos; drop schema-history-dir or use positions gtid")
	}
	if c.Keyspace == "" {
		c.Keyspace = c.Database
	}
	for _, d := range c.Databases {
		if d == "" {
			return errors.New("config: databases: an empty name; list database names, or * for all")
		}
		if slices.Contains(systemSchemas, strings.ToLower(d)) {
			return fmt.Errorf("config: databases: %s is a system schema of the server, which is never streamed", d)
		}
		if d == c.Keyspace && d != c.Database {
			// Requests for that keyspace get the configured database: the listed one could never be streamed.
			return fmt.Errorf("config: databases: %s is the keyspace of database %s; name that keyspace otherwise", d, c.Database)
		}
	}
	if c.Shard == "" {
		c.Shard = "0"
	}
	if c.DialTimeout <= 0 {
		c.DialTimeout = 5 * time.Second
	}
	if c.ServerHeartbeat <= 0 {
		c.ServerHeartbeat = 2 * time.Second
	}
	if c.CopyParallelism < 0 || c.CopyParallelism > MaxCopyParallelism {
		return fmt.Errorf("config: copy parallelism %d: want 1 to %d (0 for 1)", c.CopyParallelism, MaxCopyParallelism)
	}
	if c.CopyMaxRowsPerSecond < 0 {
		return fmt.Errorf("config: copy max rows per second %d: want a positive number, 0 for no limit", c.CopyMaxRowsPerSecond)
	}
	if c.CopyMaxReplicationLag < 0 {
		return fmt.Errorf("config: copy max replication lag %s: want a positive duration, 0 for no bound", c.CopyMaxReplicationLag)
	}
	if c.MaxBatchBytes <= 0 {
		c.MaxBatchBytes = 256 << 10
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Engine starts streams against one server.
type Engine struct {
	cfg       Config
	drain     chan struct{}
	drainOnce sync.Once
	// desc caches Describe: a server's flavor does not change, and its version only with a
	// restart that the cache may miss without harm (it only labels output).
	desc atomic.Pointer[Description]
	// src is where streams read from; nil is the configured server.
	src binlogSource
	// hist is the schema history of Config.SchemaHistoryDir; streams use it while
	// histRunning (RunSchemaHistory runs). histRestarts counts the tracker's restarts.
	hist         *history.History
	histRunning  atomic.Bool
	histRestarts atomic.Uint64
	// histLive is set while the tracker reads the binlog (not between a failure and its
	// restart).
	histLive atomic.Bool
	// places: whether dumps at the server's head may start by file and offset.
	places headPlaces
	// readers are the shared binlog readers of the server.
	readers *fanout.Pool
	// conns are idle SQL connections for short uses (inspect, table definitions); the copy
	// and the row reads keep connections of their own.
	conns *sqlpool.Pool
	// inspections shares the reading of the server among streams starting together.
	inspections *coalesce.Runner[*serverFacts]
	// heads caches the position at the head of each binlog file, which never changes, for
	// Binlogs.
	heads struct {
		mu     sync.Mutex
		byFile map[string]position.Position
	}
}

// The engine's pool of SQL connections (see sqlpool.Config): a few idle connections, closed
// after a while without use, serve the streams' short uses, and a burst of starts shares
// about as many as it needs at once.
const (
	poolMaxIdle     = 4
	poolIdleTimeout = 30 * time.Second
	poolBusy        = 4
	poolWait        = time.Second
	poolPingAfter   = time.Second
)

// NewEngine validates cfg and returns an engine. It does not connect. With a
// SchemaHistoryDir it opens the history there, failing when another process holds it;
// RunSchemaHistory closes it.
func NewEngine(cfg Config) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	e := &Engine{cfg: cfg, drain: make(chan struct{})}
	e.conns = sqlpool.New(sqlpool.Config{Dial: e.connect, MaxIdle: poolMaxIdle, IdleTimeout: poolIdleTimeout,
		Busy: poolBusy, Wait: poolWait, PingAfter: poolPingAfter})
	e.inspections = coalesce.New(e.inspectRun)
	e.readers = fanout.NewPool(fanout.Config{
		NewMarker: func() fanout.Marker { return &txnMarks{} },
		Logger:    cfg.Logger.With("component", "binlog"),
	})
	if cfg.SchemaHistoryDir != "" {
		h, err := history.Open(cfg.SchemaHistoryDir)
		if err != nil {
			return nil, err
		}
		e.hist = h
	}
	return e, nil
}

// Drain makes every stream end at its next transaction boundary with ErrShuttingDown, and
// new streams fail with it. It closes the idle SQL connections; streams still ending use
// connections of their own from then on.
func (e *Engine) Drain() {
	e.drainOnce.Do(func() {
		close(e.drain)
		e.conns.Close()
	})
}

// BinlogReaders counts the binlog connections the shared readers hold now, by kind
// (ReaderShared, ReaderCatchUp); streams with a connection of their own are not counted.
func (e *Engine) BinlogReaders() map[string]int {
	out := map[string]int{}
	for k, n := range e.readers.Readers() {
		out[string(k)] = n
	}
	return out
}

// Config returns the engine's configuration with defaults filled in.
func (e *Engine) Config() Config { return e.cfg }

// Request is what one stream asks for.
type Request struct {
	// Keyspace names the database to stream (see Engine.Database); empty is the configured one.
	Keyspace string
	// Keyspaces, when set, replaces Keyspace, Position and TableLastPKs: the stream serves
	// every keyspace named (databases of the server, in one binlog), each with the filter's
	// rules applied to its tables and its own copy state. Every keyspace starts at the same
	// position. Events carry the keyspace of their table (a transaction's BEGIN, GTID,
	// COMMIT and VGTID that of its first change), and every VGTID names every keyspace.
	Keyspaces []KeyspaceStart
	// Position is "current", a flavor-prefixed GTID position, or empty: copy the tables the
	// filter selects, then stream from where the copy ended.
	Position string
	// Filter selects tables; nil streams every table of the database.
	Filter *binlogdata.Filter
	// ColumnMasks replace the values of the columns they name, after Config.ColumnMasks.
	ColumnMasks []filter.Mask
	// HeartbeatInterval sends a HEARTBEAT after this much idle time; zero disables.
	HeartbeatInterval time.Duration
	// MaxBatchBytes overrides the engine's batch size bound when positive.
	MaxBatchBytes int
	// TableLastPKs is the copy state of a VGtid the client saved during a table copy.
	TableLastPKs []*binlogdata.TableLastPK
	// TablesToCopy restricts the copy; with a position and no TableLastPKs it copies these
	// tables while the others stream on.
	TablesToCopy []string
	// CopyTablesWithoutKey copies tables without a usable key in one consistent read.
	CopyTablesWithoutKey bool
	// CopyChunkRows is the number of rows per copy chunk; zero means DefaultCopyChunkRows.
	CopyChunkRows int
	// CopyParallelism is how many chunks the copy reads at once (of several tables, or the
	// next chunks of one), each on a connection of its own (copyparallel.go), 1 to
	// MaxCopyParallelism; zero means Config.CopyParallelism.
	// A Vitess-shaped copy (VitessCopy) reads one table at a time whatever it says.
	CopyParallelism int
	// CopyMaxRowsPerSecond bounds the rows the copy reads per second, all its tables
	// together; zero means Config.CopyMaxRowsPerSecond (0 there: no bound).
	CopyMaxRowsPerSecond int64
	// CopyMaxReplicationLag holds each chunk while the server, a replica, lags behind its
	// source by more (see waitForLag); zero means Config.CopyMaxReplicationLag (0: none).
	CopyMaxReplicationLag time.Duration
	// Observer, when set, hears of the stream's progress.
	Observer Observer
	// FailureMode is what an event or row that cannot be decoded or encoded does: FailStop
	// (or empty) ends the stream with ErrPoison, FailWarn and FailSkip skip it.
	FailureMode string
	// WithSource stamps every event with its binlog provenance (VEvent.source and
	// RowChange.row_index), which output formats other than VEvents need.
	WithSource bool
	// EventTypes, when not empty, are the only types of binlog events sent (Vitess's
	// VStreamOptions.event_types). A batch still ends where it would have: a COMMIT, DDL,
	// OTHER or HEARTBEAT left out sends what came before it. VGTID is always sent (it is the
	// position), and so are the events of a table copy, as in Vitess.
	EventTypes []binlogdata.VEventType
	// PacketSize, when positive, batches as Vitess's vstream-packet-size does instead of by
	// MaxBatchBytes: a binlog ROW event that would take the batch's row values past it starts
	// a new batch (one larger event goes alone), and a copy sends its rows once their values
	// reach it.
	PacketSize int
	// VitessCopy shapes the copy as Vitess's tablets send it, for the Vitess-compatible
	// services (see copyVitess in copy.go): one ROW event per row, every packet of rows its
	// own transaction closed by LASTPK, a table's completion in a transaction of its own, the
	// snapshot's GTID after a table's FIELD, one COPY_COMPLETED, copy state in VGTIDs without
	// the completed flag, tables without a key copied by all their columns, and
	// tables_to_copy ignored when a position is given without table_p_ks. A copy packet
	// closes at PacketSize when set, else at MaxBatchBytes when set, else at VitessPacketSize.
	VitessCopy bool
	// SendRetainsNothing promises that send keeps no reference to a batch's events once it
	// returns (it marshals them and is done), so the stream builds later events in the
	// memory of those sent instead of allocating it anew: the copy a batch's rows (and a
	// Vitess-shaped packet's ROW events), the binlog its ROW events. Fresh memory for every
	// batch was a third of a copy's CPU, in allocation, clearing and garbage collection.
	SendRetainsNothing bool
	// SkipEmptyTransactions sends nothing for a transaction whose changes the filter leaves
	// out all of (Vitess sends BEGIN, GTID, COMMIT and VGTID for it). Its position is carried
	// by the next VGTID sent: the next sent transaction's, one sent with the next heartbeat,
	// or one sent alone once a second while the stream sends nothing else. Every VGTID stays
	// a resume point. DDL, OTHER and the table copy are unchanged.
	SkipEmptyTransactions bool
}

// VitessPacketSize is Vitess's default vstream-packet-size: a copy packet closes once its
// rows' values reach this many bytes.
const VitessPacketSize = 250000

// Observer hears of a stream's progress, for metrics. Its methods are called on the stream's
// goroutine and must return quickly.
type Observer interface {
	// Position reports the stream's position after a transaction, and the binlog time of
	// that transaction.
	Position(pos string, binlogTime time.Time)
	// CopyProgress reports rows read so far of a table being copied, and the server's estimate
	// of the table's rows.
	CopyProgress(table string, copied, estimated int64)
}

// SendFunc receives one batch. It must not keep the slice after it returns (the events
// themselves may be kept). Returning an error ends the stream with that error (io.EOF: a
// clean stop). Calls never overlap: heartbeats sent while the stream waits on a long read
// take the same lock as every other send.
//
// The batch contract, which the server's rewrites and encoders rely on:
//
//   - Events come in stream order; a batch never holds part of an event, and the events of a
//     batch are stamped with keyspace, shard and current_time.
//   - A position (VGTID) is sent only where the client may resume: after a transaction's
//     COMMIT, after a DDL or OTHER (each `GTID, DDL|OTHER, VGTID`), after a copy chunk's or
//     packet's LASTPK, and at the start of a stream from "current" (`GTID, OTHER, VGTID`).
//   - A binlog transaction is `BEGIN, [FIELD], ROW|INSERT|UPDATE|DELETE|REPLACE..., GTID,
//     COMMIT, VGTID`. A batch ends at a unit's end when no more events wait, or inside a
//     transaction when it reaches MaxBatchBytes (or, with PacketSize, when the next ROW would
//     take its row values past it): the rest of the transaction follows in the next batches,
//     and a stream that ends before its COMMIT leaves it incomplete for the client to drop.
//   - A HEARTBEAT ends its batch.
//   - The native copy sends, per chunk, `BEGIN, [FIELD], ROW..., LASTPK, COMMIT, VGTID`; the
//     last chunk's LASTPK is completed and is followed by COPY_COMPLETED for the table, and
//     the last table's by a final COPY_COMPLETED with no keyspace or shard. Binlog events of
//     the catch-up between chunks are ordinary transactions.
//   - With Request.VitessCopy the copy has Vitess's shape instead (see Request.VitessCopy):
//     a table starts with `BEGIN, FIELD` and, the first time, `GTID, VGTID`; each packet of
//     rows, and a table's completion, ends with `LASTPK, VGTID, COMMIT`; one COPY_COMPLETED
//     ends the copy. Each GTID and LASTPK is followed in its batch by the VGTID that stands
//     for it, which the server moves into vtgate's place or drops for the tablet API.
//   - With Request.EventTypes, left-out events still end their batch where they would have.
type SendFunc func(events []*binlogdata.VEvent) error

// connect opens a SQL connection to the server.
func (e *Engine) connect(ctx context.Context) (*client.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.DialTimeout)
	defer cancel()
	var opts []client.Option
	if e.cfg.TLS != nil {
		tlsCfg := e.cfg.TLS
		opts = append(opts, func(c *client.Conn) error { c.SetTLSConfig(tlsCfg); return nil })
	}
	conn, err := client.ConnectWithContext(ctx, e.cfg.Addr, e.cfg.User, e.cfg.Password, "", e.cfg.DialTimeout, opts...)
	if err != nil {
		var me *mysql.MyError
		if errors.As(err, &me) && (me.Code == mysql.ER_ACCESS_DENIED_ERROR || me.Code == mysql.ER_DBACCESS_DENIED_ERROR) {
			return nil, fmt.Errorf("connect to %s: %w", e.cfg.Addr, err)
		}
		return nil, fmt.Errorf("%w: connect to %s: %v", ErrUnavailable, e.cfg.Addr, err)
	}
	// Results in utf8mb4 whatever the server's default: column display lengths in result-set
	// metadata (FIELD's column_length) are counted in the result character set, and Vitess
	// reads them on a utf8mb4 connection.
	if _, err := conn.Execute("SET time_zone = '+00:00', character_set_results = utf8mb4"); err != nil {
		_ = conn.Close() // thrown away unused; the error below is what matters
		return nil, fmt.Errorf("%w: set time zone and result character set: %v", ErrUnavailable, err)
	}
	return conn, nil
}

// serverInfo is what a stream needs to know about the server before it starts.
type serverInfo struct {
	flavor  position.Flavor
	current position.Position
	// purged is the set of transactions no longer in the server's binlogs; under file
	// positions, the start of the oldest binlog file.
	purged position.Position
	// files are the server's binlog files, oldest first, read under file positions only.
	files []binlogFile
	// head is where current ends in the server's binlog, when the server told it (see
	// headplace.go); nil otherwise, and under file positions.
	head *headPlace
	// hostPort split for the replication connection.
	host string
	port uint16
}

// serverFacts is what one inspection of the server read, before any stream judged it:
// streams that start together share it (see Engine.inspect), and each judges it with its
// own options.
type serverFacts struct {
	flavor position.Flavor
	// vars are the server's binlog settings (name -> global value), as readSettings reads them.
	vars map[string]string
	// info holds the positions; posErr is the error reading them, which a stream meets only
	// when the settings pass it (as it would reading them itself).
	info   serverInfo
	posErr error
}

// inspectRun reads the server's flavor, binlog settings and positions on a pooled connection.
// Engine.inspect shares its runs among streams starting together.
func (e *Engine) inspectRun(ctx context.Context) (*serverFacts, error) {
	f := &serverFacts{}
	err := e.withConn(ctx, func(conn *client.Conn) error {
		host, portStr, _ := net.SplitHostPort(e.cfg.Addr)
		port, err := strconv.ParseUint(portStr, 10, 16)
		if err != nil {
			return fmt.Errorf("mysql port %q: %w", portStr, err)
		}
		f.info.host, f.info.port = host, uint16(port)
		flavor := e.cfg.Flavor
		if flavor == "" {
			v, qerr := queryString(conn, "SELECT VERSION()")
			if qerr != nil {
				return qerr
			}
			flavor = "mysql"
			if strings.Contains(strings.ToLower(v), "mariadb") {
				flavor = "mariadb"
			}
		}
		if f.flavor, err = position.FlavorFromGoMySQL(flavor); err != nil {
			return err
		}
		f.info.flavor = f.flavor
		if f.vars, err = readSettings(conn); err != nil {
			return err
		}
		if settingsProblem(f.flavor, f.vars, true) != nil {
			// No stream starts under these settings, whatever its options: the positions
			// would go unread.
			return nil
		}
		f.posErr = e.inspectPositions(conn, &f.info)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return f, nil
}

// inspectPositions reads the server's current and purged positions (and, under file
// positions, its binlog files) into info.
func (e *Engine) inspectPositions(conn *client.Conn, info *serverInfo) error {
	if e.filePos() {
		return inspectFilePos(conn, info)
	}
	var err error
	if info.current, info.head, err = e.readHead(conn, info.flavor); err != nil {
		return err
	}
	if info.flavor == position.MariaDB {
		info.purged, err = mariadbPurged(conn)
		return err
	}
	purged, err := queryString(conn, "SELECT @@GLOBAL.gtid_purged")
	if err != nil {
		return err
	}
	if info.purged, err = position.ParseBody(info.flavor, purged); err != nil {
		return fmt.Errorf("server purged set %q: %w", purged, err)
	}
	return nil
}

// judge checks the facts for one stream (bestEffort: its field_event_mode is BEST_EFFORT) and
// returns its own copy of the server's positions, which the stream may change.
func (f *serverFacts) judge(bestEffort bool) (*serverInfo, error) {
	if err := settingsProblem(f.flavor, f.vars, bestEffort); err != nil {
		return nil, err
	}
	if f.posErr != nil {
		return nil, f.posErr
	}
	info := f.info
	info.current, info.purged = f.info.current.Clone(), f.info.purged.Clone()
	info.files = slices.Clone(f.info.files)
	return &info, nil
}

// inspect reads the server's flavor and positions and checks its binlog settings. It runs
// at the start of every stream, so also on every reconnect of a client: settings changed
// since the last stream are seen then. Streams that start together share a reading of the
// server, but never one that began before they asked (coalesce.Runner): a burst of starts
// costs two or three readings, not one each.
func (e *Engine) inspect(ctx context.Context, bestEffort bool) (*serverInfo, error) {
	f, err := e.inspections.Do(ctx)
	if err != nil {
		return nil, err
	}
	return f.judge(bestEffort)
}

// withConn runs f on one of the engine's pooled SQL connections (see sqlpool), which it
// gives back afterwards, or closes when f failed: the connection may be broken or in an
// unknown state then. f must not lease another connection (a burst of nested leases would
// wait on each other).
func (e *Engine) withConn(ctx context.Context, f func(*client.Conn) error) (err error) {
	conn, err := e.conns.Get(ctx)
	if err != nil {
		return err
	}
	put := false
	defer func() {
		if !put {
			// f panicked: the connection is in an unknown state.
			e.conns.Put(conn, errors.New("panicked"))
		}
	}()
	err = f(conn)
	put = true
	e.conns.Put(conn, err)
	return err
}

// mariadbPurged reads the GTID list at the start of the oldest binlog: every transaction up
// to it is gone from the server's binlogs.
func mariadbPurged(conn *client.Conn) (position.Position, error) {
	files, err := listBinlogs(conn)
	if err != nil || len(files) == 0 {
		return position.Position{Flavor: position.MariaDB}, err
	}
	return binlogHead(conn, position.MariaDB, files[0].name)
}

func queryString(conn *client.Conn, q string) (string, error) {
	r, err := conn.Execute(q)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %v", ErrUnavailable, q, err)
	}
	defer r.Close()
	if r.RowNumber() == 0 {
		return "", nil
	}
	s, err := r.GetString(0, 0)
	if err != nil {
		return "", fmt.Errorf("%s: %w", q, err)
	}
	return strings.Clone(s), nil
}

// resultString reads a cell as a string the caller may keep: go-mysql's strings alias the
// result's buffer, which goes back to a pool when the result is closed.
func resultString(r *mysql.Result, row, col int) string {
	s, _ := r.GetString(row, col)
	return strings.Clone(s)
}

func resultStringByName(r *mysql.Result, row int, name string) string {
	s, _ := r.GetStringByName(row, name)
	return strings.Clone(s)
}

// resolve turns the requested position into the one to stream from and checks the server
// still has everything after it.
func resolve(req string, info *serverInfo) (start position.Position, current bool, err error) {
	switch strings.TrimSpace(req) {
	case CurrentPosition:
		return info.current.Clone(), true, nil
	}
	start, err = position.Parse(req)
	if err != nil {
		return start, false, err
	}
	if info.current.Flavor == position.FilePos {
		return start, false, resolveFilePos(start, info)
	}
	if start.Flavor == position.FilePos {
		return start, false, fmt.Errorf("%w: position %s is a file position, and this server streams GTID positions: give a %s/ position this server sent or \"current\", or run vstreamd with --positions filepos",
			ErrFlavor, start, info.flavor)
	}
	if start.Flavor != info.flavor {
		return start, false, fmt.Errorf("%w: position is %s but the server is %s", ErrFlavor, start.Flavor, info.flavor)
	}
	if ahead := position.Ahead(start, info.current); ahead != "" {
		return start, false, fmt.Errorf("%w: requested source position: %s, current target vrep position: %s: the position has transactions the server has not executed (%s)",
			ErrAhead, start, info.current, ahead)
	}
	if missing := position.Missing(start, info.purged); missing != "" {
		return start, false, fmt.Errorf("%w: the server no longer has the binlogs for position %s: %s (errno 1236); start from \"current\" or a newer position",
			ErrPurged, start, missing)
	}
	return start, false, nil
}

// randomServerID picks a replica server id unlikely to collide with real replicas or other
// streams: the server drops an older connection that reuses an id.
func randomServerID() uint32 {
	return 1<<30 + rand.Uint32N(1<<30)
}

// Ping checks that the database answers.
func (e *Engine) Ping(ctx context.Context) error {
	conn, err := e.connect(ctx)
	if err != nil {
		return err
	}
	return conn.Close()
}

// Description says what the source server is.
type Description struct {
	// Flavor is "mysql" or "mariadb".
	Flavor string
	// Version is the server's VERSION(), e.g. "11.8.3-MariaDB-log".
	Version string
	// TimeZone is the server's time_zone, with SYSTEM replaced by system_time_zone: a zone
	// name ("Europe/Moscow", "UTC", or an abbreviation such as "CET") or an offset ("+03:00").
	TimeZone string
	// UTCOffset is the server's current offset from UTC in seconds, for zone names that
	// only the server knows.
	UTCOffset int
	// Collations maps the server's collation ids to their character sets' names.
	Collations map[uint32]string
}

// Describe says what the server is, asking it the first time.
func (e *Engine) Describe(ctx context.Context) (Description, error) {
	if d := e.desc.Load(); d != nil {
		return *d, nil
	}
	var d Description
	err := e.withConn(ctx, func(conn *client.Conn) error {
		var err error
		d, err = describe(conn, e.cfg.Flavor)
		return err
	})
	if err != nil {
		return Description{}, err
	}
	e.desc.Store(&d)
	return d, nil
}

// describe asks the server what it is; flavor is the configured one, if any.
func describe(conn *client.Conn, flavor string) (Description, error) {
	r, err := conn.Execute("SELECT VERSION(), @@GLOBAL.time_zone, @@GLOBAL.system_time_zone, TIMESTAMPDIFF(SECOND, UTC_TIMESTAMP(), NOW())")
	if err != nil {
		return Description{}, fmt.Errorf("%w: describe the server: %v", ErrUnavailable, err)
	}
	defer r.Close()
	v := resultString(r, 0, 0)
	d := Description{Flavor: flavor, Version: v, TimeZone: resultString(r, 0, 1)}
	if strings.EqualFold(d.TimeZone, "SYSTEM") {
		d.TimeZone = resultString(r, 0, 2)
	}
	off, _ := r.GetInt(0, 3)
	d.UTCOffset = int(off)
	if d.Flavor == "" {
		d.Flavor = "mysql"
		if strings.Contains(strings.ToLower(v), "mariadb") {
			d.Flavor = "mariadb"
		}
	}
	if d.Collations, err = collations(conn); err != nil {
		return Description{}, err
	}
	return d, nil
}

// collations maps the server's collation ids to their character sets' names.
func collations(conn *client.Conn) (map[uint32]string, error) {
	all, err := schema.Collations(conn)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	m := make(map[uint32]string, len(all))
	for id, c := range all {
		m[id] = c.Charset
	}
	return m, nil
}

// compileFilter compiles a request's filter on database db, with the engine's VSchema when
// db is the configured database (the VSchema is its keyspace's).
func (e *Engine) compileFilter(f *binlogdata.Filter, db string, masks []filter.Mask) (*filter.Filter, error) {
	flt, err := filter.New(f)
	if err != nil {
		return nil, err
	}
	if all := append(slices.Clip(e.cfg.ColumnMasks), masks...); len(all) > 0 {
		if flt, err = flt.WithMasks(all); err != nil {
			return nil, err
		}
	}
	if db != e.cfg.Database {
		return flt, nil
	}
	return flt.WithVSchema(e.cfg.VSchema), nil
}

// sqlUse runs f on a SQL connection leased for that use (see Engine.withConn).
type sqlUse func(f func(*client.Conn) error) error

// sqlUse returns the uses of pooled connections of a stream or read of context ctx. They are
// not cut short when ctx ends: a stream whose client leaves ends at its next event as it
// always did, and not with a failed schema read that would count as a database error. A use
// waits for a connection at most DialTimeout, or the pool's Wait.
func (e *Engine) sqlUse(ctx context.Context) sqlUse {
	ctx = context.WithoutCancel(ctx)
	return func(f func(*client.Conn) error) error { return e.withConn(ctx, f) }
}

// lazyConn leases a pooled connection at its first use and keeps it until release: the
// queries of a stream's setup share one, and a setup that needs none leases none.
type lazyConn struct {
	e    *Engine
	ctx  context.Context
	conn *client.Conn
}

func (l *lazyConn) get() (*client.Conn, error) {
	if l.conn == nil {
		conn, err := l.e.conns.Get(l.ctx)
		if err != nil {
			return nil, err
		}
		l.conn = conn
	}
	return l.conn, nil
}

// release gives the connection back, if one was leased; err is the error the setup ended
// with, which closes it (see sqlpool.Pool.Put).
func (l *lazyConn) release(err error) {
	if l.conn != nil {
		l.e.conns.Put(l.conn, err)
		l.conn = nil
	}
}
