package deploy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/vstream-cdc/vstream/client"
	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/internal/testdb"
	"github.com/vstream-cdc/vstream/internal/testkit"
)

var (
	db *testdb.Server
	// vstreamd is the running server's gRPC and metrics addresses, and its log.
	grpcAddr, metricsAddr, logName string
	// vstreamdBin is the binary TestMain builds.
	vstreamdBin string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	db, err = testdb.Start(testdb.Options{Database: "ks"})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start the database server:", err)
		return 1
	}
	defer db.Close()
	dir, err := os.MkdirTemp("", "deploy")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if err := testkit.Build(dir, "./cmd/vstreamd"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	vstreamdBin = filepath.Join(dir, "vstreamd")
	if metricsAddr, err = testkit.FreeAddr(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	logName = filepath.Join(dir, "vstreamd.log")
	logFile, err := os.Create(logName)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer logFile.Close()
	// The schema history is on, as in the example configuration, so that its metric is the
	// one of a server that runs it.
	v, err := testkit.StartVstreamd(vstreamdBin, logFile, "--mysql-dsn", db.DSN("ks"), "--metrics-listen", metricsAddr,
		"--schema-history-dir", filepath.Join(dir, "history"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err, logTail())
		return 1
	}
	defer func() { _ = v.Signal(os.Interrupt) }()
	grpcAddr = v.Addr
	code := m.Run()
	if code != 0 {
		fmt.Fprintln(os.Stderr, "vstreamd log tail:\n"+logTail())
	}
	return code
}

func logTail() string {
	out, _ := os.ReadFile(logName)
	lines := strings.Split(string(out), "\n")
	return strings.Join(lines[max(0, len(lines)-30):], "\n")
}

// exported is what a running vstreamd exports: each series name with the label names it
// carries. A vector's series exist only once something happened, so it is taken while a
// stream that copied a table and then streamed a change is open, after a call failed.
var exported = sync.OnceValues(func() (map[string]map[string]bool, error) {
	if err := db.Exec("CREATE TABLE t1 (id INT PRIMARY KEY, v VARCHAR(10))",
		"INSERT INTO t1 SELECT seq, 'abc' FROM "+db.Seq(100)); err != nil {
		return nil, err
	}
	c, err := client.Dial(grpcAddr, client.Options{MaxRetries: -1, AckInterval: 50 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// A call the server refuses: grpc_server_handled_total gets a series.
	bad := &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Keyspace: "ks", Shard: "0", Gtid: "MariaDB/x"}}}
	if err := c.Stream(ctx, client.Request{Position: bad}, func(context.Context, []*binlogdata.VEvent) error { return nil }); err == nil {
		return nil, fmt.Errorf("a stream from %v did not fail", bad)
	}
	var mu sync.Mutex
	var copied, rows int
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	errc := make(chan error, 1)
	go func() {
		errc <- c.Stream(sctx, client.Request{Position: &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Keyspace: "ks", Shard: "0"}}},
			Filter: client.ParseTables("t1"), HeartbeatInterval: time.Second},
			func(_ context.Context, evs []*binlogdata.VEvent) error {
				mu.Lock()
				defer mu.Unlock()
				for _, ev := range evs {
					switch ev.GetType() {
					case binlogdata.VEventType_COPY_COMPLETED:
						copied++
					case binlogdata.VEventType_ROW:
						if copied > 0 {
							rows++
						}
					}
				}
				return nil
			})
	}()
	inserted := false
	for deadline := time.Now().Add(30 * time.Second); ; {
		mu.Lock()
		done, streamed := copied > 0, rows > 0
		mu.Unlock()
		if done && !inserted {
			if err := db.Exec("INSERT INTO t1 VALUES (1000, 'x')"); err != nil {
				return nil, err
			}
			inserted = true
		}
		if streamed {
			mfs, err := scrape()
			if err != nil {
				return nil, err
			}
			if mfs["vstream_client_ack_lag_seconds"] != nil && mfs["vstream_copy_rows_copied"] != nil &&
				mfs["vstream_stream_binlog_lag_seconds"] != nil {
				return names(mfs), nil
			}
		}
		select {
		case err := <-errc:
			return nil, fmt.Errorf("the stream ended: %w", err)
		default:
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("no copy, row and ack within 30s (copied %d, rows %d)", copied, rows)
		}
		time.Sleep(50 * time.Millisecond)
	}
})

// scrape reads the server's /metrics as Prometheus does.
func scrape() (map[string]*dto.MetricFamily, error) {
	resp, err := http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(resp.Body)
}

// names lists the series names of the families, with the suffixed series of summaries and
// histograms, and the label names each carries.
func names(mfs map[string]*dto.MetricFamily) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for name, mf := range mfs {
		labels := map[string]bool{}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = true
			}
		}
		series := []string{name}
		switch mf.GetType() {
		case dto.MetricType_SUMMARY:
			series = append(series, name+"_sum", name+"_count")
		case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
			series = append(series, name+"_bucket", name+"_sum", name+"_count")
		}
		for _, s := range series {
			out[s] = labels
		}
	}
	return out
}

// scrapeSeries are the series Prometheus adds to every scrape: not vstreamd's, but there
// for each target it scrapes.
var scrapeSeries = map[string]bool{"up": true}

// targetLabels are the labels Prometheus adds to every series of a target.
var targetLabels = map[string]bool{"instance": true, "job": true}

// grafanaVars are the dashboard's variables, as Grafana fills them in before a query goes
// to Prometheus.
var grafanaVars = strings.NewReplacer("$__rate_interval", "1m", "$__interval", "1m", "$__range", "1h", "$instance", ".+")

// selector is one metric a query reads, and the labels it matches on.
type selector struct {
	name   string
	labels []string
}

// selectors parses a PromQL expression and returns the metrics it reads.
func selectors(expr string) ([]selector, error) {
	e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		return nil, err
	}
	var out []selector
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		s := selector{name: vs.Name}
		for _, m := range vs.LabelMatchers {
			if m.Name == model.MetricNameLabel {
				if s.name == "" && m.Type == 0 {
					s.name = m.Value
				}
				continue
			}
			s.labels = append(s.labels, m.Name)
		}
		out = append(out, s)
		return nil
	})
	return out, nil
}

// checkExprs checks that every expression parses and reads only metrics vstreamd exports, by
// labels those metrics carry; it returns the metric names read.
func checkExprs(t *testing.T, where string, exprs []string) map[string]bool {
	t.Helper()
	exp, err := exported()
	if err != nil {
		t.Fatalf("vstreamd's metrics: %v", err)
	}
	used := map[string]bool{}
	for _, expr := range exprs {
		sels, err := selectors(grafanaVars.Replace(expr))
		if err != nil {
			t.Errorf("%s: %q: %v", where, expr, err)
			continue
		}
		for _, s := range sels {
			used[s.name] = true
			labels, ok := exp[s.name]
			if !ok && !scrapeSeries[s.name] {
				t.Errorf("%s: %q reads %q, which vstreamd does not export", where, expr, s.name)
				continue
			}
			for _, l := range s.labels {
				if ok && !labels[l] && !targetLabels[l] {
					t.Errorf("%s: %q matches label %q, which %s does not carry", where, expr, l, s.name)
				}
			}
		}
	}
	return used
}

// TestSelectors: the metric-name extraction the other tests rely on finds every metric of a
// query, and only metrics, whatever functions, aggregations and label names surround them.
func TestSelectors(t *testing.T) {
	got, err := selectors(`sum by (stream) (rate(a_total{stream=~"1|2"}[5m])) / on (stream) clamp_min(b{table!="x"}, 1) or vector(0) > bool count({__name__="c"})`)
	if err != nil {
		t.Fatal(err)
	}
	want := []selector{{"a_total", []string{"stream"}}, {"b", []string{"table"}}, {"c", nil}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if _, err := selectors(`rate(a_total[5m]`); err == nil {
		t.Fatal("an unbalanced query parsed")
	}
}

// dashboard is the part of Grafana's dashboard model the test reads.
type dashboard struct {
	Inputs []struct {
		Name, Type, PluginID string
	} `json:"__inputs"`
	SchemaVersion int `json:"schemaVersion"`
	UID, Title    string
	Panels        []panel `json:"panels"`
	Templating    struct {
		List []struct {
			Name       string
			Type       string
			Datasource datasource
			Definition string
		}
	}
}

type datasource struct{ Type, UID string }

type panel struct {
	ID         int
	Type       string
	Title      string
	Datasource *datasource
	Panels     []panel
	Targets    []struct {
		Expr       string
		RefID      string `json:"refId"`
		Datasource *datasource
	}
}

var labelValues = regexp.MustCompile(`^label_values\(([a-zA-Z_:][a-zA-Z0-9_:]*)\s*,\s*([a-zA-Z_][a-zA-Z0-9_]*)\)$`)

// TestDashboard: grafana-dashboard.json is an importable dashboard whose every query parses
// as PromQL and reads metrics vstreamd exports, and that covers what an operator looks at.
func TestDashboard(t *testing.T) {
	data, err := os.ReadFile("grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("grafana-dashboard.json: %v", err)
	}
	if d.SchemaVersion < 30 || d.UID == "" || d.Title == "" {
		t.Errorf("schemaVersion %d, uid %q, title %q: not an importable dashboard", d.SchemaVersion, d.UID, d.Title)
	}
	if len(d.Inputs) != 1 || d.Inputs[0].Name != "DS_PROMETHEUS" || d.Inputs[0].Type != "datasource" || d.Inputs[0].PluginID != "prometheus" {
		t.Errorf("__inputs %+v: want the one Prometheus datasource input DS_PROMETHEUS", d.Inputs)
	}
	ds := datasource{Type: "prometheus", UID: "${DS_PROMETHEUS}"}
	var exprs []string
	ids := map[int]bool{}
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			if ids[p.ID] {
				t.Errorf("panel %q: id %d taken", p.Title, p.ID)
			}
			ids[p.ID] = true
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			if p.Datasource == nil || *p.Datasource != ds || len(p.Targets) == 0 {
				t.Errorf("panel %q: datasource %v and %d queries, want %v and some", p.Title, p.Datasource, len(p.Targets), ds)
			}
			refs := map[string]bool{}
			for _, q := range p.Targets {
				if q.Datasource == nil || *q.Datasource != ds || q.RefID == "" || refs[q.RefID] || q.Expr == "" {
					t.Errorf("panel %q: query %+v: want datasource %v, a refId of its own and an expr", p.Title, q, ds)
				}
				refs[q.RefID] = true
				exprs = append(exprs, q.Expr)
			}
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		m := labelValues.FindStringSubmatch(v.Definition)
		if v.Type != "query" || v.Datasource != ds || m == nil {
			t.Errorf("variable %s: %+v, want a label_values query of %v", v.Name, v, ds)
			continue
		}
		exprs = append(exprs, m[1])
	}
	used := checkExprs(t, "grafana-dashboard.json", exprs)
	for _, want := range []string{
		"vstream_streams_open", "vstream_database_up", "vstream_stream_binlog_lag_seconds", "vstream_client_ack_lag_seconds",
		"vstream_events_sent_total", "vstream_stream_events_sent_total", "grpc_server_handled_total",
		"vstream_copy_rows_copied", "vstream_copy_rows_estimated", "vstream_stream_panics_total", "vstream_database_errors_total",
	} {
		if !used[want] {
			t.Errorf("grafana-dashboard.json shows nothing of %s", want)
		}
	}
}

func parseRules(content []byte) (*rulefmt.RuleGroups, []error) {
	return rulefmt.Parse(content, false, model.UTF8Validation, parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler))
}

// TestAlertRules: alerts.yml is a Prometheus rule file (parsed and validated as Prometheus
// loads one: structure, PromQL, durations, label names and annotation templates), its
// alerts read metrics vstreamd exports, and each says how grave it is and what happened.
func TestAlertRules(t *testing.T) {
	data, err := os.ReadFile("alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	groups, errs := parseRules(data)
	if len(errs) > 0 {
		t.Fatalf("alerts.yml: %v", errs)
	}
	var exprs, alerts []string
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				t.Errorf("group %s: a recording rule %q; the file holds alerts", g.Name, r.Record)
				continue
			}
			alerts = append(alerts, r.Alert)
			if s := r.Labels["severity"]; s != "warning" && s != "critical" {
				t.Errorf("%s: severity %q, want warning or critical", r.Alert, s)
			}
			if r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("%s: want a summary and a description", r.Alert)
			}
			exprs = append(exprs, r.Expr)
		}
	}
	used := checkExprs(t, "alerts.yml", exprs)
	for _, want := range []string{"vstream_database_up", "vstream_stream_binlog_lag_seconds", "grpc_server_handled_total",
		"vstream_schema_history_restarts_total", "vstream_stream_panics_total", "vstream_database_errors_total"} {
		if !used[want] {
			t.Errorf("alerts.yml: no alert on %s", want)
		}
	}
	slices.Sort(alerts)
	if i := slices.Compact(slices.Clone(alerts)); len(i) != len(alerts) {
		t.Errorf("alerts.yml: alert names repeat: %v", alerts)
	}
}

// TestAlertRulesRejected: the rule parser the test above relies on refuses what Prometheus
// would refuse to load, so that a broken alerts.yml cannot pass.
func TestAlertRulesRejected(t *testing.T) {
	data, err := os.ReadFile("alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct{ old, new string }{
		"a broken query":      {"expr: vstream_database_up == 0", "expr: vstream_database_up =="},
		"a bad duration":      {"for: 1m", "for: 1 minute"},
		"an unknown key":      {"for: 1m", "fore: 1m"},
		"a broken annotation": {"{{ $labels.instance }} cannot reach", "{{ $labels.instance cannot reach"},
	} {
		broken := bytes.Replace(data, []byte(c.old), []byte(c.new), 1)
		if bytes.Equal(broken, data) {
			t.Fatalf("%s: %q is not in alerts.yml", name, c.old)
		}
		if _, errs := parseRules(broken); len(errs) == 0 {
			t.Errorf("%s (%q) parsed", name, c.new)
		}
	}
}

// TestCheckConfig: vstreamd itself, given the example configuration as the systemd unit gives
// it (a database from the environment), finds it valid against a real database.
func TestCheckConfig(t *testing.T) {
	cmd := exec.Command(vstreamdBin, "--config", "vstreamd.yaml", "--check-config")
	cmd.Env = append(os.Environ(), "VSTREAM_MYSQL_DSN="+db.DSN("ks"))
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "configuration is valid") {
		t.Fatalf("vstreamd --config vstreamd.yaml --check-config: %v\n%s", err, out)
	}
	// And it is no rubber stamp: a key it does not know fails the check.
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	data, err := os.ReadFile("vstreamd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, append(data, "metric-listen: 127.0.0.1:1\n"...), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd = exec.Command(vstreamdBin, "--config", bad, "--check-config")
	cmd.Env = append(os.Environ(), "VSTREAM_MYSQL_DSN="+db.DSN("ks"))
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "metric-listen") {
		t.Fatalf("an unknown key: %v\n%s", err, out)
	}
}
