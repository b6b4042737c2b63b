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
	"github.com/vstream-cdc/vstream/internal/procstat"
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
// (four shards over one: what adding shards to one vstreamd gains), and vstreamd's CPU per
// million rows in each. It asserts nothing. On a machine whose cores are all busy with the
// four database servers, vstreamd and the client, the ratio is bound by CPU, not by the
// merge: compare vstreamd's CPU per row between the two.
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

	// stream reads the rows of the shards given from their start positions and returns the
	// time they took and vstreamd's CPU meanwhile.
	stream := func(shards []int) (time.Duration, time.Duration) {
		pos := &binlogdata.VGtid{}
		for _, i := range shards {
			pos.ShardGtids = append(pos.ShardGtids, &binlogdata.ShardGtid{Keyspace: "sh", Shard: shardNames[i], Gtid: shardStart[i]})
		}
		want := len(shards) * *shardRows
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		cpu0, err := procstat.CPU(v.Pid())
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		got := 0
		err = cl.Stream(ctx, client.Request{Position: pos, Filter: client.ParseTables("s")}, func(_ context.Context, events []*binlogdata.VEvent) error {
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
		cpu1, err := procstat.CPU(v.Pid())
		if err != nil {
			b.Fatal(err)
		}
		return took, cpu1 - cpu0
	}
	// Once before timing: vstreamd's connections and the servers' caches warm.
	stream([]int{0})
	b.ResetTimer()
	var one, four, cpuOne, cpuFour time.Duration
	for range b.N {
		t1, c1 := stream([]int{0})
		t4, c4 := stream([]int{0, 1, 2, 3})
		one, four, cpuOne, cpuFour = one+t1, four+t4, cpuOne+c1, cpuFour+c4
	}
	rows := float64(b.N * *shardRows)
	b.ReportMetric(rows/one.Seconds(), "rows/s_1shard")
	b.ReportMetric(4*rows/four.Seconds(), "rows/s_4shards")
	b.ReportMetric((4*rows/four.Seconds())/(rows/one.Seconds()), "x_4shards_over_1")
	b.ReportMetric(cpuOne.Seconds()/rows*1e6, "vstreamd_cpu_s/Mrow_1shard")
	b.ReportMetric(cpuFour.Seconds()/(4*rows)*1e6, "vstreamd_cpu_s/Mrow_4shards")
}
