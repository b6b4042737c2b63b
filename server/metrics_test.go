package server

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/internal/testkit"
)

// sample returns the value of the first series of a family whose labels include want, or -1.
func sample(t *testing.T, reg *prometheus.Registry, name string, want map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			for k, v := range want {
				found := false
				for _, lp := range m.GetLabel() {
					found = found || lp.GetName() == k && lp.GetValue() == v
				}
				if !found {
					continue series
				}
			}
			return value(m)
		}
	}
	return -1
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	}
	return -1
}

// TestAlertedCountersStartAtZero: the panic and poison counters exist before their first count,
// so that deploy/alerts.yml's increase() sees that count.
func TestAlertedCountersStartAtZero(t *testing.T) {
	reg := prometheus.NewRegistry()
	newMetrics(reg)
	for name, labels := range map[string][]map[string]string{
		"vstream_stream_panics_total": {{"stage": "binlog reader"}, {"stage": "copy"}, {"stage": "handler"}, {"stage": "ack reader"}},
		"vstream_poison_events_total": {{"action": "failed"}, {"action": "skipped"}},
	} {
		for _, l := range labels {
			if v := sample(t, reg, name, l); v != 0 {
				t.Errorf("%s%v = %v, want 0", name, l, v)
			}
		}
	}
}

func TestStreamMetrics(t *testing.T) {
	testkit.MustExec(t, db, "CREATE TABLE mt (id INT PRIMARY KEY, v VARCHAR(10))", "INSERT INTO mt SELECT seq, 'abc' FROM "+db.Seq(250))
	reg := prometheus.NewRegistry()
	cc := dial(t, serve(t, dbConfig(), Options{Registerer: reg}))
	ctx, cancel := context.WithCancel(context.Background())
	st := openStream(t, ctx, cc, startMsg("", &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "mt"}}}))
	r := &recvAll{}
	go r.run(st)
	testkit.WaitFor(t, 20*time.Second, "the copy", func() bool { return r.count(binlogdata.VEventType_COPY_COMPLETED) >= 2 })
	testkit.MustExec(t, db, "INSERT INTO mt VALUES (1000, 'x')")
	testkit.WaitFor(t, 20*time.Second, "a binlog row", func() bool { return r.count(binlogdata.VEventType_ROW) >= 2 })
	stream := map[string]string{"stream": "1"}
	testkit.WaitFor(t, 20*time.Second, "the metrics", func() bool {
		return sample(t, reg, "vstream_copy_rows_copied", map[string]string{"table": "mt"}) == 250 &&
			sample(t, reg, "vstream_stream_rows_sent_total", stream) == 251 &&
			sample(t, reg, "vstream_stream_row_bytes_sent_total", stream) > 0 &&
			sample(t, reg, "vstream_stream_binlog_lag_seconds", stream) >= 0 &&
			sample(t, reg, "vstream_stream_position_info", stream) == 1 &&
			sample(t, reg, "vstream_copy_rows_estimated", map[string]string{"table": "mt"}) >= 1 &&
			sample(t, reg, "vstream_stream_binlog_reader_info", map[string]string{"stream": "1", "kind": "shared"}) == 1 &&
			sample(t, reg, "vstream_database_up", nil) == 1
	})
	cancel()
	testkit.WaitFor(t, 20*time.Second, "the stream's series to go", func() bool {
		return sample(t, reg, "vstream_stream_rows_sent_total", stream) == -1 && sample(t, reg, "vstream_streams_open", nil) == 0 &&
			sample(t, reg, "vstream_stream_binlog_reader_info", stream) == -1
	})
	// gRPC outcomes by code.
	firstError(t, cc, context.Background(), startMsg("MariaDB/x", nil))
	if v := sample(t, reg, "grpc_server_handled_total", map[string]string{"grpc_code": "InvalidArgument", "grpc_method": "Stream"}); v < 1 {
		t.Errorf("grpc_server_handled_total{grpc_code=InvalidArgument} = %v", v)
	}
}

func TestDatabaseErrorMetric(t *testing.T) {
	lis, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := lis.Addr().String()
	lis.Close()
	cfg := dbConfig()
	cfg.Addr, cfg.DialTimeout = dead, time.Second
	reg := prometheus.NewRegistry()
	cc := dial(t, serve(t, cfg, Options{Registerer: reg}))
	firstError(t, cc, context.Background(), startMsg("current", nil))
	if v := sample(t, reg, "vstream_database_errors_total", nil); v != 1 {
		t.Errorf("vstream_database_errors_total = %v, want 1", v)
	}
}
