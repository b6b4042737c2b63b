// Command vtgateconsumer is the vtgate-API consumer of the process benchmarks
// (bench/process_test.go in the main module): a process of its own that streams from a vstreamd
// process with Vitess v0.24.4's own Go client (vtgateconn over grpcvtgateconn, VStream), its
// events decoded into Vitess's Go types, as a Vitess user's program would.
//
// It lives in the interop module, not in bench/: it links Vitess's generated protos, which
// register the same protobuf names as vstream's (binlogdata.VEvent and friends) and cannot share
// a binary with them; the interop module already pins the Vitess version the benchmarks name,
// and keeping Vitess out of the main module's go.mod keeps the service's dependencies its own.
//
// It takes bench/consumer's flags and prints its lines (see there): "ready" in latency mode
// once the warm-up row arrived, "sample <id> <unix nanos>" per row on exit, then "done <rows> <responses> <events>".
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

	binlogdatapb "vitess.io/vitess/go/vt/proto/binlogdata"
	querypb "vitess.io/vitess/go/vt/proto/query"
	topodatapb "vitess.io/vitess/go/vt/proto/topodata"
	vtgatepb "vitess.io/vitess/go/vt/proto/vtgate"
	"vitess.io/vitess/go/vt/vtgate/vtgateconn"

	// The vtgate client over gRPC, registered as the "grpc" protocol.
	_ "vitess.io/vitess/go/vt/vtgate/grpcvtgateconn"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:15991", "vstreamd's gRPC address")
	mode := flag.String("mode", "binlog", "binlog, copy or latency")
	gtid := flag.String("gtid", "", "position to stream from (binlog, latency)")
	table := flag.String("table", "", "table to stream")
	rows := flag.Int("rows", 0, "rows to receive")
	keyspace := flag.String("keyspace", "", "the keyspace vstreamd serves (its database)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the run to this file")
	flag.Parse()
	stop, err := profile(*cpuprofile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "vtgateconsumer:", err)
		os.Exit(1)
	}
	err = run(*addr, *mode, *gtid, *table, *keyspace, *rows)
	if perr := stop(); err == nil {
		err = perr
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "vtgateconsumer:", err)
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

func run(addr, mode, gtid, table, keyspace string, want int) error {
	if mode == "copy" {
		gtid = ""
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	conn, err := vtgateconn.DialProtocol(ctx, "grpc", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	r, err := conn.VStream(ctx, topodatapb.TabletType_PRIMARY,
		&binlogdatapb.VGtid{ShardGtids: []*binlogdatapb.ShardGtid{{Keyspace: keyspace, Shard: "0", Gtid: gtid}}},
		&binlogdatapb.Filter{Rules: []*binlogdatapb.Rule{{Match: table}}}, &vtgatepb.VStreamFlags{})
	if err != nil {
		return err
	}
	out := bufio.NewWriter(os.Stdout)
	type sample struct{ id, at int64 }
	var samples []sample
	if mode == "latency" {
		samples = make([]sample, 0, want)
	}
	rows, warm := 0, false
	// responses and events count what came, for the benchmark's events per response.
	responses, events := 0, 0
	for done := false; !done; {
		evs, err := r.Recv()
		if err != nil {
			return fmt.Errorf("stream ended after %d rows: %w", rows, err)
		}
		now := time.Now().UnixNano()
		responses++
		events += len(evs)
		for _, ev := range evs {
			switch ev.Type {
			case binlogdatapb.VEventType_ROW:
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
			case binlogdatapb.VEventType_COPY_COMPLETED:
				// vtgate's copy ends with a COPY_COMPLETED per shard, then one with neither.
				if mode == "copy" && ev.Keyspace == "" && ev.Shard == "" {
					if rows != want {
						return fmt.Errorf("copy completed after %d rows, want %d", rows, want)
					}
					done = true
				}
			default:
				// The rest (BEGIN, FIELD, VGTID, COMMIT, ...) only come along with the rows.
			}
		}
		if mode != "copy" && rows >= want {
			done = true
		}
	}
	for _, s := range samples {
		fmt.Fprintf(out, "sample %d %d\n", s.id, s.at)
	}
	fmt.Fprintf(out, "done %d %d %d\n", rows, responses, events)
	return out.Flush()
}

// firstInt is the row's first column as an integer: the latency table's id.
func firstInt(r *querypb.Row) (int64, error) {
	if r == nil || len(r.Lengths) == 0 || r.Lengths[0] < 0 {
		return 0, errors.New("row without an id")
	}
	return strconv.ParseInt(string(r.Values[:r.Lengths[0]]), 10, 64)
}
