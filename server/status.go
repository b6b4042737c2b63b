package server

import (
	"context"
	"errors"
	"io"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/vstream-cdc/vstream/filter"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/position"
	"github.com/vstream-cdc/vstream/server/encoder"
	"github.com/vstream-cdc/vstream/vstreamer"
	"github.com/vstream-cdc/vstream/vstreamer/sqlguard"
)

// codeOf lists, in order, which engine errors become which status codes.
var codeOf = []struct {
	err  error
	code codes.Code
}{
	{position.ErrBadPosition, codes.InvalidArgument},
	{filter.ErrInvalid, codes.InvalidArgument},
	{sqlguard.ErrNotAllowed, codes.InvalidArgument},
	{vstreamer.ErrAhead, codes.InvalidArgument},
	{vstreamer.ErrFlavor, codes.InvalidArgument},
	{vstreamer.ErrBadRequest, codes.InvalidArgument},
	{vstreamer.ErrKeyspace, codes.InvalidArgument},
	{vstreamer.ErrPurged, codes.FailedPrecondition},
	{vstreamer.ErrServerConfig, codes.FailedPrecondition},
	{vstreamer.ErrUnsupportedEvent, codes.FailedPrecondition},
	{vstreamer.ErrSchema, codes.FailedPrecondition},
	{vstreamer.ErrNoKey, codes.FailedPrecondition},
	{vstreamer.ErrStatementChange, codes.FailedPrecondition},
	{vstreamer.ErrPartialRollback, codes.FailedPrecondition},
	{encoder.ErrStatementDML, codes.FailedPrecondition},
	{vstreamer.ErrBadOption, codes.InvalidArgument},
	// Starting again meets the same event: the client must not retry.
	{vstreamer.ErrPoison, codes.FailedPrecondition},
	{vstreamer.ErrPanic, codes.Internal},
	{vstreamer.ErrUnavailable, codes.Unavailable},
	{vstreamer.ErrShuttingDown, codes.Unavailable},
}

// toStatus maps an engine error to a gRPC status error.
func toStatus(err error) error {
	if err == nil || errors.Is(err, io.EOF) {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	if errors.Is(err, context.Canceled) {
		return status.Error(codes.Canceled, err.Error())
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return status.Error(codes.DeadlineExceeded, err.Error())
	}
	if errors.Is(err, vstreamer.ErrPurged) {
		return purgedStatus(err)
	}
	for _, m := range codeOf {
		if errors.Is(err, m.err) {
			return status.Error(m.code, err.Error())
		}
	}
	return status.Error(codes.Internal, err.Error())
}

// purgedStatus is the FailedPrecondition of a purged position, with the ErrorInfo that
// tells clients so (vstreamv1.IsPositionPurged) whatever the message says: a client that
// may start over with a table copy must not match words.
func purgedStatus(err error) error {
	st := status.New(codes.FailedPrecondition, err.Error())
	withInfo, derr := st.WithDetails(&errdetails.ErrorInfo{Domain: vstreamv1.ErrorDomain, Reason: vstreamv1.ReasonPositionPurged})
	if derr != nil {
		// A detail that cannot be marshalled is a bug here; the code and message still go out.
		return st.Err()
	}
	return withInfo.Err()
}

func isDatabaseError(err error) bool { return errors.Is(err, vstreamer.ErrUnavailable) }
