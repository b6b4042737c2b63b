package vstreamer

import (
	"fmt"
	"math"
	"strings"

	"github.com/go-mysql-org/go-mysql/client"

	"github.com/vstream-cdc/vstream/position"
)

// Positions says how streams name where they are.
const (
	// PositionsGTID streams by GTID: positions are MariaDB/ or MySQL56/ GTID sets.
	PositionsGTID = "gtid"
	// PositionsFilePos streams by binlog file and offset: positions are
	// FilePos/<file>:<offset>, as a Vitess tablet configured for file positions sends them.
	// The table copy and the reads whose position is a GTID are refused.
	PositionsFilePos = "filepos"
)

// filePos reports whether the engine streams by file position.
func (e *Engine) filePos() bool { return e.cfg.Positions == PositionsFilePos }

// errNeedsGTID refuses what cannot work under file positions, saying what to use instead.
func errNeedsGTID(what, instead string) error {
	return fmt.Errorf("%w: %s needs GTID positions, and this server streams file positions (vstreamd --positions filepos); %s, or run vstreamd with --positions gtid",
		ErrBadRequest, what, instead)
}

// errCopyFilePos is the refusal of a table copy under file positions.
var errCopyFilePos = errNeedsGTID("a table copy (an empty position, table_p_ks or tables_to_copy), whose snapshot is a GTID position,",
	`start from "current" or a FilePos/<file>:<offset> position`)

// binlogFile is one of the server's binlog files and its size.
type binlogFile struct {
	name string
	size uint64
}

// inspectFilePos reads the server's current place in its binlog and the binlog files it
// still has, and sets the positions of info from them.
func inspectFilePos(conn *client.Conn, info *serverInfo) error {
	file, pos, err := masterStatus(conn)
	if err != nil {
		return err
	}
	info.current = position.NewFilePos(file, pos)
	if info.files, err = listBinlogs(conn); err != nil {
		return err
	}
	oldest := file
	if len(info.files) > 0 {
		oldest = info.files[0].name
	}
	// Every event before the oldest file's first one is gone.
	info.purged = position.NewFilePos(oldest, 4)
	return nil
}

// masterStatus reads the server's current binlog file and offset. MySQL 8.4 renamed the
// statement; MariaDB and older MySQL know only the first name.
func masterStatus(conn *client.Conn) (string, uint64, error) {
	var firstErr error
	for _, q := range []string{"SHOW MASTER STATUS", "SHOW BINARY LOG STATUS"} {
		r, err := conn.Execute(q)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		defer r.Close()
		if r.RowNumber() == 0 {
			return "", 0, fmt.Errorf("%w: %s returned no row: the server does not write a binlog; enable log_bin", ErrServerConfig, q)
		}
		pos, err := r.GetUint(0, 1)
		if err != nil {
			return "", 0, fmt.Errorf("%s: %w", q, err)
		}
		return resultString(r, 0, 0), pos, nil
	}
	return "", 0, fmt.Errorf("%w: read the server's binlog position: %v", ErrUnavailable, firstErr)
}

// resolveFilePos checks a requested position under file positions: a FilePos position the
// server can start a binlog dump at. Its flavor, and that it is not ahead of the server
// (with Vitess's words) nor in a purged file, are checked as for GTIDs.
func resolveFilePos(start position.Position, info *serverInfo) error {
	file, pos, ok := start.FilePos()
	if !ok {
		return fmt.Errorf("%w: position %s is a GTID position, and this server streams file positions (vstreamd --positions filepos): give FilePos/<file>:<offset>, a position this server sent, or \"current\"",
			ErrFlavor, start)
	}
	if ahead := position.Ahead(start, info.current); ahead != "" {
		return fmt.Errorf("%w: requested source position: %s, current target vrep position: %s: %s",
			ErrAhead, start, info.current, ahead)
	}
	if missing := position.Missing(start, info.purged); missing != "" {
		return fmt.Errorf("%w: the server no longer has the binlogs for position %s: %s; start from \"current\" or a newer position",
			ErrPurged, start, missing)
	}
	if pos < 4 || pos > math.MaxUint32 {
		return fmt.Errorf("%w: position %s: offset %d is not in a binlog file: offsets run from 4 (after the file's magic number)",
			position.ErrBadPosition, start, pos)
	}
	curFile, _, _ := info.current.FilePos()
	for _, f := range info.files {
		if f.name != file {
			continue
		}
		// The current file grows; Ahead has checked the offset against its end.
		if pos > f.size && file != curFile {
			return fmt.Errorf("%w: position %s: offset %d is past the end of %s (%d bytes)", position.ErrBadPosition, start, pos, file, f.size)
		}
		return nil
	}
	names := make([]string, 0, len(info.files))
	for _, f := range info.files {
		names = append(names, f.name)
	}
	return fmt.Errorf("%w: position %s: the server has no binlog file %s; its files are %s",
		position.ErrBadPosition, start, file, strings.Join(names, ", "))
}

// snapshotFilePos refuses a snapshot read (the rows, tables and results reads) under file
// positions: it tells the client the snapshot's GTID position.
func (e *Engine) snapshotFilePos(what string) error {
	if !e.filePos() {
		return nil
	}
	return errNeedsGTID(what+", which reports its snapshot's GTID position,",
		`stream the changes with VStream from "current" or a FilePos position`)
}
