package vstreamer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/vstream-cdc/vstream/internal/faults"
	"github.com/vstream-cdc/vstream/vstreamer/rowcodec"
)

var (
	// ErrPanic: a bug was hit while serving one stream. That stream ended; the server and
	// its other streams go on.
	ErrPanic = errors.New("internal error")
	// ErrPoison: a binlog event or a copied row cannot be decoded or encoded. Starting again
	// from the same position meets it again, so the stream cannot pass it unless the request
	// asks to skip such events (FailureMode).
	ErrPoison = errors.New("event cannot be processed")
	// ErrBadOption: a request option has a value the engine does not know.
	ErrBadOption = errors.New("invalid option")
)

// Stages of a stream named by a PanicError.
const (
	StageRead      = "binlog reader"
	StageStream    = "stream"
	StageCopy      = "copy"
	StageHeartbeat = "heartbeat"
	StageEncode    = "encode"
	// StageAcks and StageHandler are the server's: a stream's ack reader, and the gRPC
	// handler's own goroutine.
	StageAcks    = "ack reader"
	StageHandler = "handler"
)

// PanicError is a panic recovered on one of a stream's goroutines: it ends that stream only.
type PanicError struct {
	// Stage is where it happened: one of the Stage constants.
	Stage string
	// Table is the table whose event or row was being handled, when known.
	Table string
	// Position is the stream's last committed position; Binlog the file:offset of the last
	// binlog event read.
	Position string
	Binlog   string
	// Value is what was passed to panic; Stack the goroutine's stack when it was recovered.
	Value any
	Stack []byte
}

func (e *PanicError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v: panic in %s", ErrPanic, e.Stage)
	if e.Table != "" {
		fmt.Fprintf(&b, " on table %s", e.Table)
	}
	writeWhere(&b, e.Position, e.Binlog)
	fmt.Fprintf(&b, ": %v", e.Value)
	return b.String()
}

func (e *PanicError) Unwrap() error { return ErrPanic }

// PoisonError names an event or row that cannot be decoded or encoded.
type PoisonError struct {
	Table string
	// Column is the column whose value failed, when known.
	Column string
	// Position is the stream's last committed position, Binlog the file:offset of the last
	// binlog event read (or of the event that failed); Row names the row or event: a copied
	// row's key, an undecodable binlog event's type.
	Position string
	Binlog   string
	Row      string
	Err      error
	// NoSkip, when set, says why the stream cannot go past the event even when asked to.
	NoSkip string
}

func (e *PoisonError) Error() string {
	var parts []string
	for _, p := range [][2]string{{"table ", e.Table}, {"column ", e.Column}, {"", e.Row}, {"after position ", e.Position}} {
		if p[1] != "" {
			parts = append(parts, p[0]+p[1])
		}
	}
	var b strings.Builder
	b.WriteString(ErrPoison.Error())
	if len(parts) > 0 {
		b.WriteString(": " + strings.Join(parts, ", "))
	}
	if e.Binlog != "" {
		fmt.Fprintf(&b, " (binlog %s)", e.Binlog)
	}
	fmt.Fprintf(&b, ": %v; starting again meets it again", e.Err)
	if e.NoSkip != "" {
		fmt.Fprintf(&b, ", and it cannot be skipped: %s", e.NoSkip)
	} else {
		fmt.Fprintf(&b, ": fix or remove the row, or start with %s %s or %s to skip it", FailureModeOption, FailWarn, FailSkip)
	}
	return b.String()
}

func (e *PoisonError) Unwrap() []error { return []error{ErrPoison, e.Err} }

func writeWhere(b *strings.Builder, pos, binlog string) {
	if pos != "" {
		fmt.Fprintf(b, " after position %s", pos)
	}
	if binlog != "" {
		fmt.Fprintf(b, " (binlog %s)", binlog)
	}
}

// FailureModeOption is the name of the request option that picks what a poison event does,
// after Debezium's event.processing.failure.handling.mode.
const FailureModeOption = "event_processing_failure_handling_mode"

// What a stream does with an event it cannot decode or encode (Request.FailureMode).
const (
	// FailStop ends the stream with ErrPoison (the default).
	FailStop = "fail"
	// FailWarn skips the event and logs it at warning level.
	FailWarn = "warn"
	// FailSkip skips the event and logs it at debug level.
	FailSkip = "skip"
)

// ParseFailureMode checks a failure mode; empty is FailStop.
func ParseFailureMode(s string) (string, error) {
	switch s {
	case "", FailStop:
		return FailStop, nil
	case FailWarn, FailSkip:
		return s, nil
	}
	return "", fmt.Errorf("%s %q: want %s, %s or %s", FailureModeOption, s, FailStop, FailWarn, FailSkip)
}

// PoisonObserver is an Observer that also hears of the poison events a stream skipped.
type PoisonObserver interface {
	Skipped(err *PoisonError)
}

// catch turns a panic on one of a stream's goroutines into *err, so that it ends the stream
// rather than the process. where, when set, fills in what the goroutine was doing.
func catch(err *error, stage string, where func(*PanicError)) {
	v := recover()
	if v == nil {
		return
	}
	pe := &PanicError{Stage: stage, Value: v, Stack: debug.Stack()}
	if where != nil {
		where(pe)
	}
	*err = pe
}

// where names what the stream goroutine was handling when it panicked.
func (s *stream) where(pe *PanicError) {
	if s.copying != nil {
		pe.Stage, pe.Table = StageCopy, s.copying.name
		return
	}
	pe.Table = eventTable(s.cursor.ev)
}

// eventTable is the table a binlog event is about, or "".
func eventTable(ev *replication.BinlogEvent) string {
	if ev == nil {
		return ""
	}
	switch e := ev.Event.(type) {
	case *replication.RowsEvent:
		if e.Table != nil {
			return string(e.Table.Table)
		}
	case *replication.TableMapEvent:
		return string(e.Table)
	}
	return ""
}

// readTable is the table of a rows event the stream selects, for the fault hook: streams of
// other tables read the same events and must not fail with it.
func (s *stream) readTable(ev *replication.BinlogEvent) string {
	if t := eventTable(ev); t != "" && s.filter.Table(t) != nil {
		return t
	}
	return ""
}

// settle names where a stream that failed was, once its goroutines have stopped, and logs a
// panic with its stack.
func (s *stream) settle(err error) {
	var pe *PanicError
	if errors.As(err, &pe) {
		if pe.Position == "" {
			pe.Position = s.cursor.pos.String()
		}
		if pe.Binlog == "" {
			pe.Binlog = s.cursor.binlogAt()
		}
		s.log.Error("stream panicked; it ends, the server and its other streams go on",
			slog.String("stage", pe.Stage), slog.String("table", pe.Table), slog.String("position", pe.Position),
			slog.String("binlog", pe.Binlog), slog.String("panic", fmt.Sprint(pe.Value)), slog.String("stack", string(pe.Stack)))
		return
	}
	var po *PoisonError
	if errors.As(err, &po) {
		s.locate(po)
	}
}

// locate fills in where a poison event sits.
func (s *stream) locate(po *PoisonError) {
	if po.Position == "" {
		po.Position = s.cursor.pos.String()
	}
	// A copied row is named by its key, not by where the binlog stream is.
	if po.Binlog == "" && po.Row == "" && s.copying == nil {
		po.Binlog = s.cursor.binlogAt()
	}
}

// poisoned decides what a poison event does: it returns err unchanged when err is not one or
// the stream fails on them, and nil once the event is skipped (logged and counted).
func (s *stream) poisoned(err error) error {
	var po *PoisonError
	if s.failMode == FailStop || s.failMode == "" || !errors.As(err, &po) {
		return err
	}
	s.locate(po)
	level := slog.LevelWarn
	if s.failMode == FailSkip {
		level = slog.LevelDebug
	}
	s.log.Log(context.Background(), level, "skipped an event that cannot be processed",
		slog.String("table", po.Table), slog.String("column", po.Column), slog.String("row", po.Row),
		slog.String("position", po.Position), slog.String("binlog", po.Binlog), slog.String("err", po.Err.Error()))
	if o, ok := s.observer.(PoisonObserver); ok {
		o.Skipped(po)
	}
	return nil
}

func (t *copyTable) tableName() string {
	if t == nil {
		return ""
	}
	return t.name
}

// rowsFaults calls the fault hook where a rows event of a selected table is decoded and
// filtered. The decode hook sees the rows' bytes when rowcodec left them raw (a spoiled copy
// replaces them for this stream only: the event is shared), else go-mysql's rows.
func rowsFaults(p *tablePlan, ct *copyTable, e *replication.RowsEvent, raw *rowcodec.Raw) *rowcodec.Raw {
	if raw != nil {
		data := raw.Data()
		faults.At(faults.Decode, p.name, &data)
		raw = raw.WithData(data)
	} else {
		faults.At(faults.Decode, p.name, e.Rows)
	}
	if !p.filter.Passthrough() || ct != nil {
		faults.At(faults.Filter, p.name, e.Rows)
	}
	return raw
}

// copyPoison handles a copied row of t whose column ci cannot be decoded. It returns the error
// that ends the stream, or nil once the row is skipped. To skip a row the copy must move past
// it, so its key is decoded alone; when even that fails, the stream ends.
func (s *stream) copyPoison(t *copyTable, cols, keyIdx []int, ci int, row []mysql.FieldValue, cause error) error {
	po := &PoisonError{Table: t.name, Column: t.cols[ci].Name, Err: cause}
	key, keyErr := copiedKey(t, cols, keyIdx, row)
	switch {
	case keyErr == nil && len(key) > 0:
		po.Row = "copied row with key " + keyText(key)
	case t.lastpk != nil:
		po.Row = "copied row after key " + keyText(t.lastpk)
	default:
		po.Row = "first copied row"
	}
	s.locate(po)
	if s.failMode == FailStop || s.failMode == "" {
		return po
	}
	if keyErr != nil {
		po.Err = fmt.Errorf("%w; the row cannot be skipped: its key does not decode either: %v", cause, keyErr)
		return po
	}
	if err := s.poisoned(po); err != nil {
		return err
	}
	t.setLastPK(key)
	return nil
}

// copiedKey decodes the key columns of a copied row.
func copiedKey(t *copyTable, cols, keyIdx []int, row []mysql.FieldValue) ([][]byte, error) {
	key := make([][]byte, 0, len(keyIdx))
	for _, ki := range keyIdx {
		j := slices.Index(cols, ki)
		if j < 0 || j >= len(row) {
			return nil, fmt.Errorf("key column %d is not in the chunk's select", ki)
		}
		v, _, err := t.cols[ki].AppendCopied(nil, &row[j])
		if err != nil {
			return nil, err
		}
		key = append(key, v)
	}
	return key, nil
}

func keyText(key [][]byte) string {
	parts := make([]string, len(key))
	for i, k := range key {
		parts[i] = strconv.Quote(string(k))
	}
	return "(" + strings.Join(parts, ", ") + ")"
}
