package server

import (
	"context"
	"fmt"
	"time"

	"github.com/vstream-cdc/vstream/position"
	"github.com/vstream-cdc/vstream/vstreamer"
)

// PurgeWarn configures the purge alarm: a warning (status page, status JSON and the
// vstream_stream_purge_warning metric) for each stream whose position is about to leave the
// server's binlogs, after which it can only start over with a table copy.
type PurgeWarn struct {
	// Files warns when the binlog file a stream's position needs has at most this many files
	// before it on the server: that many PURGE BINARY LOGS steps lose the position. Zero warns
	// only when it needs the oldest file; negative turns the file rule off. The file the
	// server is writing is never warned about: no purge removes it.
	Files int
	// Age warns when the server's binlog expiry (binlog_expire_logs_seconds) will purge the
	// file a stream needs within this long (see BinlogHeadroom.Age). Zero turns the age rule
	// off; so does a server that does not expire binlogs.
	Age time.Duration
	// Interval is how often the server's binlog files are read (default DefaultPurgeCheckInterval).
	Interval time.Duration
}

// Defaults of PurgeWarn.
const (
	DefaultPurgeWarnFiles     = 1
	DefaultPurgeWarnAge       = 6 * time.Hour
	DefaultPurgeCheckInterval = 30 * time.Second
)

// BinlogHeadroom says how far a stream's position is from being purged from the server's
// binlogs, as of the server's last reading of them.
type BinlogHeadroom struct {
	// File is the oldest binlog file the stream needs: the one a resume from its position
	// starts reading (the newest whose head GTID set the position contains).
	File string
	// FilesBefore is the number of binlog files the server has before File: how many files
	// PURGE BINARY LOGS (or expiry) can remove before the position is gone.
	FilesBefore int
	// Current says File is the one the server is writing, which no purge removes.
	Current bool
	// Purged says no file the server has holds the position: a resume from it fails.
	Purged bool
	// Age is, while File is closed, how long ago the last transaction the stream passed was
	// written (the primary's clock); 0 while File is the current one. File was last written
	// no earlier than that, so expiry purges it no sooner than Expire - Age from now.
	Age time.Duration
	// Expire is the server's binlog expiry; 0 when it expires none by age.
	Expire time.Duration
	// Warning, when set, says why the position is about to be purged (see PurgeWarn).
	Warning string
	// Checked is when the server's binlogs were read.
	Checked time.Time
}

// headroom places a stream's position among the server's binlog files. binlogTime is when
// the stream's last transaction was written.
func headroom(b *vstreamer.Binlogs, pos position.Position, binlogTime, now time.Time, warn PurgeWarn) BinlogHeadroom {
	h := BinlogHeadroom{Expire: b.Expire, Checked: now}
	i, ok := b.Locate(pos)
	if !ok {
		h.Purged, h.FilesBefore = true, -1
		h.Warning = "the server no longer has the binlogs for this position: a resume from it fails (or starts over with a table copy)"
		return h
	}
	h.File, h.FilesBefore, h.Current = b.Files[i].Name, i, i == len(b.Files)-1
	if h.Current {
		return h
	}
	h.Age = max(0, now.Sub(binlogTime))
	switch {
	case warn.Files >= 0 && h.FilesBefore <= warn.Files:
		h.Warning = fmt.Sprintf("the position needs binlog file %s, with %d file(s) before it on the server (warned at %d): purging %d more file(s) loses it",
			h.File, h.FilesBefore, warn.Files, h.FilesBefore+1)
	case warn.Age > 0 && h.Expire > 0 && h.Expire-h.Age <= warn.Age:
		h.Warning = fmt.Sprintf("the position needs binlog file %s, which the server's binlog expiry (%v) purges in about %v or less (warned at %v): the stream's last transaction was written %v ago",
			h.File, h.Expire, max(0, h.Expire-h.Age).Round(time.Second), warn.Age, h.Age.Round(time.Second))
	}
	return h
}

// WatchBinlogs reads the server's binlog files every PurgeWarn.Interval until ctx ends, and
// places every open stream's position among them (BinlogHeadroom): the purge alarm's metrics
// and warnings. Streams themselves do nothing for it: their positions are read here, a few
// times a minute, not on their path.
func (s *Server) WatchBinlogs(ctx context.Context) {
	t := time.NewTicker(s.opts.PurgeWarn.Interval)
	defer t.Stop()
	var failing bool
	for {
		err := s.checkBinlogs(ctx)
		switch {
		case err != nil && !failing && ctx.Err() == nil:
			s.log.Warn("purge alarm: cannot read the server's binlog files; stream headroom is not updated", "err", err)
		case err == nil && failing:
			s.log.Info("purge alarm: the server's binlog files are read again")
		}
		failing = err != nil
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// checkBinlogs reads the server's binlog files once and updates every open stream's headroom.
func (s *Server) checkBinlogs(ctx context.Context) error {
	b, err := s.engine.Binlogs(ctx)
	if err != nil {
		return err
	}
	s.stats.purge.binlogFiles.Set(float64(len(b.Files)))
	s.stats.purge.binlogExpire.Set(b.Expire.Seconds())
	s.stats.mu.Lock()
	live := make([]*streamStats, 0, len(s.stats.live))
	for _, st := range s.stats.live {
		live = append(live, st)
	}
	s.stats.mu.Unlock()
	now := time.Now()
	for _, st := range live {
		st.checkHeadroom(b, now, s.opts.PurgeWarn)
	}
	return nil
}

// checkHeadroom places the stream's latest position among the server's binlog files, for its
// metrics and status. A stream without a position yet is left alone.
func (s *streamStats) checkHeadroom(b *vstreamer.Binlogs, now time.Time, warn PurgeWarn) {
	s.mu.Lock()
	text, binlogTime := s.pos, s.binlogTime
	s.mu.Unlock()
	if text == "" {
		return
	}
	pos, err := position.Parse(text)
	if err != nil {
		// Every position a stream reports is one it sends its client: it parses.
		return
	}
	h := headroom(b, pos, binlogTime, now, warn)
	s.m.purge.headroomFiles.WithLabelValues(s.id).Set(float64(h.FilesBefore))
	s.m.purge.positionAge.WithLabelValues(s.id).Set(h.Age.Seconds())
	warning := 0.0
	if h.Warning != "" {
		warning = 1
	}
	s.m.purge.purgeWarning.WithLabelValues(s.id).Set(warning)
	s.mu.Lock()
	s.headroom = &h
	s.mu.Unlock()
}
