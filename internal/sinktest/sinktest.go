// Package sinktest holds what the sink's tests share: a vstreamd server on the test
// database (MariaDB or MySQL), an in-process Kafka cluster (franz-go's kfake), a real nats-server process, a
// writer whose every change carries a unique marker, and the check that a broker holds
// every change exactly once and in order per key.
package sinktest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vstream-cdc/vstream/internal/testdb"
)

// Kafka starts an in-process Kafka cluster (transactions included) whose topics are made
// on first use with partitions partitions, and returns its seed brokers.
func Kafka(t testing.TB, partitions int) []string {
	t.Helper()
	return KafkaWith(t, partitions, nil)
}

// KafkaWith is Kafka with broker configs, e.g. message.max.bytes.
func KafkaWith(t testing.TB, partitions int, configs map[string]string) []string {
	t.Helper()
	return KafkaCluster(t, partitions, configs).ListenAddrs()
}

// KafkaCluster is KafkaWith returning the cluster itself, whose control functions
// (ControlKey, SleepControl) let a test hold or fail the requests it handles.
func KafkaCluster(t testing.TB, partitions int, configs map[string]string) *kfake.Cluster {
	t.Helper()
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(partitions)}
	if configs != nil {
		opts = append(opts, kfake.BrokerConfigs(configs))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// Got is one record read back from a broker.
type Got struct {
	Topic, Key string
	Value      []byte
	Tombstone  bool
	Headers    map[string]string
	// Order names the sequence the broker keeps the record's order in: a Kafka partition,
	// or the JetStream stream.
	Order string
}

// ReadKafka reads, with isolation.level=read_committed, every record of the topics that
// match the regular expression, until want records came or no record came for quiet.
// Extra are more client options: the cluster's SASL or TLS.
func ReadKafka(t testing.TB, brokers []string, topics string, want int, quiet time.Duration, extra ...kgo.Opt) []Got {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...), kgo.ConsumeRegex(), kgo.ConsumeTopics(topics),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.MetadataMinAge(100 * time.Millisecond)}, extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []Got
	for len(out) < want {
		ctx, cancel := context.WithTimeout(context.Background(), quiet)
		fetches := cl.PollFetches(ctx)
		cancel()
		if fetches.IsClientClosed() {
			break
		}
		n := 0
		fetches.EachRecord(func(r *kgo.Record) {
			n++
			g := Got{Topic: r.Topic, Key: string(r.Key), Value: r.Value, Tombstone: r.Value == nil,
				Order: r.Topic + "/" + strconv.Itoa(int(r.Partition)), Headers: map[string]string{}}
			for _, h := range r.Headers {
				g.Headers[h.Key] = string(h.Value)
			}
			out = append(out, g)
		})
		if n == 0 {
			break
		}
	}
	return out
}

// NATSServer is a nats-server process with JetStream, on a port of its own, that a test can
// restart; its store survives restarts.
type NATSServer struct {
	t    testing.TB
	bin  string
	port int
	dir  string
	cmd  *exec.Cmd
	// conf is the configuration file given to the server, when it has one.
	conf string
	// opts are the client options that reach it (its credentials, its TLS).
	opts []nats.Option
	tls  bool
}

// NATSConfig configures a nats-server that wants credentials or TLS.
type NATSConfig struct {
	// Conf is put in the server's configuration file, e.g. an authorization block or a tls
	// block; the listen address, JetStream and its store are set apart from it.
	Conf string
	// TLS says the server wants TLS: its URL is tls://.
	TLS bool
	// ClientOptions are what a client needs to connect (credentials, TLS): the server's
	// readiness check and the helpers given Options() use them.
	ClientOptions []nats.Option
}

// RequireNATSEnv is the variable that makes a missing nats-server a failure rather than a
// skip: make test sets it, so that CI cannot pass without the broker tests.
const RequireNATSEnv = "VSTREAM_REQUIRE_NATS"

// StartNATS starts nats-server -js (Debian's nats-server package; scripts/install-deps.sh
// installs it). Without it the test is skipped, or fails when RequireNATSEnv is set.
func StartNATS(t testing.TB) *NATSServer {
	t.Helper()
	return StartNATSWith(t, NATSConfig{})
}

// StartNATSWith is StartNATS with a configuration: credentials, TLS.
func StartNATSWith(t testing.TB, nc NATSConfig) *NATSServer {
	t.Helper()
	bin, err := exec.LookPath("nats-server")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/nats-server"); serr == nil {
			bin, err = "/usr/sbin/nats-server", nil
		}
	}
	if err != nil {
		if os.Getenv(RequireNATSEnv) != "" {
			t.Fatalf("nats-server is not installed (%v) and %s is set: run scripts/install-deps.sh", err, RequireNATSEnv)
		}
		t.Skipf("nats-server is not installed (%v); scripts/install-deps.sh installs it", err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := lis.Addr().(*net.TCPAddr).Port
	if err := lis.Close(); err != nil {
		t.Fatal(err)
	}
	s := &NATSServer{t: t, bin: bin, port: port, dir: t.TempDir(), opts: nc.ClientOptions, tls: nc.TLS}
	if nc.Conf != "" {
		s.conf = filepath.Join(s.dir, "nats-server.conf")
		if err := os.WriteFile(s.conf, []byte(nc.Conf), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s.Start()
	t.Cleanup(s.Stop)
	return s
}

// URL is the server's client URL.
func (s *NATSServer) URL() string {
	if s.tls {
		return fmt.Sprintf("tls://127.0.0.1:%d", s.port)
	}
	return fmt.Sprintf("nats://127.0.0.1:%d", s.port)
}

// Options are the client options that reach the server (NATSConfig.ClientOptions).
func (s *NATSServer) Options() []nats.Option { return s.opts }

// Log is what the server has logged so far.
func (s *NATSServer) Log() string {
	data, _ := os.ReadFile(filepath.Join(s.dir, "nats-server.log"))
	return string(data)
}

// Start starts the process and waits until it accepts connections.
func (s *NATSServer) Start() {
	s.t.Helper()
	logf, err := os.OpenFile(filepath.Join(s.dir, "nats-server.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		s.t.Fatal(err)
	}
	args := []string{"-js", "-a", "127.0.0.1", "-p", strconv.Itoa(s.port), "-sd", filepath.Join(s.dir, "store")}
	if s.conf != "" {
		args = append(args, "-c", s.conf)
	}
	s.cmd = exec.Command(s.bin, args...)
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	if err := s.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	logf.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		nc, err := nats.Connect(s.URL(), append([]nats.Option{nats.Timeout(time.Second)}, s.opts...)...)
		if err == nil {
			js, jerr := jetstream.New(nc)
			if jerr == nil {
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				_, jerr = js.AccountInfo(ctx)
				cancel()
			}
			nc.Close()
			if jerr == nil {
				return
			}
		}
		if time.Now().After(deadline) {
			data, _ := os.ReadFile(filepath.Join(s.dir, "nats-server.log"))
			s.t.Fatalf("nats-server did not start: %v\n%s", err, data)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop stops the process cleanly (SIGTERM), or kills it after 10s.
func (s *NATSServer) Stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
	s.cmd = nil
}

// Restart stops and starts the server.
func (s *NATSServer) Restart() {
	s.Stop()
	s.Start()
}

// JetStream connects to the NATS server at url for a test's own reads and settings; the
// connection closes with the test.
func JetStream(t testing.TB, url string, opts ...nats.Option) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// ReadNATS reads every message of a stream from its start, until want messages came or no
// message came for quiet.
func ReadNATS(t testing.TB, url, stream string, want int, quiet time.Duration, opts ...nats.Option) []Got {
	t.Helper()
	js := JetStream(t, url, opts...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cons, err := js.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{})
	// A stream the sink is creating just then refuses consumers for a moment ("invalid
	// stream"): asked again, as a reader would.
	for i := 0; consumerCreateFailed(err) && i < 20; i++ {
		time.Sleep(50 * time.Millisecond)
		cons, err = js.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{})
	}
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []Got
	for len(out) < want {
		batch, err := cons.Fetch(min(want-len(out), 500), jetstream.FetchMaxWait(quiet))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for m := range batch.Messages() {
			n++
			g := Got{Topic: m.Subject(), Value: m.Data(), Order: stream, Headers: map[string]string{}}
			for k := range m.Headers() {
				g.Headers[k] = m.Headers().Get(k)
			}
			g.Key = g.Headers["Vstream-Key"]
			g.Tombstone = g.Headers["Vstream-Tombstone"] == "true"
			out = append(out, g)
		}
		if n == 0 {
			break
		}
	}
	return out
}

// Writer changes rows of a table (id INT PRIMARY KEY, note VARCHAR(32)), t unless
// NewTableWriter names another, in transactions; each change writes a note k<id>-s<seq>
// with a sequence number of its own, so a record names the change it carries, in any format.
type Writer struct {
	DB    *testdb.Server
	Keys  int
	table string
	rng   *rand.Rand
	seq   int
	mu    sync.Mutex
	perID map[int][]int
	exist map[int]bool
}

// NewWriter creates the table (dropping an old one) and returns a writer over keys rows.
func NewWriter(t testing.TB, db *testdb.Server, keys int, seed uint64) *Writer {
	t.Helper()
	return NewTableWriter(t, db, "t", keys, seed)
}

// NewTableWriter is NewWriter on the table named table: writers of two tables, each
// checking what reached the topics of its own.
func NewTableWriter(t testing.TB, db *testdb.Server, table string, keys int, seed uint64) *Writer {
	t.Helper()
	if err := db.Exec("DROP TABLE IF EXISTS "+table, "CREATE TABLE "+table+" (id INT PRIMARY KEY, note VARCHAR(32))"); err != nil {
		t.Fatal(err)
	}
	return &Writer{DB: db, Keys: keys, table: table, rng: rand.New(rand.NewPCG(seed, 7)), perID: map[int][]int{}, exist: map[int]bool{}}
}

// Txn writes one transaction of 1 to 3 changes (an insert for a new id, an update
// otherwise).
func (w *Writer) Txn() error {
	n := 1 + w.rng.IntN(3)
	stmts := []string{"BEGIN"}
	type change struct{ id, seq int }
	var changes []change
	exist := map[int]bool{}
	for range n {
		id := w.rng.IntN(w.Keys)
		w.seq++
		note := fmt.Sprintf("k%03d-s%08d", id, w.seq)
		if w.exist[id] || exist[id] {
			stmts = append(stmts, fmt.Sprintf("UPDATE %s SET note = '%s' WHERE id = %d", w.table, note, id))
		} else {
			stmts = append(stmts, fmt.Sprintf("INSERT INTO %s VALUES (%d, '%s')", w.table, id, note))
			exist[id] = true
		}
		changes = append(changes, change{id, w.seq})
	}
	stmts = append(stmts, "COMMIT")
	if err := w.DB.Exec(stmts...); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for id := range exist {
		w.exist[id] = true
	}
	for _, c := range changes {
		w.perID[c.id] = append(w.perID[c.id], c.seq)
	}
	return nil
}

// Fill inserts rows 0 to n-1 (n at most Keys) in transactions of up to 500 rows: the rows a
// snapshot starts from.
func (w *Writer) Fill(n int) error {
	for from := 0; from < n; from += 500 {
		var b strings.Builder
		b.WriteString("INSERT INTO " + w.table + " VALUES ")
		var seqs []int
		for id := from; id < min(from+500, n); id++ {
			if id > from {
				b.WriteByte(',')
			}
			w.seq++
			fmt.Fprintf(&b, "(%d, 'k%03d-s%08d')", id, id, w.seq)
			seqs = append(seqs, w.seq)
		}
		if err := w.DB.Exec(b.String()); err != nil {
			return err
		}
		w.mu.Lock()
		for i, seq := range seqs {
			w.exist[from+i] = true
			w.perID[from+i] = append(w.perID[from+i], seq)
		}
		w.mu.Unlock()
	}
	return nil
}

// Run writes transactions until ctx ends or n were written, pausing pause between them.
func (w *Writer) Run(ctx context.Context, n int, pause time.Duration) error {
	for i := 0; i < n && ctx.Err() == nil; i++ {
		if err := w.Txn(); err != nil {
			return err
		}
		if pause > 0 {
			time.Sleep(pause)
		}
	}
	return nil
}

// Changes is the number of changes written.
func (w *Writer) Changes() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, s := range w.perID {
		n += len(s)
	}
	return n
}

// Count is the number of records that carry a change.
func Count(got []Got) int {
	n := 0
	for _, g := range got {
		if marker.Match(g.Value) {
			n++
		}
	}
	return n
}

var marker = regexp.MustCompile(`k(\d{3,})-s(\d{8})`)

// Check fails t unless the records hold every change written exactly once, each key's
// changes in the order written within one ordered sequence of the broker. A record's
// change is its newest marker (an update's value may hold the old note too).
func (w *Writer) Check(t testing.TB, got []Got) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	seen, dups := w.perKey(t, got)
	if len(dups) > 0 {
		t.Errorf("%d changes delivered more than once: %s", len(dups), strings.Join(dups[:min(len(dups), 20)], ", "))
	}
	for id, want := range w.perID {
		if !slices.Equal(seen[id], want) {
			t.Errorf("key %d: got changes %v, want %v (in this order, once each)", id, seen[id], want)
		}
	}
}

// CheckSnapshot fails t unless the records hold, for every key written, a snapshot of the
// key and then every change after it exactly once, in order, within one ordered sequence
// of the broker: the changes seen of a key are the last ones written, and at least its
// last. Replaying the records per key gives the table as it is.
func (w *Writer) CheckSnapshot(t testing.TB, got []Got) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	seen, dups := w.perKey(t, got)
	if len(dups) > 0 {
		t.Errorf("%d changes delivered more than once: %s", len(dups), strings.Join(dups[:min(len(dups), 20)], ", "))
	}
	bad := 0
	for id, want := range w.perID {
		s := seen[id]
		if len(s) == 0 || len(s) > len(want) || !slices.Equal(s, want[len(want)-len(s):]) {
			if bad++; bad <= 20 {
				t.Errorf("key %d: got changes %v, want the last ones of %v (a snapshot, then each change after it once, in order)", id, s, want)
			}
		}
	}
	if bad > 20 {
		t.Errorf("... %d keys wrong in all", bad)
	}
}

// CheckReplay fails t unless replaying the records per key gives the table as the writer
// left it, with each key's changes in the order written: a key's changes are
// non-decreasing (a snapshot repeats the key's state), each one written, and the last is
// its last change. For a stream that carried snapshots of a table it already streamed.
func (w *Writer) CheckReplay(t testing.TB, got []Got) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	seen, _ := w.perKey(t, got)
	bad := 0
	for id, want := range w.perID {
		s := seen[id]
		ok := len(s) > 0 && s[len(s)-1] == want[len(want)-1]
		for i := 0; ok && i < len(s); i++ {
			ok = slices.Contains(want, s[i]) && (i == 0 || s[i] >= s[i-1])
		}
		if !ok {
			if bad++; bad <= 20 {
				t.Errorf("key %d: got changes %v of %v: want them in order, ending with the last", id, s, want)
			}
		}
	}
	if bad > 20 {
		t.Errorf("... %d keys wrong in all", bad)
	}
}

// SnapshotCount is the number of records CheckSnapshot needs at least: one per key.
func (w *Writer) SnapshotCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.perID)
}

// LastChanges counts the keys whose last change the records hold: once it is every key,
// the broker has caught up with the writer.
func (w *Writer) LastChanges(got []Got) int {
	w.mu.Lock()
	last := make(map[int]bool, len(w.perID))
	for _, s := range w.perID {
		last[s[len(s)-1]] = true
	}
	w.mu.Unlock()
	n := 0
	for _, g := range got {
		for _, m := range marker.FindAllSubmatch(g.Value, -1) {
			if s, _ := strconv.Atoi(string(m[2])); last[s] {
				n++
				delete(last, s)
			}
		}
	}
	return n
}

// perKey reads each record's change (its newest marker) by key, checking that a key's
// records keep to one ordered sequence; dups lists the changes delivered twice.
func (w *Writer) perKey(t testing.TB, got []Got) (seen map[int][]int, dups []string) {
	seen = map[int][]int{}
	order := map[int]string{}
	count := map[int]int{}
	for _, g := range got {
		ms := marker.FindAllSubmatch(g.Value, -1)
		if len(ms) == 0 {
			continue
		}
		id, seq := -1, -1
		for _, m := range ms {
			s, _ := strconv.Atoi(string(m[2]))
			if s > seq {
				seq = s
				id, _ = strconv.Atoi(string(m[1]))
			}
		}
		count[seq]++
		seen[id] = append(seen[id], seq)
		if o, ok := order[id]; ok && o != g.Order {
			t.Errorf("key %d: records in two ordered sequences, %s and %s", id, o, g.Order)
		}
		order[id] = g.Order
	}
	for seq, n := range count {
		if n > 1 {
			dups = append(dups, fmt.Sprintf("s%08d x%d", seq, n))
		}
	}
	slices.Sort(dups)
	return seen, dups
}

// Position is the server's current GTID position, as a --position value ("MariaDB/0-1-5"
// or "MySQL56/<uuid>:1-5").
func Position(t testing.TB, db *testdb.Server, database string) string {
	t.Helper()
	pos, err := db.Position()
	if err != nil {
		t.Fatal(err)
	}
	return pos
}

// GTIDPrefix is how a position of the test server's own transactions begins: "MariaDB/0-1-"
// (domain 0, server 1, then the sequence number), or on MySQL "MySQL56/<server_uuid>:1-" (the
// server's transactions from the first, which is where a fresh server's GTIDs start).
func GTIDPrefix(t testing.TB, db *testdb.Server) string {
	t.Helper()
	if db.Flavor() != testdb.MySQL {
		return "MariaDB/0-1-"
	}
	conn, err := db.Conn("")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }() // read only
	r, err := conn.Execute("SELECT @@server_uuid")
	if err != nil {
		t.Fatal(err)
	}
	id, _ := r.GetString(0, 0)
	return "MySQL56/" + id + ":1-"
}

// consumerCreateFailed reports JetStream's refusal to create a consumer (error code 10012).
func consumerCreateFailed(err error) bool {
	var api *jetstream.APIError
	return errors.As(err, &api) && api.ErrorCode == jetstream.JSErrCodeConsumerCreate
}
