package vstreamer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/vstream-cdc/vstream/position"
)

// A binlog dump started at a GTID position makes the server read the binlog file that holds
// the position from its start up to it (MariaDB before 11.4 keeps no GTID index; MySQL skips
// the transactions it finds in the set one by one): at the head of a large binlog file that
// is tens of milliseconds of the server's CPU for every stream that starts there, as a copy
// does. A dump started by file and offset begins where it is told. So the inspection reads,
// where the server tells them consistently, the file and offset at which its current GTID
// position ends (headPlace), and a dump at exactly that position starts there instead.
//
// A file and offset belong to one server, read at one moment. The place is used only for a
// dump at the very position it was read with, opened soon after (headPlaceTTL), and the
// dump's first event, the rotate event the server makes up for the dump, must carry the
// server_id the inspection read: a dump that reaches another server (an address moved to a
// new primary in between) ends with an error, and dumps start by GTID from then on.

// headPlaceTTL bounds how long after its inspection a head place starts dumps: the streams
// that inspection served open theirs at once.
const headPlaceTTL = 10 * time.Second

// headPlace is where a GTID position ends in one server's binlog.
type headPlace struct {
	pos      position.Position
	file     string
	offset   uint32
	serverID uint32
	read     time.Time
}

// headPlaces is what the engine knows of its server's willingness to tell head places.
type headPlaces struct {
	// off: a dump started by a head place reached another server than the one that told
	// it; positions of this engine start by GTID from then on.
	off atomic.Bool
	// noLogStatus: MySQL's performance_schema.log_status is not readable by the engine's
	// user (it needs BACKUP_ADMIN); asked once.
	noLogStatus atomic.Bool
}

// readHead reads the server's current GTID position and, where the server tells one that
// matches it, the place in its binlog where the position ends.
func (e *Engine) readHead(conn *client.Conn, flavor position.Flavor) (position.Position, *headPlace, error) {
	if flavor == position.MariaDB {
		return readMariaDBHead(conn)
	}
	if !e.places.noLogStatus.Load() {
		cur, head, err := readMySQLHead(conn)
		if err == nil {
			return cur, head, nil
		}
		e.logStatusFailed(err)
	}
	cur, err := queryString(conn, "SELECT @@GLOBAL.gtid_executed")
	if err != nil {
		return position.Position{}, nil, err
	}
	p, err := position.ParseBody(flavor, cur)
	if err != nil {
		return position.Position{}, nil, fmt.Errorf("server position %q: %w", cur, err)
	}
	return p, nil, nil
}

// logStatusFailed hears why performance_schema.log_status could not be read.
func (e *Engine) logStatusFailed(err error) {
	var me *mysql.MyError
	if !errors.As(err, &me) {
		// A broken connection fails the reading that follows; a row this code cannot read
		// leaves the dump to start by GTID.
		e.cfg.Logger.Debug("performance_schema.log_status", "error", err.Error())
		return
	}
	// Most likely the privilege (ER_SPECIFIC_ACCESS_DENIED_ERROR), or a server before the
	// table (8.0.14): whatever the server refuses, it will refuse again.
	e.places.noLogStatus.Store(true)
	e.cfg.Logger.Info("binlog dumps at the server's head start by GTID: performance_schema.log_status is not readable (grant BACKUP_ADMIN to let them start by file and offset, sparing the server a scan of its binlog file per stream start)",
		"error", err.Error())
}

// readMariaDBHead reads gtid_binlog_pos on both sides of SHOW MASTER STATUS. MariaDB moves
// gtid_binlog_pos as it writes a transaction's GTID event, and writes a commit group's
// events under the binlog's lock, which SHOW MASTER STATUS takes to read the offset: when
// the two readings agree, no group was written between them, and the offset is the end of
// the transactions in the position. (Only a GTID written twice, which gtid_strict_mode
// forbids and a server never makes of its own, could hide a group between equal readings.)
func readMariaDBHead(conn *client.Conn) (position.Position, *headPlace, error) {
	r, err := conn.Execute("SELECT @@GLOBAL.gtid_binlog_pos, @@GLOBAL.server_id")
	if err != nil {
		return position.Position{}, nil, fmt.Errorf("%w: read the server's position: %v", ErrUnavailable, err)
	}
	before := resultString(r, 0, 0)
	serverID, idErr := r.GetUint(0, 1)
	r.Close()
	cur, err := position.ParseBody(position.MariaDB, before)
	if err != nil {
		return position.Position{}, nil, fmt.Errorf("server position %q: %w", before, err)
	}
	file, off, err := masterStatus(conn)
	if err != nil || idErr != nil || off > 1<<32-1 {
		// Without the place, a dump starts by GTID; a server without a binlog fails later
		// with the settings' error.
		return cur, nil, nil
	}
	after, err := queryString(conn, "SELECT @@GLOBAL.gtid_binlog_pos")
	if err != nil {
		return position.Position{}, nil, err
	}
	if after != before {
		if cur, err = position.ParseBody(position.MariaDB, after); err != nil {
			return position.Position{}, nil, fmt.Errorf("server position %q: %w", after, err)
		}
		return cur, nil, nil
	}
	return cur, &headPlace{pos: cur, file: file, offset: uint32(off), serverID: uint32(serverID), read: time.Now()}, nil
}

// readMySQLHead reads performance_schema.log_status, which MySQL fills while it holds
// commits: its binlog file, offset and gtid_executed agree.
func readMySQLHead(conn *client.Conn) (position.Position, *headPlace, error) {
	r, err := conn.Execute("SELECT LOCAL, @@GLOBAL.server_id FROM performance_schema.log_status")
	if err != nil {
		return position.Position{}, nil, err
	}
	defer r.Close()
	if r.RowNumber() == 0 {
		return position.Position{}, nil, errors.New("performance_schema.log_status returned no row")
	}
	raw, err := r.GetString(0, 0)
	if err != nil {
		return position.Position{}, nil, fmt.Errorf("performance_schema.log_status: %w", err)
	}
	serverID, err := r.GetUint(0, 1)
	if err != nil {
		return position.Position{}, nil, fmt.Errorf("server_id: %w", err)
	}
	var local struct {
		GTIDExecuted string `json:"gtid_executed"`
		File         string `json:"binary_log_file"`
		Offset       uint64 `json:"binary_log_position"`
	}
	if err = json.Unmarshal([]byte(raw), &local); err != nil {
		return position.Position{}, nil, fmt.Errorf("performance_schema.log_status LOCAL %q: %w", raw, err)
	}
	cur, err := position.ParseBody(position.MySQL56, local.GTIDExecuted)
	if err != nil {
		return position.Position{}, nil, fmt.Errorf("server position %q: %w", local.GTIDExecuted, err)
	}
	if local.File == "" || local.Offset < 4 || local.Offset > 1<<32-1 {
		// No binlog: the settings' check says so.
		return cur, nil, nil
	}
	return cur, &headPlace{pos: cur, file: local.File, offset: uint32(local.Offset), serverID: uint32(serverID), read: time.Now()}, nil
}

// dumpPlace returns the head place a dump at pos starts at, or nil: the dump starts by GTID.
func (e *Engine) dumpPlace(info *serverInfo, pos position.Position) *headPlace {
	h := info.head
	if h == nil || e.places.off.Load() || time.Since(h.read) > headPlaceTTL || !pos.Equal(h.pos) {
		return nil
	}
	return h
}

// wrongServer is the error of a dump started at a head place that another server serves,
// which turns head places off for the engine.
func (e *Engine) wrongServer(h *headPlace, got uint32) error {
	e.places.off.Store(true)
	return fmt.Errorf("%w: the binlog dump started at %s:%d, where server_id %d reported position %s to end, was served by server_id %d: the server's address reaches another server now; resume the stream (dumps start by GTID from now on)",
		ErrUnavailable, h.file, h.offset, h.serverID, h.pos, got)
}

// checkFirst checks that a dump's first event, the rotate event the server makes up, comes
// from the server that told the head place.
func (e *Engine) checkFirst(h *headPlace, ev *replication.BinlogEvent) error {
	if ev.Header.ServerID != h.serverID {
		return e.wrongServer(h, ev.Header.ServerID)
	}
	return nil
}

// placeChecked is a dump's reader whose first event checkFirst has to pass.
type placeChecked struct {
	binlogReader
	e       *Engine
	h       *headPlace
	checked bool
}

func (p *placeChecked) GetEvent(ctx context.Context) (*replication.BinlogEvent, error) {
	ev, err := p.binlogReader.GetEvent(ctx)
	if err != nil || p.checked {
		return ev, err
	}
	if err := p.e.checkFirst(p.h, ev); err != nil {
		return nil, err
	}
	p.checked = true
	return ev, nil
}

// placeCheckedHandler is the same check for a dump that pushes its events.
type placeCheckedHandler struct {
	next    replication.EventHandler
	e       *Engine
	h       *headPlace
	checked bool
}

func (p *placeCheckedHandler) HandleEvent(ev *replication.BinlogEvent) error {
	if !p.checked {
		if err := p.e.checkFirst(p.h, ev); err != nil {
			return err
		}
		p.checked = true
	}
	return p.next.HandleEvent(ev)
}

// logDumpStart says where a dump starts, for the debug log.
func logDumpStart(log *slog.Logger, pos position.Position, h *headPlace) {
	if h == nil || log == nil {
		return
	}
	log.Debug("binlog dump starts at the server's head by file and offset", "position", pos.String(), "file", h.file, "offset", strconv.FormatUint(uint64(h.offset), 10))
}
