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
