package server

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the server's Prometheus metrics.
type metrics struct {
	open    prometheus.Gauge
	events  prometheus.Counter
	batches prometheus.Counter
	ackLag  *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		open: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "vstream", Name: "streams_open", Help: "Streams currently open.",
		}),
		events: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "vstream", Name: "events_sent_total", Help: "Events sent to clients.",
		}),
		batches: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "vstream", Name: "batches_sent_total", Help: "Responses (batches of events) sent to clients.",
		}),
		ackLag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "vstream", Name: "client_ack_lag_seconds",
			Help: "Per stream: how long before its last ack the acknowledged position had been sent.",
		}, []string{"stream"}),
	}
	reg.MustRegister(m.open, m.events, m.batches, m.ackLag)
	return m
}

func streamLabel(id uint64) string { return strconv.FormatUint(id, 10) }
