package coalesce

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/vstream-cdc/vstream/internal/testkit"
)

// gated is a function whose runs each wait for the test to let them end; run n returns n, or
// an error when failing says so.
type gated struct {
	mu      sync.Mutex
	started chan int
	release chan struct{}
	failing map[int]error
	n       int
	// sawCancel receives the number of a run whose context ended while it waited.
	sawCancel chan int
}

func newGated() *gated {
	return &gated{started: make(chan int, 100), release: make(chan struct{}), failing: map[int]error{}, sawCancel: make(chan int, 100)}
}

func (g *gated) fn(ctx context.Context) (int, error) {
	g.mu.Lock()
	g.n++
	n, err := g.n, g.failing[g.n]
	g.mu.Unlock()
	g.started <- n
	select {
	case <-g.release:
	case <-ctx.Done():
		g.sawCancel <- n
		return 0, ctx.Err()
	}
	return n, err
}

type result struct {
	v   int
	err error
}

func TestLoneCallers(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name    string
		fn      func(context.Context) (int, error)
		want    int
		wantErr error
		panics  bool
	}{
		{name: "value", fn: func(context.Context) (int, error) { return 7, nil }, want: 7},
		{name: "error", fn: func(context.Context) (int, error) { return 0, boom }, wantErr: boom},
		{name: "panic", fn: func(context.Context) (int, error) { panic("bad") }, panics: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := New(tc.fn)
			// Callers one after another: each gets a run of its own.
			for i := 1; i <= 3; i++ {
				v, err := r.Do(context.Background())
				var pe *PanicError
				switch {
				case tc.panics:
					if !errors.As(err, &pe) || pe.Value != "bad" {
						t.Fatalf("err = %v, want the panic", err)
					}
				case !errors.Is(err, tc.wantErr) || v != tc.want:
					t.Fatalf("Do = %d, %v; want %d, %v", v, err, tc.want, tc.wantErr)
				}
				if got := r.Runs(); got != uint64(i) {
					t.Fatalf("runs = %d after %d lone callers", got, i)
				}
			}
		})
	}
}

// TestArrivalsDuringARunShareTheNext: callers who arrive while a run is under way never get
// its result, and all share the one run after it; each run's error reaches its callers only.
func TestArrivalsDuringARunShareTheNext(t *testing.T) {
	for _, tc := range []struct {
		name    string
		failing map[int]error
	}{
		{name: "both succeed"},
		{name: "first fails", failing: map[int]error{1: errors.New("first")}},
		{name: "second fails", failing: map[int]error{2: errors.New("second")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGated()
			if tc.failing != nil {
				g.failing = tc.failing
			}
			r := New(g.fn)
			first := make(chan result, 1)
			go func() { v, err := r.Do(context.Background()); first <- result{v, err} }()
			if n := <-g.started; n != 1 {
				t.Fatalf("started run %d", n)
			}
			const later = 20
			out := make(chan result, later)
			for range later {
				go func() { v, err := r.Do(context.Background()); out <- result{v, err} }()
			}
			testkit.WaitFor(t, 5*time.Second, "the later callers to queue", func() bool { return r.Waiting() == later })
			g.release <- struct{}{}
			check := func(got result, run int) {
				t.Helper()
				if want := tc.failing[run]; want != nil {
					if !errors.Is(got.err, want) {
						t.Errorf("caller of run %d: err = %v, want %v", run, got.err, want)
					}
					return
				}
				if got.err != nil || got.v != run {
					t.Errorf("caller of run %d got %d, %v", run, got.v, got.err)
				}
			}
			check(<-first, 1)
			if n := <-g.started; n != 2 {
				t.Fatalf("started run %d", n)
			}
			g.release <- struct{}{}
			for range later {
				check(<-out, 2)
			}
			if r.Runs() != 2 {
				t.Errorf("runs = %d, want 2", r.Runs())
			}
		})
	}
}

// TestCancelledCaller: a caller whose context ends gets its error at once; the run it waited
// for still serves the others, and a run nobody waits for any more stops or never starts.
func TestCancelledCaller(t *testing.T) {
	t.Run("others of the run still served", func(t *testing.T) {
		g := newGated()
		r := New(g.fn)
		go func() { _, _ = r.Do(context.Background()) }()
		<-g.started
		ctx, cancel := context.WithCancel(context.Background())
		gone := make(chan error, 1)
		go func() { _, err := r.Do(ctx); gone <- err }()
		stay := make(chan result, 1)
		go func() { v, err := r.Do(context.Background()); stay <- result{v, err} }()
		testkit.WaitFor(t, 5*time.Second, "both to queue", func() bool { return r.Waiting() == 2 })
		cancel()
		if err := <-gone; !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled caller: err = %v", err)
		}
		g.release <- struct{}{}
		<-g.started
		g.release <- struct{}{}
		if got := <-stay; got.err != nil || got.v != 2 {
			t.Fatalf("remaining caller got %d, %v; want run 2", got.v, got.err)
		}
	})
	t.Run("queued run nobody waits for is skipped", func(t *testing.T) {
		g := newGated()
		r := New(g.fn)
		done := make(chan struct{})
		go func() { _, _ = r.Do(context.Background()); close(done) }()
		<-g.started
		ctx, cancel := context.WithCancel(context.Background())
		gone := make(chan error, 1)
		go func() { _, err := r.Do(ctx); gone <- err }()
		testkit.WaitFor(t, 5*time.Second, "the caller to queue", func() bool { return r.Waiting() == 1 })
		cancel()
		<-gone
		g.release <- struct{}{}
		<-done
		// A later caller starts a run of its own at once.
		later := make(chan result, 1)
		go func() { v, err := r.Do(context.Background()); later <- result{v, err} }()
		if n := <-g.started; n != 2 {
			t.Fatalf("started run %d, want 2: the abandoned run must not have run", n)
		}
		g.release <- struct{}{}
		if got := <-later; got.v != 2 || got.err != nil {
			t.Fatalf("later caller got %d, %v", got.v, got.err)
		}
	})
	t.Run("running run its only caller left is cancelled", func(t *testing.T) {
		g := newGated()
		r := New(g.fn)
		ctx, cancel := context.WithCancel(context.Background())
		gone := make(chan error, 1)
		go func() { _, err := r.Do(ctx); gone <- err }()
		<-g.started
		cancel()
		if err := <-gone; !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v", err)
		}
		select {
		case n := <-g.sawCancel:
			if n != 1 {
				t.Fatalf("run %d saw the cancel", n)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the run's context did not end when its only caller left")
		}
	})
}

// TestManyConcurrentCallers: however callers interleave, every one gets a result of a run
// that started after it called, and the runs are few.
func TestManyConcurrentCallers(t *testing.T) {
	var mu sync.Mutex
	var started []time.Time
	r := New(func(context.Context) (time.Time, error) {
		now := time.Now()
		mu.Lock()
		started = append(started, now)
		mu.Unlock()
		time.Sleep(2 * time.Millisecond)
		return now, nil
	})
	const n = 200
	var wg sync.WaitGroup
	errs := make(chan string, n)
	for range n {
		wg.Go(func() {
			called := time.Now()
			runStart, err := r.Do(context.Background())
			if err != nil || runStart.Before(called) {
				errs <- "a caller got a run that started before it called"
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	if got := r.Runs(); got > n/4 {
		t.Errorf("%d concurrent callers made %d runs", n, got)
	}
	t.Logf("%d concurrent callers, %d runs", n, r.Runs())
}
