package vstreamer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"
	"golang.org/x/time/rate"
)

// copyThrottle paces a table copy so that it does not weigh on the source: a bound on the
// rows read per second, all tables of a stream's copy together.
//
// The limiter is asked once per step rows rather than per row: a wait per row would cost a
// lock and a clock read on the hot path. A step is a tenth of a second's rows (at least one,
// at most 1,000), the limiter's burst, so the rate holds over any second but for one step.
type copyThrottle struct {
	rows *rate.Limiter
	step int
	// waits counts the limiter's reservations, for tests: the throttle was consulted.
	waits atomic.Int64
}

func newCopyThrottle(rowsPerSecond int64) *copyThrottle {
	if rowsPerSecond <= 0 {
		return nil
	}
	step := int(min(max(rowsPerSecond/10, 1), 1000))
	return &copyThrottle{rows: rate.NewLimiter(rate.Limit(rowsPerSecond), step), step: step}
}

// take is called with the count of rows a chunk has read, the current one included; it
// reserves the next step's rows as the first of them is read.
func (t *copyThrottle) take(ctx context.Context, n int) error {
	if (n-1)%t.step != 0 {
		return nil
	}
	t.waits.Add(1)
	if err := t.rows.WaitN(ctx, t.step); err != nil {
		return fmt.Errorf("copy throttle: %w", err)
	}
	return nil
}

// lagPoll is how often a copy held back by replication lag looks at the lag again (a
// variable for tests).
var lagPoll = time.Second

// lagGate holds a copy back, before a chunk, while the server is a replica lagging behind its
// source by more than the stream's bound (Request.CopyMaxReplicationLag).
type lagGate struct {
	// max is the bound; zero holds nothing.
	max time.Duration
	// read, when set, reads the lag instead of the server (tests).
	read func() (time.Duration, bool, error)
	// readAt is when lagWithin last read the lag, ok what it found.
	readAt time.Time
	ok     bool
}

// waitForLag holds the copy, before a chunk, while the server is a replica lagging behind
// its source by more than the stream's bound (Request.CopyMaxReplicationLag). It reads
// SHOW REPLICA STATUS: on a primary (no replication configured) it returns no row, there
// is no lag, and the copy never waits. A replica whose replication is stopped reports no
// lag (NULL) and falls further behind every second: the copy waits for it as for a lag
// above the bound, saying so in the log once. Heartbeats go on while it waits.
func (s *stream) waitForLag(ctx context.Context) error {
	bound := s.lag.max
	if bound <= 0 {
		return nil
	}
	var stopBeats func()
	defer func() {
		if stopBeats != nil {
			stopBeats()
		}
	}()
	read := s.lag.read
	if read == nil {
		read = s.replicationLag
	}
	logged := false
	for {
		lag, known, err := read()
		if err != nil {
			return err
		}
		if known && lag <= bound {
			return nil
		}
		if !logged {
			s.log.Info("copy held back by the replica's replication lag",
				slog.Duration("bound", bound), slog.Bool("lag_known", known), slog.Duration("lag", lag))
			logged = true
			stopBeats = s.heartbeatWhile()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("copy: waiting for replication lag under %s: %w", bound, ctx.Err())
		case <-time.After(lagPoll):
		}
	}
}

// lagWithin reports whether the replication lag is within the stream's bound, without
// waiting; the lag is read at most once per lagPoll, a chained read ahead asking at every
// piece of a chunk sent.
func (s *stream) lagWithin() (bool, error) {
	if s.lag.max <= 0 {
		return true, nil
	}
	if time.Since(s.lag.readAt) < lagPoll {
		return s.lag.ok, nil
	}
	read := s.lag.read
	if read == nil {
		read = s.replicationLag
	}
	lag, known, err := read()
	if err != nil {
		return false, err
	}
	s.lag.readAt, s.lag.ok = time.Now(), known && lag <= s.lag.max
	return s.lag.ok, nil
}

// replicationLag reads the server's replication lag: the largest Seconds_Behind_Source (or
// Seconds_Behind_Master, the older servers' and MariaDB's name) over its replication
// channels. known is false when a channel reports NULL (its SQL thread is not running). A
// server without replication (a primary) has lag zero, known.
func (s *stream) replicationLag() (lag time.Duration, known bool, err error) {
	known = true
	err = s.sql(func(conn *client.Conn) error {
		res, qerr := conn.Execute("SHOW REPLICA STATUS")
		var me *mysql.MyError
		if errors.As(qerr, &me) && me.Code == mysql.ER_PARSE_ERROR {
			// MySQL before 8.0.22 and MariaDB before 10.5.1 know only the old name.
			res, qerr = conn.Execute("SHOW SLAVE STATUS")
		}
		if qerr != nil {
			return qerr
		}
		defer res.Close()
		var lerr error
		lag, known, lerr = lagOf(res.Resultset)
		return lerr
	})
	if err != nil {
		return 0, false, fmt.Errorf("%w: copy: read replication lag (SHOW REPLICA STATUS; the copy's user needs REPLICATION CLIENT or SLAVE MONITOR): %v", ErrUnavailable, err)
	}
	return lag, known, nil
}

// lagOf reads the lag out of SHOW REPLICA STATUS's rows, one per replication channel.
func lagOf(res *mysql.Resultset) (lag time.Duration, known bool, err error) {
	known = true
	if res == nil || res.RowNumber() == 0 {
		return 0, true, nil
	}
	col := -1
	for name, i := range res.FieldNames {
		if strings.EqualFold(name, "Seconds_Behind_Source") || strings.EqualFold(name, "Seconds_Behind_Master") {
			col = i
		}
	}
	if col < 0 {
		return 0, false, errors.New("SHOW REPLICA STATUS has no Seconds_Behind_Source column")
	}
	for i := 0; i < res.RowNumber(); i++ {
		v, verr := res.GetValue(i, col)
		if verr != nil {
			return 0, false, verr
		}
		if v == nil {
			known = false
			continue
		}
		sec, perr := res.GetInt(i, col)
		if perr != nil {
			return 0, false, fmt.Errorf("seconds behind source %v: %w", v, perr)
		}
		lag = max(lag, time.Duration(sec)*time.Second)
	}
	return lag, known, nil
}
