package interop

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"

	binlogdatapb "vitess.io/vitess/go/vt/proto/binlogdata"
	querypb "vitess.io/vitess/go/vt/proto/query"
	queryservicepb "vitess.io/vitess/go/vt/proto/queryservice"
	topodatapb "vitess.io/vitess/go/vt/proto/topodata"
	vtgatepb "vitess.io/vitess/go/vt/proto/vtgate"
	vtgateservicepb "vitess.io/vitess/go/vt/proto/vtgateservice"
	"vitess.io/vitess/go/vt/vterrors"
	"vitess.io/vitess/go/vt/vtgate/vtgateconn"

	// The vtgate client over gRPC, and the snappy compressor Vitess registers.
	_ "vitess.io/vitess/go/vt/grpcclient"
	_ "vitess.io/vitess/go/vt/vtgate/grpcvtgateconn"

	"github.com/vstream-cdc/vstream/internal/testdb"
	"github.com/vstream-cdc/vstream/internal/testkit"
)

var (
	db   *testdb.Server
	addr string
	// vstreamdBin is the vstreamd binary TestMain builds, and workDir where it and the
	// processes' logs and configuration files live.
	vstreamdBin, workDir string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	db, err = testdb.Start(testdb.Options{Database: "ks"})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start the database server:", err)
		return 1
	}
	defer db.Close()
	dir, err := os.MkdirTemp("", "interop")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	workDir = dir
	vstreamdBin = filepath.Join(dir, "vstreamd")
	if err := testkit.Build(dir, "./cmd/vstreamd"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	logName := filepath.Join(dir, "vstreamd.log")
	var stop func()
	addr, stop, err = launchVstreamd(logName)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer stop()
	code := m.Run()
	if code != 0 {
		fmt.Fprintln(os.Stderr, "vstreamd log tail:\n"+logTail(logName))
	}
	return code
}

// launchVstreamd starts a vstreamd on the test database with args added to its flags,
// logging to logName, and waits until it listens. stop ends it.
func launchVstreamd(logName string, args ...string) (listen string, stop func(), err error) {
	logFile, err := os.Create(logName)
	if err != nil {
		return "", nil, err
	}
	v, err := testkit.StartVstreamd(vstreamdBin, logFile, append([]string{"--mysql-dsn", db.DSN("ks"), "--log-level", "debug"}, args...)...)
	if err != nil {
		logFile.Close()
		return "", nil, fmt.Errorf("%w:\n%s", err, logTail(logName))
	}
	return v.Addr, func() {
		_ = v.Signal(os.Interrupt)
		logFile.Close()
	}, nil
}

// logTail is the end of a vstreamd log, for failure messages.
func logTail(logName string) string {
	out, _ := os.ReadFile(logName)
	lines := strings.Split(string(out), "\n")
	return strings.Join(lines[max(0, len(lines)-30):], "\n")
}

func vtgate(t *testing.T) *vtgateconn.VTGateConn {
	t.Helper()
	conn, err := vtgateconn.DialProtocol(context.Background(), "grpc", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	return conn
}

// short renders an event for comparison.
func short(ev *binlogdatapb.VEvent) string {
	switch ev.Type {
	case binlogdatapb.VEventType_FIELD:
		return "FIELD " + ev.FieldEvent.TableName
	case binlogdatapb.VEventType_ROW:
		return fmt.Sprintf("ROW %s %d", ev.RowEvent.TableName, len(ev.RowEvent.RowChanges))
	case binlogdatapb.VEventType_COPY_COMPLETED:
		return fmt.Sprintf("COPY_COMPLETED %s/%s", ev.Keyspace, ev.Shard)
	case binlogdatapb.VEventType_DDL:
		return "DDL"
	}
	return ev.Type.String()
}

// read collects n events (heartbeats left out), remembering the last VGTID after a COMMIT.
func read(t *testing.T, r vtgateconn.VStreamReader, n int, last **binlogdatapb.VGtid) []string {
	t.Helper()
	var got []string
	var vg *binlogdatapb.VGtid
	for len(got) < n {
		evs, err := r.Recv()
		if err != nil {
			t.Fatalf("after %v: %v", got, err)
		}
		for _, ev := range evs {
			switch ev.Type {
			case binlogdatapb.VEventType_HEARTBEAT:
				continue
			case binlogdatapb.VEventType_VGTID:
				vg = ev.Vgtid
			case binlogdatapb.VEventType_COMMIT, binlogdatapb.VEventType_DDL, binlogdatapb.VEventType_OTHER:
				if last != nil && vg != nil {
					*last = vg
				}
			}
			got = append(got, short(ev))
		}
	}
	return got
}

func rowValues(r *querypb.Row) []string {
	var out []string
	off := int64(0)
	for _, l := range r.Lengths {
		if l < 0 {
			out = append(out, "NULL")
			continue
		}
		out = append(out, string(r.Values[off:off+l]))
		off += l
	}
	return out
}

func TestCopyCatchUpAndResume(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE it_orders (id INT PRIMARY KEY, name VARCHAR(20), qty INT)",
		"INSERT INTO it_orders VALUES (1, 'a', 5), (2, 'b', 50), (3, 'c', 500)")
	conn := vtgate(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	filter := &binlogdatapb.Filter{Rules: []*binlogdatapb.Rule{{Match: "it_orders", Filter: "select id, name from it_orders where qty >= 50"}}}
	r, err := conn.VStream(ctx, topodatapb.TabletType_PRIMARY,
		&binlogdatapb.VGtid{ShardGtids: []*binlogdatapb.ShardGtid{{Keyspace: "ks", Shard: "0", Gtid: ""}}}, filter, &vtgatepb.VStreamFlags{})
	if err != nil {
		t.Fatal(err)
	}
	var last *binlogdatapb.VGtid
	got := read(t, r, 12, &last)
	if want := "BEGIN FIELD ks.it_orders VGTID ROW ks.it_orders 1 ROW ks.it_orders 1 VGTID COMMIT BEGIN VGTID COMMIT COPY_COMPLETED ks/0 COPY_COMPLETED /"; strings.Join(got, " ") != want {
		t.Fatalf("copy:\n got %s\nwant %s", strings.Join(got, " "), want)
	}
	testkit.MustExec(t, db, "INSERT INTO it_orders VALUES (4, 'd', 60), (5, 'e', 1)")
	if got := read(t, r, 5, &last); strings.Join(got, " ") != "BEGIN FIELD ks.it_orders ROW ks.it_orders 1 VGTID COMMIT" {
		t.Fatalf("catch-up: %v", got)
	}
	cancel()

	// Resume from the VGTID received: only what came after it.
	testkit.MustExec(t, db, "UPDATE it_orders SET name = 'dd' WHERE id = 4")
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	r2, err := conn.VStream(ctx2, topodatapb.TabletType_PRIMARY, last, filter, &vtgatepb.VStreamFlags{})
	if err != nil {
		t.Fatal(err)
	}
	if got := read(t, r2, 5, nil); strings.Join(got, " ") != "BEGIN FIELD ks.it_orders ROW ks.it_orders 1 VGTID COMMIT" {
		t.Fatalf("resume: %v", got)
	}
}

func TestHeartbeatsAndSnappy(t *testing.T) {
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := vtgateservicepb.NewVitessClient(cc).VStream(ctx, &vtgatepb.VStreamRequest{
		Vgtid: &binlogdatapb.VGtid{ShardGtids: []*binlogdatapb.ShardGtid{{Keyspace: "ks", Gtid: "current"}}},
		Flags: &vtgatepb.VStreamFlags{HeartbeatInterval: 1},
	}, grpc.UseCompressor("snappy"))
	if err != nil {
		t.Fatal(err)
	}
	beats := 0
	for beats < 2 {
		resp, err := st.Recv()
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range resp.Events {
			if ev.Type == binlogdatapb.VEventType_HEARTBEAT {
				beats++
			}
		}
	}
}

// TestIdleStreamSurvivesKeepalives keeps a stream idle for a minute with a client that pings
// every 10 seconds, as Vitess clients do, then expects the next change.
func TestIdleStreamSurvivesKeepalives(t *testing.T) {
	if testing.Short() {
		t.Skip("a minute long")
	}
	testkit.MustExec(t, db, "CREATE TABLE it_idle (id INT PRIMARY KEY)")
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 10 * time.Second, Timeout: 10 * time.Second, PermitWithoutStream: true}))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, err := vtgateservicepb.NewVitessClient(cc).VStream(ctx, &vtgatepb.VStreamRequest{
		Vgtid:  &binlogdatapb.VGtid{ShardGtids: []*binlogdatapb.ShardGtid{{Keyspace: "ks", Gtid: "current"}}},
		Filter: &binlogdatapb.Filter{Rules: []*binlogdatapb.Rule{{Match: "it_idle"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Recv(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(60 * time.Second)
	testkit.MustExec(t, db, "INSERT INTO it_idle VALUES (1)")
	for {
		resp, err := st.Recv()
		if err != nil {
			t.Fatalf("after a minute idle: %v", err)
		}
		for _, ev := range resp.Events {
			if ev.Type == binlogdatapb.VEventType_ROW {
				return
			}
		}
	}
}

// TestLargeTransaction streams a transaction of more than 16 MiB to Vitess's client, whose
// messages are limited to 16 MiB.
func TestLargeTransaction(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE it_big (id INT PRIMARY KEY, pad MEDIUMBLOB)")
	conn := vtgate(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := conn.VStream(ctx, topodatapb.TabletType_PRIMARY,
		&binlogdatapb.VGtid{ShardGtids: []*binlogdatapb.ShardGtid{{Keyspace: "ks", Gtid: "current"}}},
		&binlogdatapb.Filter{Rules: []*binlogdatapb.Rule{{Match: "it_big"}}}, &vtgatepb.VStreamFlags{})
	if err != nil {
		t.Fatal(err)
	}
	read(t, r, 2, nil)
	testkit.MustExec(t, db, "BEGIN")
	for i := 0; i < 24; i++ {
		testkit.MustExec(t, db, fmt.Sprintf("INSERT INTO it_big VALUES (%d, REPEAT('x', 1000000))", i))
	}
	testkit.MustExec(t, db, "COMMIT")
	rows, responses := 0, 0
	for rows < 24 {
		evs, err := r.Recv()
		if err != nil {
			t.Fatal(err)
		}
		responses++
		for _, ev := range evs {
			if ev.Type == binlogdatapb.VEventType_ROW {
				rows += len(ev.RowEvent.RowChanges)
				if v := rowValues(ev.RowEvent.RowChanges[0].After); len(v[1]) != 1000000 {
					t.Fatalf("row value of %d bytes", len(v[1]))
				}
			}
		}
	}
	if responses < 2 {
		t.Errorf("24 MB arrived in %d response", responses)
	}
}

func TestTabletVStream(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE it_tab (id INT PRIMARY KEY)", "INSERT INTO it_tab VALUES (1)")
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := queryservicepb.NewQueryClient(cc).VStream(ctx, &binlogdatapb.VStreamRequest{
		Target: &querypb.Target{Keyspace: "ks", Shard: "0", TabletType: topodatapb.TabletType_PRIMARY},
		Filter: &binlogdatapb.Filter{Rules: []*binlogdatapb.Rule{{Match: "it_tab"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for len(got) < 10 {
		resp, err := st.Recv()
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range resp.Events {
			if ev.Type != binlogdatapb.VEventType_HEARTBEAT {
				got = append(got, short(ev))
			}
		}
	}
	if want := "BEGIN FIELD it_tab GTID ROW it_tab 1 LASTPK COMMIT BEGIN LASTPK COMMIT COPY_COMPLETED ks/0"; strings.Join(got, " ") != want {
		t.Fatalf("got %s\nwant %s", strings.Join(got, " "), want)
	}
}

// TestBadInputCodes: each bad input gets the code vstream's own API gives.
func TestBadInputCodes(t *testing.T) {
	conn := vtgate(t)
	cases := []struct {
		vgtid  *binlogdatapb.VGtid
		filter *binlogdatapb.Filter
		code   codes.Code
	}{
		{&binlogdatapb.VGtid{ShardGtids: []*binlogdatapb.ShardGtid{{Keyspace: "ks", Gtid: "garbage"}}}, nil, codes.InvalidArgument},
		{&binlogdatapb.VGtid{ShardGtids: []*binlogdatapb.ShardGtid{{Keyspace: "ks", Gtid: positionAt(t, "999999999", "1-999999999")}}}, nil, codes.InvalidArgument},
		{&binlogdatapb.VGtid{ShardGtids: []*binlogdatapb.ShardGtid{{Keyspace: "nope", Gtid: "current"}}}, nil, codes.InvalidArgument},
		// A copy needs its tables; a binlog stream waits for them (see filter_test.go).
		{&binlogdatapb.VGtid{ShardGtids: []*binlogdatapb.ShardGtid{{Keyspace: "ks", Gtid: ""}}},
			&binlogdatapb.Filter{Rules: []*binlogdatapb.Rule{{Match: "missing_table"}}}, codes.InvalidArgument},
		{&binlogdatapb.VGtid{ShardGtids: []*binlogdatapb.ShardGtid{{Keyspace: "ks", Gtid: positionAt(t, "1", "1")}}}, nil, codes.FailedPrecondition},
	}
	// The position after the first transaction must have been executed, then purged (whichever tests ran before).
	testkit.MustExec(t, db, "CREATE TABLE IF NOT EXISTS bad_input (id INT PRIMARY KEY)", "INSERT INTO bad_input VALUES (1), (2)")
	testkit.MustExec(t, db, "FLUSH BINARY LOGS")
	// Purge so that position 0-1-1 is gone; a dump thread still closing may hold a file open.
	for i := 0; i < 50; i++ {
		testkit.MustExec(t, db, "PURGE BINARY LOGS BEFORE NOW() + INTERVAL 1 DAY")
		time.Sleep(20 * time.Millisecond)
	}
	for _, c := range cases {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		r, err := conn.VStream(ctx, topodatapb.TabletType_PRIMARY, c.vgtid, c.filter, &vtgatepb.VStreamFlags{})
		if err == nil {
			_, err = r.Recv()
		}
		cancel()
		// Vitess's client turns statuses into vterrors; their codes are gRPC's.
		if errors.Is(err, io.EOF) || codes.Code(vterrors.Code(err)) != c.code {
			t.Errorf("%v %v: got %v, want %v", c.vgtid, c.filter, err, c.code)
		}
	}
}
