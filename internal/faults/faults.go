// Package faults lets tests make one stream fail at a named point of the engine or the
// server, to show that the failure stays in that stream. Production code never sets a hook:
// each point then costs one atomic load and a branch, once per binlog event, rows event or
// copied row.
package faults

import "sync/atomic"

// Point names where a stream can be made to fail.
type Point string

const (
	// Read is the binlog reader goroutine, after it received an event (data: the
	// *replication.BinlogEvent; table: the rows event's table, if any).
	Read Point = "binlog read"
	// Parse is go-mysql decoding a rows event of a table (data: a *[]byte of the event's
	// body, which the hook may replace to make it undecodable). It is in place only for
	// streams started while a hook is set.
	Parse Point = "parse"
	// Decode is the stream goroutine before it decodes a selected table's rows event (data:
	// the rows, [][]any, which the hook may change to make them undecodable).
	Decode Point = "decode"
	// Filter is the stream goroutine before the filter judges a rows event's rows.
	Filter Point = "filter"
	// Copy is the stream goroutine with a copied row in hand (data: the row,
	// []mysql.FieldValue, which the hook may change).
	Copy Point = "copy"
	// Heartbeat is the goroutine that sends heartbeats during a long copy read.
	Heartbeat Point = "heartbeat"
	// Ack is the server's reader of a stream's acks, with an ack in hand (data: the *Ack).
	Ack Point = "ack"
	// SchemaHistory is the engine's schema history tracker, with a binlog event in hand
	// (data: the *replication.BinlogEvent). It is not a stream's: a panic there restarts the
	// tracker.
	SchemaHistory Point = "schema history"
	// Encode is the server encoding an event into an output format (data: the *VEvent).
	Encode Point = "encode"
)

// Hook is called at a point with the table concerned ("" when none) and the point's data.
// It may panic, or change data to make it fail for real.
type Hook func(p Point, table string, data any)

var hook atomic.Pointer[Hook]

// Set installs h until the returned function is called.
func Set(h Hook) (restore func()) {
	prev := hook.Swap(&h)
	return func() { hook.Store(prev) }
}

// Enabled reports whether a hook is installed; callers that must work to name the table check
// it first.
func Enabled() bool { return hook.Load() != nil }

// At calls the installed hook, if any.
func At(p Point, table string, data any) {
	if h := hook.Load(); h != nil {
		(*h)(p, table, data)
	}
}
