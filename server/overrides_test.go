package server

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
)

func TestParseConfigOverrides(t *testing.T) {
	cases := []struct {
		in     map[string]string
		packet int
		err    string
	}{
		{in: nil},
		{in: map[string]string{"vstream-packet-size": "10"}, packet: 10},
		{in: map[string]string{"vstream_packet_size": "20", "vstream_dynamic_packet_size": "false"}, packet: 20},
		// Empty values are skipped, as Vitess skips them.
		{in: map[string]string{"vstream-packet-size": "", "no-such-flag": ""}},
		{in: map[string]string{"vreplication-copy-phase-duration": "1h", "relay_log_max_items": "5", "vreplication-store-compressed-gtid": "true",
			"vstream_binlog_rotation_threshold": "1024"}},
		{in: map[string]string{"vstream-packet-size": "ten"}, err: "failed to parse VReplicationConfig: invalid value for vstream-packet-size: ten"},
		{in: map[string]string{"vstream-packet-size": "0"}, err: "invalid value for vstream-packet-size: 0"},
		{in: map[string]string{"vreplication-retry-delay": "soon"}, err: "invalid value for vreplication-retry-delay: soon"},
		{in: map[string]string{"b-flag": "1", "a-flag": "2"}, err: "failed to parse VReplicationConfig: unknown vreplication config flag: a-flag, unknown vreplication config flag: b-flag"},
	}
	for _, c := range cases {
		cfg, err := parseConfigOverrides(c.in)
		if c.err != "" {
			if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%v: err = %v, want InvalidArgument with %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || cfg.packetSize != c.packet {
			t.Errorf("%v: packet size %d, err %v; want %d", c.in, cfg.packetSize, err, c.packet)
		}
	}
}

func TestCheckEventTypes(t *testing.T) {
	if err := checkEventTypes([]binlogdata.VEventType{binlogdata.VEventType_GTID, binlogdata.VEventType_ROW}); err != nil {
		t.Fatal(err)
	}
	if err := checkEventTypes([]binlogdata.VEventType{99}); status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "99 is not a VEventType") {
		t.Errorf("err = %v", err)
	}
}
