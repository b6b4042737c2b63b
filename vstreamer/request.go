package vstreamer

import (
	"fmt"

	"github.com/vstream-cdc/vstream/filter"
)

// MaxRequestTables bounds the rules of a filter and the tables a request names for its copy.
// A start message may be 16 MiB; filled with regex rules it would make the server compile
// hundreds of thousands of them (minutes of CPU) before answering. Real filters name tables
// one by one in the tens or hundreds, or select many with one regex.
const MaxRequestTables = 10000

// checkSize refuses requests larger than any real one, before any work is done for them.
func checkSize(req *Request) error {
	if n := len(req.Filter.GetRules()); n > MaxRequestTables {
		return fmt.Errorf("%w: the filter has %d rules; at most %d are accepted: select many tables with one /regex rule",
			filter.ErrInvalid, n, MaxRequestTables)
	}
	if n := len(req.TablesToCopy); n > MaxRequestTables {
		return fmt.Errorf("%w: tables_to_copy names %d tables; at most %d are accepted", ErrBadOption, n, MaxRequestTables)
	}
	if n := len(req.TableLastPKs); n > MaxRequestTables {
		return fmt.Errorf("%w: table_p_ks has %d tables; at most %d are accepted", ErrBadOption, n, MaxRequestTables)
	}
	return nil
}

// copyOptions checks the request's copy pacing and fills in the engine's defaults for the
// fields left zero. A bad value is refused rather than clamped: a client asking for 100
// tables at once, or a negative rate, has a mistake to fix.
func copyOptions(req *Request, cfg Config) error {
	if p := req.CopyParallelism; p < 0 || p > MaxCopyParallelism {
		return fmt.Errorf("%w: copy_parallelism %d: want 1 to %d tables copied at once (each holds a database connection), or 0 for the server's default",
			ErrBadOption, p, MaxCopyParallelism)
	}
	if r := req.CopyMaxRowsPerSecond; r < 0 {
		return fmt.Errorf("%w: copy_max_rows_per_second %d: want a positive number of rows, or 0 for the server's default", ErrBadOption, r)
	}
	if d := req.CopyMaxReplicationLag; d < 0 {
		return fmt.Errorf("%w: copy_max_replication_lag %s: want a positive duration, or 0 for the server's default", ErrBadOption, d)
	}
	if req.CopyParallelism == 0 {
		req.CopyParallelism = max(cfg.CopyParallelism, 1)
	}
	if req.CopyMaxRowsPerSecond == 0 {
		req.CopyMaxRowsPerSecond = cfg.CopyMaxRowsPerSecond
	}
	if req.CopyMaxReplicationLag == 0 {
		req.CopyMaxReplicationLag = cfg.CopyMaxReplicationLag
	}
	return nil
}
