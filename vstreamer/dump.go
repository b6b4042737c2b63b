package vstreamer

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"strings"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/vstream-cdc/vstream/filter"
	"github.com/vstream-cdc/vstream/position"
)

// DumpRequest starts a binlog dump from a GTID set, the way Vitess's BinlogDumpGTID does.
type DumpRequest struct {
	// GTIDSet is the set the reader holds: "MariaDB/0-1-100", "MySQL56/<uuid>:1-5", or the
	// same without the prefix in the server's flavor. Empty means the reader holds nothing.
	GTIDSet string
	// BinlogFile and BinlogPos go with the set in MySQL's COM_BINLOG_DUMP_GTID. On MariaDB,
	// whose dump takes one or the other, a file with no GTIDSet starts the dump at the file
	// and offset.
	BinlogFile string
	BinlogPos  uint64
	// Flags are the dump command's flags (BINLOG_DUMP_NON_BLOCK = 1 ends the dump at the end
	// of the binlog with an EOF packet).
	Flags uint16
	// MaxBatchBytes bounds one batch of raw bytes; zero means the engine's MaxBatchBytes.
	MaxBatchBytes int
}

// DumpFunc receives raw MySQL protocol bytes: whole packets, headers included, as the server
// sent them; a packet longer than a batch continues in the next one, but a packet header is
// never split. The slice is reused once it returns.
type DumpFunc func(raw []byte) error

// packetHeader is the MySQL packet header: 3 bytes of payload length and a sequence number.
const packetHeader = 4

// binlogHeader is the binlog file's magic number, the offset of its first event.
const binlogHeader = 4

// StreamDump opens a replication connection, asks the server for its binlog from req's
// position and relays the server's packets until the server ends the dump (an EOF or ERR
// packet, relayed too), ctx ends or send fails. The events' checksums are the server's
// binlog_checksum, as in its binlog files.
func (e *Engine) StreamDump(ctx context.Context, req DumpRequest, send DumpFunc) error {
	select {
	case <-e.drain:
		return fmt.Errorf("%w: not starting new dumps", ErrShuttingDown)
	default:
	}
	if e.filePos() {
		return errNeedsGTID("a binlog dump from a GTID set (BinlogDumpGTID)", "stream with VStream from a FilePos position")
	}
	conn, err := e.connect(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }() // a read-only dump connection, thrown away at the end
	// A relay of the raw binlog needs no row metadata in it: the client decodes it.
	info, err := e.inspect(ctx, true)
	if err != nil {
		return err
	}
	start, err := dumpPosition(req.GTIDSet, info.flavor)
	if err != nil {
		return err
	}
	if err = startDump(conn, info.flavor, start, req); err != nil {
		return err
	}
	// Closing the connection is what ends a read blocked on the server: when the client
	// leaves, and when the engine drains (a dump has no transaction boundary to wait for;
	// the reader resumes from the last GTID it read).
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	relayed := make(chan struct{})
	defer close(relayed)
	drained := make(chan struct{})
	go func() {
		select {
		case <-e.drain:
			close(drained)
			_ = conn.Close() // ends the blocked read; the dump ends with ErrShuttingDown
		case <-relayed:
		}
	}()
	// go-mysql's packet reading (ReadPacketTo) joins a payload split over several packets and
	// drops their headers; the relay wants the packets as sent, so it reads the connection
	// itself. Nothing is buffered in go-mysql's reader: the server sent nothing since the
	// last reply was read.
	maxBatch := req.MaxBatchBytes
	if maxBatch <= 0 {
		maxBatch = e.cfg.MaxBatchBytes
	}
	err = relayPackets(bufio.NewReaderSize(conn.Conn.Conn, 64<<10), max(maxBatch, packetHeader), send)
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	select {
	case <-drained:
		// Closing the connection ends the read with an error or, as the server's end of
		// the stream, with none: either way the drain ended the dump.
		return fmt.Errorf("%w: the binlog dump was ended; resume from the last GTID read", ErrShuttingDown)
	default:
	}
	return err
}

// dumpPosition reads the request's GTID set in the server's flavor.
func dumpPosition(s string, flavor position.Flavor) (position.Position, error) {
	s = strings.TrimSpace(s)
	if strings.Contains(s, "/") {
		p, err := position.Parse(s)
		if err != nil {
			return p, err
		}
		if p.Flavor != flavor {
			return p, fmt.Errorf("%w: gtid_set %s is %s; the server is %s", ErrFlavor, s, p.Flavor, flavor)
		}
		return p, nil
	}
	return position.ParseBody(flavor, s)
}

// startDump prepares the replication session as a replica does and sends the dump command.
func startDump(conn *client.Conn, flavor position.Flavor, start position.Position, req DumpRequest) error {
	stmts := []string{
		// Events carry the checksums of the server's binlog files; the reader verifies them.
		"SET @master_binlog_checksum = @@global.binlog_checksum, @source_binlog_checksum = @@global.binlog_checksum",
	}
	if flavor == position.MariaDB {
		// GTID events rather than their older stand-ins.
		stmts = append(stmts, "SET @mariadb_slave_capability = 4")
		// A GTID set, even empty (everything), unless a file and offset were given alone.
		if req.GTIDSet != "" || req.BinlogFile == "" {
			stmts = append(stmts, "SET @slave_connect_state = "+filter.QuoteString(start.Normalized().GTIDSet.String()),
				"SET @slave_gtid_strict_mode = 1")
		}
	}
	for _, q := range stmts {
		if _, err := conn.Execute(q); err != nil {
			return fmt.Errorf("%w: prepare binlog dump: %s: %v", ErrUnavailable, q, err)
		}
	}
	cmd := dumpCommand(flavor, start, req, randomServerID())
	conn.ResetSequence()
	if err := conn.WritePacket(cmd); err != nil {
		return fmt.Errorf("%w: send binlog dump command: %v", ErrUnavailable, err)
	}
	return nil
}

// dumpCommand is the dump command packet, with room for its header: COM_BINLOG_DUMP on
// MariaDB (the position comes from @slave_connect_state when set), COM_BINLOG_DUMP_GTID with
// the set's SID block on MySQL.
func dumpCommand(flavor position.Flavor, start position.Position, req DumpRequest, serverID uint32) []byte {
	var cmd []byte
	if flavor == position.MariaDB {
		cmd = make([]byte, packetHeader, packetHeader+11+len(req.BinlogFile))
		cmd = append(cmd, mysql.COM_BINLOG_DUMP)
		cmd = binary.LittleEndian.AppendUint32(cmd, uint32(req.BinlogPos))
		cmd = binary.LittleEndian.AppendUint16(cmd, req.Flags)
		cmd = binary.LittleEndian.AppendUint32(cmd, serverID)
		cmd = append(cmd, req.BinlogFile...)
	} else {
		set, ok := start.GTIDSet.(*mysql.MysqlGTIDSet)
		if !ok || set == nil {
			empty := mysql.NewMysqlGTIDSet()
			set = &empty
		}
		sids := set.Encode()
		// MySQL checks the offset even when the GTID set picks the file (no file named),
		// refusing one below the binlog header; a replica sends 4, the first event.
		pos := req.BinlogPos
		if req.BinlogFile == "" && pos < binlogHeader {
			pos = binlogHeader
		}
		cmd = make([]byte, packetHeader, packetHeader+23+len(req.BinlogFile)+len(sids))
		cmd = append(cmd, mysql.COM_BINLOG_DUMP_GTID)
		cmd = binary.LittleEndian.AppendUint16(cmd, req.Flags)
		cmd = binary.LittleEndian.AppendUint32(cmd, serverID)
		cmd = binary.LittleEndian.AppendUint32(cmd, uint32(len(req.BinlogFile)))
		cmd = append(cmd, req.BinlogFile...)
		cmd = binary.LittleEndian.AppendUint64(cmd, pos)
		cmd = binary.LittleEndian.AppendUint32(cmd, uint32(len(sids)))
		cmd = append(cmd, sids...)
	}
	return cmd
}

// relayPackets copies packets from r to send in batches of at most size bytes, packing as
// many as are already read, and sending what it holds before it would wait on the server.
// It stops after relaying an EOF or ERR packet (the end of the dump), returning nil, or at
// the first read or send error.
func relayPackets(r *bufio.Reader, size int, send DumpFunc) error {
	buf := make([]byte, 0, size)
	flush := func() error {
		if len(buf) == 0 {
			return nil
		}
		err := send(buf)
		buf = buf[:0]
		return err
	}
	// readHeader appends the next packet header to buf and returns the payload length.
	readHeader := func() (int, error) {
		if len(buf) > 0 && (cap(buf)-len(buf) < packetHeader || r.Buffered() < packetHeader) {
			// The header would not fit, or reading it may wait: what is held goes out now.
			if err := flush(); err != nil {
				return 0, err
			}
		}
		h := buf[len(buf) : len(buf)+packetHeader]
		if _, err := io.ReadFull(r, h); err != nil {
			return 0, fmt.Errorf("%w: read binlog packet header: %v", ErrUnavailable, err)
		}
		buf = buf[:len(buf)+packetHeader]
		return int(h[0]) | int(h[1])<<8 | int(h[2])<<16, nil
	}
	// readPayload appends n payload bytes, sending full batches as it goes, and returns the
	// payload's first byte.
	readPayload := func(n int) (byte, error) {
		var first byte
		for done := 0; done < n; {
			if len(buf) == cap(buf) {
				if err := flush(); err != nil {
					return 0, err
				}
			}
			k := min(n-done, cap(buf)-len(buf))
			chunk := buf[len(buf) : len(buf)+k]
			if _, err := io.ReadFull(r, chunk); err != nil {
				return 0, fmt.Errorf("%w: read binlog packet: %v", ErrUnavailable, err)
			}
			if done == 0 {
				first = chunk[0]
			}
			buf = buf[:len(buf)+k]
			done += k
		}
		return first, nil
	}
	for {
		n, err := readHeader()
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("%w: the server sent an empty packet where a binlog event or EOF was due", ErrUnavailable)
		}
		first, err := readPayload(n)
		if err != nil {
			return err
		}
		// A payload of 2^24-1 bytes continues in the next packet, down to a shorter one.
		for n == mysql.MaxPayloadLen {
			if n, err = readHeader(); err != nil {
				return err
			}
			if _, err := readPayload(n); err != nil {
				return err
			}
		}
		if first == mysql.EOF_HEADER || first == mysql.ERR_HEADER {
			return flush()
		}
	}
}
