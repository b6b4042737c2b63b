package bench

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/vstream-cdc/vstream/client"
	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/internal/testdb"
	"github.com/vstream-cdc/vstream/internal/testkit"
)

// shardRows is how many rows each shard's binlog holds for BenchmarkShards.
var shardRows = flag.Int("shards.rows", 100000, "rows each of BenchmarkShards' four shards writes to its binlog")

// shardNames are the four shards of BenchmarkShards' keyspace.
var shardNames = []string{"-40", "40-80", "80-c0", "c0-"}

var (
	shardsOnce     sync.Once
	shardsSetupErr error
	shardServers   []*testdb.Server
	// shardStart is each shard's position before its rows.
	shardStart []string
)

// setupShards starts one database server per shard, each with the same table, and writes
// -shards.rows rows to each in transactions of 1,000.
func setupShards(b *testing.B) {
	shardsOnce.Do(func() {
		if shardsSetupErr = buildVstreamd(); shardsSetupErr != nil {
			return
		}
		for i := range shardNames {
			s, err := testdb.Start(testdb.Options{Database: "sh"})
			if err != nil {
				shardsSetupErr = err
				return
			}
			shardServers = append(shardServers, s)
			if shardsSetupErr = s.Exec("CREATE TABLE s (id BIGINT PRIMARY KEY, note VARCHAR(64))"); shardsSetupErr != nil {
				return
			}
			pos, err := s.Position()
			if err != nil {
				shardsSetupErr = err
				return
			}
			shardStart = append(shardStart, pos)
			for from := 1; from <= *shardRows; from += 1000 {
				to := min(from+999, *shardRows)
				q := fmt.Sprintf("INSERT INTO s SELECT seq, CONCAT('row ', seq, ' of shard %d') FROM %s", i, seqRange(s, from, to))
				if shardsSetupErr = s.Exec(q); shardsSetupErr != nil {
					return
				}
			}
		}
	})
	if shardsSetupErr != nil {
		b.Fatal(shardsSetupErr)
	}
}

func closeShards() {
	for _, s := range shardServers {
		s.Close()
	}
}

// BenchmarkShards streams the same rows from one shard and from all four shards of a
// keyspace, each shard on a database server of its own, through one vstreamd process
// (--topology) to a Go client in this process, and reports the rows/s of each, their ratio
// (four shards over one: what adding shards to one vstreamd gains), the CPU per million rows
// of vstreamd, the client and the database servers in each, the cores those processes kept
// busy and the machine's busy share. It asserts nothing. On a machine whose cores are all
// busy with the database servers, vstreamd and the client, the ratio is bound by CPU, not by
// the merge: compare the CPU per row between the two.
func BenchmarkShards(b *testing.B) {
	setupShards(b)
	topo := filepath.Join(b.TempDir(), "topology.yaml")
	body := "keyspaces:\n  - name: sh\n    shards:\n"
	for i, name := range shardNames {
		body += fmt.Sprintf("      - {name: %q, servers: [{addr: %q}]}\n", name, shardServers[i].Addr())
	}
	if err := os.WriteFile(topo, []byte(body), 0o600); err != nil {
		b.Fatal(err)
	}
	v, err := testkit.StartVstreamd(vstreamdBin, os.Stderr, "--mysql-dsn", shardServers[0].DSN("sh"), "--topology", topo, "--log-level", "warn")
	if err != nil {
		b.Fatal(err)
	}
	defer v.Kill()
	addr := v.Addr
	cl, err := client.Dial(addr, client.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cl.Close() }()

	// stream reads the rows of the shards given from their start positions and measures
	// the time they took and what each process used meanwhile.
	stream := func(shards []int) shardRun {
		pos := &binlogdata.VGtid{}
		for _, i := range shards {
			pos.ShardGtids = append(pos.ShardGtids, &binlogdata.ShardGtid{Keyspace: "sh", Shard: shardNames[i], Gtid: shardStart[i]})
		}
		want := len(shards) * *shardRows
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		dbCPU := func() (d time.Duration) {
			for _, i := range shards {
				d += procCPU(b, dbPID(b, shardServers[i]))
			}
			return d
		}
		v0, c0, d0 := procCPU(b, v.Pid()), procCPU(b, os.Getpid()), dbCPU()
		busy0, idle0 := machineCPU(b)
		start := time.Now()
		got := 0
		err := cl.Stream(ctx, client.Request{Position: pos, Filter: client.ParseTables("s")}, func(_ context.Context, events []*binlogdata.VEvent) error {
			for _, ev := range events {
				got += len(ev.GetRowEvent().GetRowChanges())
			}
			if got >= want {
				cancel()
			}
			return nil
		})
		took := time.Since(start)
		if got < want {
			b.Fatalf("%d of %d rows: %v", got, want, err)
		}
		busy1, idle1 := machineCPU(b)
		return shardRun{
			rows: float64(got), wall: took,
			vstreamd: procCPU(b, v.Pid()) - v0, client: procCPU(b, os.Getpid()) - c0, db: dbCPU() - d0,
			busy: busy1 - busy0, idle: idle1 - idle0,
		}
	}
	// Once before timing: vstreamd's connections and the servers' caches warm.
	stream([]int{0})
	b.ResetTimer()
	var one, four shardRun
	for range b.N {
		one.add(stream([]int{0}))
		four.add(stream([]int{0, 1, 2, 3}))
	}
	b.ReportMetric(one.rate(), "rows/s_1shard")
	b.ReportMetric(four.rate(), "rows/s_4shards")
	b.ReportMetric(four.rate()/one.rate(), "x_4shards_over_1")
	for _, r := range []struct {
		name string
		run  shardRun
	}{{"1shard", one}, {"4shards", four}} {
		b.ReportMetric(r.run.perMrow(r.run.vstreamd), "vstreamd_cpu_s/Mrow_"+r.name)
		b.ReportMetric(r.run.perMrow(r.run.client), "client_cpu_s/Mrow_"+r.name)
		b.ReportMetric(r.run.perMrow(r.run.db), "db_cpu_s/Mrow_"+r.name)
		// What binds the ratio: the cores the stream's own processes kept busy, and the
		// machine's busy share. When one shard already takes most of the machine's cores,
		// four cannot go faster than the cores allow, however the merge performs.
		b.ReportMetric((r.run.vstreamd+r.run.client+r.run.db).Seconds()/r.run.wall.Seconds(), "stream_cores_"+r.name)
		b.ReportMetric(100*r.run.busy.Seconds()/(r.run.busy+r.run.idle).Seconds(), "machine_busy_%_"+r.name)
	}
}

// shardRun is what BenchmarkShards measured over one or more streams of the same shards.
type shardRun struct {
	rows                                   float64
	wall, vstreamd, client, db, busy, idle time.Duration
}

func (r *shardRun) add(o shardRun) {
	r.rows += o.rows
	r.wall += o.wall
	r.vstreamd += o.vstreamd
	r.client += o.client
	r.db += o.db
	r.busy += o.busy
	r.idle += o.idle
}

func (r shardRun) rate() float64 { return r.rows / r.wall.Seconds() }

func (r shardRun) perMrow(d time.Duration) float64 { return d.Seconds() / r.rows * 1e6 }
