package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/vstream-cdc/vstream/client"
	"github.com/vstream-cdc/vstream/internal/sinktest"
	"github.com/vstream-cdc/vstream/internal/testkit"
	"github.com/vstream-cdc/vstream/internal/testserver"
	"github.com/vstream-cdc/vstream/sink"
	"github.com/vstream-cdc/vstream/sink/claimcheck"
)

// bigText is the big row's text: 20,000 bytes, more than the 8,192 the brokers take here.
var bigText = strings.Repeat("0123456789abcdefghij", 1000)

// fakeS3 serves an in-memory S3-compatible store (gofakes3) with the bucket "claims"; the
// sink reaches it with the credentials the environment gives, as in production.
func fakeS3(t *testing.T) (endpoint string, backend *s3mem.Backend) {
	backend = s3mem.New()
	if err := backend.CreateBucket("claims"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	t.Cleanup(srv.Close)
	t.Setenv("AWS_ACCESS_KEY_ID", "claim-user")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "claim-secret")
	return srv.URL, backend
}

// objects counts the claim-check objects a store holds.
func objects(t *testing.T, dir string, backend *s3mem.Backend) int {
	t.Helper()
	if dir == "" {
		list, err := backend.ListBucket("claims", nil, gofakes3.ListBucketPage{})
		if err != nil {
			t.Fatal(err)
		}
		return len(list.Contents)
	}
	n := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestOversize: vstream-sink on Kafka (max record bytes 8,192) and NATS (a stream whose
// max_msg_size is 8,192), on a transaction of a 20,000-byte row and a small one: with
// on-oversize key-only the big row arrives as its key and headers with an empty value, with
// claim-check (a directory, and an S3-compatible server) as a reference to the stored
// value, which holds the whole Debezium record; the row after it arrives, no record holds
// the big text, and the metrics count the outcome. With fail, the sink stops naming the
// record and nothing after it arrives.
func TestOversize(t *testing.T) {
	addr := testserver.Serve(t, db, "sinkcmd")
	if err := db.Exec("DROP TABLE IF EXISTS big", "CREATE TABLE big (id INT PRIMARY KEY, b LONGTEXT)"); err != nil {
		t.Fatal(err)
	}
	s3URL, backend := fakeS3(t)
	type brokerSetup struct {
		name  string
		start func(t *testing.T) (args []string, read func(want int) []sinktest.Got)
	}
	brokers := []brokerSetup{
		{"kafka", func(t *testing.T) ([]string, func(int) []sinktest.Got) {
			b := sinktest.Kafka(t, 1)
			return []string{"--sink", "kafka", "--kafka-brokers", strings.Join(b, ","), "--kafka-max-record-bytes", "8192"},
				func(want int) []sinktest.Got { return sinktest.ReadKafka(t, b, `^cdc\.`, want, time.Second) }
		}},
		{"nats", func(t *testing.T) ([]string, func(int) []sinktest.Got) {
			ns := sinktest.StartNATS(t)
			js := sinktest.JetStream(t, ns.URL())
			if _, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: "BIG", Subjects: []string{"cdc.>"}, MaxMsgSize: 8192, Duplicates: time.Minute}); err != nil {
				t.Fatal(err)
			}
			return []string{"--sink", "nats", "--nats-url", ns.URL(), "--nats-stream", "BIG"},
				func(want int) []sinktest.Got { return sinktest.ReadNATS(t, ns.URL(), "BIG", want, time.Second) }
		}},
	}
	id := 0
	for _, b := range brokers {
		for _, mode := range []string{"fail", "key-only", "claim-check file", "claim-check s3"} {
			t.Run(b.name+"/"+mode, func(t *testing.T) {
				args, read := b.start(t)
				id += 10
				dir := ""
				store := ""
				switch mode {
				case "claim-check file":
					dir = t.TempDir()
					store = "file://" + dir
				case "claim-check s3":
					store = "s3://claims/cdc?endpoint=" + s3URL
				}
				before := 0
				if strings.HasPrefix(mode, "claim-check") {
					before = objects(t, dir, backend)
				}
				metrics := freeAddr(t)
				args = append(args, "--server", addr, "--format", "debezium-json", "--tables", "big", "--topic-prefix", "cdc.",
					"--name", fmt.Sprintf("over%d", id), "--position", sinktest.Position(t, db, "sinkcmd"),
					"--heartbeat", "200ms", "--checkpoint-interval", "200ms", "--metrics-listen", metrics,
					"--on-oversize", strings.Fields(mode)[0])
				if store != "" {
					args = append(args, "--claim-check-url", store)
				}
				var stderr syncBuffer
				code := make(chan int, 1)
				go func() { code <- run(args, env(nil), &stderr) }()
				if err := db.Exec(fmt.Sprintf("INSERT INTO big VALUES (%d, 'before')", id+1)); err != nil {
					t.Fatal(err)
				}
				testkit.WaitFor(t, time.Minute, "the row before", func() bool { return len(read(1)) == 1 })
				if err := db.Exec("BEGIN", fmt.Sprintf("INSERT INTO big VALUES (%d, '%s')", id+2, bigText),
					fmt.Sprintf("INSERT INTO big VALUES (%d, 'after')", id+3), "COMMIT"); err != nil {
					t.Fatal(err)
				}
				if mode == "fail" {
					select {
					case c := <-code:
						if c != 1 || !strings.Contains(stderr.String(), fmt.Sprintf("record over%d/", id)) {
							t.Fatalf("exit %d, want 1 with an error naming the record:\n%s", c, stderr.String())
						}
					case <-time.After(time.Minute):
						t.Fatalf("still running after a minute:\n%s", stderr.String())
					}
					if got := read(3); len(got) != 1 || !strings.Contains(string(got[0].Value), "before") {
						t.Fatalf("%d records after the failure, want the one before alone", len(got))
					}
					return
				}
				var got []sinktest.Got
				testkit.WaitFor(t, time.Minute, "three records", func() bool {
					got = read(3)
					return len(got) == 3
				})
				out := strings.Fields(mode)[0]
				m := scrape(t, metrics)
				want := fmt.Sprintf(`vstream_sink_oversize_records_total{outcome="%s",sink="%s"} 1`, out, b.name)
				if !strings.Contains(m, want) {
					t.Errorf("metrics lack %s", want)
				}
				stopRun(t, code, &stderr)
				for i, g := range got {
					if strings.Contains(string(g.Value), bigText[:100]) {
						t.Fatalf("record %d holds the big text", i)
					}
				}
				if !strings.Contains(string(got[0].Value), "before") || !strings.Contains(string(got[2].Value), "after") {
					t.Fatalf("records around the big one: %q, %q", got[0].Value, got[2].Value)
				}
				marker := got[1]
				if !strings.Contains(marker.Key, fmt.Sprint(id+2)) || marker.Tombstone {
					t.Fatalf("marker key %q tombstone %v, want the big row's key and a value", marker.Key, marker.Tombstone)
				}
				h := marker.Headers
				if h[sink.HeaderOversize] != out || h[sink.HeaderOversizeLimit] != "8192" || !strings.Contains(h[sink.HeaderOversizeReason], "more than") {
					t.Fatalf("marker headers %v", h)
				}
				if out == "key-only" {
					if len(marker.Value) != 0 {
						t.Fatalf("key-only value %q, want empty", marker.Value)
					}
					return
				}
				var ref struct {
					CC struct {
						URI    string `json:"uri"`
						Bytes  int    `json:"bytes"`
						SHA256 string `json:"sha256"`
					} `json:"vstream_claim_check"`
				}
				if err := json.Unmarshal(marker.Value, &ref); err != nil || ref.CC.URI != h[sink.HeaderClaimCheckURI] || ref.CC.URI == "" {
					t.Fatalf("reference value %q (%v), header uri %q", marker.Value, err, h[sink.HeaderClaimCheckURI])
				}
				st, err := claimcheck.Open(context.Background(), store)
				if err != nil {
					t.Fatal(err)
				}
				payload, err := st.Get(context.Background(), ref.CC.URI)
				if err != nil {
					t.Fatal(err)
				}
				var rec struct {
					Payload struct {
						After struct {
							ID int    `json:"id"`
							B  string `json:"b"`
						} `json:"after"`
					} `json:"payload"`
				}
				if err := json.Unmarshal(payload, &rec); err != nil || rec.Payload.After.ID != id+2 || rec.Payload.After.B != bigText || len(payload) != ref.CC.Bytes {
					t.Fatalf("stored payload of %d bytes (%v): id %d, text of %d bytes", len(payload), err, rec.Payload.After.ID, len(rec.Payload.After.B))
				}
				if n := objects(t, dir, backend) - before; n != 1 {
					t.Fatalf("%d objects stored, want 1", n)
				}
			})
		}
	}
}

func scrape(t *testing.T, addr string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// stopRun stops a run with SIGTERM, which must end it with status 0.
func stopRun(t *testing.T, code <-chan int, stderr *syncBuffer) {
	t.Helper()
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-code:
		if c != 0 {
			t.Fatalf("exit %d:\n%s", c, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no stop after SIGTERM:\n%s", stderr.String())
	}
}

// TestClaimCheckReplay: a claim-check sink whose commits fail (every other one after it
// reached the broker) delivers the big rows again and again from its last committed
// position; each row's object is written under the same name every time, so the store holds
// one object per big row, and the broker one reference per big row.
func TestClaimCheckReplay(t *testing.T) {
	addr := testserver.Serve(t, db, "sinkcmd")
	if err := db.Exec("DROP TABLE IF EXISTS big", "CREATE TABLE big (id INT PRIMARY KEY, b LONGTEXT)"); err != nil {
		t.Fatal(err)
	}
	brokers := sinktest.Kafka(t, 1)
	dir := t.TempDir()
	cfg, err := loadConfig([]string{"--sink", "kafka", "--kafka-brokers", strings.Join(brokers, ","), "--kafka-max-record-bytes", "8192",
		"--format", "debezium-json", "--tables", "big", "--topic-prefix", "cdc.", "--name", "replay",
		"--position", sinktest.Position(t, db, "sinkcmd"), "--on-oversize", "claim-check", "--claim-check-url", "file://" + dir}, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	pub, err := newPublisher(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	over, err := openOversize(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.Dial(addr, client.Options{Logger: sinktest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// Every commit fails: the odd ones before they reach the broker, so that their records
	// are delivered again, the even ones after.
	flaky := &sinktest.Flaky{Publisher: pub, Every: 1}
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- sink.Run(ctx, sink.Config{Name: cfg.Name, Client: cl, Publisher: flaky, Request: cfg.parsed.request, Topics: cfg.parsed.topics,
			Oversize: over, CheckpointInterval: 100 * time.Millisecond, Logger: sinktest.Logger(t), Stop: stop,
			Backoff: func() backoff.BackOff { return backoff.NewConstantBackOff(50 * time.Millisecond) }})
	}()
	const rows = 6
	for i := 1; i <= rows; i++ {
		if err := db.Exec("BEGIN", fmt.Sprintf("INSERT INTO big VALUES (%d, '%s')", i, bigText),
			fmt.Sprintf("INSERT INTO big VALUES (%d, 'small')", 100+i), "COMMIT"); err != nil {
			t.Fatal(err)
		}
		// One transaction at a time, each in commits of its own.
		testkit.WaitFor(t, time.Minute, "the transaction", func() bool {
			return len(sinktest.ReadKafka(t, brokers, `^cdc\.`, 2*i, 300*time.Millisecond)) >= 2*i
		})
	}
	got := sinktest.ReadKafka(t, brokers, `^cdc\.`, 2*rows+1, time.Second)
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if flaky.Failed.Load() < 2 {
		t.Fatalf("%d commits failed, want some", flaky.Failed.Load())
	}
	refs := map[string]int{}
	for _, g := range got {
		if u := g.Headers[sink.HeaderClaimCheckURI]; u != "" {
			refs[u]++
		}
	}
	if len(got) != 2*rows || len(refs) != rows {
		t.Fatalf("%d records, %d distinct references; want %d and %d", len(got), len(refs), 2*rows, rows)
	}
	for u, n := range refs {
		if n != 1 {
			t.Errorf("reference %s delivered %d times", u, n)
		}
	}
	if n := objects(t, dir, nil); n != rows {
		t.Fatalf("%d objects in the store after the replays, want %d", n, rows)
	}
}

// A claim-check bucket that does not exist ends vstream-sink at start, naming the bucket,
// and the store's secret is not in the output.
func TestClaimCheckNoBucket(t *testing.T) {
	s3URL, _ := fakeS3(t)
	out := runFails(t, []string{"--sink", "kafka", "--kafka-brokers", "127.0.0.1:1", "--format", "debezium-json", "--server", "127.0.0.1:1",
		"--on-oversize", "claim-check", "--claim-check-url", "s3://nope/x?endpoint=" + s3URL}, nil, "claim-secret")
	if !strings.Contains(out, "s3://nope") || !strings.Contains(out, "no such bucket") {
		t.Fatalf("the error does not name the bucket:\n%s", out)
	}
}

// TestColumnMasksSink: vstream-sink's --column-masks reach the server: the copied row and a
// binlog row arrive in Kafka with the column hashed, never in clear.
func TestColumnMasksSink(t *testing.T) {
	addr := testserver.Serve(t, db, "sinkcmd")
	if err := db.Exec("DROP TABLE IF EXISTS masked", "CREATE TABLE masked (id INT PRIMARY KEY, email VARCHAR(64))",
		"INSERT INTO masked VALUES (1, 'one@secret.example')"); err != nil {
		t.Fatal(err)
	}
	brokers := sinktest.Kafka(t, 1)
	args := []string{"--sink", "kafka", "--kafka-brokers", strings.Join(brokers, ","), "--server", addr, "--format", "debezium-json",
		"--tables", "masked", "--topic-prefix", "cdc.", "--name", "masks", "--position", "copy", "--heartbeat", "200ms",
		"--checkpoint-interval", "200ms", "--column-masks", "mask.hash.SHA-256.with.salt.pepper=masked.email"}
	var stderr syncBuffer
	code := make(chan int, 1)
	go func() { code <- run(args, env(nil), &stderr) }()
	testkit.WaitFor(t, time.Minute, "the copied row", func() bool {
		return len(sinktest.ReadKafka(t, brokers, `^cdc\..*masked$`, 1, 300*time.Millisecond)) == 1
	})
	if err := db.Exec("INSERT INTO masked VALUES (2, 'two@secret.example')"); err != nil {
		t.Fatal(err)
	}
	var got []sinktest.Got
	testkit.WaitFor(t, time.Minute, "the binlog row", func() bool {
		got = sinktest.ReadKafka(t, brokers, `^cdc\..*masked$`, 2, 300*time.Millisecond)
		return len(got) == 2
	})
	stopRun(t, code, &stderr)
	for i, email := range []string{"one@secret.example", "two@secret.example"} {
		sum := sha256.Sum256([]byte("pepper" + email))
		if v := string(got[i].Value); strings.Contains(v, email) || !strings.Contains(v, hex.EncodeToString(sum[:])) {
			t.Errorf("record %d: %s", i, v)
		}
	}
}
