package vstreamer

import (
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
)

func TestGTIDFormatting(t *testing.T) {
	sid := []byte{0x3e, 0x11, 0xfa, 0x47, 0x71, 0xca, 0x11, 0xe1, 0x9e, 0x33, 0xc8, 0x0a, 0xa9, 0x42, 0x95, 0x62}
	if got, want := formatMySQLGTID(sid, 45), "3e11fa47-71ca-11e1-9e33-c80aa9429562:45"; got != want {
		t.Errorf("MySQL GTID = %s, want %s", got, want)
	}
	if got, want := formatMariaDBGTID(mysql.MariadbGTID{DomainID: 1, ServerID: 2, SequenceNumber: 18446744073709551615}), "1-2-18446744073709551615"; got != want {
		t.Errorf("MariaDB GTID = %s, want %s", got, want)
	}
}
