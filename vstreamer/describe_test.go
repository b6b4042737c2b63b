package vstreamer

import (
	"context"
	"strconv"
	"strings"
	"testing"
)

// TestDescribe reads what the encoders are told about the server: its flavor, version, time
// zone and collations, including the ids MariaDB gives its UCA 14.0.0 collations only in
// COLLATION_CHARACTER_SET_APPLICABILITY.
func TestDescribe(t *testing.T) {
	d, err := newEngine(t).Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if d.Flavor != "mariadb" || !strings.Contains(d.Version, "MariaDB") || d.TimeZone == "" || strings.EqualFold(d.TimeZone, "SYSTEM") {
		t.Errorf("description %+v", d)
	}
	for id, want := range map[uint32]string{8: "latin1", 28: "gbk", 45: "utf8mb4", 54: "utf16", 63: "binary"} {
		if got := d.Collations[id]; got != want {
			t.Errorf("collation %d is %q, want %q", id, got, want)
		}
	}
	id, err := queryStringOn(t, "SELECT ID FROM information_schema.COLLATION_CHARACTER_SET_APPLICABILITY WHERE FULL_COLLATION_NAME = 'utf16_uca1400_ai_ci'")
	n, perr := strconv.ParseUint(id, 10, 32)
	if err != nil || perr != nil {
		t.Skipf("no UCA 14.0.0 collations here: %v %v", err, perr)
	}
	if got := d.Collations[uint32(n)]; n < 2048 || got != "utf16" {
		t.Errorf("utf16_uca1400_ai_ci (id %d) is %q in the collations", n, got)
	}
}
