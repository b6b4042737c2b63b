package sink

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are a sink's Prometheus metrics; a nil *Metrics counts nothing.
type Metrics struct {
	records, bytes, commits, retries prometheus.Counter
	commitSeconds                    prometheus.Histogram
	lastCommit                       prometheus.Gauge
	// oversized counts records too large for the broker by what was done with them;
	// claimBytes the values written to the claim-check store.
	oversized  *prometheus.CounterVec
	claimBytes prometheus.Counter
}

// NewMetrics registers the metrics of a sink of the given kind (kafka, nats) with reg, each
// series labelled sink=kind. A pipeline, when not empty, names the sink among others that
// register with the same reg (vstream-sink's pipelines): its series are labelled
// pipeline=<name> too, so that they count apart.
func NewMetrics(reg prometheus.Registerer, kind, pipeline string) *Metrics {
	labels := prometheus.Labels{"sink": kind}
	if pipeline != "" {
		labels["pipeline"] = pipeline
	}
	m := &Metrics{
		records: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "vstream_sink", Name: "records_total", ConstLabels: labels,
			Help: "Records published to the broker, including ones published again after an abort."}),
		bytes: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "vstream_sink", Name: "record_bytes_total", ConstLabels: labels,
			Help: "Bytes of record keys and values published."}),
		commits: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "vstream_sink", Name: "commits_total", ConstLabels: labels,
			Help: "Positions committed with the records before them."}),
		retries: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "vstream_sink", Name: "retries_total", ConstLabels: labels,
			Help: "Times the sink resumed from its committed position after a broker or stream error."}),
		commitSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "vstream_sink", Name: "commit_seconds", ConstLabels: labels,
			Help: "Time a commit took, records' acknowledgements included.", Buckets: prometheus.ExponentialBuckets(0.001, 4, 8)}),
		lastCommit: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "vstream_sink", Name: "last_commit_timestamp_seconds", ConstLabels: labels,
			Help: "When the last commit finished, as a Unix time."}),
		oversized: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "vstream_sink", Name: "oversize_records_total", ConstLabels: labels,
			Help: "Records larger than the broker takes, by outcome: fail (the sink stopped), key-only or claim-check (a marker or reference record sent instead)."}, []string{"outcome"}),
		claimBytes: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "vstream_sink", Name: "claim_check_bytes_total", ConstLabels: labels,
			Help: "Bytes of record values written to the claim-check store."}),
	}
	for _, o := range []string{OversizeFail, OversizeKeyOnly, OversizeClaimCheck} {
		m.oversized.WithLabelValues(o)
	}
	reg.MustRegister(m.records, m.bytes, m.commits, m.retries, m.commitSeconds, m.lastCommit, m.oversized, m.claimBytes)
	return m
}

func (m *Metrics) published(r *Record) {
	if m == nil {
		return
	}
	m.records.Inc()
	m.bytes.Add(float64(len(r.Key) + len(r.Value)))
}

func (m *Metrics) committed(d time.Duration) {
	if m == nil {
		return
	}
	m.commits.Inc()
	m.commitSeconds.Observe(d.Seconds())
	m.lastCommit.SetToCurrentTime()
}

func (m *Metrics) retry() {
	if m == nil {
		return
	}
	m.retries.Inc()
}

func (m *Metrics) oversize(outcome string, stored int) {
	if m == nil {
		return
	}
	m.oversized.WithLabelValues(outcome).Inc()
	if outcome == OversizeClaimCheck {
		m.claimBytes.Add(float64(stored))
	}
}
