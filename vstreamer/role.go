package vstreamer

import (
	"context"
	"fmt"

	"github.com/go-mysql-org/go-mysql/client"
)

// ReadOnly reports whether the server is read-only (@@global.read_only; MySQL's
// super_read_only turns it on too). It is how a server's role is told apart: a primary
// takes writes, and a replica, or a primary a switchover demoted, is kept read-only, as
// Vitess keeps its replicas and as failover tools (orchestrator, MHA, MaxScale) set the old
// primary. It runs on one of the engine's pooled connections, so that checking a streamed
// server's role now and then costs a query, not a connection.
func (e *Engine) ReadOnly(ctx context.Context) (bool, error) {
	var v string
	err := e.withConn(ctx, func(conn *client.Conn) error {
		var qerr error
		v, qerr = queryString(conn, "SELECT @@global.read_only")
		return qerr
	})
	if err != nil {
		return false, fmt.Errorf("read the role of %s: %w", e.cfg.Addr, err)
	}
	return v == "1" || v == "ON", nil
}
