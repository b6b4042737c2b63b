package vstreamer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/vstream-cdc/vstream/internal/faults"
	"github.com/vstream-cdc/vstream/vstreamer/rowcodec"
)

// readPlace is what the binlog reader goroutine knows of where it is, to name an event
// go-mysql cannot decode: the stream goroutine's state is not its to read.
type readPlace struct {
	file string
	// pos is the end of the last event read in file (the start offset after a rotate).
	pos uint32
	// tables maps the table ids of the table maps read to their names; names, if set, names
	// those of the table maps the reader left out (fanout.Cursor).
	tables map[uint64]string
	names  tableNamer
	// failedIn, if set, names the file a reader failed in (fanout.Cursor): one that joined a
	// running dump may have been told no file.
	failedIn interface{ FailedIn() string }
}

// tableNamer names a table id the reader has seen a table map of.
type tableNamer interface {
	TableName(id uint64) (string, bool)
}

// saw notes what an event tells of the place: a new binlog file, a table id.
func (r *readPlace) saw(ev *replication.BinlogEvent) {
	if ev.Header.LogPos != 0 {
		r.pos = ev.Header.LogPos
	}
	switch e := ev.Event.(type) {
	case *replication.RotateEvent:
		r.file, r.pos = string(e.NextLogName), uint32(e.Position)
	case *replication.TableMapEvent:
		if r.tables == nil || len(r.tables) > 4096 {
			// Table ids grow with every table definition the server loads; only recent
			// ones matter.
			r.tables = make(map[uint64]string)
		}
		if name, ok := r.tables[e.TableID]; !ok || name != string(e.Table) {
			// Only a new name is copied: the same table map comes in every transaction.
			r.tables[e.TableID] = string(e.Table)
		}
	}
}

// undecodable turns go-mysql's failure to decode a binlog event into a PoisonError naming
// where the event starts and, for a rows event, its table. Other errors (the connection's,
// the server's) are returned as they are.
func (r *readPlace) undecodable(err error) error {
	var ee *replication.EventError
	if !errors.As(err, &ee) {
		return err
	}
	po := &PoisonError{Err: fmt.Errorf("binlog event cannot be decoded: %s", decodeMessage(ee.Err)),
		NoSkip: "the binlog reader cannot go past an event it cannot decode"}
	if h := ee.Header; h != nil {
		po.Row = h.EventType.String() + " event"
		file := r.file
		if file == "" && r.failedIn != nil {
			file = r.failedIn.FailedIn()
		}
		if file != "" {
			po.Binlog = fmt.Sprintf("%s:%d", file, h.LogPos-min(h.EventSize, h.LogPos))
		}
		// Every rows event starts with the 6-byte id of its table. go-mysql may hand out the
		// error before the table map that precedes it, and the table is then unknown.
		if isRowsEvent(h.EventType) && len(ee.Data) >= 6 {
			var id [8]byte
			copy(id[:], ee.Data[:6])
			tid := binary.LittleEndian.Uint64(id[:])
			po.Table = r.tables[tid]
			if po.Table == "" && r.names != nil {
				po.Table, _ = r.names.TableName(tid)
			}
		}
	}
	return po
}

func isRowsEvent(t replication.EventType) bool {
	switch t {
	case replication.WRITE_ROWS_EVENTv0, replication.UPDATE_ROWS_EVENTv0, replication.DELETE_ROWS_EVENTv0,
		replication.WRITE_ROWS_EVENTv1, replication.UPDATE_ROWS_EVENTv1, replication.DELETE_ROWS_EVENTv1,
		replication.WRITE_ROWS_EVENTv2, replication.UPDATE_ROWS_EVENTv2, replication.DELETE_ROWS_EVENTv2,
		replication.PARTIAL_UPDATE_ROWS_EVENT,
		replication.MARIADB_WRITE_ROWS_COMPRESSED_EVENT_V1, replication.MARIADB_UPDATE_ROWS_COMPRESSED_EVENT_V1,
		replication.MARIADB_DELETE_ROWS_COMPRESSED_EVENT_V1:
		return true
	default:
		// The other events carry no rows.
	}
	return false
}

// verifyRows has the binlog reader have go-mysql decode the rows rowcodec leaves raw as well,
// and streams check that both decodings render every value alike (the package's tests set it:
// each of them is then a differential test of rowcodec's decoder).
var verifyRows bool

// decodeRows decodes a rows event for the binlog reader (rowcodec.DecodeRows). Tests may
// spoil the bytes of a rows event of a table first, so that a genuine decoding failure takes
// its way through the live reader; without a hook at the stream's start, nothing is added.
func decodeRows() func(*replication.RowsEvent, []byte) error {
	decode := rowcodec.DecodeRows
	if verifyRows {
		decode = rowcodec.DecodeRowsVerified
	}
	if !faults.Enabled() {
		return decode
	}
	return func(e *replication.RowsEvent, data []byte) error {
		if err := decode(e, data); err != nil || e.Table == nil {
			return err
		}
		body := data
		faults.At(faults.Parse, string(e.Table.Table), &body)
		if len(body) == len(data) && (len(data) == 0 || &body[0] == &data[0]) {
			return nil // left as it was
		}
		e.Rows, e.SkippedColumns = nil, nil
		return decode(e, body)
	}
}

// decodeMessage keeps the cause of go-mysql's message and leaves out the dump of the event's
// bytes and its decoded state that follows: an event may be megabytes.
func decodeMessage(msg string) string {
	if i := strings.Index(msg, ", data "); i >= 0 {
		msg = msg[:i]
	}
	const limit = 300
	if len(msg) > limit {
		msg = msg[:limit] + "..."
	}
	return msg
}

// readFailure is the server's refusal to read the binlog, with the place the reader had
// reached. The stream goroutine may not have taken the events before it (it ends on the
// errgroup's cancel with events still queued), so its own place cannot tell whether the
// server failed at the requested start.
type readFailure struct {
	err  error
	file string
	pos  uint32
}

func (f *readFailure) Error() string { return f.err.Error() }
func (f *readFailure) Unwrap() error { return f.err }

// failed wraps a server error reading the binlog with the reader's place.
func (r *readPlace) failed(err error) error {
	var me *mysql.MyError
	if errors.As(err, &me) && me.Code == mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG {
		return &readFailure{err: err, file: r.file, pos: r.pos}
	}
	return err
}
