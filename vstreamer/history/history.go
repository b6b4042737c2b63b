// Package history keeps table definitions as of each binlog position, on disk, so that a
// stream resumed from an old position describes its rows as they were written, not as the
// table is now (the role of Debezium's schema history, Canal's table-meta store and Vitess's
// historian).
//
// A directory holds three files: "entries", an append-only JSON-lines log of table
// definitions, each stamped with the position (GTID set) from which it holds; "checkpoint",
// replaced atomically, the position up to which the log is complete; and "LOCK", which keeps
// a second process out. One writer (the engine's tracker) records definitions and advances
// the checkpoint; any number of streams look definitions up.
package history

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/vstream-cdc/vstream/position"
	"github.com/vstream-cdc/vstream/vstreamer/schema"
)

// File names inside a history directory.
const (
	EntriesFile    = "entries"
	CheckpointFile = "checkpoint"
	LockFile       = "LOCK"
)

var (
	// ErrLocked: another process holds the directory.
	ErrLocked = errors.New("schema history directory in use")
	// ErrClosed: the history was closed while a lookup waited, or before it.
	ErrClosed = errors.New("schema history closed")
)

// Entry is one line of the entries file: a table's definition from Position on, or its
// removal (Dropped).
type Entry struct {
	Position string              `json:"position"`
	Database string              `json:"database"`
	Table    string              `json:"table"`
	Columns  []schema.ColumnInfo `json:"columns,omitempty"`
	Dropped  bool                `json:"dropped,omitempty"`
}

type checkpointFile struct {
	Position string `json:"position"`
}

type version struct {
	pos  position.Position
	cols []schema.ColumnInfo
}

type tableKey struct{ db, table string }

// History is an open history directory. Its methods are safe for concurrent use.
type History struct {
	dir     string
	lock    *os.File
	entries *os.File

	mu       sync.Mutex
	tables   map[tableKey][]version
	complete position.Position // zero until the first Advance
	// advanced is closed and replaced whenever complete moves, for Lookup's waiters.
	advanced chan struct{}
	closed   bool
}

// Open opens (creating it if needed) the history in dir. It fails with ErrLocked when
// another process has it open. A last entry cut short by a crash is dropped.
func Open(dir string) (*History, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("schema history: %w", err)
	}
	lock, err := lockDir(filepath.Join(dir, LockFile))
	if err != nil {
		return nil, fmt.Errorf("schema history: %w", err)
	}
	h := &History{dir: dir, lock: lock, tables: map[tableKey][]version{}, advanced: make(chan struct{})}
	if err := h.load(); err != nil {
		_ = lock.Close() // releases the lock; the load error is what matters
		return nil, fmt.Errorf("schema history %s: %w", dir, err)
	}
	return h, nil
}

// load reads the checkpoint and the entries, and opens the entries file for appending.
func (h *History) load() error {
	data, err := os.ReadFile(filepath.Join(h.dir, CheckpointFile))
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return err
	default:
		var cp checkpointFile
		if err = json.Unmarshal(data, &cp); err != nil {
			return fmt.Errorf("%s: %w", CheckpointFile, err)
		}
		if h.complete, err = position.Parse(cp.Position); err != nil {
			return fmt.Errorf("%s: %w", CheckpointFile, err)
		}
	}
	f, err := os.OpenFile(filepath.Join(h.dir, EntriesFile), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	good, err := h.readEntries(f)
	if err == nil {
		// A crash while appending leaves a partial last line: cut it off, so that the next
		// entry starts on a line of its own.
		if err = f.Truncate(good); err == nil {
			_, err = f.Seek(good, io.SeekStart)
		}
	}
	if err != nil {
		_ = f.Close() // unusable; the error says why
		return err
	}
	h.entries = f
	return nil
}

// readEntries reads every whole line of f and returns the offset after the last good one.
// Only the last line may be bad (cut short); a bad line followed by more is corruption.
func (h *History) readEntries(f *os.File) (int64, error) {
	r := bufio.NewReader(f)
	var off int64
	for n := 1; ; n++ {
		line, err := r.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			// No newline: a line cut short (or nothing).
			return off, nil
		}
		if err != nil {
			return 0, err
		}
		var e Entry
		if jerr := json.Unmarshal(bytes.TrimSpace(line), &e); jerr != nil {
			if _, perr := r.Peek(1); errors.Is(perr, io.EOF) {
				return off, nil
			}
			return 0, fmt.Errorf("%s line %d: %w", EntriesFile, n, jerr)
		}
		if err := h.add(e); err != nil {
			return 0, fmt.Errorf("%s line %d: %w", EntriesFile, n, err)
		}
		off += int64(len(line))
	}
}

func (h *History) add(e Entry) error {
	pos, err := position.Parse(e.Position)
	if err != nil {
		return err
	}
	k := tableKey{e.Database, e.Table}
	cols := e.Columns
	if e.Dropped {
		cols = nil
	}
	h.tables[k] = append(h.tables[k], version{pos: pos, cols: cols})
	return nil
}

// Checkpoint is the position up to which the history is complete; ok is false before the
// first Advance (a new directory).
func (h *History) Checkpoint() (pos position.Position, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.complete.Clone(), !h.complete.IsZero()
}

// Record appends the definition of db.table from pos on; nil cols records that the table
// no longer exists. The entry is on disk (synced) when Record returns. Definitions of one
// table must be recorded in binlog order.
func (h *History) Record(pos position.Position, db, table string, cols []schema.ColumnInfo) error {
	e := Entry{Position: pos.String(), Database: db, Table: table, Columns: cols, Dropped: cols == nil}
	line, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("schema history: encode %s.%s: %w", db, table, err)
	}
	line = append(line, '\n')
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return ErrClosed
	}
	if _, err := h.entries.Write(line); err != nil {
		return fmt.Errorf("schema history: append: %w", err)
	}
	if err := h.entries.Sync(); err != nil {
		return fmt.Errorf("schema history: sync: %w", err)
	}
	k := tableKey{db, table}
	h.tables[k] = append(h.tables[k], version{pos: pos.Clone(), cols: cols})
	return nil
}

// Advance says the history is complete up to pos, waking the lookups waiting for it. With
// persist the checkpoint file is replaced too (a write and two syncs: the tracker does it
// after a DDL and now and then, not on every transaction).
func (h *History) Advance(pos position.Position, persist bool) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return ErrClosed
	}
	h.complete = pos.Clone()
	close(h.advanced)
	h.advanced = make(chan struct{})
	h.mu.Unlock()
	if !persist {
		return nil
	}
	return h.writeCheckpoint(pos)
}

// writeCheckpoint replaces the checkpoint file atomically: a crash leaves the old one or the
// new one, never a mix. Only the tracker calls it, so writes do not overlap.
func (h *History) writeCheckpoint(pos position.Position) error {
	data, err := json.Marshal(checkpointFile{Position: pos.String()})
	if err != nil {
		return err
	}
	tmp := filepath.Join(h.dir, CheckpointFile+".tmp")
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("schema history: checkpoint: %w", err)
	}
	_, werr := f.Write(append(data, '\n'))
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp, filepath.Join(h.dir, CheckpointFile))
	}
	if werr != nil {
		return fmt.Errorf("schema history: checkpoint: %w", werr)
	}
	// The rename is durable once the directory is synced.
	if d, err := os.Open(h.dir); err == nil {
		_ = d.Sync() // best effort: some file systems refuse to sync a directory
		_ = d.Close()
	}
	return nil
}

// Lookup returns the columns of db.table in force at pos: the last definition recorded at a
// position pos contains. It waits, until ctx ends, while the history is not yet complete up
// to pos. ok is false when the history knows no definition there: pos is older than the
// history, or the table did not exist. The columns are shared with other lookups: callers
// must not change them.
func (h *History) Lookup(ctx context.Context, db, table string, pos position.Position) (cols []schema.ColumnInfo, ok bool, err error) {
	for {
		h.mu.Lock()
		if h.closed {
			h.mu.Unlock()
			return nil, false, ErrClosed
		}
		if !h.complete.IsZero() && h.complete.Contains(pos) {
			cols, ok = h.find(db, table, pos)
			h.mu.Unlock()
			return cols, ok, nil
		}
		wait := h.advanced
		h.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, false, fmt.Errorf("schema history: waiting for it to reach %s: %w", pos, ctx.Err())
		}
	}
}

func (h *History) find(db, table string, pos position.Position) ([]schema.ColumnInfo, bool) {
	vs := h.tables[tableKey{db, table}]
	for i := len(vs) - 1; i >= 0; i-- {
		if pos.Contains(vs[i].pos) {
			return vs[i].cols, vs[i].cols != nil
		}
	}
	return nil, false
}

// Tables lists the tables of db that exist at the end of the history, for a tracker that
// must find which ones a DDL it cannot read removed.
func (h *History) Tables(db string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for k, vs := range h.tables {
		if k.db == db && len(vs) > 0 && vs[len(vs)-1].cols != nil {
			out = append(out, k.table)
		}
	}
	return out
}

// Close releases the directory; lookups waiting fail with ErrClosed.
func (h *History) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil
	}
	h.closed = true
	close(h.advanced)
	err := h.entries.Close()
	if lerr := h.lock.Close(); err == nil {
		err = lerr
	}
	return err
}
