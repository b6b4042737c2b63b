package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

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
	// width is the terminal's width in columns (0: unknown). A line is cut short of it: a
	// line that wrapped would take two rows, and the redraw would go up too few.
	width  func() int
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

func newProgressBar(w io.Writer, shared bool, now func() time.Time, width func() int) *progressBar {
	return &progressBar{w: w, shared: shared, now: now, width: width, last: now()}
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

// logWriter is where log lines go while the bar may be on the screen: each is written in
// the bar's place and the bar drawn again below it. The client logs from the stream's
// goroutine, as the bar's other callers.
func (b *progressBar) logWriter() io.Writer { return barLog{b} }

type barLog struct{ b *progressBar }

func (l barLog) Write(p []byte) (int, error) {
	b := l.b
	b.buf = b.buf[:0]
	if b.drawn > 0 {
		b.buf = fmt.Appendf(b.buf, "\x1b[%dF\x1b[J", b.drawn)
		b.drawn = 0
	}
	b.buf = append(b.buf, p...)
	if _, err := b.w.Write(b.buf); err != nil {
		return 0, err
	}
	if len(b.tables) > 0 {
		if err := b.draw(); err != nil {
			return len(p), err
		}
	}
	return len(p), nil
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
	cols := b.width()
	for _, t := range b.tables {
		b.buf = append(b.buf, "\x1b[2K"...)
		b.buf = append(b.buf, t.line(now, cols)...)
		b.buf = append(b.buf, '\n')
	}
	b.drawn, b.drawnAt = len(b.tables), now
	_, err := b.w.Write(b.buf)
	if err != nil {
		return fmt.Errorf("progress: %w", err)
	}
	return nil
}

// fit cuts s to fewer than cols columns (a character in the last column would wrap the line
// on some terminals); cols 0 leaves it as is.
func fit(s string, cols int) string {
	if cols <= 0 || utf8.RuneCountInString(s) < cols {
		return s
	}
	n := 0
	for i := range s {
		if n == cols-1 {
			return s[:i]
		}
		n++
	}
	return s
}

// barWidth is the widest the bar itself is drawn; minBar the narrowest, on a narrow terminal
// (the line is cut after that).
const (
	barWidth = 24
	minBar   = 5
)

// line is the table's progress as one line of fewer than cols columns (cols 0: any), e.g.
// "orders               [######------------------]  25%  250/1000 rows  50 rows/s  ETA 15s".
func (t *tableProgress) line(now time.Time, cols int) string {
	frac := 1.0
	if t.estimated > 0 && !t.done {
		// An estimate may be passed before the end: 99% until the copy says it is done.
		frac = min(0.99, float64(t.copied)/float64(t.estimated))
	}
	name := t.name
	if utf8.RuneCountInString(name) > 20 {
		name = fit(name, 20) + "~"
	}
	head := fmt.Sprintf("%-20s [", name)
	tail := fmt.Sprintf("] %3d%%  %d/%d rows", int(frac*100), t.copied, t.estimated)
	switch elapsed := now.Sub(t.since).Seconds(); {
	case t.done:
		tail += "  done"
	case elapsed > 0 && t.copied > 0:
		rate := float64(t.copied) / elapsed
		tail += fmt.Sprintf("  %.0f rows/s", rate)
		if t.copied < t.estimated {
			eta := time.Duration(float64(t.estimated-t.copied) / rate * float64(time.Second))
			tail += fmt.Sprintf("  ETA %s", eta.Round(time.Second))
		}
	}
	width := barWidth
	if cols > 0 {
		room := cols - 1 - utf8.RuneCountInString(head) - utf8.RuneCountInString(tail)
		width = max(minBar, min(barWidth, room))
	}
	filled := int(frac * float64(width))
	return fit(head+strings.Repeat("#", filled)+strings.Repeat("-", width-filled)+tail, cols)
}
