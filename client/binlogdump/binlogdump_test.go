package binlogdump

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

func packet(seq byte, payload []byte) []byte {
	n := len(payload)
	return append([]byte{byte(n), byte(n >> 8), byte(n >> 16), seq}, payload...)
}

// rotate is the fake rotate event a server sends first, with a CRC32 checksum.
func rotate(name string) []byte {
	ev := make([]byte, replication.EventHeaderSize, 64)
	ev[4] = byte(replication.ROTATE_EVENT)
	binary.LittleEndian.PutUint32(ev[5:], 1)
	binary.LittleEndian.PutUint16(ev[17:], 0x20)
	ev = binary.LittleEndian.AppendUint64(ev, 4)
	ev = append(ev, name...)
	binary.LittleEndian.PutUint32(ev[9:], uint32(len(ev)+4))
	return binary.LittleEndian.AppendUint32(ev, crc32.ChecksumIEEE(ev))
}

// byteByByte hands the stream out one byte per response, the worst split a relay may make.
func byteByByte(raw []byte) func() ([]byte, error) {
	return func() ([]byte, error) {
		if len(raw) == 0 {
			return nil, io.EOF
		}
		b := raw[:1]
		raw = raw[1:]
		return b, nil
	}
}

func TestReader(t *testing.T) {
	raw := append(packet(1, append([]byte{0}, rotate("binlog.000007")...)),
		packet(2, []byte{mysql.EOF_HEADER, 0, 0, 2, 0})...)
	r := NewReader(byteByByte(raw), replication.NewBinlogParser())
	ev, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	if rot, ok := ev.Event.(*replication.RotateEvent); !ok || string(rot.NextLogName) != "binlog.000007" || rot.Position != 4 {
		t.Errorf("got %#v, want the rotate to binlog.000007 without its checksum", ev.Event)
	}
	if _, err := r.Next(); !errors.Is(err, io.EOF) {
		t.Errorf("after the EOF packet: %v, want io.EOF", err)
	}
}

func TestReaderServerError(t *testing.T) {
	raw := packet(1, append([]byte{mysql.ERR_HEADER, 0xd4, 0x04, '#', 'H', 'Y', '0', '0', '0'}, "gone"...))
	_, err := NewReader(byteByByte(raw), replication.NewBinlogParser()).Next()
	var me *mysql.MyError
	if !errors.As(err, &me) || me.Code != 1236 || me.State != "HY000" || me.Message != "gone" {
		t.Errorf("got %v, want the server's error 1236 (HY000) gone", err)
	}
}

func TestReaderCutStream(t *testing.T) {
	raw := packet(1, append([]byte{0}, rotate("binlog.000001")...))
	for _, cut := range []int{0, 2, 10} {
		_, err := NewReader(byteByByte(raw[:cut]), replication.NewBinlogParser()).Next()
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("stream cut at %d: got %v, want io.ErrUnexpectedEOF", cut, err)
		}
	}
}
