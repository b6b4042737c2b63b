package vstreamv1

import (
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/status"
)

// ErrorDomain is the domain of the google.rpc.ErrorInfo details vstreamd attaches to the
// errors a client must tell apart from others of their code.
const ErrorDomain = "vstream.v1"

// ReasonPositionPurged is the ErrorInfo reason of a FailedPrecondition that ends a stream
// because the server no longer has the binlogs its position needs (MySQL's errno 1236): the
// position can never be resumed, and a client that wants the data again starts over with a
// table copy (an empty position). Metadata "position" holds the requested position.
const ReasonPositionPurged = "POSITION_PURGED"

// IsPositionPurged reports whether err, anywhere in its chain, is a gRPC status carrying the
// ErrorInfo of ReasonPositionPurged: the one test of a purged position, for every client.
func IsPositionPurged(err error) bool {
	if err == nil {
		return false
	}
	st, ok := status.FromError(err)
	if !ok {
		return false
	}
	for _, d := range st.Details() {
		if info, isInfo := d.(*errdetails.ErrorInfo); isInfo && info.GetDomain() == ErrorDomain && info.GetReason() == ReasonPositionPurged {
			return true
		}
	}
	return false
}
