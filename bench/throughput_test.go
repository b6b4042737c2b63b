// Package bench measures vstreamd's throughput against the raw go-mysql decode rate of the
// same binlog, in one run.
package bench

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"runtime/debug"
	"sync"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/internal/testdb"
	"github.com/vstream-cdc/vstream/position"
	"github.com/vstream-cdc/vstream/server"
	"github.com/vstream-cdc/vstream/vstreamer"
)

const (
	totalRows = 200000
	txnRows   = 100
)

// tpWindow gives the throughput benchmark's gRPC client a fixed flow-control window, as the
// Go client (client.DefaultWindowSize) has, in place of grpc-go's estimated one.
var tpWindow = flag.Int("throughput.window", 0, "bytes: the throughput benchmark's gRPC client's fixed flow-control window (0: grpc-go's estimated window)")

var (
	once     sync.Once
	db       *testdb.Server
	startPos position.Position
	setupErr error
	rates    = map[string]float64{}
)

func TestMain(m *testing.M) {
	// Both paths run with the garbage-collector setting vstreamd uses by default
	// (cmd/vstreamd: GOGC 400 unless GOGC is set).
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	code := m.Run()
	if db != nil {
		db.Close()
	}
	if copyDB != nil {
		copyDB.Close()
	}
	closeFanout()
	closeLatency()
	closeBigTxn()
	removeVstreamd()
	closeSink()
	closeShards()
	os.Exit(code)
}

// setup starts the database server and writes the binlog every benchmark replays.
func setup(b *testing.B) {
	once.Do(func() {
		db, setupErr = testdb.Start(testdb.Options{Database: "bench"})
		if setupErr != nil {
			return
		}
		setupErr = db.Exec(`CREATE TABLE orders (
			id BIGINT PRIMARY KEY, customer VARCHAR(64), amount DECIMAL(12,2), qty INT, price DOUBLE,
			status ENUM('new','paid','shipped'), created DATETIME(3), updated TIMESTAMP(3) NULL,
			note VARCHAR(255), flags BIT(8))`)
		if setupErr != nil {
			return
		}
		conn, err := db.Conn("bench")
		if err != nil {
			setupErr = err
			return
		}
		defer conn.Close()
		if startPos, setupErr = binlogPos(db); setupErr != nil {
			return
		}
		for i := 0; i < totalRows; i += txnRows {
			q := fmt.Sprintf(`INSERT INTO orders SELECT seq, CONCAT('customer-', seq), seq * 1.25, seq %% 17, seq / 3.0,
				ELT(1 + seq %% 3, 'new', 'paid', 'shipped'), '2024-01-02 03:04:05.678', '2024-01-02 03:04:05.678',
				'a note of modest length for each order', seq %% 256 FROM %s`, seqRange(db, i+1, i+txnRows))
			if _, err := conn.Execute(q); err != nil {
				setupErr = err
				return
			}
		}
	})
	if setupErr != nil {
		b.Fatal(setupErr)
	}
}

// BenchmarkThroughput replays the same pre-filled binlog twice per iteration: decoded by
// go-mysql alone (the anchor) and streamed through vstreamd's engine and gRPC server to a
// client on loopback. It reports rows/s of each and their ratio.
func BenchmarkThroughput(b *testing.B) {
	setup(b)
	b.Run("go-mysql-decode", func(b *testing.B) {
		var elapsed time.Duration
		for i := 0; i < b.N; i++ {
			elapsed += rawDecode(b)
		}
		rate := float64(totalRows*b.N) / elapsed.Seconds()
		rates["raw"] = rate
		b.ReportMetric(rate, "rows/s")
	})
	b.Run("vstreamd-grpc", func(b *testing.B) {
		var elapsed time.Duration
		var events int
		for i := 0; i < b.N; i++ {
			d, n := throughServer(b)
			elapsed += d
			events += n
		}
		rate := float64(totalRows*b.N) / elapsed.Seconds()
		rates["vstreamd"] = rate
		b.ReportMetric(rate, "rows/s")
		b.ReportMetric(float64(events)/elapsed.Seconds(), "events/s")
	})
	if rates["raw"] > 0 && rates["vstreamd"] > 0 {
		fmt.Printf("throughput: go-mysql decode %.0f rows/s, vstreamd to gRPC client %.0f rows/s, ratio %.2f\n",
			rates["raw"], rates["vstreamd"], rates["vstreamd"]/rates["raw"])
	}
}

// binlogPos is the server's binlog position now: a stream started from it reads what is
// written after.
func binlogPos(db *testdb.Server) (position.Position, error) {
	s, err := db.Position()
	if err != nil {
		return position.Position{}, err
	}
	return position.Parse(s)
}

// syncSet is the GTID set go-mysql's BinlogSyncer starts from at p. It is a copy: the syncer
// adds every GTID it reads to the set it was given, and a MySQL56 position's Normalized is p's
// own set, so the benchmarks' start positions would move to wherever a reader stopped.
func syncSet(p position.Position) mysql.GTIDSet {
	return p.Normalized().GTIDSet.Clone()
}

// seqRange is a table expression for the integers from..to in a column named seq, for
// INSERT ... SELECT ... FROM on either flavor.
func seqRange(db *testdb.Server, from, to int) string {
	return fmt.Sprintf("(SELECT seq + %d AS seq FROM %s) AS seq_%d_to_%d", from-1, db.Seq(to-from+1), from, to)
}

func rawDecode(b *testing.B) time.Duration {
	cfg := replicaConfig(db, 2000000001)
	cfg.TimestampStringLocation, cfg.EventCacheCount = time.UTC, 64
	syncer := replication.NewBinlogSyncer(cfg)
	defer syncer.Close()
	start := time.Now()
	st, err := syncer.StartSyncGTID(syncSet(startPos))
	if err != nil {
		b.Fatal(err)
	}
	rows := 0
	for rows < totalRows {
		ev, err := st.GetEvent(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		if re, ok := ev.Event.(*replication.RowsEvent); ok {
			rows += len(re.Rows)
		}
	}
	return time.Since(start)
}

// openStream serves the database through an in-process vstreamd on loopback and starts a
// stream of one table from gtid; the returned function stops everything.
func openStream(b *testing.B, s *testdb.Server, gtid, table string) (vstreamv1.VStreamService_StreamClient, func()) {
	return openStreamFlags(b, s, gtid, table, nil)
}

// openStreamFlags is openStream with the request's flags; table may be a /regex rule.
func openStreamFlags(b *testing.B, s *testdb.Server, gtid, table string, flags *vstreamv1.Flags) (vstreamv1.VStreamService_StreamClient, func()) {
	e, err := vstreamer.NewEngine(vstreamer.Config{Addr: s.Addr(), User: s.User(), Password: s.Password(), Database: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := server.New(e, server.Options{})
	go srv.GRPC().Serve(lis)
	opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(1 << 30))}
	if *tpWindow > 0 {
		opts = append(opts, grpc.WithInitialWindowSize(int32(*tpWindow)), grpc.WithInitialConnWindowSize(int32(*tpWindow)))
	}
	cc, err := grpc.NewClient(lis.Addr().String(), opts...)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stop := func() {
		cancel()
		cc.Close()
		srv.GRPC().Stop()
	}
	st, err := startStreamFlags(ctx, cc, gtid, table, flags)
	if err != nil {
		b.Fatal(err)
	}
	return st, stop
}

// startStream starts a stream of the tables match selects (a name or /regex) from gtid.
func startStream(ctx context.Context, cc *grpc.ClientConn, gtid, match string) (vstreamv1.VStreamService_StreamClient, error) {
	return startStreamFlags(ctx, cc, gtid, match, nil)
}

// startStreamFlags is startStream with the request's flags.
func startStreamFlags(ctx context.Context, cc *grpc.ClientConn, gtid, match string, flags *vstreamv1.Flags) (vstreamv1.VStreamService_StreamClient, error) {
	st, err := vstreamv1.NewVStreamServiceClient(cc).Stream(ctx)
	if err != nil {
		return nil, err
	}
	if err := st.Send(&vstreamv1.StreamRequest{Kind: &vstreamv1.StreamRequest_Start{Start: &vstreamv1.Start{
		Vgtid:  &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Gtid: gtid}}},
		Filter: &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: match}}},
		Flags:  flags,
	}}}); err != nil {
		return nil, err
	}
	return st, nil
}

func throughServer(b *testing.B) (time.Duration, int) {
	defer profilePhase(b, "throughput")()
	start := time.Now()
	st, stop := openStream(b, db, startPos.String(), "orders")
	defer stop()
	rows, events := 0, 0
	for rows < totalRows {
		resp, err := st.Recv()
		if err != nil {
			b.Fatal(err)
		}
		events += len(resp.Events)
		for _, ev := range resp.Events {
			if ev.Type == binlogdata.VEventType_ROW {
				rows += len(ev.RowEvent.RowChanges)
			}
		}
	}
	return time.Since(start), events
}
