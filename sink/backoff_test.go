package sink

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/vstream-cdc/vstream/client"
	"github.com/vstream-cdc/vstream/gen/binlogdata"
)

// down is a broker that cannot be reached: every Resume fails, at the times kept.
type down struct {
	times []time.Time
	stop  chan struct{}
	after int
}

func (d *down) Resume(context.Context) (*binlogdata.VGtid, error) {
	d.times = append(d.times, time.Now())
	if len(d.times) == d.after {
		close(d.stop)
	}
	return nil, errors.New("dial tcp: connection refused")
}
func (d *down) Publish(context.Context, *Record) error          { return nil }
func (d *down) Commit(context.Context, *binlogdata.VGtid) error { return nil }
func (d *down) Abort(context.Context) error                     { return nil }
func (d *down) Close() error                                    { return nil }

// A broker error is retried, after a delay that starts near 100ms and grows, and counted.
func TestRunRetriesWithBackoff(t *testing.T) {
	d := &down{stop: make(chan struct{}), after: 7}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	m := NewMetrics(prometheus.NewRegistry(), "test", "backoff")
	err := Run(ctx, Config{Name: "down", Publisher: d, Stop: d.stop, Request: client.Request{Format: "debezium-json"},
		Metrics: m, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("Run stopped with %v, want nil after the stop", err)
	}
	if len(d.times) != d.after {
		t.Fatalf("%d attempts, want %d", len(d.times), d.after)
	}
	var retries dto.Metric
	if err := m.retries.Write(&retries); err != nil {
		t.Fatal(err)
	}
	if got := retries.GetCounter().GetValue(); got != float64(d.after-1) {
		t.Errorf("retries_total %v, want %d", got, d.after-1)
	}
	var gaps []time.Duration
	for i := 1; i < len(d.times); i++ {
		gaps = append(gaps, d.times[i].Sub(d.times[i-1]))
	}
	// The first delay is 100ms ± half (at most 150ms); the fourth to sixth are 100ms × 1.5³,
	// 1.5⁴ and 1.5⁵ ± half: at least 801ms together, where delays that did not grow would
	// make at most 450ms.
	if gaps[0] < 40*time.Millisecond || gaps[0] > 500*time.Millisecond || gaps[3]+gaps[4]+gaps[5] < 600*time.Millisecond {
		t.Fatalf("delays %v: want about 100ms first, growing", gaps)
	}
}

// The delay grows to about 10s and stays there: the sink never gives up on a broker.
func TestDefaultBackoffCap(t *testing.T) {
	b := defaultBackoff()
	var most time.Duration
	for range 200 {
		d := b.NextBackOff()
		if d <= 0 || d > 15*time.Second {
			t.Fatalf("delay %v: want a positive one of at most 10s ± half", d)
		}
		most = max(most, d)
	}
	if most < 5*time.Second {
		t.Fatalf("the longest delay in 200 attempts is %v, want it to reach about 10s", most)
	}
}
