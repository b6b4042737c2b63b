package server

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// Limits bound what clients may ask of the server. Zero values mean no limit.
type Limits struct {
	// MaxStreams bounds the streams open at once, over every API.
	MaxStreams int
	// StartsPerSecond and StartsBurst bound how fast one client (by IP address) may start
	// streams: a reconnect loop gone wrong must not starve the database.
	StartsPerSecond float64
	StartsBurst     int
	// MaxBatchBytes bounds the batch size a client may ask for.
	MaxBatchBytes int64
}

// streamSlots counts open streams against MaxStreams.
type streamSlots struct {
	max  int64
	open atomic.Int64
	// onChange hears the count of open streams after each change (Options.OnStreams), one
	// call at a time under mu, so that the last call made has the last count.
	onChange func(open int)
	mu       sync.Mutex
}

// acquire takes a slot or fails with ResourceExhausted naming the limit.
func (s *streamSlots) acquire() (release func(), err error) {
	if n := s.open.Add(1); s.max > 0 && n > s.max {
		s.open.Add(-1)
		return nil, status.Errorf(codes.ResourceExhausted, "the server's limit of %d concurrent streams is reached; retry later", s.max)
	}
	s.changed()
	return func() {
		s.open.Add(-1)
		s.changed()
	}, nil
}

func (s *streamSlots) changed() {
	if s.onChange == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onChange(int(s.open.Load()))
}

// startLimiter limits stream starts per client IP; it implements the ratelimit middleware's
// Limiter.
type startLimiter struct {
	limit rate.Limit
	burst int
	mu    sync.Mutex
	per   map[string]*clientRate
}

type clientRate struct {
	lim  *rate.Limiter
	seen time.Time
}

func newStartLimiter(perSecond float64, burst int) *startLimiter {
	if burst <= 0 {
		burst = max(1, int(perSecond))
	}
	return &startLimiter{limit: rate.Limit(perSecond), burst: burst, per: map[string]*clientRate{}}
}

func (l *startLimiter) Limit(ctx context.Context) error {
	key := "unknown"
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		key = p.Addr.String()
		if host, _, err := net.SplitHostPort(key); err == nil {
			key = host
		}
	}
	now := time.Now()
	l.mu.Lock()
	c := l.per[key]
	if c == nil {
		c = &clientRate{lim: rate.NewLimiter(l.limit, l.burst), seen: now}
		l.per[key] = c
		// Forget clients idle for a while, so the map stays small.
		for k, v := range l.per {
			if now.Sub(v.seen) > 10*time.Minute {
				delete(l.per, k)
			}
		}
	}
	c.seen = now
	ok := c.lim.AllowN(now, 1)
	l.mu.Unlock()
	if !ok {
		return fmt.Errorf("the server's limit of %g stream starts per second per client (burst %d) is reached", float64(l.limit), l.burst)
	}
	return nil
}
