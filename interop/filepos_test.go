package interop

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"vitess.io/vitess/go/vt/discovery"
	binlogdatapb "vitess.io/vitess/go/vt/proto/binlogdata"
	topodatapb "vitess.io/vitess/go/vt/proto/topodata"
	vtgatepb "vitess.io/vitess/go/vt/proto/vtgate"
	"vitess.io/vitess/go/vt/vterrors"
	"vitess.io/vitess/go/vt/vtgate/vtgateconn"

	"github.com/vstream-cdc/vstream/internal/testkit"
)

// vstreamdFilePos starts a vstreamd run with --positions filepos and returns its address; it
// stops when the test ends.
func vstreamdFilePos(t *testing.T) string {
	t.Helper()
	base := filepath.Join(workDir, strings.ReplaceAll(t.Name(), "/", "_"))
	listen, stop, err := launchVstreamd(base+".log", "--positions", "filepos")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("vstreamd (%s) log tail:\n%s", filepath.Base(base), logTail(base+".log"))
		}
	})
	return listen
}

// serverFilePos is the server's current binlog file and offset.
func serverFilePos(t *testing.T) (string, uint64) {
	t.Helper()
	c, err := db.Conn("ks")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// MySQL 8.4 removed SHOW MASTER STATUS; MariaDB has no SHOW BINARY LOG STATUS.
	r, err := c.Execute(byFlavor("SHOW MASTER STATUS", "SHOW BINARY LOG STATUS"))
	if err != nil {
		t.Fatal(err)
	}
	file, _ := r.GetString(0, 0)
	pos, _ := r.GetUint(0, 1)
	return strings.Clone(file), pos
}

// Vitess's TestStatements reruns its cases from a tablet configured for file positions: the
// same events, with FilePos positions in the GTID events.
func TestVSStatementsFilePos(t *testing.T) {
	runVSStatements(t, vstreamdFilePos(t), "FilePos/")
}

// Vitess's TestNoFutureGTID under file positions: a position past the server's binlog is
// refused with the words vtgate reads to try another tablet, with InvalidArgument.
func TestFuturePositionIgnoresTabletFilePos(t *testing.T) {
	listen := vstreamdFilePos(t)
	file, pos := serverFilePos(t)
	future := "FilePos/" + file + ":" + strconv.FormatUint(pos+1000, 10)
	conn, err := vtgateconn.DialProtocol(context.Background(), "grpc", listen)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := conn.VStream(ctx, topodatapb.TabletType_PRIMARY,
		&binlogdatapb.VGtid{ShardGtids: []*binlogdatapb.ShardGtid{{Keyspace: "ks", Gtid: future}}}, nil, &vtgatepb.VStreamFlags{})
	if err == nil {
		_, err = r.Recv()
	}
	if err == nil || !strings.Contains(err.Error(), vterrors.GTIDSetMismatch) || !strings.Contains(err.Error(), future) {
		t.Fatalf("err = %v, want %q naming %s", err, vterrors.GTIDSetMismatch, future)
	}
	if a := discovery.ShouldRetryTabletError(err); a != discovery.TabletErrorActionIgnoreTablet {
		t.Errorf("vtgate's action for %v = %v, want TabletErrorActionIgnoreTablet", err, a)
	}
}

// A vtgate client saves the FilePos VGtid of a transaction, leaves, and resumes from it: it
// gets exactly the transactions after it, written while it was away included.
func TestVtgateResumeFilePos(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE IF NOT EXISTS it_fpr (id INT PRIMARY KEY)")
	t.Cleanup(func() { testkit.MustExec(t, db, "DROP TABLE IF EXISTS it_fpr") })
	listen := vstreamdFilePos(t)
	conn, err := vtgateconn.DialProtocol(context.Background(), "grpc", listen)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	filter := &binlogdatapb.Filter{Rules: []*binlogdatapb.Rule{{Match: "it_fpr"}}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	r, err := conn.VStream(ctx, topodatapb.TabletType_PRIMARY,
		&binlogdatapb.VGtid{ShardGtids: []*binlogdatapb.ShardGtid{{Keyspace: "ks", Gtid: "current"}}}, filter, &vtgatepb.VStreamFlags{})
	if err != nil {
		t.Fatal(err)
	}
	var last *binlogdatapb.VGtid
	read(t, r, 2, nil) // VGTID, OTHER: the start at "current"
	testkit.MustExec(t, db, "INSERT INTO it_fpr VALUES (1)")
	if got := read(t, r, 5, &last); strings.Join(got, " ") != "BEGIN FIELD ks.it_fpr ROW ks.it_fpr 1 VGTID COMMIT" {
		t.Fatalf("first transaction: %v", got)
	}
	saved := last.GetShardGtids()[0].GetGtid()
	// The client reads one more transaction past the position it saved.
	testkit.MustExec(t, db, "INSERT INTO it_fpr VALUES (2)")
	if got := read(t, r, 4, nil); strings.Join(got, " ") != "BEGIN ROW ks.it_fpr 1 VGTID COMMIT" {
		t.Fatalf("second transaction: %v", got)
	}
	if !strings.HasPrefix(saved, "FilePos/") {
		t.Fatalf("saved position %q is not a file position", saved)
	}
	cancel()
	testkit.MustExec(t, db, "INSERT INTO it_fpr VALUES (3)")

	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err = conn.VStream(ctx, topodatapb.TabletType_PRIMARY, last, filter, &vtgatepb.VStreamFlags{})
	if err != nil {
		t.Fatal(err)
	}
	// Exactly the rows 2 and 3: nothing before the saved position comes again.
	var got []string
	commits := 0
	for commits < 2 {
		evs, err := r.Recv()
		if err != nil {
			t.Fatalf("after %v: %v", got, err)
		}
		for _, ev := range evs {
			switch ev.Type {
			case binlogdatapb.VEventType_HEARTBEAT:
				continue
			case binlogdatapb.VEventType_ROW:
				got = append(got, "ROW "+strings.Join(rowValues(ev.RowEvent.RowChanges[0].After), ","))
				continue
			case binlogdatapb.VEventType_VGTID:
				last = ev.Vgtid
			case binlogdatapb.VEventType_COMMIT:
				commits++
			}
			got = append(got, short(ev))
		}
	}
	want := "BEGIN FIELD ks.it_fpr ROW 2 VGTID COMMIT BEGIN ROW 3 VGTID COMMIT"
	if strings.Join(got, " ") != want {
		t.Fatalf("resumed:\n got %s\nwant %s", strings.Join(got, " "), want)
	}
	if next := last.GetShardGtids()[0].GetGtid(); next == saved || !strings.HasPrefix(next, "FilePos/") {
		t.Errorf("position after the resumed transactions %q (saved %q)", next, saved)
	}
}
