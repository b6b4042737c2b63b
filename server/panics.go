package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/vstreamer"
)

// A panic on one stream must end that stream only. The engine recovers its own goroutines
// (the binlog reader, the stream loop, the copy, heartbeats); this file covers the server's
// part: encoding an event into an output format, reading a stream's acks, and the handler
// goroutine itself (through the recovery interceptor).

// handlerPanic is the recovery interceptor's handler: a panic on a call's own goroutine.
func (s *Server) handlerPanic(ctx context.Context, p any) error {
	s.stats.panics.WithLabelValues(vstreamer.StageHandler).Inc()
	s.log.ErrorContext(ctx, "panic in handler; the call ends, the server goes on",
		slog.String("panic", fmt.Sprint(p)), slog.String("stack", string(debug.Stack())))
	return status.Errorf(codes.Internal, "%v: panic in handler: %v", vstreamer.ErrPanic, p)
}

// catchAcks recovers a panic of a stream's ack reader: it logs it and ends the stream with it.
func catchAcks(cancel context.CancelCauseFunc, log *slog.Logger) {
	p := recover()
	if p == nil {
		return
	}
	pe := &vstreamer.PanicError{Stage: vstreamer.StageAcks, Value: p, Stack: debug.Stack()}
	log.Error("stream panicked; it ends, the server and its other streams go on",
		slog.String("stage", pe.Stage), slog.String("panic", fmt.Sprint(p)), slog.String("stack", string(pe.Stack)))
	cancel(pe)
}

// causeOf is the error a stream ended with when the engine saw only its context cancelled:
// the panic that cancelled it, if any.
func causeOf(ctx context.Context, err error) error {
	if err != nil {
		return err
	}
	var pe *vstreamer.PanicError
	if cause := context.Cause(ctx); errors.As(cause, &pe) {
		return pe
	}
	return nil
}

// catchEncode turns a panic while encoding ev into the stream's error. The encoder's state is
// unknown after it, so every later send of the stream fails with the same error.
func (b *encodedBatch) catchEncode(err *error) {
	p := recover()
	if p == nil {
		return
	}
	b.failed = &vstreamer.PanicError{Stage: vstreamer.StageEncode, Table: eventTable(b.cur), Value: p, Stack: debug.Stack()}
	*err = b.failed
}

// encodeFailed handles an event the encoder refused: a poison event. It returns the error
// that ends the stream, or nil when the stream skips such events (the event's messages are
// then dropped).
func (b *encodedBatch) encodeFailed(ev *binlogdata.VEvent, cause error) error {
	po := &vstreamer.PoisonError{Table: eventTable(ev), Err: cause}
	if pos := gtidOf(b.last); pos != "" {
		po.Position = pos
	}
	if src := ev.GetSource(); src.GetFile() != "" {
		po.Binlog = fmt.Sprintf("%s:%d", src.GetFile(), src.GetEndPos())
	}
	if b.failMode == "" || b.failMode == vstreamer.FailStop {
		return po
	}
	level := slog.LevelWarn
	if b.failMode == vstreamer.FailSkip {
		level = slog.LevelDebug
	}
	if b.log != nil {
		b.log.Log(context.Background(), level, "skipped an event that cannot be encoded",
			slog.String("table", po.Table), slog.String("position", po.Position), slog.String("binlog", po.Binlog),
			slog.String("err", cause.Error()))
	}
	if b.skipped != nil {
		b.skipped.Skipped(po)
	}
	return nil
}

// eventTable is the table an event is about, or "".
func eventTable(ev *binlogdata.VEvent) string {
	switch {
	case ev == nil:
		return ""
	case ev.GetRowEvent() != nil:
		return ev.GetRowEvent().GetTableName()
	case ev.GetFieldEvent() != nil:
		return ev.GetFieldEvent().GetTableName()
	case ev.GetLastPKEvent() != nil:
		return ev.GetLastPKEvent().GetTableLastPK().GetTableName()
	}
	return ""
}

// Skipped counts a poison event the stream skipped.
func (s *streamStats) Skipped(po *vstreamer.PoisonError) {
	s.m.poison.WithLabelValues("skipped").Inc()
}

// failed counts what ended a stream: a panic (by stage) or a poison event.
func (m *metrics) failed(err error) {
	var pe *vstreamer.PanicError
	switch {
	case errors.As(err, &pe):
		m.panics.WithLabelValues(pe.Stage).Inc()
	case errors.Is(err, vstreamer.ErrPoison):
		m.poison.WithLabelValues("failed").Inc()
	}
}
