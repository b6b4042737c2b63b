package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/vstream-cdc/vstream/filter"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/position"
	"github.com/vstream-cdc/vstream/vstreamer"
)

func TestToStatus(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("stream at X: %w", err) }
	cases := []struct {
		err  error
		code codes.Code
	}{
		{nil, codes.OK},
		{io.EOF, codes.OK},
		{wrap(position.ErrBadPosition), codes.InvalidArgument},
		{wrap(filter.ErrInvalid), codes.InvalidArgument},
		{wrap(vstreamer.ErrAhead), codes.InvalidArgument},
		{wrap(vstreamer.ErrFlavor), codes.InvalidArgument},
		{wrap(vstreamer.ErrPurged), codes.FailedPrecondition},
		{wrap(vstreamer.ErrServerConfig), codes.FailedPrecondition},
		{wrap(vstreamer.ErrUnsupportedEvent), codes.FailedPrecondition},
		{wrap(vstreamer.ErrSchema), codes.FailedPrecondition},
		{wrap(vstreamer.ErrNoKey), codes.FailedPrecondition},
		{wrap(vstreamer.ErrStatementChange), codes.FailedPrecondition},
		{wrap(vstreamer.ErrPartialRollback), codes.FailedPrecondition},
		{wrap(vstreamer.ErrUnavailable), codes.Unavailable},
		{wrap(vstreamer.ErrShuttingDown), codes.Unavailable},
		{wrap(context.Canceled), codes.Canceled},
		{wrap(&vstreamer.PoisonError{Table: "t", Column: "c", Err: io.ErrUnexpectedEOF}), codes.FailedPrecondition},
		{wrap(&vstreamer.PanicError{Stage: vstreamer.StageStream, Value: "boom"}), codes.Internal},
		{wrap(vstreamer.ErrBadOption), codes.InvalidArgument},
		{status.Error(codes.PermissionDenied, "x"), codes.PermissionDenied},
		{errors.New("boom"), codes.Internal},
	}
	for _, c := range cases {
		st := status.Convert(toStatus(c.err))
		if st.Code() != c.code {
			t.Errorf("toStatus(%v) = %v, want %v", c.err, st.Code(), c.code)
		}
		// Only a purged position says so in a detail; a client wrapping the error still sees it.
		purged := errors.Is(c.err, vstreamer.ErrPurged)
		if got := vstreamv1.IsPositionPurged(fmt.Errorf("client: %w", toStatus(c.err))); got != purged {
			t.Errorf("IsPositionPurged(toStatus(%v)) = %v, want %v", c.err, got, purged)
		}
		if c.err != nil && c.code != codes.OK && st.Message() != c.err.Error() && status.Code(c.err) == codes.Unknown {
			t.Errorf("toStatus(%v) lost the message: %q", c.err, st.Message())
		}
	}
}
