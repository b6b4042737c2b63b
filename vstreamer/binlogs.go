package vstreamer

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-mysql-org/go-mysql/client"

	"github.com/vstream-cdc/vstream/position"
)

// BinlogFile is one of the server's binlog files.
type BinlogFile struct {
	Name string
	Size uint64
	// Head is the position at the file's start: the GTID set written before it (MariaDB's
	// Gtid_list event, MySQL's Previous_gtids event), or <file>:4 under file positions. A
	// stream whose position contains Head can resume from this file on.
	Head position.Position
}

// Binlogs is the server's binlog files, oldest first, as one reading found them.
type Binlogs struct {
	Files []BinlogFile
	// Expire is the server's binlog expiry (binlog_expire_logs_seconds, or expire_logs_days
	// where that is all there is): a closed file is purged about this long after it was
	// last written. Zero: files are not purged by age.
	Expire time.Duration
}

// Locate returns the index in Files of the oldest file a stream at pos still needs: the
// file a resume from pos starts reading, as the server itself picks it (the newest file
// whose head pos contains; under file positions the file pos names). ok is false when no
// file the server has will do: the position is purged (or of another server).
func (b *Binlogs) Locate(pos position.Position) (index int, ok bool) {
	if file, _, isFile := pos.FilePos(); isFile {
		for i, f := range b.Files {
			if f.Name == file {
				return i, true
			}
		}
		return 0, false
	}
	index = -1
	for i, f := range b.Files {
		if !pos.Contains(f.Head) {
			// Heads only grow from file to file: no later file will do either.
			break
		}
		index = i
	}
	return index, index >= 0
}

// Binlogs reads the server's binlog files and the position at the head of each. A file's
// head never changes, so each is read once (SHOW BINLOG EVENTS) and cached by name: a
// reading costs one SHOW BINARY LOGS plus one query per file new since the last one. It is
// for a periodic check (the server's purge alarm), not for a stream's start.
func (e *Engine) Binlogs(ctx context.Context) (*Binlogs, error) {
	d, err := e.Describe(ctx)
	if err != nil {
		return nil, err
	}
	flavor, err := position.FlavorFromGoMySQL(d.Flavor)
	if err != nil {
		return nil, err
	}
	out := &Binlogs{}
	err = e.withConn(ctx, func(conn *client.Conn) error {
		files, lerr := listBinlogs(conn)
		if lerr != nil {
			return lerr
		}
		var herr error
		if out.Expire, herr = binlogExpiry(conn); herr != nil {
			return herr
		}
		e.heads.mu.Lock()
		defer e.heads.mu.Unlock()
		if e.heads.byFile == nil {
			e.heads.byFile = map[string]position.Position{}
		}
		live := make(map[string]bool, len(files))
		for _, f := range files {
			live[f.name] = true
			head, cached := e.heads.byFile[f.name]
			if !cached {
				if e.filePos() {
					head = position.NewFilePos(f.name, 4)
				} else if head, herr = binlogHead(conn, flavor, f.name); herr != nil {
					return herr
				}
				e.heads.byFile[f.name] = head
			}
			out.Files = append(out.Files, BinlogFile{Name: f.name, Size: f.size, Head: head.Clone()})
		}
		// Purged files leave the cache, so that it holds no more than the server has.
		for name := range e.heads.byFile {
			if !live[name] {
				delete(e.heads.byFile, name)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the server's binlog files: %w", err)
	}
	return out, nil
}

// listBinlogs lists the server's binlog files, oldest first (SHOW BINARY LOGS).
func listBinlogs(conn *client.Conn) ([]binlogFile, error) {
	r, err := conn.Execute("SHOW BINARY LOGS")
	if err != nil {
		return nil, fmt.Errorf("%w: list binary logs: %v", ErrUnavailable, err)
	}
	defer r.Close()
	files := make([]binlogFile, 0, r.RowNumber())
	for i := 0; i < r.RowNumber(); i++ {
		size, _ := r.GetUint(i, 1)
		files = append(files, binlogFile{name: resultString(r, i, 0), size: size})
	}
	return files, nil
}

// headEvents names, per flavor, the event at the start of every binlog file that holds the
// GTID set written before the file.
var headEvents = map[position.Flavor]string{position.MariaDB: "Gtid_list", position.MySQL56: "Previous_gtids"}

// binlogHead reads the GTID set at the start of a binlog file: MariaDB's Gtid_list event
// ("[0-1-5,1-1-7]") or MySQL's Previous_gtids event ("uuid:1-5,\nuuid2:1-3"). A file without
// one (none is written before the first GTID) starts from the empty set.
func binlogHead(conn *client.Conn, flavor position.Flavor, file string) (position.Position, error) {
	empty := position.Position{Flavor: flavor}
	r, err := conn.Execute("SHOW BINLOG EVENTS IN '" + strings.ReplaceAll(file, "'", "''") + "' LIMIT 4")
	if err != nil {
		return empty, fmt.Errorf("%w: read %s: %v", ErrUnavailable, file, err)
	}
	defer r.Close()
	want := headEvents[flavor]
	for i := 0; i < r.RowNumber(); i++ {
		if resultStringByName(r, i, "Event_type") != want {
			continue
		}
		info := resultStringByName(r, i, "Info")
		body := strings.Trim(strings.TrimSpace(info), "[]")
		p, err := position.ParseBody(flavor, body)
		if err != nil {
			return empty, fmt.Errorf("%s of %s %q: %w", want, file, info, err)
		}
		return p, nil
	}
	return empty, nil
}

// binlogExpiry reads the server's binlog expiry. MySQL 8 and MariaDB 10.6 have
// binlog_expire_logs_seconds; older MariaDB only expire_logs_days, which the newer ones
// keep in step with it.
func binlogExpiry(conn *client.Conn) (time.Duration, error) {
	r, err := conn.Execute("SHOW GLOBAL VARIABLES WHERE Variable_name IN ('binlog_expire_logs_seconds', 'expire_logs_days')")
	if err != nil {
		return 0, fmt.Errorf("%w: read the binlog expiry: %v", ErrUnavailable, err)
	}
	defer r.Close()
	var seconds, days float64
	for i := range r.RowNumber() {
		v, perr := strconv.ParseFloat(resultString(r, i, 1), 64)
		if perr != nil {
			return 0, fmt.Errorf("binlog expiry %s = %q: %w", resultString(r, i, 0), resultString(r, i, 1), perr)
		}
		switch strings.ToLower(resultString(r, i, 0)) {
		case "binlog_expire_logs_seconds":
			seconds = v
		case "expire_logs_days":
			days = v
		}
	}
	if seconds > 0 {
		return time.Duration(seconds * float64(time.Second)), nil
	}
	return time.Duration(days * 24 * float64(time.Hour)), nil
}
