// Package binlogdump reads the binlog dump that queryservice.Query/BinlogDumpGTID relays (the
// server's raw packets, headers included, in BinlogDumpResponse.raw) the way a go-mysql
// replica reads a server: packets are joined into events and parsed by go-mysql's
// BinlogParser. Responses may split a packet's payload but never its header.
package binlogdump

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// Reader turns relayed bytes into binlog events.
type Reader struct {
	recv       func() ([]byte, error)
	parser     *replication.BinlogParser
	buf        []byte
	seenFormat bool
	end        error
}

// NewReader reads the bytes recv returns (the raw field of each response; io.EOF when the
// stream ends) with parser, which carries the caller's go-mysql options (flavor, checksum
// verification, time parsing).
func NewReader(recv func() ([]byte, error), parser *replication.BinlogParser) *Reader {
	return &Reader{recv: recv, parser: parser}
}

// Next returns the next event. After the server's EOF packet (a dump asked with
// BINLOG_DUMP_NON_BLOCK that reached the end of the binlog) it returns io.EOF; after its ERR
// packet, the server's error as a *mysql.MyError.
func (r *Reader) Next() (*replication.BinlogEvent, error) {
	if r.end != nil {
		return nil, r.end
	}
	payload, err := r.payload()
	if err != nil {
		r.end = err
		return nil, err
	}
	switch {
	case len(payload) == 0:
		r.end = errors.New("binlogdump: empty packet")
	case payload[0] == mysql.EOF_HEADER:
		r.end = io.EOF
	case payload[0] == mysql.ERR_HEADER:
		r.end = serverError(payload)
	case payload[0] != mysql.OK_HEADER:
		r.end = fmt.Errorf("binlogdump: packet starts with %#x, want an event (0x00), EOF or ERR", payload[0])
	}
	if r.end != nil {
		return nil, r.end
	}
	event := payload[1:]
	if len(event) < replication.EventHeaderSize {
		r.end = fmt.Errorf("binlogdump: event of %d bytes, shorter than its header", len(event))
		return nil, r.end
	}
	isFormat := replication.EventType(event[4]) == replication.FORMAT_DESCRIPTION_EVENT
	if !r.seenFormat && !isFormat {
		// The server's first event, a rotate, comes before the format description that tells
		// the parser about checksums, yet carries one when the server's binlogs do.
		event = stripChecksum(event)
	}
	r.seenFormat = r.seenFormat || isFormat
	ev, err := r.parser.Parse(event)
	if err != nil {
		r.end = fmt.Errorf("binlogdump: parse event: %w", err)
		return nil, r.end
	}
	return ev, nil
}

// payload returns the next packet's payload, joined with its continuation packets.
func (r *Reader) payload() ([]byte, error) {
	var out []byte
	for {
		if err := r.fill(4); err != nil {
			return nil, err
		}
		n := int(r.buf[0]) | int(r.buf[1])<<8 | int(r.buf[2])<<16
		if err := r.fill(4 + n); err != nil {
			return nil, err
		}
		out = append(out, r.buf[4:4+n]...)
		r.buf = r.buf[4+n:]
		if n < mysql.MaxPayloadLen {
			return out, nil
		}
	}
}

// fill receives until n bytes are buffered.
func (r *Reader) fill(n int) error {
	for len(r.buf) < n {
		b, err := r.recv()
		if errors.Is(err, io.EOF) {
			if len(r.buf) == 0 && n == 4 {
				return fmt.Errorf("binlogdump: the stream ended without an EOF or ERR packet: %w", io.ErrUnexpectedEOF)
			}
			return fmt.Errorf("binlogdump: the stream ended inside a packet: %w", io.ErrUnexpectedEOF)
		}
		if err != nil {
			return err
		}
		r.buf = append(r.buf, b...)
	}
	return nil
}

func serverError(p []byte) error {
	e := &mysql.MyError{}
	if len(p) >= 3 {
		e.Code = binary.LittleEndian.Uint16(p[1:])
	}
	msg := p[min(3, len(p)):]
	if len(msg) >= 6 && msg[0] == '#' {
		e.State, msg = string(msg[1:6]), msg[6:]
	}
	e.Message = string(msg)
	return e
}

// stripChecksum removes a CRC32 checksum that ends an event, fixing the event's size.
func stripChecksum(event []byte) []byte {
	n := len(event) - replication.BinlogChecksumLength
	if n < replication.EventHeaderSize || crc32.ChecksumIEEE(event[:n]) != binary.LittleEndian.Uint32(event[n:]) {
		return event
	}
	out := bytes.Clone(event[:n])
	binary.LittleEndian.PutUint32(out[9:], uint32(n))
	return out
}
