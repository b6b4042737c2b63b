package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vstream-cdc/vstream/internal/sinktest"
	"github.com/vstream-cdc/vstream/internal/testkit"
)

// freeAddr is a loopback address nothing listens on (just now).
func freeAddr(t *testing.T) string {
	t.Helper()
	addr, err := testkit.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// waitPipelinesCommitted waits (up to 20 s, then goes on) until each pipeline of the sink
// process serving metrics on addr has committed once (the counters start at 0 in each
// process), or writing() is false: with no changes coming, an idle start may commit nothing.
func waitPipelinesCommitted(t *testing.T, addr, broker string, writing func() bool, pipelines ...string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline) && writing(); time.Sleep(20 * time.Millisecond) {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		all := true
		for _, p := range pipelines {
			series := fmt.Sprintf(`vstream_sink_commits_total{pipeline="%s",sink="%s"} `, p, broker)
			all = all && regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(series)+`[1-9]`).Match(body)
		}
		if all {
			return
		}
	}
	if writing() {
		t.Logf("the pipelines did not all commit within 20 s of the start; killing it anyway")
	}
}

// TestKillPipelines runs one vstream-sink process with two pipelines from one YAML file:
// "orders" (table po, debezium-json, topics orders.*) and "audit" (table pa, canal-json into
// Kafka or avro into NATS, topics audit.*; on NATS a JetStream stream of its own), while two
// writers change the tables. The process is killed with SIGKILL 6 times at random moments and
// started again (NATS restarted at every other kill), most kills after each pipeline of the
// start committed. Afterwards each pipeline's topics hold its own table's changes exactly once, in order per key, and nothing of the other's; each
// pipeline resumed from its own committed position after the kills; vstreamd's status page
// lists both as sinks, by name; the sink's /metrics counts each under its pipeline label; and
// SIGTERM stops the process with exit status 0. A file naming two pipelines alike is refused
// at start with exit status 2.
func TestKillPipelines(t *testing.T) {
	for _, c := range []struct {
		broker, auditFormat string
		seed                uint64
	}{
		{"kafka", "canal-json", 71},
		{"nats", "avro", 72},
	} {
		t.Run(c.broker, func(t *testing.T) {
			status := freeAddr(t)
			v := startVstreamd(t, "--metrics-listen", status)
			orders := sinktest.NewTableWriter(t, db, "po", 20, c.seed)
			audit := sinktest.NewTableWriter(t, db, "pa", 20, c.seed+100)
			metrics := freeAddr(t)
			yml := fmt.Sprintf(`server: %s
sink: %s
position: %s
heartbeat: 200ms
checkpoint-interval: 200ms
max-batch-bytes: "4096"
log-level: debug
metrics-listen: %s
`, v.Addr, c.broker, sinktest.Position(t, db, "chaos"), metrics)
			var readOrders, readAudit func(want int, quiet time.Duration) []sinktest.Got
			var nats *sinktest.NATSServer
			auditExtra := ""
			switch c.broker {
			case "kafka":
				brokers := sinktest.Kafka(t, 3)
				yml += "kafka-brokers: " + strings.Join(brokers, ",") + "\n"
				readOrders = func(want int, quiet time.Duration) []sinktest.Got {
					return sinktest.ReadKafka(t, brokers, `^orders\.`, want, quiet)
				}
				readAudit = func(want int, quiet time.Duration) []sinktest.Got {
					return sinktest.ReadKafka(t, brokers, `^audit\.`, want, quiet)
				}
			case "nats":
				nats = sinktest.StartNATS(t)
				yml += "nats-url: " + nats.URL() + "\n"
				// A JetStream stream takes the subjects of one prefix: audit has a stream of
				// its own.
				auditExtra = "    nats-stream: AUDIT\n"
				readOrders = func(want int, quiet time.Duration) []sinktest.Got {
					return sinktest.ReadNATS(t, nats.URL(), "VSTREAM", want, quiet)
				}
				readAudit = func(want int, quiet time.Duration) []sinktest.Got {
					return sinktest.ReadNATS(t, nats.URL(), "AUDIT", want, quiet)
				}
			}
			yml += fmt.Sprintf(`pipelines:
  - name: orders
    tables: po
    format: debezium-json
    topic-prefix: orders.
  - name: audit
    tables: pa
    format: %s
    topic-prefix: audit.
    default-topic: changes
%s`, c.auditFormat, auditExtra)
			dir := t.TempDir()
			file := filepath.Join(dir, "pipelines.yaml")
			if err := os.WriteFile(file, []byte(yml), 0o644); err != nil {
				t.Fatal(err)
			}

			// Two pipelines of one name: refused before anything starts.
			dup := filepath.Join(dir, "dup.yaml")
			if err := os.WriteFile(dup, []byte(strings.Replace(yml, "name: audit", "name: orders", 1)), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(sinkBin, "--config", dup).CombinedOutput()
			if ee, ok := errors.AsType[*exec.ExitError](err); !ok || ee.ExitCode() != 2 ||
				!strings.Contains(string(out), `pipelines entries 1 and 2 are both named "orders"`) {
				t.Fatalf("two pipelines named orders: %v\n%s", err, out)
			}

			s := startSink(t, nil, "--config", file)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			werr := make(chan error, 2)
			var writers atomic.Int32
			writers.Store(2)
			writing := func() bool { return writers.Load() > 0 }
			for _, w := range []*sinktest.Writer{orders, audit} {
				go func() {
					defer writers.Add(-1)
					werr <- w.Run(ctx, 300, 3*time.Millisecond)
				}()
			}
			rng := rand.New(rand.NewPCG(c.seed, 3))
			for i := range 6 {
				// Most kills come after each pipeline of the start has committed (on a loaded
				// machine a start can take longer than the pause alone), every fourth at any
				// moment.
				if i%4 != 3 {
					waitPipelinesCommitted(t, metrics, c.broker, writing, "orders", "audit")
				}
				time.Sleep(time.Duration(150+rng.IntN(300)) * time.Millisecond)
				_ = s.signal(os.Kill)
				if nats != nil && i%2 == 1 {
					nats.Restart()
				}
				s.start()
			}
			for range 2 {
				if err := <-werr; err != nil {
					t.Fatal(err)
				}
			}
			// A few more for the last start, whose metrics are read below.
			if err := orders.Run(context.Background(), 5, 0); err != nil {
				t.Fatal(err)
			}
			if err := audit.Run(context.Background(), 5, 0); err != nil {
				t.Fatal(err)
			}
			caughtUp := func() bool {
				return sinktest.Count(readOrders(orders.Changes()+100, 300*time.Millisecond)) >= orders.Changes() &&
					sinktest.Count(readAudit(audit.Changes()+100, 300*time.Millisecond)) >= audit.Changes()
			}
			for deadline := time.Now().Add(60 * time.Second); !caughtUp(); time.Sleep(100 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("the broker did not get every change; sink log:\n%s", s.logTail(4000))
				}
			}

			// vstreamd's status page lists each pipeline as a sink of its own, with its format,
			// filter and position (and lags).
			var st struct {
				Streams []struct {
					Sink     string `json:"sink"`
					Format   string `json:"format"`
					Filter   string `json:"filter"`
					Position string `json:"position"`
				} `json:"streams"`
			}
			resp, err := http.Get("http://" + status + "/status.json")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if err := json.Unmarshal(body, &st); err != nil {
				t.Fatalf("status.json: %v\n%s", err, body)
			}
			want := map[string][2]string{"orders": {"debezium-json", "po"}, "audit": {c.auditFormat, "pa"}}
			var sinks []string
			for _, x := range st.Streams {
				sinks = append(sinks, x.Sink)
				if w, ok := want[x.Sink]; !ok || x.Format != w[0] || !strings.Contains(x.Filter, w[1]) || x.Position == "" {
					t.Errorf("vstreamd's status page: stream of sink %q in %s, filter %q, at %q; want %v", x.Sink, x.Format, x.Filter, x.Position, w)
				}
			}
			slices.Sort(sinks)
			// (A stream of a killed start may linger a moment beside its successor.)
			if sinks = slices.Compact(sinks); !slices.Equal(sinks, []string{"audit", "orders"}) {
				t.Errorf("vstreamd's status page lists the sinks %q, want audit and orders:\n%s", sinks, body)
			}
			// The sink's metrics: each pipeline published and committed under its own label.
			resp, err = http.Get("http://" + metrics + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			body, _ = io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			for _, p := range []string{"orders", "audit"} {
				for _, m := range []string{"vstream_sink_commits_total", "vstream_sink_records_total"} {
					series := fmt.Sprintf(`%s{pipeline="%s",sink="%s"}`, m, p, c.broker)
					if !regexp.MustCompile(regexp.QuoteMeta(series) + ` [1-9]`).Match(body) {
						t.Errorf("/metrics has no %s above 0", series)
					}
				}
			}

			if err := s.signal(syscall.SIGTERM); err != nil {
				t.Errorf("SIGTERM: the sink exited with %v, want status 0; log:\n%s", err, s.logTail(4000))
			}
			// Each topic holds its own table's changes, once each and in order per key: a
			// record of the other table would be a change its writer never made.
			for _, x := range []struct {
				name string
				w    *sinktest.Writer
				read func(int, time.Duration) []sinktest.Got
			}{{"orders", orders, readOrders}, {"audit", audit, readAudit}} {
				t.Run(x.name, func(t *testing.T) {
					var got []sinktest.Got
					for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
						if got = x.read(x.w.Changes()+100, time.Second); sinktest.Count(got) >= x.w.Changes() {
							break
						}
					}
					x.w.Check(t, got)
					if n := sinktest.Count(got); n != x.w.Changes() {
						t.Errorf("%d changes in %s's topics, want %d", n, x.name, x.w.Changes())
					}
				})
			}
			// Each pipeline resumed from its own committed position after the kills.
			log := s.logTail(-1)
			for _, p := range []string{"orders", "audit"} {
				n := strings.Count(log, `msg="sink resuming from its committed position" pipeline=`+p+" ")
				if n < 3 {
					t.Errorf("pipeline %s resumed from its committed position %d times, want at least 3 of the 6 starts", p, n)
				}
				t.Logf("pipeline %s: %d resumes from its committed position", p, n)
			}
		})
	}
}
