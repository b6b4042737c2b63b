// Package soak runs vstreamd for a long time under a steady write load with several filtered
// streams and reports throughput, commit-to-client latency and vstreamd's memory. It only runs
// when asked (make soak), not in make test.
package soak

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/internal/procstat"
	"github.com/vstream-cdc/vstream/internal/testdb"
	"github.com/vstream-cdc/vstream/internal/testkit"
)

var (
	duration = flag.Duration("soak.duration", 0, "how long to soak; 0 skips the soak")
	tps      = flag.Int("soak.tps", 1000, "transactions per second")
	streams  = flag.Int("soak.streams", 10, "concurrent filtered streams")
)

// rss is process pid's resident memory in bytes, -1 when it cannot be read.
func rss(pid int) int64 {
	n, err := procstat.Memory(pid, "VmRSS")
	if err != nil {
		return -1
	}
	return n
}

func TestSoak(t *testing.T) {
	if *duration == 0 {
		t.Skip("run with -soak.duration (make soak)")
	}
	db, err := testdb.Start(testdb.Options{Database: "soak"})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i := 0; i < *streams; i++ {
		if err := db.Exec(fmt.Sprintf("CREATE TABLE s%d (id BIGINT AUTO_INCREMENT PRIMARY KEY, sent BIGINT, pad VARCHAR(100))", i)); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	if err := testkit.Build(dir, "./cmd/vstreamd"); err != nil {
		t.Fatal(err)
	}
	logf, _ := os.Create(filepath.Join(dir, "vstreamd.log"))
	v, err := testkit.StartVstreamd(filepath.Join(dir, "vstreamd"), logf, "--mysql-dsn", db.DSN("soak"), "--log-level", "warn")
	if err != nil {
		t.Fatal(err)
	}
	defer v.Kill()
	addr := v.Addr

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var events atomic.Int64
	var mu sync.Mutex
	var latencies []time.Duration
	var wg sync.WaitGroup
	for i := 0; i < *streams; i++ {
		cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Close()
		st, err := vstreamv1.NewVStreamServiceClient(cc).Stream(ctx)
		if err != nil {
			t.Fatal(err)
		}
		st.Send(&vstreamv1.StreamRequest{Kind: &vstreamv1.StreamRequest_Start{Start: &vstreamv1.Start{
			Vgtid:  &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Gtid: "current"}}},
			Filter: &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: fmt.Sprintf("s%d", i)}}},
		}}})
		wg.Add(1)
		go func() {
			defer wg.Done()
			var local []time.Duration
			for {
				resp, err := st.Recv()
				if err != nil {
					mu.Lock()
					latencies = append(latencies, local...)
					mu.Unlock()
					return
				}
				now := time.Now().UnixNano()
				events.Add(int64(len(resp.Events)))
				for _, ev := range resp.Events {
					if ev.Type != binlogdata.VEventType_ROW {
						continue
					}
					for _, rc := range ev.RowEvent.RowChanges {
						r := rc.After
						l0 := r.Lengths[0]
						sent, _ := strconv.ParseInt(string(r.Values[l0:l0+r.Lengths[1]]), 10, 64)
						local = append(local, time.Duration(now-sent))
					}
				}
			}
		}()
	}

	time.Sleep(time.Second)
	rssStart := rss(v.Pid())
	// Several writers share the rate: one connection's round trips cannot reach 1,000/s.
	const writers = 4
	start := time.Now()
	var sent atomic.Int64
	var wwg sync.WaitGroup
	werr := make(chan error, writers)
	for w := 0; w < writers; w++ {
		conn, err := db.Conn("soak")
		if err != nil {
			t.Fatal(err)
		}
		wwg.Add(1)
		go func(w int) {
			defer wwg.Done()
			defer conn.Close()
			tick := time.NewTicker(time.Second * writers / time.Duration(*tps))
			defer tick.Stop()
			for i := w; time.Since(start) < *duration; i += writers {
				<-tick.C
				q := fmt.Sprintf("INSERT INTO s%d (sent, pad) VALUES (%d, 'soak payload of a modest size')", i%*streams, time.Now().UnixNano())
				if _, err := conn.Execute(q); err != nil {
					werr <- err
					return
				}
				sent.Add(1)
			}
		}(w)
	}
	// RSS once warm (after a minute, or a tenth of a short run) and at the end.
	warmAt := min(time.Minute, *duration/10)
	time.Sleep(warmAt)
	rssWarm := rss(v.Pid())
	wwg.Wait()
	close(werr)
	if err := <-werr; err != nil {
		t.Fatal(err)
	}
	n := int(sent.Load())
	elapsed := time.Since(start)
	time.Sleep(2 * time.Second)
	rssEnd := rss(v.Pid())
	cancel()
	wg.Wait()
	slices.Sort(latencies)
	pct := func(p float64) time.Duration {
		if len(latencies) == 0 {
			return 0
		}
		return latencies[int(float64(len(latencies)-1)*p)]
	}
	report := fmt.Sprintf("soak: %s, %d transactions (%.0f/s), %d streams, %d rows received, %.0f events/s; commit-to-client latency p50 %s, p99 %s; vstreamd RSS %.1f MiB at start, %.1f MiB after %s, %.1f MiB at end",
		elapsed.Round(time.Second), n, float64(n)/elapsed.Seconds(), *streams, len(latencies), float64(events.Load())/elapsed.Seconds(),
		pct(0.50).Round(10*time.Microsecond), pct(0.99).Round(10*time.Microsecond),
		float64(rssStart)/(1<<20), float64(rssWarm)/(1<<20), warmAt, float64(rssEnd)/(1<<20))
	fmt.Println(report)
	if len(latencies) != n {
		t.Errorf("sent %d rows, received %d", n, len(latencies))
	}
}
