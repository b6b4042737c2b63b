package bench

import (
	"flag"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sync"
	"testing"

	"github.com/vstream-cdc/vstream/internal/testkit"
)

// cpuProfileDir is where every benchmark writes CPU profiles of vstreamd, one per phase
// (<phase>.pprof): a vstreamd process of its own writes its own (--cpuprofile); an
// in-process one (throughput, copy) profiles the benchmark process over the phase, the
// client's decoding included.
var cpuProfileDir = flag.String("bench.cpuprofile", "", "directory: each benchmark phase writes a CPU profile of vstreamd there (<phase>.pprof)")

var (
	buildOnce   sync.Once
	buildErr    error
	vstreamdBin string // the vstreamd binary the process benchmarks run
	// readerBin is bench/binlogreader, the latency benchmark's anchor process.
	readerBin string
)

// buildVstreamd builds cmd/vstreamd, and the anchor bench/binlogreader, once for the
// benchmarks that run them as processes.
func buildVstreamd() error {
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "vstream-bench-")
		if err != nil {
			buildErr = err
			return
		}
		if buildErr = testkit.Build(dir, "./cmd/vstreamd", "./bench/binlogreader"); buildErr != nil {
			return
		}
		vstreamdBin, readerBin = filepath.Join(dir, "vstreamd"), filepath.Join(dir, "binlogreader")
	})
	return buildErr
}

// removeVstreamd deletes the binary buildVstreamd built.
func removeVstreamd() {
	if vstreamdBin != "" {
		os.RemoveAll(filepath.Dir(vstreamdBin))
	}
}

// profilePhase profiles the benchmark process into <-bench.cpuprofile>/<phase>.pprof until
// the returned function is called; without the flag it does nothing. It cannot run beside
// go test's own -cpuprofile, which holds the process's one profiler.
func profilePhase(b *testing.B, phase string) (stop func()) {
	if *cpuProfileDir == "" {
		return func() {}
	}
	f, err := os.Create(filepath.Join(*cpuProfileDir, phase+".pprof"))
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		b.Fatalf("-bench.cpuprofile: %v (go test's -cpuprofile holds the profiler)", err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			b.Error(err)
		}
	}
}
