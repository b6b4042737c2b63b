// Package coalesce shares one run of a function among the callers that ask for it together,
// without ever handing a caller a result that was started before it asked: a caller that
// arrives while a run is under way waits for the next run, which starts when that one ends
// and serves every caller that arrived meanwhile. A lone caller costs exactly one run.
package coalesce

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
)

// Runner runs its function for callers of Do, one run at a time.
type Runner[T any] struct {
	fn func(context.Context) (T, error)

	mu sync.Mutex
	// running is set while a run (or the loop that starts the next) is under way.
	running bool
	// next is the run the callers arriving now share: it has not started.
	next *run[T]

	runs atomic.Uint64
}

// run is one call of the function and the callers waiting for it.
type run[T any] struct {
	done    chan struct{}
	val     T
	err     error
	waiting int
	started bool
	// ctx is the run's own: it ends when every caller has left, so that nobody's run is
	// stopped by one caller's cancellation.
	ctx    context.Context
	cancel context.CancelFunc
}

// New returns a Runner of fn. fn's context ends when every caller of the run has left.
func New[T any](fn func(context.Context) (T, error)) *Runner[T] {
	return &Runner[T]{fn: fn}
}

// Runs counts the runs of the function so far.
func (r *Runner[T]) Runs() uint64 { return r.runs.Load() }

// Waiting counts the callers waiting for the next run, which has not started.
func (r *Runner[T]) Waiting() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.next == nil {
		return 0
	}
	return r.next.waiting
}

// Do returns the result of a run that started after Do was called: the one starting now if
// none is under way, else the next one. Every caller of a run gets its value and error. When
// ctx ends first, Do returns ctx's error; the run goes on for its other callers.
func (r *Runner[T]) Do(ctx context.Context) (T, error) {
	r.mu.Lock()
	c := r.next
	if c == nil {
		c = &run[T]{done: make(chan struct{})}
		c.ctx, c.cancel = context.WithCancel(context.Background())
		r.next = c
	}
	c.waiting++
	if !r.running {
		r.running = true
		r.next = nil
		c.started = true
		go r.loop(c)
	}
	r.mu.Unlock()

	select {
	case <-c.done:
		return c.val, c.err
	case <-ctx.Done():
	}
	r.mu.Lock()
	c.waiting--
	if c.waiting == 0 {
		if c.started {
			c.cancel()
		} else if r.next == c {
			// Nobody is left to want it: the next arrival starts a run of its own.
			r.next = nil
			c.cancel()
		}
	}
	r.mu.Unlock()
	var zero T
	return zero, ctx.Err()
}

// loop runs c, then the run the callers who arrived during it share, until none is waiting.
func (r *Runner[T]) loop(c *run[T]) {
	for c != nil {
		r.call(c)
		r.mu.Lock()
		c = r.next
		r.next = nil
		if c == nil {
			r.running = false
		} else {
			c.started = true
		}
		r.mu.Unlock()
	}
}

// call runs the function for c's callers and hands them its result.
func (r *Runner[T]) call(c *run[T]) {
	defer close(c.done)
	defer c.cancel()
	defer func() {
		// A panic would leave the callers waiting forever; they get it as their error.
		if v := recover(); v != nil {
			c.err = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	r.runs.Add(1)
	c.val, c.err = r.fn(c.ctx)
}

// PanicError is what the callers of a run get when the function panicked.
type PanicError struct {
	Value any
	Stack []byte
}

func (p *PanicError) Error() string { return fmt.Sprintf("coalesced run panicked: %v", p.Value) }
