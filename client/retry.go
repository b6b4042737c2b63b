package client

import (
	"errors"
	"io"
	"time"

	"github.com/cenkalti/backoff/v5"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// IsRetryable reports whether err from a stream attempt is worth a reconnect.
//
// Transport failures and a server that is shutting down, overloaded or
// restarting its binlog reader are; requests the server rejected
// (InvalidArgument, FailedPrecondition, Unauthenticated, PermissionDenied,
// Unimplemented, ...) and cancellation are not, because sending the same
// request again cannot succeed.
func IsRetryable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, errStreamEnded) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	if _, ok := status.FromError(err); !ok {
		return false
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.ResourceExhausted, codes.Aborted, codes.Internal:
		return true
	case codes.Unknown:
		// A server handler that fails with a plain error (a dropped MySQL
		// connection, say) reaches the client as Unknown.
		return true
	default:
		return false
	}
}

const (
	defaultInitialBackoff = 100 * time.Millisecond
	defaultMaxBackoff     = 10 * time.Second
)

func (c *Client) newBackoff() backoff.BackOff {
	if c.opts.Backoff != nil {
		if b := c.opts.Backoff(); b != nil {
			return b
		}
	}
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = defaultInitialBackoff
	b.MaxInterval = defaultMaxBackoff
	b.Multiplier = 2
	b.Reset()
	return capped{b, defaultMaxBackoff}
}

// capped bounds the delay itself: ExponentialBackOff caps only the interval
// before jitter, so its delays can overshoot MaxInterval by half.
type capped struct {
	backoff.BackOff
	max time.Duration
}

func (b capped) NextBackOff() time.Duration {
	return min(b.BackOff.NextBackOff(), b.max)
}
