package procstat

import (
	"os"
	"testing"
	"time"
)

// TestSelf reads this process's own figures: CPU grows with work, the peak is at least the
// resident size, and a missing field or process is an error.
func TestSelf(t *testing.T) {
	pid := os.Getpid()
	before, err := CPU(pid)
	if err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(50 * time.Millisecond); time.Now().Before(end); {
	}
	after, err := CPU(pid)
	if err != nil {
		t.Fatal(err)
	}
	if after <= before {
		t.Errorf("CPU did not grow over 50ms of work: %v then %v", before, after)
	}
	user, sys, err := Times(pid)
	if err != nil || user+sys < after {
		t.Errorf("Times = %v user + %v system, %v; want at least CPU's %v", user, sys, err, after)
	}
	sw0, err := ContextSwitches(pid)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	if sw1, err := ContextSwitches(pid); err != nil || sw1 <= sw0 {
		t.Errorf("context switches %d then %d after a sleep, %v", sw0, sw1, err)
	}
	rss, err := Memory(pid, "VmRSS")
	if err != nil || rss <= 0 {
		t.Fatalf("VmRSS = %d, %v", rss, err)
	}
	if hwm, err := Memory(pid, "VmHWM"); err != nil || hwm < rss {
		t.Errorf("VmHWM = %d, %v; want at least VmRSS %d", hwm, err, rss)
	}
	if _, err := Memory(pid, "VmNothing"); err == nil {
		t.Error("a missing field is not an error")
	}
	if _, err := CPU(-1); err == nil {
		t.Error("a missing process is not an error")
	}
}
