package vstreamer

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/internal/testkit"
	"github.com/vstream-cdc/vstream/internal/testkit/evtext"
)

// TestXATransactions: a one-phase XA transaction streams as any transaction; a prepared one
// (XA_PREPARE_LOG_EVENT) ends the stream, naming the event, before any of its rows is sent or
// its GTID enters a position, and so does its XA COMMIT on a stream that started after it.
func TestXATransactions(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE xat (id INT PRIMARY KEY)")
	e := newEngine(t)
	ts := startStream(t, e, Request{Position: "current", Filter: rules(&binlogdata.Rule{Match: "xat"})})
	ts.expect("GTID", "OTHER", "VGTID")
	conn, err := db.Conn("test")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	run := func(qs ...string) {
		t.Helper()
		for _, q := range qs {
			if _, err := conn.Execute(q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	run("XA START 'one'", "INSERT INTO xat VALUES (1)", "XA END 'one'", "XA COMMIT 'one' ONE PHASE")
	evs := ts.expect("BEGIN", "FIELD xat id:INT32", "ROW xat +[1]", "GTID", "COMMIT", "VGTID")
	last := evs[5].Vgtid.ShardGtids[0].Gtid

	run("XA START 'two'", "INSERT INTO xat VALUES (2)", "XA END 'two'", "XA PREPARE 'two'")
	select {
	case err := <-ts.errc:
		ts.errc <- nil
		if !errors.Is(err, ErrUnsupportedEvent) || !strings.Contains(err.Error(), "XAPrepareLogEvent") || !strings.Contains(err.Error(), last) {
			t.Fatalf("err = %v, want ErrUnsupportedEvent naming the XA prepare event after position %s", err, last)
		}
	case ev := <-ts.events:
		t.Fatalf("got %s, want the stream to end", evtext.Short(ev))
	case <-time.After(15 * time.Second):
		t.Fatal("the stream did not end")
	}

	// A stream started after the prepare cannot send the rows its XA COMMIT commits.
	late := startStream(t, e, Request{Position: "current", Filter: rules(&binlogdata.Rule{Match: "xat"})})
	late.expect("GTID", "OTHER", "VGTID")
	run("XA COMMIT 'two'")
	select {
	case err := <-late.errc:
		late.errc <- nil
		if !errors.Is(err, ErrUnsupportedEvent) || !strings.Contains(err.Error(), "XA COMMIT X'74776f'") {
			t.Fatalf("err = %v, want ErrUnsupportedEvent naming the XA COMMIT (of xid 'two', as MariaDB logs it)", err)
		}
	case ev := <-late.events:
		t.Fatalf("got %s, want the stream to end", evtext.Short(ev))
	case <-time.After(15 * time.Second):
		t.Fatal("the stream did not end")
	}
}
