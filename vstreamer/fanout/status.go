package fanout

import "slices"

// HubStatus is what one hub reading the binlog is doing: its kind, the binlog file it
// reads, the position after the last transaction it read (empty before its first), and
// how many cursors read from it.
type HubStatus struct {
	Kind     Kind
	File     string
	Position string
	Cursors  int
}

// Hubs reports the hubs reading the binlog now (those Readers counts), the shared one
// first, then by position.
func (p *Pool) Hubs() []HubStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]HubStatus, 0, len(p.hubs))
	for h := range p.hubs {
		h.mu.Lock()
		if !h.closed && h.err == nil && h.handover == nil {
			out = append(out, HubStatus{Kind: h.kind, File: h.at.file, Position: h.at.pos.String(), Cursors: len(h.readers.read)})
		}
		h.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b HubStatus) int {
		if (a.Kind == Shared) != (b.Kind == Shared) {
			if a.Kind == Shared {
				return -1
			}
			return 1
		}
		if a.File != b.File {
			if a.File < b.File {
				return -1
			}
			return 1
		}
		if a.Position < b.Position {
			return -1
		}
		if a.Position > b.Position {
			return 1
		}
		return 0
	})
	return out
}
