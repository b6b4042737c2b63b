// Package procstat reads a Linux process's CPU time and memory from /proc, for the benchmark
// and the soak test, which measure vstreamd as a process of its own.
package procstat

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// ClockTick is the unit of the CPU times in /proc (USER_HZ, 100 on Linux).
const ClockTick = 10 * time.Millisecond

// CPU is the CPU time process pid has used, user and system, all threads.
func CPU(pid int) (time.Duration, error) {
	user, sys, err := Times(pid)
	return user + sys, err
}

// Times is the CPU time process pid has used in user mode and in the kernel, all threads.
func Times(pid int) (user, sys time.Duration, err error) {
	s, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	// The fields after the command name, which is in parentheses and may hold spaces:
	// state is the first, utime and stime the 12th and 13th.
	f := strings.Fields(string(s[bytes.LastIndexByte(s, ')')+1:]))
	if len(f) < 13 {
		return 0, 0, fmt.Errorf("/proc/%d/stat: %q", pid, s)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return time.Duration(utime) * ClockTick, time.Duration(stime) * ClockTick, nil
}

// Memory is a memory figure of /proc/<pid>/status in bytes: "VmRSS" (resident now) or
// "VmHWM" (the peak of resident memory).
func Memory(pid int, field string) (int64, error) {
	s, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(s)) {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == field+":" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/%d/status %s: %w", pid, field, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("/proc/%d/status has no %s", pid, field)
}

// ContextSwitches is how many times the threads of process pid have left the CPU, waiting
// (voluntary) or preempted, summed over the threads running now.
func ContextSwitches(pid int) (int64, error) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0, err
	}
	var n int64
	for _, t := range tasks {
		s, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/status", pid, t.Name()))
		if err != nil {
			// A thread that ended in between.
			continue
		}
		for line := range strings.Lines(string(s)) {
			if f := strings.Fields(line); len(f) == 2 && strings.HasSuffix(f[0], "ctxt_switches:") {
				v, err := strconv.ParseInt(f[1], 10, 64)
				if err != nil {
					return 0, fmt.Errorf("/proc/%d/task/%s/status: %w", pid, t.Name(), err)
				}
				n += v
			}
		}
	}
	return n, nil
}
