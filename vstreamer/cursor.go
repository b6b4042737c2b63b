package vstreamer

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/google/uuid"

	"github.com/vstream-cdc/vstream/position"
)

// cursor is where a stream is in the binlog: its position (the transactions it has
// passed), the transaction being read and the binlog event being handled, and the place of
// that event in the server's binlog files.
type cursor struct {
	pos position.Position
	// start is where the stream started, which pos leaves at the first commit.
	start position.Position
	// eventGTI is the GTID of the transaction being read, e.g. "0-1-100" (see gti).
	eventGTI string
	// eventID is that GTID as its binlog event gave it: the position moves by it without
	// parsing text, and gti writes eventGTI from it.
	eventID txnGTID
	// inTxn is set between a transaction's BEGIN (or the MariaDB GTID event that opens it)
	// and its end.
	inTxn bool
	// binlogFile and binlogPos are where the stream is in the server's binlog files: the
	// end of the last event read.
	binlogFile string
	binlogPos  uint32
	// ev is the binlog event being handled (hdr its header), to name it if the stream panics.
	ev  *replication.BinlogEvent
	hdr *replication.EventHeader
	// atCurrent is set for a stream from "current" without a copy: it may start at any
	// position from the server's head on (the shared reader's head, say).
	atCurrent bool
}

// saw records ev as the binlog event being handled.
func (c *cursor) saw(ev *replication.BinlogEvent) {
	c.hdr = ev.Header
	c.ev = ev
	if ev.Header.LogPos != 0 {
		c.binlogPos = ev.Header.LogPos
	}
}

// rotate moves the cursor to the binlog file a rotate event names.
func (c *cursor) rotate(e *replication.RotateEvent) {
	c.binlogFile, c.binlogPos = string(e.NextLogName), uint32(e.Position)
}

// enter makes id the GTID of the transaction being read; its text is written when an event
// or an error needs it (gti). The zero txnGTID is none, once a transaction ended.
func (c *cursor) enter(id txnGTID) {
	c.eventGTI, c.eventID = "", id
}

// advance moves the position past the transaction being read, as its GTID event gave it; a
// file position moves to the end of the event being handled.
func (c *cursor) advance() error {
	if fp, ok := c.pos.GTIDSet.(*position.FilePosSet); ok {
		fp.File, fp.Pos = c.binlogFile, uint64(c.binlogPos)
	} else if c.eventID.flavor != "" || c.eventGTI != "" {
		var err error
		switch id := &c.eventID; id.flavor {
		case position.MariaDB:
			err = c.pos.AddMariaDB(id.mariadb)
		case position.MySQL56:
			err = c.pos.AddMySQL(id.sid, id.tag, id.gno)
		default:
			err = c.pos.Update(c.eventGTI)
		}
		if err != nil {
			return fmt.Errorf("advance position %s by %s: %w", c.pos, c.gti(), err)
		}
	}
	return nil
}

// gti is the GTID of the transaction being read, as text. It is written only when an event
// or an error names it: a filtered stream skips most transactions unnamed.
func (c *cursor) gti() string {
	if c.eventGTI != "" {
		return c.eventGTI
	}
	switch id := &c.eventID; id.flavor {
	case position.MariaDB:
		c.eventGTI = formatMariaDBGTID(id.mariadb)
	case position.MySQL56:
		if tag := id.tag.String(); tag != "" {
			c.eventGTI = formatMySQLTaggedGTID(id.sid[:], tag, id.gno)
		} else {
			c.eventGTI = formatMySQLGTID(id.sid[:], id.gno)
		}
	default:
		// No GTID event: eventGTI is all there is.
	}
	return c.eventGTI
}

// txnGTIDSet is the executed GTID set including the transaction being read.
func (c *cursor) txnGTIDSet() string {
	if c.gti() == "" {
		return c.pos.String()
	}
	p := c.pos.Clone()
	if err := p.Update(c.gti()); err != nil {
		// commit reports the same error with its context.
		return c.pos.String()
	}
	return p.String()
}

// atBadOffset reports a file-position stream that failed before it read any event past its
// start: the server could not read the binlog at the requested offset, which resolve checked
// is inside a file the server has, so the offset is not an event's start.
func (c *cursor) atBadOffset(err error) bool {
	file, pos, ok := c.pos.FilePos()
	at, atPos := c.binlogFile, c.binlogPos
	var rf *readFailure
	if errors.As(err, &rf) {
		at, atPos = rf.file, rf.pos
	}
	if at == "" {
		// No event came before the failure (go-mysql may hand out the server's error before
		// the rotate event it read first): the reader failed where it started.
		at, atPos = file, uint32(min(pos, uint64(^uint32(0))))
	}
	return ok && c.pos.Equal(c.start) && at == file && uint64(atPos) <= pos
}

// binlogAt is the file:offset of the last event read.
func (c *cursor) binlogAt() string {
	if c.binlogFile == "" && c.binlogPos == 0 {
		return ""
	}
	return fmt.Sprintf("%s:%d", c.binlogFile, c.binlogPos)
}

// txnGTID is a transaction's GTID as its binlog GTID event gives it: a MariaDB GTID, or a
// MySQL source uuid, tag and number.
type txnGTID struct {
	flavor  position.Flavor // "" when no GTID event gave one
	mariadb mysql.MariadbGTID
	sid     uuid.UUID
	tag     mysql.Tag
	gno     int64
}

func formatMariaDBGTID(g mysql.MariadbGTID) string {
	var b [64]byte
	out := strconv.AppendUint(b[:0], uint64(g.DomainID), 10)
	out = append(out, '-')
	out = strconv.AppendUint(out, uint64(g.ServerID), 10)
	out = append(out, '-')
	out = strconv.AppendUint(out, g.SequenceNumber, 10)
	return string(out)
}

func formatMySQLGTID(sid []byte, gno int64) string {
	const hex = "0123456789abcdef"
	var b [64]byte
	out := b[:0]
	for i, c := range sid {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			out = append(out, '-')
		}
		out = append(out, hex[c>>4], hex[c&0xf])
	}
	out = append(out, ':')
	out = strconv.AppendInt(out, gno, 10)
	return string(out)
}

// formatMySQLTaggedGTID writes uuid:tag:number, as MySQL prints a tagged GTID.
func formatMySQLTaggedGTID(sid []byte, tag string, gno int64) string {
	plain := formatMySQLGTID(sid, gno)
	u := plain[:36]
	return u + ":" + tag + ":" + strconv.FormatInt(gno, 10)
}
