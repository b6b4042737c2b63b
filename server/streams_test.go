package server

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
)

func rowsBatch(n int) []*binlogdata.VEvent {
	changes := make([]*binlogdata.RowChange, n)
	for i := range changes {
		changes[i] = &binlogdata.RowChange{After: &query.Row{Values: []byte("x")}}
	}
	return []*binlogdata.VEvent{{Type: binlogdata.VEventType_ROW, RowEvent: &binlogdata.RowEvent{RowChanges: changes}}}
}

// TestStreamStatus: the state behind a stream's metrics is what Streams reports, its rate of
// rows taken over at least a second, and a stream leaves the report when it ends.
func TestStreamStatus(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := newMetrics(reg)
	t0 := time.Now()
	s := m.stream(StreamStatus{ID: 7, Client: "10.0.0.1:5000", Keyspace: "ks", Filter: "t1; /x.*: select * from x", API: "native", Format: "avro", Started: t0})
	srv := &Server{stats: m}

	st := s.status(t0.Add(500 * time.Millisecond))
	if st.Position != "" || st.RowsSent != 0 || st.RowsPerSecond != 0 || st.Acked || len(st.Copies) != 0 {
		t.Fatalf("fresh stream: %+v", st)
	}
	s.sent(rowsBatch(10))
	s.CopyProgress("t1", 10, 40)
	s.CopyProgress("t2", 0, 0)
	s.CopyProgress("t1", 25, 40)
	s.Position("MariaDB/0-1-5", time.Now().Add(-3*time.Second))
	s.Position("MariaDB/0-1-6", time.Now().Add(-2*time.Second)) // within the metric's 500ms, still the latest here
	s.ackedLag(1500 * time.Millisecond)
	cases := []struct {
		at   time.Duration
		rows int
		rate float64
	}{
		{2 * time.Second, 0, 5},         // 10 rows over the first 2s
		{2500 * time.Millisecond, 6, 5}, // under a second since: the last rate stands
		{3 * time.Second, 0, 6},         // 6 rows over the last second
		{5 * time.Second, 0, 0},         // idle
	}
	for _, c := range cases {
		s.sent(rowsBatch(c.rows))
		if got := s.status(t0.Add(c.at)).RowsPerSecond; got != c.rate {
			t.Errorf("at %v: %v rows/s, want %v", c.at, got, c.rate)
		}
	}
	list := srv.Streams()
	if len(list) != 1 {
		t.Fatalf("Streams: %+v", list)
	}
	st = list[0]
	if st.ID != 7 || st.Client != "10.0.0.1:5000" || st.Keyspace != "ks" || st.Format != "avro" || st.Filter != "t1; /x.*: select * from x" ||
		st.Position != "MariaDB/0-1-6" || st.BinlogLag < 2*time.Second || st.BinlogLag > time.Minute ||
		!st.Acked || st.AckLag != 1500*time.Millisecond || st.RowsSent != 16 {
		t.Errorf("status: %+v", st)
	}
	if want := []TableCopy{{"t1", 25, 40}, {"t2", 0, 0}}; len(st.Copies) != 2 || st.Copies[0] != want[0] || st.Copies[1] != want[1] {
		t.Errorf("copies %+v, want %+v", st.Copies, want)
	}
	// The metrics hold the same numbers.
	if v := sample(t, reg, "vstream_copy_rows_copied", map[string]string{"stream": "7", "table": "t1"}); v != 25 {
		t.Errorf("vstream_copy_rows_copied = %v", v)
	}
	if v := sample(t, reg, "vstream_client_ack_lag_seconds", map[string]string{"stream": "7"}); v != 1.5 {
		t.Errorf("vstream_client_ack_lag_seconds = %v", v)
	}
	s.done(nil)
	if list := srv.Streams(); len(list) != 0 {
		t.Errorf("after the end: %+v", list)
	}
}

func TestFilterString(t *testing.T) {
	for _, c := range []struct {
		f    *binlogdata.Filter
		want string
	}{
		{nil, ""},
		{&binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "t1"}}}, "t1"},
		{&binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "t1"}, {Match: "/.*", Filter: "select id from /.*"}}}, "t1; /.*: select id from /.*"},
	} {
		if got := filterString(c.f); got != c.want {
			t.Errorf("filterString(%v) = %q, want %q", c.f, got, c.want)
		}
	}
}
