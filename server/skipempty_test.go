package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/internal/testkit"
)

// TestNativeSkipsFilteredTransactions: on the native API a transaction whose changes the
// filter leaves out sends nothing; a lone VGTID with the next heartbeat carries its position,
// the next transaction on a streamed table carries it too, and a stream resumed from the lone
// VGTID gets exactly the rows after it.
func TestNativeSkipsFilteredTransactions(t *testing.T) {
	testkit.MustExec(t, db, "DROP TABLE IF EXISTS nsa, nsb", "CREATE TABLE nsa (id INT PRIMARY KEY)", "CREATE TABLE nsb (id INT PRIMARY KEY)")
	cc := dial(t, serve(t, dbConfig(), Options{}))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	filterA := &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "nsa"}}}
	open := func(pos string) func() []*binlogdata.VEvent {
		start := startMsg(pos, filterA)
		start.GetStart().Flags = &vstreamv1.Flags{HeartbeatInterval: durationpb.New(200 * time.Millisecond)}
		st := openStream(t, ctx, cc, start)
		return func() []*binlogdata.VEvent {
			resp, err := st.Recv()
			if err != nil {
				t.Fatal(err)
			}
			return resp.Events
		}
	}
	// until reads responses up to the VGTID at pos, and returns the event types read but
	// heartbeats and the lone VGTIDs that may come with them (a heartbeat may fall between
	// two writes of the test).
	until := func(recv func() []*binlogdata.VEvent, pos string) (got []string) {
		for {
			for _, ev := range recv() {
				switch {
				case ev.Type == binlogdata.VEventType_HEARTBEAT:
				case ev.Type == binlogdata.VEventType_VGTID && (len(got) == 0 || got[len(got)-1] != "COMMIT"):
				default:
					got = append(got, ev.Type.String())
				}
				if ev.Type == binlogdata.VEventType_VGTID && gtidOf(ev.Vgtid) == pos {
					return got
				}
			}
		}
	}
	recv := open("current")
	recv()
	testkit.MustExec(t, db, "INSERT INTO nsb VALUES (1)", "INSERT INTO nsb VALUES (2)")
	head := serverPosition(t)
	// Nothing but heartbeats and a lone VGTID at the new position (the context ends the
	// wait if it never comes).
	if got := until(recv, head); len(got) > 0 {
		t.Errorf("events for transactions on a table left out: %v", got)
	}

	resumed := open(head)
	testkit.MustExec(t, db, "INSERT INTO nsb VALUES (3)", "INSERT INTO nsa VALUES (1)")
	head = serverPosition(t)
	for _, r := range []func() []*binlogdata.VEvent{recv, resumed} {
		if got := until(r, head); strings.Join(got, " ") != "BEGIN FIELD ROW GTID COMMIT VGTID" {
			t.Errorf("got %v, want the row on nsa and the VGTID at %s", got, head)
		}
	}
}
