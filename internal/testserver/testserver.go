// Package testserver starts vstreamd's gRPC server in a test, on a database of a test
// MariaDB, for the tests of the packages that consume it (the CLI, the sinks, the examples).
package testserver

import (
	"net"
	"testing"

	"github.com/vstream-cdc/vstream/internal/testdb"
	"github.com/vstream-cdc/vstream/server"
	"github.com/vstream-cdc/vstream/vstreamer"
)

// Serve starts vstreamd's server on database of db and returns its address; the test's
// cleanup stops it.
func Serve(t testing.TB, db *testdb.Server, database string) string {
	t.Helper()
	return ServeWith(t, db, database, server.Options{})
}

// ServeWith is Serve with the server's options, e.g. TLS and a token.
func ServeWith(t testing.TB, db *testdb.Server, database string, opts server.Options) string {
	t.Helper()
	e, err := vstreamer.NewEngine(vstreamer.Config{Addr: db.Addr(), User: db.User(), Password: db.Password(), Database: database})
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := server.New(e, opts)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.GRPC().Serve(lis)
	}()
	t.Cleanup(func() {
		s.GRPC().Stop()
		<-done
	})
	return lis.Addr().String()
}
