package server

import (
	"strconv"
	"sync"
	"time"

	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/vstreamer"
)

// metrics are the server's Prometheus metrics.
type metrics struct {
	grpc     *grpcprom.ServerMetrics
	open     prometheus.Gauge
	events   prometheus.Counter
	batches  prometheus.Counter
	dbErrors prometheus.Counter
	dbUp     prometheus.Gauge

	statementsSkipped *prometheus.CounterVec
	panics            *prometheus.CounterVec
	poison            *prometheus.CounterVec

	streams streamSeries
	purge   purgeSeries

	mu   sync.Mutex
	live map[uint64]*streamStats // the open streams, by id
	// ended are the last streams to end, for the status page (see history.go).
	ended streamHistory
}

// streamSeries are the metrics with a series per stream, labelled with its id; a stream's
// series go when it ends.
type streamSeries struct {
	ackLag    *prometheus.GaugeVec
	binlogLag *prometheus.GaugeVec
	position  *prometheus.GaugeVec
	events    *prometheus.CounterVec
	rows      *prometheus.CounterVec
	bytes     *prometheus.CounterVec
	copied    *prometheus.GaugeVec
	estimated *prometheus.GaugeVec
	reader    *prometheus.GaugeVec
}

// purgeSeries are the purge alarm's metrics (see headroom.go): the server's binlogs, and
// per stream how close its position is to being purged.
type purgeSeries struct {
	binlogFiles   prometheus.Gauge
	binlogExpire  prometheus.Gauge
	headroomFiles *prometheus.GaugeVec
	positionAge   *prometheus.GaugeVec
	purgeWarning  *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	ns := "vstream"
	m := &metrics{
		live:     map[uint64]*streamStats{},
		grpc:     grpcprom.NewServerMetrics(),
		open:     prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "streams_open", Help: "Streams currently open."}),
		events:   prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "events_sent_total", Help: "Events sent to clients."}),
		batches:  prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "batches_sent_total", Help: "Responses (batches of events) sent to clients."}),
		dbErrors: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "database_errors_total", Help: "Streams ended because the database could not be reached or its connection broke; their clients reconnect."}),
		// dbUp is what an alert on an unreachable database needs: database_errors_total moves
		// only while streams are open, the probe runs with none.
		dbUp: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "database_up",
			Help: "1 when the last probe of the database (the health check's) answered; 0 when it did not, or before the first probe."}),
		statementsSkipped: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "statement_dml_skipped_total",
			Help: "Statement-based changes (binlog_format STATEMENT or MIXED) dropped by streams whose format cannot carry them and that asked for statement_dml=skip."}, []string{"format"}),
		panics: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "stream_panics_total",
			Help: "Streams ended by a panic, by where it happened; the server and the other streams went on."}, []string{"stage"}),
		poison: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "poison_events_total",
			Help: "Events or copied rows that could not be decoded or encoded: action failed (the stream ended) or skipped."}, []string{"action"}),
		streams: newStreamSeries(ns),
		purge:   newPurgeSeries(ns),
	}
	reg.MustRegister(m.grpc, m.open, m.events, m.batches, m.dbErrors, m.dbUp, m.statementsSkipped, m.panics, m.poison,
		m.purge.binlogFiles, m.purge.binlogExpire)
	for _, v := range m.perStream() {
		reg.MustRegister(v)
	}
	// The counters that alerts take increase() of are exported at 0 from the start: a series
	// that appears with its first count shows no increase, and the first panic would go unseen.
	for _, stage := range []string{vstreamer.StageRead, vstreamer.StageStream, vstreamer.StageCopy, vstreamer.StageHeartbeat,
		vstreamer.StageEncode, vstreamer.StageAcks, vstreamer.StageHandler} {
		m.panics.WithLabelValues(stage)
	}
	for _, action := range []string{"failed", "skipped"} {
		m.poison.WithLabelValues(action)
	}
	return m
}

func newStreamSeries(ns string) streamSeries {
	perStream := []string{"stream"}
	return streamSeries{
		ackLag: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "client_ack_lag_seconds",
			Help: "Per stream: how long before its last ack the acknowledged position had been sent."}, perStream),
		binlogLag: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "stream_binlog_lag_seconds",
			Help: "Per stream: how far behind the primary's clock the last transaction streamed was written."}, perStream),
		position: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "stream_position_info",
			Help: "Per stream: its binlog position (as a label, refreshed at most twice a second)."}, []string{"stream", "position"}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "stream_events_sent_total", Help: "Per stream: events sent."}, perStream),
		rows:   prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "stream_rows_sent_total", Help: "Per stream: row changes sent."}, perStream),
		bytes:  prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "stream_row_bytes_sent_total", Help: "Per stream: bytes of row values sent."}, perStream),
		copied: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "copy_rows_copied",
			Help: "Per stream and table: rows read by the table copy so far."}, []string{"stream", "table"}),
		estimated: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "copy_rows_estimated",
			Help: "Per stream and table: the server's estimate of the table's rows."}, []string{"stream", "table"}),
		reader: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "stream_binlog_reader_info",
			Help: "Per stream: the binlog reader serving it (kind shared, catch-up, or own: a connection of its own)."}, []string{"stream", "kind"}),
	}
}

func newPurgeSeries(ns string) purgeSeries {
	perStream := []string{"stream"}
	return purgeSeries{
		binlogFiles: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "binlog_files",
			Help: "Binlog files the source server has (SHOW BINARY LOGS), as last read by the purge alarm."}),
		binlogExpire: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "binlog_expire_seconds",
			Help: "The source server's binlog expiry (binlog_expire_logs_seconds, or expire_logs_days in seconds); 0: it purges no binlog by age."}),
		headroomFiles: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "stream_binlog_headroom_files",
			Help: "Per stream: binlog files the server has before the one its position needs (the file a resume from the position starts reading): " +
				"how many files PURGE BINARY LOGS or expiry can remove before the position is gone. 0: the stream needs the oldest file; -1: the position is already purged. " +
				"Read every --purge-check-interval."}, perStream),
		positionAge: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "stream_binlog_position_age_seconds",
			Help: "Per stream: while the binlog file its position needs is closed, how long ago the last transaction the stream passed was written; 0 while it needs only the file the server is writing. " +
				"That file was last written no earlier, so the server's expiry purges it no sooner than vstream_binlog_expire_seconds minus this."}, perStream),
		purgeWarning: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "stream_purge_warning",
			Help: "Per stream: 1 when its position is within --purge-warn-files binlog files of the server's oldest, or its file expires within --purge-warn-age; " +
				"once purged, the stream can only start over with a table copy. The status page says which."}, perStream),
	}
}

// perStreamVec is a metric vector with a stream label.
type perStreamVec interface {
	prometheus.Collector
	DeletePartialMatch(prometheus.Labels) int
}

// perStream are the vectors with a series per stream: those a stream's end removes its
// series from.
func (m *metrics) perStream() []perStreamVec {
	ss, ps := &m.streams, &m.purge
	return []perStreamVec{ss.ackLag, ss.binlogLag, ss.position, ss.reader, ss.events, ss.rows, ss.bytes, ss.copied, ss.estimated,
		ps.headroomFiles, ps.positionAge, ps.purgeWarning}
}

func streamLabel(id uint64) string { return strconv.FormatUint(id, 10) }

// streamStats is one stream's state: the engine's Observer, the source of its metrics and of
// what Streams reports (the status page), so the two never disagree.
type streamStats struct {
	m    *metrics
	id   string
	info StreamStatus // the fields fixed at the start
	// series are the stream's own series of the metrics moved per batch or transaction.
	series streamHandles
	// kind is the binlog reader serving the stream, under mu.
	kind string

	mu sync.Mutex
	// pos is the latest position; labelPos the one in the position metric, whose label is
	// changed at most twice a second so a busy stream does not churn series.
	pos, labelPos string
	labelAt       time.Time
	// binlogTime is when the transaction at pos was written, for the purge alarm.
	binlogTime time.Time
	// headroom is where pos was among the server's binlog files at the purge alarm's last
	// check; nil before it.
	headroom          *BinlogHeadroom
	binlogLag, ackLag time.Duration
	acked             bool
	copies            []TableCopy
	rowsSent          int64
	txnsSent          int64
	rate              rowRate
}

// rowRate is a stream's rate of rows as the status page shows it: over the time since the
// previous report at least a second before (or since the start).
type rowRate struct {
	at        time.Time
	rows      int64
	perSecond float64
}

// update brings the rate to now, when rowsSent were sent in all.
func (r *rowRate) update(now time.Time, rowsSent int64) float64 {
	if dt := now.Sub(r.at); dt >= time.Second {
		r.perSecond = float64(rowsSent-r.rows) / dt.Seconds()
		r.at, r.rows = now, rowsSent
	}
	return r.perSecond
}

// streamHandles are a stream's own series of the metrics it moves for every batch or
// transaction, looked up once: the lookup hashes the label each time. lag is looked up at
// the first position (Position runs for every transaction, skipped ones too).
type streamHandles struct {
	events, rows, bytes prometheus.Counter
	lag                 prometheus.Gauge
}

var (
	_ vstreamer.Observer       = (*streamStats)(nil)
	_ vstreamer.ReaderObserver = (*streamStats)(nil)
)

// stream opens the state of a starting stream; done closes it.
func (m *metrics) stream(info StreamStatus) *streamStats {
	l := streamLabel(info.ID)
	m.open.Inc()
	s := &streamStats{m: m, id: l, info: info, rate: rowRate{at: info.Started},
		series: streamHandles{events: m.streams.events.WithLabelValues(l), rows: m.streams.rows.WithLabelValues(l), bytes: m.streams.bytes.WithLabelValues(l)}}
	m.mu.Lock()
	m.live[info.ID] = s
	m.mu.Unlock()
	return s
}

// sent counts a batch that went out.
func (s *streamStats) sent(events []*binlogdata.VEvent) {
	s.m.batches.Inc()
	s.m.events.Add(float64(len(events)))
	s.series.events.Add(float64(len(events)))
	rows, bytes, txns := 0, 0, 0
	for _, ev := range events {
		if ev.GetType() == binlogdata.VEventType_COMMIT {
			txns++
			continue
		}
		if ev.GetType() != binlogdata.VEventType_ROW {
			continue
		}
		for _, rc := range ev.GetRowEvent().GetRowChanges() {
			rows++
			bytes += len(rc.GetBefore().GetValues()) + len(rc.GetAfter().GetValues())
		}
	}
	if rows > 0 {
		s.series.rows.Add(float64(rows))
		s.series.bytes.Add(float64(bytes))
	}
	if rows > 0 || txns > 0 {
		s.mu.Lock()
		s.rowsSent += int64(rows)
		s.txnsSent += int64(txns)
		s.mu.Unlock()
	}
}

func (s *streamStats) Position(pos string, binlogTime time.Time) {
	now := time.Now()
	lag := max(0, now.Sub(binlogTime))
	if s.series.lag == nil {
		s.series.lag = s.m.streams.binlogLag.WithLabelValues(s.id)
	}
	s.series.lag.Set(lag.Seconds())
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pos, s.binlogLag, s.binlogTime = pos, lag, binlogTime
	if pos == s.labelPos || now.Sub(s.labelAt) < 500*time.Millisecond {
		return
	}
	if s.labelPos != "" {
		s.m.streams.position.DeleteLabelValues(s.id, s.labelPos)
	}
	s.labelPos, s.labelAt = pos, now
	s.m.streams.position.WithLabelValues(s.id, pos).Set(1)
}

func (s *streamStats) Reader(kind string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.kind != "" {
		s.m.streams.reader.DeleteLabelValues(s.id, s.kind)
	}
	s.kind = kind
	s.m.streams.reader.WithLabelValues(s.id, kind).Set(1)
}

func (s *streamStats) CopyProgress(table string, copied, estimated int64) {
	s.m.streams.copied.WithLabelValues(s.id, table).Set(float64(copied))
	s.m.streams.estimated.WithLabelValues(s.id, table).Set(float64(estimated))
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.copies {
		if s.copies[i].Table == table {
			s.copies[i].Copied, s.copies[i].Estimated = copied, estimated
			return
		}
	}
	s.copies = append(s.copies, TableCopy{Table: table, Copied: copied, Estimated: estimated})
}

// ackedLag records the client's lag at its latest ack.
func (s *streamStats) ackedLag(lag time.Duration) {
	s.m.streams.ackLag.WithLabelValues(s.id).Set(lag.Seconds())
	s.mu.Lock()
	s.ackLag, s.acked = lag, true
	s.mu.Unlock()
}

// status reports the stream as it is now. Its rate of rows is over the time since the
// previous report at least a second before (or since the start).
func (s *streamStats) status(now time.Time) StreamStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	perSecond := s.rate.update(now, s.rowsSent)
	st := s.info
	st.Position, st.BinlogLag, st.AckLag, st.Acked = s.pos, s.binlogLag, s.ackLag, s.acked
	st.RowsSent, st.RowsPerSecond, st.Transactions, st.Reader = s.rowsSent, perSecond, s.txnsSent, s.kind
	st.Copies = append([]TableCopy(nil), s.copies...)
	if s.headroom != nil {
		h := *s.headroom
		st.Headroom = &h
	}
	return st
}

// done removes the stream's series and counts a database error that ended it.
func (s *streamStats) done(err error) {
	s.ended(err)
	s.m.mu.Lock()
	delete(s.m.live, s.info.ID)
	s.m.mu.Unlock()
	s.m.open.Dec()
	if isDatabaseError(err) {
		s.m.dbErrors.Inc()
	}
	s.m.failed(err)
	for _, v := range s.m.perStream() {
		v.DeletePartialMatch(prometheus.Labels{"stream": s.id})
	}
}
