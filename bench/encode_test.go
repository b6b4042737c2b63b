package bench

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/server"
	"github.com/vstream-cdc/vstream/server/encoder"
	"github.com/vstream-cdc/vstream/vstreamer"
)

// encodeTxns is how many of the benchmark binlog's transactions (100 rows each) the encode
// benchmarks replay from memory.
const encodeTxns = 100

// responseBytes is the server's default bound on the messages of one response (the engine's
// default max batch bytes).
const responseBytes = 256 << 10

var (
	captureOnce sync.Once
	captured    struct {
		raw     [][]byte             // binlog events as the server sent them
		events  []*binlogdata.VEvent // the same transactions as a stream with sources sends them
		rows    int
		version string // the server's VERSION(), which the formats put in their records
		err     error
	}
)

// capture reads the first encodeTxns transactions of the benchmark binlog twice: as raw
// binlog events, and as the VEvents the engine makes of them for a stream with an output
// format.
func capture(b *testing.B) {
	setup(b)
	captureOnce.Do(func() {
		captured.raw, captured.rows, captured.err = captureRaw()
		if captured.err == nil {
			captured.version, captured.err = serverVersion()
		}
		if captured.err == nil {
			captured.events, captured.err = captureEvents()
		}
	})
	if captured.err != nil {
		b.Fatal(captured.err)
	}
}

func captureRaw() ([][]byte, int, error) {
	cfg := replicaConfig(db, 2000000002)
	cfg.RawModeEnabled = true
	syncer := replication.NewBinlogSyncer(cfg)
	defer syncer.Close()
	st, err := syncer.StartSyncGTID(syncSet(startPos))
	if err != nil {
		return nil, 0, err
	}
	var raw [][]byte
	txns, rows := 0, 0
	parser := newParser()
	for txns < encodeTxns {
		ev, err := st.GetEvent(context.Background())
		if err != nil {
			return nil, 0, err
		}
		raw = append(raw, slices.Clone(ev.RawData))
		// Parse once here to count rows and transactions.
		pe, err := parser.Parse(raw[len(raw)-1])
		if err != nil {
			return nil, 0, err
		}
		switch e := pe.Event.(type) {
		case *replication.RowsEvent:
			rows += len(e.Rows)
		case *replication.XIDEvent:
			txns++
		}
	}
	return raw, rows, nil
}

func serverVersion() (string, error) {
	conn, err := db.Conn("")
	if err != nil {
		return "", err
	}
	defer conn.Close()
	r, err := conn.Execute("SELECT VERSION()")
	if err != nil {
		return "", err
	}
	return r.GetString(0, 0)
}

func newParser() *replication.BinlogParser {
	p := replication.NewBinlogParser()
	p.SetFlavor(string(db.Flavor())) // go-mysql's flavor names are testdb's
	p.SetTimestampStringLocation(time.UTC)
	return p
}

func captureEvents() ([]*binlogdata.VEvent, error) {
	e, err := vstreamer.NewEngine(vstreamer.Config{Addr: db.Addr(), User: db.User(), Password: db.Password(), Database: "bench"})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var events []*binlogdata.VEvent
	txns := 0
	err = e.Stream(ctx, vstreamer.Request{Position: startPos.String(), WithSource: true,
		Filter: &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: "orders"}}}},
		func(evs []*binlogdata.VEvent) error {
			for _, ev := range evs {
				if txns == encodeTxns {
					cancel()
					return nil
				}
				events = append(events, ev)
				if ev.Type == binlogdata.VEventType_VGTID {
					txns++
				}
			}
			return nil
		})
	return events, err
}

// BenchmarkEncode compares, per row of the 10-column benchmark table, go-mysql decoding the
// binlog events (from memory: no network) with each output format encoding the VEvents the
// engine made of them. Formats must encode faster than the binlog decodes.
func BenchmarkEncode(b *testing.B) {
	capture(b)
	rows := captured.rows
	decodeRate := 0.0
	b.Run("binlog-decode", func(b *testing.B) {
		start := time.Now()
		allocs := mallocs()
		for i := 0; i < b.N; i++ {
			p := newParser()
			for _, raw := range captured.raw {
				if _, err := p.Parse(raw); err != nil {
					b.Fatal(err)
				}
			}
		}
		decodeRate = report(b, rows, time.Since(start), allocs)
	})
	// b.Run runs each sub-benchmark more than once; the last run's result stands.
	results := map[string]string{}
	type variant struct {
		name, format string
		options      map[string]string
	}
	var variants []variant
	for _, format := range server.Formats[1:] {
		variants = append(variants, variant{format, format, nil})
	}
	// Debezium's schemas make most of its bytes; without them it is another format to measure.
	variants = append(variants, variant{"debezium-json/schemas.enable=false", "debezium-json", map[string]string{"schemas.enable": "false"}})
	for _, v := range variants {
		format := v.format
		b.Run(v.name, func(b *testing.B) {
			clock := func() time.Time { return time.UnixMilli(1700000000000) }
			var out []*vstreamv1.EncodedMessage
			start := time.Now()
			allocs := mallocs()
			for i := 0; i < b.N; i++ {
				enc, err := server.NewEncoder(format, v.options, encoder.Params{Clock: clock, Database: "bench",
					Flavor: string(db.Flavor()), ServerVersion: captured.version, Keyspace: "bench"})
				if err != nil {
					b.Fatal(err)
				}
				// As the server does: a response goes out when its messages reach the
				// default max batch bytes, and then their memory is reused.
				recycler, _ := enc.(encoder.Recycler)
				size := 0
				for _, ev := range captured.events {
					if out, err = enc.Encode(out[:0], ev); err != nil {
						b.Fatal(err)
					}
					for _, m := range out {
						size += len(m.Key) + len(m.Value)
					}
					if size >= responseBytes {
						if recycler != nil {
							recycler.Recycle()
						}
						size = 0
					}
				}
			}
			rate := report(b, rows, time.Since(start), allocs)
			if decodeRate > 0 {
				b.ReportMetric(rate/decodeRate, "x-decode")
			}
			results[v.name] = fmt.Sprintf("%-36s %10.0f rows/s  %.2fx decode", v.name, rate, rate/max(decodeRate, 1))
		})
	}
	fmt.Printf("encode, rows/s of the 10-column table:\n  %-36s %10.0f rows/s\n", "binlog-decode", decodeRate)
	for _, v := range variants {
		if r, ok := results[v.name]; ok {
			fmt.Println("  " + r)
		}
	}
}

func mallocs() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.Mallocs
}

// report sets the benchmark's per-row metrics and returns rows/s.
func report(b *testing.B, rows int, elapsed time.Duration, mallocsBefore uint64) float64 {
	total := float64(rows * b.N)
	rate := total / elapsed.Seconds()
	b.ReportMetric(rate, "rows/s")
	b.ReportMetric(float64(mallocs()-mallocsBefore)/total, "allocs/row")
	return rate
}
