// Command consumer is the native-API consumer of the process benchmarks (bench/process_test.go):
// a process of its own that streams from a vstreamd process with the project's Go client, as an
// application would, and counts what it receives. interop/cmd/vtgateconsumer is its twin on the
// vtgate API with Vitess's own client; the two take the same flags and print the same lines, so
// that the benchmark runs either the same way.
//
// Modes:
//   - binlog: stream from --gtid until --rows row changes of --table arrived, then exit;
//   - copy: copy --table from an empty position until the final COPY_COMPLETED, then exit
//     (failing unless --rows rows came);
//   - latency: stream from --gtid; print "ready" once the first row (the benchmark's warm-up
//     row) arrived, then note each of the next --rows rows' first column (its id) and arrival
//     time, and print them as "sample <id> <unix nanos>" lines on exit. They are printed at the
//     end, not as they come, so that the consumer's cost per row is the stream's alone.
//
// The last line is "done <rows> <responses> <events>": what it received, in how many responses.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"
	"time"

	vclient "github.com/vstream-cdc/vstream/client"
	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/gen/query"
)

// errDone ends the stream from the handler once the consumer has what it came for.
var errDone = errors.New("done")

func main() {
	addr := flag.String("addr", "127.0.0.1:15991", "vstreamd's gRPC address")
	mode := flag.String("mode", "binlog", "binlog, copy or latency")
	gtid := flag.String("gtid", "", "position to stream from (binlog, latency)")
	table := flag.String("table", "", "table to stream")
	rows := flag.Int("rows", 0, "rows to receive")
	// The keyspace is the vtgate consumer's; accepted here so that both take the same flags.
	flag.String("keyspace", "", "unused on the native API")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the run to this file")
	flag.Parse()
	stop, err := profile(*cpuprofile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "consumer:", err)
		os.Exit(1)
	}
	err = run(*addr, *mode, *gtid, *table, *rows)
	if perr := stop(); err == nil {
		err = perr
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "consumer:", err)
		os.Exit(1)
	}
}

// profile starts a CPU profile into path (none when it is empty); stop ends it and writes it.
func profile(path string) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}

func run(addr, mode, gtid, table string, want int) error {
	if mode == "copy" {
		gtid = ""
	}
	// No retries: a broken stream fails the measurement instead of hiding in it.
	c, err := vclient.Dial(addr, vclient.Options{MaxRetries: -1})
	if err != nil {
		return err
	}
	// The stream is over by then; a failing close has nothing left to lose.
	defer func() { _ = c.Close() }()
	out := bufio.NewWriter(os.Stdout)
	type sample struct{ id, at int64 }
	var samples []sample
	if mode == "latency" {
		samples = make([]sample, 0, want)
	}
	rows, warm := 0, false
	// responses and events count what came, for the benchmark's events per response.
	responses, events := 0, 0
	h := func(_ context.Context, evs []*binlogdata.VEvent) error {
		now := time.Now().UnixNano()
		responses++
		events += len(evs)
		for _, ev := range evs {
			switch ev.Type {
			case binlogdata.VEventType_ROW:
				if mode != "latency" {
					rows += len(ev.RowEvent.RowChanges)
					continue
				}
				for _, rc := range ev.RowEvent.RowChanges {
					if !warm {
						warm = true
						fmt.Fprintln(out, "ready")
						if ferr := out.Flush(); ferr != nil {
							return ferr
						}
						continue
					}
					id, ierr := firstInt(rc.After)
					if ierr != nil {
						return ierr
					}
					samples = append(samples, sample{id, now})
					rows++
				}
			case binlogdata.VEventType_COPY_COMPLETED:
				if mode == "copy" && ev.Keyspace == "" && ev.Shard == "" {
					if rows != want {
						return fmt.Errorf("copy completed after %d rows, want %d", rows, want)
					}
					return errDone
				}
			default:
				// The rest (BEGIN, FIELD, VGTID, COMMIT, ...) only come along with the rows.
			}
		}
		if mode != "copy" && rows >= want {
			return errDone
		}
		return nil
	}
	err = c.Stream(context.Background(), vclient.Request{
		Position: &binlogdata.VGtid{ShardGtids: []*binlogdata.ShardGtid{{Gtid: gtid}}},
		Filter:   &binlogdata.Filter{Rules: []*binlogdata.Rule{{Match: table}}},
	}, h)
	if !errors.Is(err, errDone) {
		return fmt.Errorf("stream ended after %d rows: %w", rows, err)
	}
	for _, s := range samples {
		fmt.Fprintf(out, "sample %d %d\n", s.id, s.at)
	}
	fmt.Fprintf(out, "done %d %d %d\n", rows, responses, events)
	return out.Flush()
}

// firstInt is the row's first column as an integer: the latency table's id.
func firstInt(r *query.Row) (int64, error) {
	if r == nil || len(r.Lengths) == 0 || r.Lengths[0] < 0 {
		return 0, errors.New("row without an id")
	}
	return strconv.ParseInt(string(r.Values[:r.Lengths[0]]), 10, 64)
}
