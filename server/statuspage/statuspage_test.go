package statuspage_test

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/internal/testdb"
	"github.com/vstream-cdc/vstream/internal/testkit"
	"github.com/vstream-cdc/vstream/server"
	"github.com/vstream-cdc/vstream/server/statuspage"
	"github.com/vstream-cdc/vstream/vstreamer"
)

var db *testdb.Server

func TestMain(m *testing.M) {
	os.Exit(testdb.RunTests(m, testdb.Options{Database: "test"}, &db))
}

// hostile is a filter a client may send: a valid regular expression (it selects table
// "hostile") that is also markup.
const hostile = `/^(hostile|<script>document.title='pwned'</script><img src=x onerror="document.title='pwned'">)$`

// browser finds a Chromium to drive. Without one the test skips, unless
// VSTREAM_REQUIRE_BROWSER is set (as 'make test' does): then a missing browser fails.
func browser(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("VSTREAM_REQUIRE_BROWSER") != "" {
		t.Fatal("no chromium on PATH and VSTREAM_REQUIRE_BROWSER is set: run scripts/install-deps.sh")
	}
	t.Skip("no chromium on PATH (scripts/install-deps.sh installs it); set VSTREAM_REQUIRE_BROWSER to fail instead")
	return ""
}

// fixture is a real server on the test database with its status page.
type fixture struct {
	srv    *server.Server
	reg    *prometheus.Registry
	page   string // the status page's base URL
	addr   string // the gRPC server's address
	cc     *grpc.ClientConn
	mu     sync.Mutex
	locals []string // the client's local addresses, as the server sees them
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	return newFixtureWith(t, server.Options{})
}

// newFixtureWith is newFixture with server options (its registry is the fixture's).
func newFixtureWith(t *testing.T, opts server.Options) *fixture {
	t.Helper()
	e, err := vstreamer.NewEngine(vstreamer.Config{Addr: db.Addr(), User: db.User(), Password: db.Password(), Database: "test", Keyspace: "commerce"})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{reg: prometheus.NewRegistry()}
	opts.Registerer = f.reg
	f.srv = server.New(e, opts)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f.addr = lis.Addr().String()
	go f.srv.GRPC().Serve(lis)
	t.Cleanup(f.srv.GRPC().Stop)
	hs := httptest.NewServer(statuspage.New(f.srv, statuspage.Options{Version: "v9.9.9-test", Refresh: time.Second}))
	t.Cleanup(hs.Close)
	f.page = hs.URL
	dialer := func(ctx context.Context, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err == nil {
			f.mu.Lock()
			f.locals = append(f.locals, c.LocalAddr().String())
			f.mu.Unlock()
		}
		return c, err
	}
	f.cc, err = grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithContextDialer(dialer))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.cc.Close() })
	return f
}

// stream is an open native stream whose events are collected in the background.
type stream struct {
	st     vstreamv1.VStreamService_StreamClient
	mu     sync.Mutex
	events []*binlogdata.VEvent
}

func (f *fixture) open(t *testing.T, ctx context.Context, gtid string, rules ...*binlogdata.Rule) *stream {
	t.Helper()
	st, err := vstreamv1.NewVStreamServiceClient(f.cc).Stream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	err = st.Send(&vstreamv1.StreamRequest{Kind: &vstreamv1.StreamRequest_Start{Start: &vstreamv1.Start{
		Vgtid:  &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Gtid: gtid}}},
		Filter: &binlogdata.Filter{Rules: rules},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	s := &stream{st: st}
	go func() {
		for {
			resp, err := st.Recv()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.events = append(s.events, resp.GetEvents()...)
			s.mu.Unlock()
		}
	}()
	return s
}

func (s *stream) count(typ binlogdata.VEventType) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, ev := range s.events {
		if ev.GetType() == typ {
			n++
		}
	}
	return n
}

func (s *stream) lastVGTID() *binlogdata.VGtid {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.events) - 1; i >= 0; i-- {
		if v := s.events[i].GetVgtid(); v != nil {
			return v
		}
	}
	return nil
}

func get(t *testing.T, url string) (string, http.Header) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s: %s", url, resp.Status, b)
	}
	return string(b), resp.Header
}

func (f *fixture) status(t *testing.T) statuspage.Status {
	t.Helper()
	body, h := get(t, f.page+"/status.json")
	if ct := h.Get("Content-Type"); ct != "application/json" {
		t.Errorf("status.json Content-Type %q", ct)
	}
	var st statuspage.Status
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatalf("status.json: %v\n%s", err, body)
	}
	return st
}

func (f *fixture) isLocal(addr string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, l := range f.locals {
		if l == addr {
			return true
		}
	}
	return false
}

// positionPatterns are a stream position of each flavor: MariaDB/domain-server-sequence,...
// or MySQL56/uuid:interval[:interval...],...
var positionPatterns = map[testdb.Flavor]*regexp.Regexp{
	testdb.MariaDB: regexp.MustCompile(`^MariaDB/\d+-\d+-\d+(,\d+-\d+-\d+)*$`),
	testdb.MySQL:   regexp.MustCompile(`^MySQL56/` + uuidSet + `(,` + uuidSet + `)*$`),
}

const uuidSet = `[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(:\d+(-\d+)?)+`

// isPosition reports whether s is a position of the test server's flavor.
func isPosition(s string) bool { return positionPatterns[db.Flavor()].MatchString(s) }

// serverVersion is the test server's VERSION().
func serverVersion(t *testing.T) string {
	t.Helper()
	c, err := db.Conn("")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := c.Execute("SELECT VERSION()")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	v, _ := r.GetString(0, 0)
	return strings.Clone(v)
}

// TestStatusJSON: /status.json reports the source and each open stream from the state the
// metrics are made of, and drops a stream when it ends.
func TestStatusJSON(t *testing.T) {
	if err := db.Exec("DROP TABLE IF EXISTS sj", "CREATE TABLE sj (id INT PRIMARY KEY, v VARCHAR(10))", "INSERT INTO sj SELECT seq, 'abc' FROM "+db.Seq(300)); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t)
	if st := f.status(t); len(st.Streams) != 0 || st.Version != "v9.9.9-test" || st.Source.Addr != db.Addr() ||
		st.Source.Flavor != string(db.Flavor()) || st.Source.Version != serverVersion(t) || st.Source.Error != "" {
		t.Fatalf("before any stream: %+v", st)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := f.open(t, ctx, "", &binlogdata.Rule{Match: "sj"})
	testkit.WaitFor(t, 30*time.Second, "the copy", func() bool { return s.count(binlogdata.VEventType_COPY_COMPLETED) >= 2 })
	if err := db.Exec("INSERT INTO sj VALUES (1000, 'x')"); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 30*time.Second, "the binlog row", func() bool { return s.count(binlogdata.VEventType_ROW) >= 2 })
	var got statuspage.Stream
	testkit.WaitFor(t, 30*time.Second, "the stream's status", func() bool {
		st := f.status(t)
		if len(st.Streams) != 1 {
			return false
		}
		got = st.Streams[0]
		return got.RowsSent == 301 && isPosition(got.Position)
	})
	if got.Keyspace != "commerce" || got.Filter != "sj" || got.Format != "vevent" || got.API != "native" || !f.isLocal(got.Client) ||
		got.BinlogLag < 0 || got.AckLag != nil || len(got.Copies) != 1 || got.Copies[0].Table != "sj" || got.Copies[0].Copied != 300 || got.Copies[0].Estimated < 1 {
		t.Errorf("stream status: %+v", got)
	}
	// The page and the metrics read one state.
	if m := metric(t, f.reg, "vstream_stream_rows_sent_total"); m != float64(got.RowsSent) {
		t.Errorf("rows sent: metrics %v, page %d", m, got.RowsSent)
	}

	// An ack shows the client's lag.
	if err := s.st.Send(&vstreamv1.StreamRequest{Kind: &vstreamv1.StreamRequest_Ack{Ack: &vstreamv1.Ack{Vgtid: s.lastVGTID()}}}); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 30*time.Second, "the ack lag", func() bool {
		st := f.status(t)
		return len(st.Streams) == 1 && st.Streams[0].AckLag != nil && *st.Streams[0].AckLag >= 0
	})
	cancel()
	testkit.WaitFor(t, 30*time.Second, "the stream to go", func() bool { return len(f.status(t).Streams) == 0 })
}

func metric(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			m := mf.GetMetric()[0]
			return m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return -1
}

// TestStatusPageEscapes: what clients send is shown as text, never as markup.
func TestStatusPageEscapes(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.open(t, ctx, "current", &binlogdata.Rule{Match: hostile})
	testkit.WaitFor(t, 30*time.Second, "the stream", func() bool { return len(f.status(t).Streams) == 1 })
	if st := f.status(t); st.Streams[0].Filter != hostile {
		t.Errorf("status.json filter %q, want %q", st.Streams[0].Filter, hostile)
	}
	body, h := get(t, f.page+"/")
	if strings.Contains(body, "<script") || strings.Contains(body, "<img") || !strings.Contains(body, "&lt;script&gt;") {
		t.Errorf("the filter is not escaped:\n%s", body)
	}
	if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("Content-Security-Policy %q", csp)
	}
	if resp, err := http.Get(f.page + "/nope"); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /nope: %v %v", resp.StatusCode, err)
	} else {
		resp.Body.Close()
	}
}

// TestStatusPageInBrowser loads the page in headless Chromium while streams run: it shows the
// source and each stream (client, keyspace, filter, position, copy progress), refreshes itself
// to show a stream opened after it loaded, and renders a hostile filter as text.
func TestStatusPageInBrowser(t *testing.T) {
	chrome := browser(t)
	if err := db.Exec("DROP TABLE IF EXISTS sb", "CREATE TABLE sb (id INT PRIMARY KEY, v VARCHAR(10))", "INSERT INTO sb SELECT seq, 'abc' FROM "+db.Seq(200)); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := f.open(t, ctx, "", &binlogdata.Rule{Match: "sb"})
	testkit.WaitFor(t, 30*time.Second, "the copy", func() bool { return s.count(binlogdata.VEventType_COPY_COMPLETED) >= 2 })
	if err := db.Exec("INSERT INTO sb VALUES (1000, 'x')"); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 30*time.Second, "the binlog row", func() bool { return s.count(binlogdata.VEventType_ROW) >= 2 })
	var want statuspage.Stream
	testkit.WaitFor(t, 30*time.Second, "the position", func() bool {
		st := f.status(t)
		if len(st.Streams) == 1 {
			want = st.Streams[0]
		}
		return len(st.Streams) == 1 && isPosition(st.Streams[0].Position)
	})

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chrome), chromedp.NoSandbox,
		chromedp.WindowSize(1400, 700), chromedp.UserDataDir(t.TempDir()))
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()
	// The first run starts the browser, which lives as long as its context: only later runs
	// may have a deadline.
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start %s: %v", chrome, err)
	}
	tctx, tcancel := context.WithTimeout(bctx, 3*time.Minute)
	defer tcancel()
	eval := func(js string) float64 {
		t.Helper()
		v, err := chromedp.Run(tctx, chromedp.Evaluate[float64](js))
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		return v
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(tctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return strings.TrimSpace(s)
	}
	row := `tr.stream[data-stream="1"] `
	if err := chromedp.Do(tctx, chromedp.Navigate(f.page+"/"), chromedp.WaitVisible(chromedp.CSS(row+"td.position"))); err != nil {
		t.Fatal(err)
	}
	if got := text("#source-addr"); got != db.Addr() {
		t.Errorf("source %q, want %q", got, db.Addr())
	}
	if got := text("#source-flavor"); got != string(db.Flavor()) {
		t.Errorf("flavor %q", got)
	}
	if got := text("#version"); got != "v9.9.9-test" {
		t.Errorf("version %q", got)
	}
	for sel, want := range map[string]string{
		"td.keyspace": "commerce", "td.filter": "sb", "td.format": "vevent",
		"td.client": want.Client, "td.position": want.Position, "td.rows": "201",
	} {
		if got := text(row + sel); got != want {
			t.Errorf("%s: page shows %q, want %q", sel, got, want)
		}
	}
	if !f.isLocal(text(row + "td.client")) {
		t.Errorf("client %q is not the test's connection", text(row+"td.client"))
	}
	bar := `document.querySelector('tr.stream[data-stream="1"] progress[data-table="sb"]')`
	if copied, estimated := eval(bar+".value"), eval(bar+".max"); copied != 200 || estimated < 1 {
		t.Errorf("copy bar: %v of %v", copied, estimated)
	}

	// A stream opened after the page loaded shows up without navigating: the page refreshes
	// itself. Its filter is markup, shown as text.
	f.open(t, ctx, "current", &binlogdata.Rule{Match: hostile})
	row2 := `tr.stream[data-stream="2"] `
	if err := chromedp.Do(tctx, chromedp.WaitVisible(chromedp.CSS(row2+"td.filter"))); err != nil {
		t.Fatalf("the page did not refresh to show the second stream: %v", err)
	}
	if got := text(row2 + "td.filter"); got != hostile {
		t.Errorf("hostile filter shown as %q", got)
	}
	title, err := chromedp.Run(tctx, chromedp.Title())
	if err != nil {
		t.Fatal(err)
	}
	if injected := eval(`document.querySelectorAll('script, img').length`); title != "vstreamd status" || injected != 0 {
		t.Errorf("the filter's markup ran: title %q, %v script or img elements", title, injected)
	}
	if got := text("#stream-count"); got != "2" {
		t.Errorf("stream count %q", got)
	}

	// A stream that ended with a long error, its invalid filter one unbroken word, is in
	// the history table once the page refreshes.
	long := "/(" + strings.Repeat("x", 300)
	f.open(t, ctx, "current", &binlogdata.Rule{Match: long})
	if err := chromedp.Do(tctx, chromedp.WaitVisible(chromedp.CSS(`tr.ended td.how .error`))); err != nil {
		t.Fatalf("the page did not refresh to show the ended stream: %v", err)
	}
	if got := text(`tr.ended td.filter`); got != long {
		t.Errorf("ended stream's filter shown as %q", got)
	}
	if got := text(`tr.reader[data-kind="shared"] td.streams`); got != "1" && got != "2" {
		t.Errorf("shared reader's streams %q", got)
	}

	// In a 1280-pixel window the tables fit: nothing scrolls sideways.
	if err := chromedp.Do(tctx, chromedp.EmulateViewport(1280, 800)); err != nil {
		t.Fatal(err)
	}
	if wide, inner := eval(`document.documentElement.scrollWidth`), eval(`window.innerWidth`); wide > inner {
		t.Errorf("the page is %v pixels wide in a %v-pixel window", wide, inner)
	}

	shot, err := chromedp.Run(tctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.DecodeConfig(bytes.NewReader(shot))
	if err != nil || img.Width < 100 || img.Height < 100 {
		t.Fatalf("screenshot: %v (%dx%d)", err, img.Width, img.Height)
	}
	path := filepath.Join(t.TempDir(), "status.png")
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	if dir := os.Getenv("VSTREAM_SCREENSHOT_DIR"); dir != "" {
		// Kept for people to look at; the temp directory goes with the test.
		if err := os.WriteFile(filepath.Join(dir, "status.png"), shot, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("screenshot: %s (%dx%d)", path, img.Width, img.Height)
}
