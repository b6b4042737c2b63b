package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync/atomic"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/vstream-cdc/vstream/internal/secure"
)

// ErrTLS is wrapped by the error of a Stream that ended because the TLS handshake with the
// server was refused (see Options.TLS).
var ErrTLS = errors.New("TLS handshake refused")

// tlsCreds are gRPC's TLS transport credentials that remember the last TLS verdict that a
// reconnect would meet again (secure.Refused), and forget it at the next handshake that
// succeeds. gRPC reports a failed handshake to the stream only as Unavailable with the
// error's text, which is retried like a server restart; this is how the stream tells them
// apart.
type tlsCreds struct {
	credentials.TransportCredentials
	state *tlsState
}

type tlsState struct {
	refused atomic.Pointer[error]
}

func newTLSCreds(cfg *tls.Config) *tlsCreds {
	return &tlsCreds{TransportCredentials: credentials.NewTLS(cfg), state: &tlsState{}}
}

func (c *tlsCreds) ClientHandshake(ctx context.Context, authority string, raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	conn, info, err := c.TransportCredentials.ClientHandshake(ctx, authority, raw)
	if err != nil {
		c.state.note(err)
		return nil, nil, err
	}
	c.state.refused.Store(nil)
	// Under TLS 1.3 the server checks the client's certificate after the client's side of
	// the handshake is done: its refusal is an alert on the first read.
	return &tlsConn{Conn: conn, state: c.state}, info, nil
}

func (c *tlsCreds) Clone() credentials.TransportCredentials {
	return &tlsCreds{TransportCredentials: c.TransportCredentials.Clone(), state: c.state}
}

func (s *tlsState) note(err error) {
	if secure.Refused(err) {
		s.refused.Store(&err)
	}
}

// err is the TLS refusal since the last good handshake, nil when none.
func (s *tlsState) err() error {
	if p := s.refused.Load(); p != nil {
		return *p
	}
	return nil
}

// tlsConn notes a TLS alert the server sends after the handshake.
type tlsConn struct {
	net.Conn
	state *tlsState
}

func (c *tlsConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if err != nil {
		c.state.note(err)
	}
	return n, err
}

// tlsRefused is the error that ends a stream whose attempt failed with err after a TLS
// refusal, nil when err is not that.
func (c *Client) tlsRefused(err error) error {
	if c.tls == nil || status.Code(err) != codes.Unavailable {
		return nil
	}
	terr := c.tls.state.err()
	if terr == nil {
		return nil
	}
	return fmt.Errorf("%w by %s: %w", ErrTLS, c.target, terr)
}
