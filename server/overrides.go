package server

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
)

// vitessConfig is what a stream takes from Vitess's VStreamOptions.config_overrides.
type vitessConfig struct {
	// packetSize is vstream-packet-size; zero leaves batching to the server's bound.
	packetSize int
}

// overrideKind is how Vitess reads the value of a config_overrides key.
type overrideKind int

const (
	overrideInt overrideKind = iota
	overrideInt64
	overrideBool
	overrideDuration
)

// vitessOverrides are the keys Vitess's VReplication config reads (v0.24.4,
// go/vt/vttablet/common/config.go), with how their values are read. vstream-packet-size is
// honoured; the others tune Vitess's own replication workers or its dynamic packet sizing
// and are accepted and checked without effect here (docs/consuming.md, "Vitess's API").
var vitessOverrides = map[string]overrideKind{
	"vreplication-experimental-flags":         overrideInt64,
	"vreplication-net-read-timeout":           overrideInt,
	"vreplication-net-write-timeout":          overrideInt,
	"vreplication-copy-phase-duration":        overrideDuration,
	"vreplication-retry-delay":                overrideDuration,
	"vreplication-max-time-to-retry-on-error": overrideDuration,
	"relay-log-max-size":                      overrideInt,
	"relay_log_max_size":                      overrideInt,
	"relay-log-max-items":                     overrideInt,
	"relay_log_max_items":                     overrideInt,
	"vreplication-replica-lag-tolerance":      overrideDuration,
	"vreplication-heartbeat-update-interval":  overrideInt,
	"vreplication-store-compressed-gtid":      overrideBool,
	"vreplication-parallel-insert-workers":    overrideInt,
	"vstream-packet-size":                     overrideInt,
	"vstream_packet_size":                     overrideInt,
	"vstream-dynamic-packet-size":             overrideBool,
	"vstream_dynamic_packet_size":             overrideBool,
	"vstream_binlog_rotation_threshold":       overrideInt64,
}

// parseConfigOverrides reads config_overrides as Vitess does: an empty value is skipped, and
// an unknown key or a value of the wrong kind fails the request with Vitess's words.
func parseConfigOverrides(m map[string]string) (vitessConfig, error) {
	var cfg vitessConfig
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var errs []string
	for _, k := range keys {
		v := m[k]
		if v == "" {
			continue
		}
		kind, ok := vitessOverrides[k]
		if !ok {
			errs = append(errs, "unknown vreplication config flag: "+k)
			continue
		}
		var err error
		switch kind {
		case overrideInt:
			var n int
			n, err = strconv.Atoi(v)
			if err == nil && (k == "vstream-packet-size" || k == "vstream_packet_size") {
				if n <= 0 {
					err = fmt.Errorf("not a positive number of bytes")
				}
				cfg.packetSize = n
			}
		case overrideInt64:
			_, err = strconv.ParseInt(v, 10, 64)
		case overrideBool:
			_, err = strconv.ParseBool(v)
		case overrideDuration:
			_, err = time.ParseDuration(v)
		}
		if err != nil {
			errs = append(errs, fmt.Sprintf("invalid value for %s: %s", k, v))
		}
	}
	if len(errs) > 0 {
		return cfg, status.Errorf(codes.InvalidArgument, "failed to parse VReplicationConfig: %s", strings.Join(errs, ", "))
	}
	return cfg, nil
}

// checkEventTypes refuses values that are not VEvent types.
func checkEventTypes(types []binlogdata.VEventType) error {
	for _, t := range types {
		if _, ok := binlogdata.VEventType_name[int32(t)]; !ok {
			return status.Errorf(codes.InvalidArgument, "event_types: %d is not a VEventType", t)
		}
	}
	return nil
}
