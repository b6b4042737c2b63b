package bench

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/vstream-cdc/vstream/internal/testdb"
)

var dumpStartMiB = flag.Int("dumpstart.mib", 180, "BenchmarkDumpStart: MiB of row values written to the binlog before the dumps start at its end")

// BenchmarkDumpStart measures what a binlog dump started at the end of a large binlog file
// costs the server, started the two ways a replication client can: at a GTID position
// (COM_BINLOG_DUMP_GTID, or MariaDB's slave_connect_state), which the server finds by reading
// the binlog file from its start, and at the same place by file and offset. Each iteration
// starts one dump each way (the order turning) and reads until the server's first heartbeat;
// it reports the server's CPU per dump both ways. (The time to that heartbeat says nothing
// here: MySQL also sends heartbeats while it skips the transactions a GTID dump has.)
func BenchmarkDumpStart(b *testing.B) {
	db, err := testdb.Start(testdb.Options{Database: "dumpstart", ExtraArgs: []string{"--sync-binlog=0"}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(db.Close)
	if err := db.Exec("CREATE TABLE dumpstart.t (id BIGINT PRIMARY KEY, note VARCHAR(1000))"); err != nil {
		b.Fatal(err)
	}
	rows := *dumpStartMiB << 10 // ~1 KiB a row
	for i := 0; i < rows; i += 10000 {
		q := fmt.Sprintf("INSERT INTO dumpstart.t SELECT seq, REPEAT('x', 1000) FROM %s", seqRange(db, i+1, min(i+10000, rows)))
		if err := db.Exec(q); err != nil {
			b.Fatal(err)
		}
	}
	pos, err := binlogPos(db)
	if err != nil {
		b.Fatal(err)
	}
	file, off, err := db.BinlogEnd()
	if err != nil {
		b.Fatal(err)
	}
	pid := dbPID(b, db)
	var gtidCPU, fileCPU time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, byGTID := range []bool{i%2 == 0, i%2 != 0} {
			cpu0 := procCPU(b, pid)
			dumpToHeartbeat(b, db, func(s *replication.BinlogSyncer) (*replication.BinlogStreamer, error) {
				if byGTID {
					return s.StartSyncGTID(syncSet(pos))
				}
				return s.StartSync(mysql.Position{Name: file, Pos: off})
			})
			cpu := procCPU(b, pid) - cpu0
			if byGTID {
				gtidCPU += cpu
			} else {
				fileCPU += cpu
			}
		}
	}
	n := float64(b.N)
	b.ReportMetric(gtidCPU.Seconds()*1000/n, "gtid-db-cpu-ms/dump")
	b.ReportMetric(fileCPU.Seconds()*1000/n, "filepos-db-cpu-ms/dump")
	b.Logf("dump start at the end of %s (%d bytes) on %s, server CPU per dump: by GTID %.1f ms, by file and offset %.1f ms",
		file, off, serverName(db), gtidCPU.Seconds()*1000/n, fileCPU.Seconds()*1000/n)
}

// dumpHeartbeat is the heartbeat period of BenchmarkDumpStart's dumps.
const dumpHeartbeat = 200 * time.Millisecond

// dumpToHeartbeat starts a dump with start and reads it until the server's first heartbeat.
func dumpToHeartbeat(b *testing.B, db *testdb.Server, start func(*replication.BinlogSyncer) (*replication.BinlogStreamer, error)) {
	cfg := replicaConfig(db, uint32(2000000000+time.Now().UnixNano()%1000000))
	cfg.HeartbeatPeriod, cfg.RawModeEnabled = dumpHeartbeat, true
	syncer := replication.NewBinlogSyncer(cfg)
	defer syncer.Close()
	s, err := start(syncer)
	if err != nil {
		b.Fatal(err)
	}
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		ev, err := s.GetEvent(ctx)
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		if ev.Header.EventType == replication.HEARTBEAT_EVENT {
			return
		}
	}
}

// replicaConfig is a go-mysql replication connection to db as replica serverID, that does
// not retry on its own and logs nothing; each benchmark adds its decoding options.
func replicaConfig(db *testdb.Server, serverID uint32) replication.BinlogSyncerConfig {
	return replication.BinlogSyncerConfig{
		ServerID:         serverID,
		Flavor:           string(db.Flavor()), // go-mysql's flavor names are testdb's
		Host:             db.Host(),
		Port:             uint16(db.Port()),
		User:             db.User(),
		Password:         db.Password(),
		DisableRetrySync: true,
		Logger:           slog.New(slog.DiscardHandler),
	}
}
