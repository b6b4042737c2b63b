package vstreamer

// BinlogReader is one of the engine's shared binlog readers: its kind (ReaderShared or
// ReaderCatchUp), the binlog file it reads (empty until it names one), the position after
// the last transaction it read, and how many streams read from it.
type BinlogReader struct {
	Kind     string
	File     string
	Position string
	Streams  int
}

// BinlogReaderStatus lists the shared readers BinlogReaders counts, the shared one first.
// Streams with a connection of their own (ReaderOwn) are not among them.
func (e *Engine) BinlogReaderStatus() []BinlogReader {
	hubs := e.readers.Hubs()
	out := make([]BinlogReader, len(hubs))
	for i, h := range hubs {
		out[i] = BinlogReader{Kind: string(h.Kind), File: h.File, Position: h.Position, Streams: h.Cursors}
	}
	return out
}
