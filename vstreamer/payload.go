package vstreamer

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/klauspost/compress/zstd"
)

// A MySQL compressed transaction (binlog_transaction_compression=ON) is one
// TRANSACTION_PAYLOAD event that holds all of the transaction's events, zstd-compressed.
// go-mysql decompresses the whole payload and decodes every event in it before handing the
// payload over, so a transaction of gigabytes would be held in memory at once. A dump is
// therefore read in go-mysql's raw mode, and payloadReader decodes its events itself: each
// event as go-mysql would, and the events of a payload one at a time as they are decompressed,
// so that a compressed transaction streams in the memory an uncompressed one takes. MariaDB's
// dumps, which have no payloads, are read alike for the TABLE_MAPs (parseTableMap).
//
// The events of a payload are handed out as if they stood in the file one after the other,
// each with the payload event's end and size in its header, as the stream reads them from a
// payload go-mysql decoded (stream.payload): their sources span the payload event.

// payloadReader decodes the events of a dump read in raw mode: those it reads from src
// (GetEvent), or those go-mysql hands it, which it pushes on (HandleEvent).
type payloadReader struct {
	src    binlogReader
	push   replication.EventHandler
	parser *replication.BinlogParser
	cfg    replication.BinlogSyncerConfig
	format *replication.FormatDescriptionEvent
	inner  *payloadEvents // the payload being handed out, nil between payloads
	// maps is the last TABLE_MAP read of each table id, to decode its repeats once (see
	// parseTableMap).
	maps map[uint64]seenTableMap
}

// seenTableMap is a TABLE_MAP event's body (checksum left out) and its decoding.
type seenTableMap struct {
	body []byte
	ev   *replication.TableMapEvent
}

// maxSeenTableMaps bounds payloadReader.maps: table ids grow with every table definition the
// server loads, and only recent ones come again.
const maxSeenTableMaps = 4096

func newPayloadReader(src binlogReader, cfg replication.BinlogSyncerConfig) *payloadReader {
	return &payloadReader{src: src, parser: newParser(cfg), cfg: cfg}
}

// newParser is a parser with the decoding options replication.NewBinlogSyncer gives its own,
// from the same config, but that it decodes every event (raw mode is the syncer's).
func newParser(cfg replication.BinlogSyncerConfig) *replication.BinlogParser {
	p := replication.NewBinlogParser()
	p.SetFlavor(cfg.Flavor)
	p.SetParseTime(cfg.ParseTime)
	p.SetTimestampStringLocation(cfg.TimestampStringLocation)
	p.SetUseDecimal(cfg.UseDecimal)
	p.SetUseFloatWithTrailingZero(cfg.UseFloatWithTrailingZero)
	p.SetRenderJSONAsMySQLText(cfg.RenderJSONAsMySQLText)
	p.SetPayloadDecoderConcurrency(cfg.PayloadDecoderConcurrency)
	p.SetVerifyChecksum(cfg.VerifyChecksum)
	p.SetRowsEventDecodeFunc(cfg.RowsEventDecodeFunc)
	p.SetTableMapOptionalMetaDecodeFunc(cfg.TableMapOptionalMetaDecodeFunc)
	return p
}

func (r *payloadReader) GetEvent(ctx context.Context) (*replication.BinlogEvent, error) {
	for {
		if r.inner != nil {
			ev, err := r.inner.next()
			if err != nil {
				return nil, err
			}
			if ev != nil {
				return ev, nil
			}
			r.inner = nil
		}
		raw, err := r.src.GetEvent(ctx)
		if err != nil {
			return nil, err
		}
		if raw.Header.EventType != replication.TRANSACTION_PAYLOAD_EVENT {
			return r.parse(raw)
		}
		if r.inner, err = r.openPayload(raw); err != nil {
			return nil, payloadError(raw, err)
		}
	}
}

// HandleEvent is GetEvent for a dump that pushes its events (see fanout.OpenFunc): it decodes
// each raw event go-mysql reads, in go-mysql's reading goroutine, and hands the events on to
// push, a compressed transaction's one by one as they are decompressed.
func (r *payloadReader) HandleEvent(raw *replication.BinlogEvent) error {
	if raw.Header.EventType != replication.TRANSACTION_PAYLOAD_EVENT {
		ev, err := r.parse(raw)
		if err != nil {
			return err
		}
		return r.push.HandleEvent(ev)
	}
	inner, err := r.openPayload(raw)
	if err != nil {
		return payloadError(raw, err)
	}
	defer inner.finish()
	for {
		ev, err := inner.next()
		if err != nil || ev == nil {
			return err
		}
		if err := r.push.HandleEvent(ev); err != nil {
			return err
		}
	}
}

// parse decodes an event that is not a payload.
func (r *payloadReader) parse(raw *replication.BinlogEvent) (*replication.BinlogEvent, error) {
	if raw.Header.EventType == replication.TABLE_MAP_EVENT && r.cfg.TableMapOptionalMetaDecodeFunc == nil {
		if body, id, ok := r.tableMapBody(raw.RawData); ok {
			return r.parseTableMap(raw, body, id)
		}
	}
	// Raw mode decodes format descriptions and rotations; decoding them again keeps this
	// parser's format (checksums, header lengths) the dump's.
	ev, err := r.parser.Parse(raw.RawData)
	if err != nil {
		// As the syncer would return it: the stream names an event it cannot decode (see
		// undecodable).
		return nil, err
	}
	if f, ok := ev.Event.(*replication.FormatDescriptionEvent); ok {
		// A new format may size table ids differently: the same bytes may mean another map.
		r.format, r.maps = f, nil
	}
	return ev, nil
}

// parseTableMap decodes a TABLE_MAP event whose body (checksum left out) is body, of table id.
// A table's map comes again before every rows event of it, the same bytes until the table's
// definition changes, and decoding its optional metadata (column names, signedness, charsets,
// ENUM and SET values) again each time was 4% of a stream's CPU. A map whose body is the one
// last read for its table id is decoded without it, for the parser to know the table (the
// rows events after it find it there), and made whole from the first decoding, which is what
// is handed out: the same event every time (which a stream's plan recognizes at a glance,
// tablePlan.fits).
func (r *payloadReader) parseTableMap(raw *replication.BinlogEvent, body []byte, id uint64) (*replication.BinlogEvent, error) {
	seen, ok := r.maps[id]
	if !ok || !bytes.Equal(seen.body, body) {
		ev, err := r.parser.Parse(raw.RawData)
		if err != nil {
			return nil, err
		}
		if tm, ok := ev.Event.(*replication.TableMapEvent); ok {
			if r.maps == nil || len(r.maps) >= maxSeenTableMaps {
				r.maps = make(map[uint64]seenTableMap)
			}
			r.maps[id] = seenTableMap{body: body, ev: tm}
		}
		return ev, nil
	}
	r.parser.SetTableMapOptionalMetaDecodeFunc(skipOptionalMeta)
	ev, err := r.parser.Parse(raw.RawData)
	r.parser.SetTableMapOptionalMetaDecodeFunc(nil)
	if err != nil {
		return nil, err
	}
	if tm, ok := ev.Event.(*replication.TableMapEvent); ok {
		// The parser's own copy, which the rows events that follow decode with, whole again.
		*tm = *seen.ev
		ev.Event = seen.ev
	}
	return ev, nil
}

func skipOptionalMeta([]byte) error { return nil }

// tableMapBody is a TABLE_MAP event's body without its checksum, and its table id; false
// before the dump's format description (which sizes both).
func (r *payloadReader) tableMapBody(data []byte) ([]byte, uint64, bool) {
	f := r.format
	if f == nil || len(f.EventTypeHeaderLengths) < int(replication.TABLE_MAP_EVENT) {
		return nil, 0, false
	}
	body := data[replication.EventHeaderSize:]
	if f.ChecksumAlgorithm == replication.BINLOG_CHECKSUM_ALG_CRC32 {
		if len(body) < replication.BinlogChecksumLength {
			return nil, 0, false
		}
		body = body[:len(body)-replication.BinlogChecksumLength]
	}
	idSize := 6
	if f.EventTypeHeaderLengths[replication.TABLE_MAP_EVENT-1] == 6 {
		idSize = 4
	}
	if len(body) < idSize {
		return nil, 0, false
	}
	return body, mysql.FixedLengthInt(body[:idSize]), true
}

func payloadError(raw *replication.BinlogEvent, err error) error {
	return fmt.Errorf("%w: compressed transaction (TRANSACTION_PAYLOAD_EVENT) at %d: %v", ErrUnsupportedEvent, raw.Header.LogPos, err)
}

// Transaction_payload_event's fields (MySQL's libbinlogevents): each a type and a length, both
// net_field_length integers, then the value; the payload follows the end mark.
const (
	payloadEndMark         = 0
	payloadCompressionType = 2
	payloadZSTD            = 0
	payloadNone            = 255
)

// openPayload starts handing out the events of a payload event.
func (r *payloadReader) openPayload(raw *replication.BinlogEvent) (*payloadEvents, error) {
	if r.format == nil {
		return nil, errors.New("no format description before it")
	}
	body := raw.RawData[replication.EventHeaderSize:]
	if r.format.ChecksumAlgorithm == replication.BINLOG_CHECKSUM_ALG_CRC32 {
		if len(body) < replication.BinlogChecksumLength {
			return nil, errors.New("shorter than its checksum")
		}
		body = body[:len(body)-replication.BinlogChecksumLength]
	}
	compression := uint64(payloadZSTD)
	for {
		typ, _, n := mysql.LengthEncodedInt(body)
		if n == 0 || n > len(body) {
			return nil, errors.New("fields end early")
		}
		body = body[n:]
		if typ == payloadEndMark {
			break
		}
		length, _, n := mysql.LengthEncodedInt(body)
		if n == 0 || n > len(body) || length > uint64(len(body)-n) {
			return nil, errors.New("a field ends early")
		}
		value := body[n : n+int(length)]
		body = body[n+int(length):]
		if typ == payloadCompressionType {
			compression, _, _ = mysql.LengthEncodedInt(value)
		}
	}
	var src io.Reader
	var closeFn func()
	switch compression {
	case payloadZSTD:
		d, err := zstd.NewReader(bytes.NewReader(body), zstd.WithDecoderConcurrency(1))
		if err != nil {
			return nil, err
		}
		src, closeFn = d, d.Close
	case payloadNone:
		src, closeFn = bytes.NewReader(body), func() {}
	default:
		return nil, fmt.Errorf("compression type %d; only zstd (0) and none (255) are known", compression)
	}
	// The inner events have no checksums: their parser reads the dump's format without one.
	p := newParser(r.cfg)
	if _, err := p.Parse(formatWithoutChecksum(r.format)); err != nil {
		closeFn()
		return nil, fmt.Errorf("format description: %w", err)
	}
	return &payloadEvents{outer: raw.Header, src: bufio.NewReaderSize(src, 64<<10), close: closeFn, parser: p}, nil
}

// formatWithoutChecksum is a FORMAT_DESCRIPTION_EVENT of the dump's format that says events
// carry no checksum.
func formatWithoutChecksum(f *replication.FormatDescriptionEvent) []byte {
	body := binary.LittleEndian.AppendUint16(nil, f.Version)
	version := make([]byte, 50)
	copy(version, f.ServerVersion)
	body = append(body, version...)
	body = binary.LittleEndian.AppendUint32(body, f.CreateTimestamp)
	body = append(body, byte(replication.EventHeaderSize))
	body = append(body, f.EventTypeHeaderLengths...)
	body = append(body, byte(replication.BINLOG_CHECKSUM_ALG_OFF), 0, 0, 0, 0)
	h := make([]byte, replication.EventHeaderSize, replication.EventHeaderSize+len(body))
	h[4] = byte(replication.FORMAT_DESCRIPTION_EVENT)
	binary.LittleEndian.PutUint32(h[9:], uint32(len(h)+len(body)))
	return append(h, body...)
}

// payloadEvents hands out the events of one payload as they are decompressed.
type payloadEvents struct {
	outer  *replication.EventHeader
	src    *bufio.Reader
	close  func()
	parser *replication.BinlogParser
	done   bool
}

// next returns the payload's next event, nil after its last.
func (p *payloadEvents) next() (*replication.BinlogEvent, error) {
	if p.done {
		return nil, nil
	}
	var hdr [replication.EventHeaderSize]byte
	if _, err := io.ReadFull(p.src, hdr[:]); err != nil {
		p.finish()
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, fmt.Errorf("%w: compressed transaction at %d: %v", ErrUnsupportedEvent, p.outer.LogPos, err)
	}
	size := binary.LittleEndian.Uint32(hdr[9:])
	if size < replication.EventHeaderSize {
		p.finish()
		return nil, fmt.Errorf("%w: compressed transaction at %d: an event of %d bytes", ErrUnsupportedEvent, p.outer.LogPos, size)
	}
	data := make([]byte, size)
	copy(data, hdr[:])
	if _, err := io.ReadFull(p.src, data[replication.EventHeaderSize:]); err != nil {
		p.finish()
		return nil, fmt.Errorf("%w: compressed transaction at %d: %v", ErrUnsupportedEvent, p.outer.LogPos, err)
	}
	ev, err := p.parser.Parse(data)
	if err != nil {
		p.finish()
		// The stream names an event it cannot decode (see undecodable); it stands in the
		// payload event.
		var ee *replication.EventError
		if errors.As(err, &ee) && ee.Header != nil {
			ee.Header.LogPos = p.outer.LogPos
		}
		return nil, err
	}
	// Its sources span the payload event, which holds it (see stream.payload).
	ev.Header.LogPos, ev.Header.EventSize = p.outer.LogPos, p.outer.EventSize
	return ev, nil
}

func (p *payloadEvents) finish() {
	if !p.done {
		p.done = true
		p.close()
	}
}
