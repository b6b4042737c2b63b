package chaos

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/vstream-cdc/vstream/internal/secure/securetest"
	"github.com/vstream-cdc/vstream/internal/sinktest"
)

// sinkBin is the vstream-sink binary TestMain builds.
var sinkBin string

// sinkProc is a vstream-sink process that can be killed and started again.
type sinkProc struct {
	t    *testing.T
	args []string
	// env are more environment variables (secrets).
	env []string
	cmd *exec.Cmd
	log *os.File
}

func startSink(t *testing.T, env []string, args ...string) *sinkProc {
	s := &sinkProc{t: t, args: args, env: env}
	var err error
	if s.log, err = os.Create(filepath.Join(t.TempDir(), "vstream-sink.log")); err != nil {
		t.Fatal(err)
	}
	s.start()
	t.Cleanup(func() { s.signal(os.Kill) })
	return s
}

func (s *sinkProc) start() {
	s.cmd = exec.Command(sinkBin, s.args...)
	s.cmd.Env = append(os.Environ(), s.env...)
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if err := s.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
}

func (s *sinkProc) signal(sig os.Signal) error {
	if s.cmd == nil || s.cmd.Process == nil {
		return nil
	}
	_ = s.cmd.Process.Signal(sig)
	err := s.cmd.Wait()
	s.cmd = nil
	return err
}

// logTail is the last n bytes of the sink's log, all of it for n < 0.
func (s *sinkProc) logTail(n int) string {
	data, _ := os.ReadFile(s.log.Name())
	if n >= 0 && len(data) > n {
		data = data[len(data)-n:]
	}
	return string(data)
}

var commitsMetric = regexp.MustCompile(`(?m)^vstream_sink_commits_total\{[^}]*\} ([0-9.e+]+)$`)

// waitCommitted waits (up to 20 s, then goes on) until the sink process serving metrics on
// addr has committed once (its counter starts at 0 in each process), while writing reports
// that there are changes to commit: a sink that has caught up commits nothing.
func waitCommitted(t *testing.T, addr string, writing func() bool) {
	t.Helper()
	var last string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline) && writing(); time.Sleep(20 * time.Millisecond) {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			last = err.Error()
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		m := commitsMetric.FindSubmatch(body)
		if m != nil && string(m[1]) != "0" {
			return
		}
		last = fmt.Sprintf("%q", m)
	}
	if !writing() {
		return
	}
	t.Logf("the sink did not commit within 20 s of its start (%s); killing it anyway", last)
}

// TestKillSink kills vstream-sink with SIGKILL 10 times at random moments while a writer
// changes the database, starting it again each time (and, for NATS, restarting the broker at
// every other kill; vstreamd is killed and started under the running sink 3 times);
// afterwards the topic or stream holds every change exactly once, in order per key, and a
// SIGTERM stops the sink with exit status 0. The snapshot cases start from a copy of a
// 4,000-row table in 100-row chunks, paced by vstreamd so that most kills land mid-snapshot:
// the topic holds each row once (its state at its chunk's snapshot), then every change after
// it once, in order per key. The secure cases do the same with every
// connection secured: vstreamd with TLS, a client certificate and a token (file), Kafka with
// SASL SCRAM-SHA-512 over mutual TLS, NATS with a user and password over mutual TLS, the
// secrets given through the environment and files.
func TestKillSink(t *testing.T) {
	for _, c := range []struct {
		broker, format string
		seed           uint64
		snapshot       int
		secure         bool
	}{
		{"kafka", "debezium-json", 51, 0, false},
		{"kafka", "canal-json", 52, 0, false},
		{"nats", "debezium-json", 53, 0, false},
		{"nats", "avro", 54, 0, false},
		{"kafka", "debezium-json", 55, 4000, false},
		{"nats", "debezium-json", 56, 4000, false},
		{"kafka", "debezium-json", 57, 0, true},
		{"nats", "debezium-json", 58, 0, true},
	} {
		name := c.broker + "/" + c.format
		if c.snapshot > 0 {
			name += "/snapshot"
		}
		if c.secure {
			name += "/secure"
		}
		t.Run(name, func(t *testing.T) {
			var vflags, sargs, env []string
			var certs securetest.Files
			const user, pass, token = "chaos-sink", "chaos-pass-8Fz", "chaos-token-3Lm"
			if c.secure {
				certs = securetest.New(t)
				tokFile := filepath.Join(t.TempDir(), "token")
				if err := os.WriteFile(tokFile, []byte(token), 0o600); err != nil {
					t.Fatal(err)
				}
				vflags = []string{"--tls-cert", certs.ServerCert, "--tls-key", certs.ServerKey, "--tls-client-ca", certs.CA, "--auth-token-file", tokFile}
				sargs = []string{"--tls-ca", certs.CA, "--tls-cert", certs.ClientCert, "--tls-key", certs.ClientKey, "--token-file", tokFile}
			}
			if c.snapshot > 0 {
				// Paced, the copy outlasts the kills on any machine: at 1,500 rows a second a
				// 100-row chunk takes about 70 ms, so each start of the sink commits a few
				// chunks before its kill, and most kills land mid-snapshot.
				vflags = append(vflags, "--copy-max-rows-per-second", "1500")
			}
			v := startVstreamd(t, vflags...)
			w := sinktest.NewWriter(t, db, max(20, c.snapshot), c.seed)
			start := sinktest.Position(t, db, "chaos")
			if c.snapshot > 0 {
				if err := w.Fill(c.snapshot); err != nil {
					t.Fatal(err)
				}
				start = "copy"
			}
			args := []string{"--server", v.Addr, "--sink", c.broker, "--format", c.format, "--name", "chaos",
				"--tables", "t", "--position", start, "--topic-prefix", "cdc.", "--copy-chunk-rows", "100",
				"--default-topic", "changes", "--heartbeat", "200ms", "--max-batch-bytes", "4096", "--log-level", "debug"}
			var read func(want int, quiet time.Duration) []sinktest.Got
			var nats *sinktest.NATSServer
			switch c.broker {
			case "kafka":
				brokers := sinktest.Kafka(t, 3)
				var readOpts []kgo.Opt
				if c.secure {
					brokers = sinktest.KafkaSASL(t, 3, user, pass, certs.ServerTLS(t), "SCRAM-SHA-512")
					args = append(args, "--kafka-sasl-mechanism", "scram-sha-512", "--kafka-sasl-user", user,
						"--kafka-tls-ca", certs.CA, "--kafka-tls-cert", certs.ClientCert, "--kafka-tls-key", certs.ClientKey)
					env = append(env, "VSTREAM_SINK_KAFKA_SASL_PASSWORD="+pass)
					readOpts = []kgo.Opt{kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()), kgo.DialTLSConfig(certs.ClientTLS(t))}
				}
				args = append(args, "--kafka-brokers", strings.Join(brokers, ","))
				read = func(want int, quiet time.Duration) []sinktest.Got {
					return sinktest.ReadKafka(t, brokers, `^cdc\.`, want, quiet, readOpts...)
				}
			case "nats":
				if c.secure {
					nats = sinktest.StartNATSWith(t, sinktest.NATSConfig{TLS: true,
						Conf: fmt.Sprintf("authorization { user: %q, password: %q }\ntls {\n  cert_file: %q\n  key_file: %q\n  ca_file: %q\n  verify: true\n}\n",
							user, pass, certs.ServerCert, certs.ServerKey, certs.CA),
						ClientOptions: []natsgo.Option{natsgo.UserInfo(user, pass), natsgo.Secure(certs.ClientTLS(t))}})
					args = append(args, "--nats-user", user, "--nats-tls-ca", certs.CA, "--nats-tls-cert", certs.ClientCert, "--nats-tls-key", certs.ClientKey)
					env = append(env, "VSTREAM_SINK_NATS_PASSWORD="+pass)
				} else {
					nats = sinktest.StartNATS(t)
				}
				args = append(args, "--nats-url", nats.URL())
				read = func(want int, quiet time.Duration) []sinktest.Got {
					return sinktest.ReadNATS(t, nats.URL(), "VSTREAM", want, quiet, nats.Options()...)
				}
			}
			args = append(args, sargs...)
			lis, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			metricsAddr := lis.Addr().String()
			_ = lis.Close()
			args = append(args, "--metrics-listen", metricsAddr)
			s := startSink(t, env, args...)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			werr := make(chan error, 1)
			var wrote atomic.Bool
			writing := func() bool { return !wrote.Load() }
			go func() {
				defer wrote.Store(true)
				werr <- w.Run(ctx, 400, 3*time.Millisecond)
			}()
			rng := rand.New(rand.NewPCG(c.seed, 2))
			for i := range 10 {
				// Most kills come after the start has committed (on a loaded machine a start
				// can take longer than the pause alone), every fourth at any moment.
				if i%4 != 3 {
					waitCommitted(t, metricsAddr, writing)
				}
				time.Sleep(time.Duration(100+rng.IntN(300)) * time.Millisecond)
				_ = s.signal(os.Kill)
				if nats != nil && i%2 == 1 {
					nats.Restart()
				}
				s.start()
				if i%3 == 2 {
					// vstreamd too, under the running sink: the client reconnects, inside a
					// transaction at times, and the sink aborts what it held of it.
					waitCommitted(t, metricsAddr, writing)
					time.Sleep(time.Duration(100+rng.IntN(200)) * time.Millisecond)
					v.Kill()
					runVstreamd(t, v)
				}
			}
			if err := <-werr; err != nil {
				t.Fatal(err)
			}
			// A few more for the last start, whose metrics are read below.
			if err := w.Run(context.Background(), 5, 0); err != nil {
				t.Fatal(err)
			}
			want := w.Changes()
			caughtUpIn := func(got []sinktest.Got) bool { return sinktest.Count(got) >= want }
			if c.snapshot > 0 {
				caughtUpIn = func(got []sinktest.Got) bool { return w.LastChanges(got) >= w.SnapshotCount() }
			}
			deadline := time.Now().Add(60 * time.Second)
			for !caughtUpIn(read(want+100, 300*time.Millisecond)) {
				if time.Now().After(deadline) {
					t.Fatalf("the broker did not get every change; sink log:\n%s", s.logTail(4000))
				}
				time.Sleep(100 * time.Millisecond)
			}
			// The last start's metrics: it published and committed (at least the last five).
			resp, err := http.Get("http://" + metricsAddr + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			for _, m := range []string{`vstream_sink_commits_total{sink="` + c.broker + `"}`, `vstream_sink_records_total{sink="` + c.broker + `"}`} {
				if !regexp.MustCompile(regexp.QuoteMeta(m) + ` [1-9]`).Match(body) {
					t.Errorf("/metrics has no %s above 0:\n%s", m, body)
				}
			}
			if err := s.signal(syscall.SIGTERM); err != nil {
				t.Errorf("SIGTERM: the sink exited with %v, want status 0; log:\n%s", err, s.logTail(4000))
			}
			// A read ends at its first quiet second, and a loaded broker can leave a partition
			// quiet that long: read again (for a while) until the records are whole.
			var got []sinktest.Got
			for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
				if got = read(want+100, time.Second); caughtUpIn(got) {
					break
				}
			}
			if c.snapshot > 0 {
				w.CheckSnapshot(t, got)
			} else {
				w.Check(t, got)
			}
			// Kills that landed while the writer ran: the sink resumed from a position it had
			// committed, not from the start.
			log := s.logTail(-1)
			if c.secure && (strings.Contains(log, pass) || strings.Contains(log, token)) {
				t.Error("a secret is in the sink's log")
			}
			// A snapshot's first commit waits for a whole chunk: on a busy machine the first
			// kills land before it, and the sink starts the copy afresh (checked below:
			// some resume mid-copy).
			least := 5
			if c.snapshot > 0 {
				least = 1
			}
			if n := strings.Count(log, "sink resuming from its committed position"); n < least {
				t.Errorf("the sink resumed from a committed position %d times, want at least %d of the 10 starts", n, least)
			}
			if c.snapshot > 0 {
				// The copy's position names the table's last key: a resume from one is a
				// resume mid-snapshot.
				mid := regexp.MustCompile(`sink resuming from its committed position" position=\S*\|t:`).FindAllString(log, -1)
				if len(mid) == 0 {
					t.Error("no kill landed mid-snapshot: the sink never resumed from a copy position")
				}
				t.Logf("resumes mid-snapshot: %d", len(mid))
			}
			reconnects := strings.Count(log, "vstream stream broken, reconnecting")
			if reconnects == 0 {
				t.Error("the sink's client never reconnected to vstreamd")
			}
			t.Logf("%d changes; resumes from a committed position: %d; reconnects to vstreamd: %d",
				want, strings.Count(log, "sink resuming from its committed position"), reconnects)
		})
	}
}
