package main

import "runtime/debug"

// The Go runtime's soft memory limit, by open streams. vstreamd's GOGC (400) lets the heap
// grow to five times what is live between collections: cheap while little is live, but a
// stream busy with a big transaction keeps the shared reader's ring and a batch live, and
// would then take several times their size. The limit makes the collector run sooner once
// the heap nears it, so that the memory taken is about memoryBase plus memoryPerStream per
// stream whatever a transaction's size, while GOGC still decides below it. With many
// streams the limit is far above what they take, and GOGC alone governs.
const (
	memoryBase      = 16 << 20
	memoryPerStream = 24 << 20
)

// memoryBudget returns the function that sets the limit for a number of open streams
// (server.Options.OnStreams), having set it for none; GOMEMLIMIT in the environment
// overrides it, and then it returns nil.
func memoryBudget(getenv func(string) string) func(open int) {
	if getenv("GOMEMLIMIT") != "" {
		return nil
	}
	set := func(open int) { debug.SetMemoryLimit(memoryLimit(open)) }
	set(0)
	return set
}

func memoryLimit(open int) int64 { return memoryBase + int64(open)*memoryPerStream }
