package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
)

// progressBar draws a table copy's progress on a terminal: a line per table (rows copied of
// the server's estimate, rate, time left), redrawn in place at the bottom of the screen.
// run makes one only when stderr is a terminal. Its methods run on the stream's goroutine
// (the client calls the handler and OnCopyProgress in turn), so it needs no lock. A nil bar
// draws nothing.
type progressBar struct {
	w io.Writer
	// shared: stdout is the same screen, so the printed changes go above the bar, which is
	// taken away while they are printed and drawn again below them.
	shared bool
	now    func() time.Time
	tables []*tableProgress
	// drawn is how many lines of the bar are on the screen; drawnAt when they were drawn.
	drawn   int
	drawnAt time.Time
	// last is when the latest report came, which starts the rate of a table reported after.
	last time.Time
	// complete: the copy of every table is completed; the bar is drawn once more below the
	// batch that completed it and then left on the screen as it is.
	complete bool
	buf      []byte
}

// tableProgress is what the bar knows of one table's copy.
type tableProgress struct {
	name              string
	copied, estimated int64
	// since is when the table's copy started as far as the bar can tell: the report before
	// its first one.
	since time.Time
	// done: the table's COPY_COMPLETED was seen.
	done bool
}

// redrawEvery bounds how often the bar is redrawn: chunks of a small table come faster than
// anyone can read.
const redrawEvery = 100 * time.Millisecond

func newProgressBar(w io.Writer, shared bool, now func() time.Time) *progressBar {
	return &progressBar{w: w, shared: shared, now: now, last: now()}
}

// update is the client's OnCopyProgress.
func (b *progressBar) update(_ context.Context, progress []*vstreamv1.CopyProgress) error {
	now := b.now()
	for _, p := range progress {
		t := b.table(p.GetTable())
		if t == nil {
			t = &tableProgress{name: p.GetTable(), since: b.last}
			b.tables = append(b.tables, t)
		}
		t.copied, t.estimated = p.GetRowsCopied(), max(p.GetRowsEstimated(), p.GetRowsCopied())
	}
	b.last = now
	if now.Sub(b.drawnAt) >= redrawEvery {
		return b.draw()
	}
	return nil
}

func (b *progressBar) table(name string) *tableProgress {
	for _, t := range b.tables {
		if t.name == name {
			return t
		}
	}
	return nil
}

// copyDone follows the events printed: it marks the tables whose copy is completed, and the
// end of the whole copy.
func (b *progressBar) copyDone(events []*binlogdata.VEvent) {
	if b == nil {
		return
	}
	for _, ev := range events {
		if ev.GetType() != binlogdata.VEventType_COPY_COMPLETED {
			continue
		}
		if ev.GetKeyspace() == "" {
			b.complete = true
			for _, t := range b.tables {
				t.done = true
			}
		} else if t := b.table(ev.GetLastPKEvent().GetTableLastPK().GetTableName()); t != nil {
			t.done = true
		}
	}
}

// finish draws the bar a last time, if there is one, and leaves it on the screen.
func (b *progressBar) finish() error {
	if len(b.tables) == 0 {
		return nil
	}
	err := b.draw()
	b.release()
	return err
}

// release leaves the bar on the screen as drawn last and forgets it.
func (b *progressBar) release() {
	b.tables, b.drawn, b.complete = nil, 0, false
}

// hide takes the bar off the screen before changes are printed on it.
func (b *progressBar) hide() error {
	if b == nil {
		return nil
	}
	if !b.shared || b.drawn == 0 {
		return nil
	}
	b.buf = append(b.buf[:0], fmt.Sprintf("\x1b[%dF\x1b[J", b.drawn)...)
	b.drawn = 0
	if _, err := b.w.Write(b.buf); err != nil {
		return fmt.Errorf("progress: %w", err)
	}
	return nil
}

// show draws the bar again after changes were printed, and for the last time once the copy
// is complete (the client reports a batch's progress before the batch, so the counts are
// final by then).
func (b *progressBar) show() error {
	if b == nil || len(b.tables) == 0 || !b.shared && !b.complete {
		return nil
	}
	err := b.draw()
	if b.complete {
		b.release()
	}
	return err
}

// draw writes the bar over the one drawn before.
func (b *progressBar) draw() error {
	now := b.now()
	b.buf = b.buf[:0]
	if b.drawn > 0 {
		// To the start of the bar's first line.
		b.buf = fmt.Appendf(b.buf, "\x1b[%dF", b.drawn)
	}
	for _, t := range b.tables {
		b.buf = append(b.buf, "\x1b[2K"...)
		b.buf = append(b.buf, t.line(now)...)
		b.buf = append(b.buf, '\n')
	}
	b.drawn, b.drawnAt = len(b.tables), now
	_, err := b.w.Write(b.buf)
	if err != nil {
		return fmt.Errorf("progress: %w", err)
	}
	return nil
}

// barWidth is the width of the bar itself, which keeps a line within 80 columns.
const barWidth = 24

// line is the table's progress as one line, e.g.
// "orders  [##########--------------]  42%  10500/25000 rows  3500 rows/s  ETA 4s".
func (t *tableProgress) line(now time.Time) string {
	frac := 1.0
	if t.estimated > 0 && !t.done {
		// An estimate may be passed before the end: 99% until the copy says it is done.
		frac = min(0.99, float64(t.copied)/float64(t.estimated))
	}
	filled := int(frac * barWidth)
	name := t.name
	if len(name) > 20 {
		name = name[:19] + "~"
	}
	s := fmt.Sprintf("%-20s [%s%s] %3d%%  %d/%d rows", name,
		strings.Repeat("#", filled), strings.Repeat("-", barWidth-filled), int(frac*100), t.copied, t.estimated)
	if t.done {
		return s + "  done"
	}
	elapsed := now.Sub(t.since).Seconds()
	if elapsed <= 0 || t.copied == 0 {
		return s
	}
	rate := float64(t.copied) / elapsed
	s += fmt.Sprintf("  %.0f rows/s", rate)
	if t.copied < t.estimated {
		eta := time.Duration(float64(t.estimated-t.copied) / rate * float64(time.Second))
		s += fmt.Sprintf("  ETA %s", eta.Round(time.Second))
	}
	return s
}
