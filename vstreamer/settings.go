package vstreamer

import (
	"fmt"
	"strings"

	"github.com/go-mysql-org/go-mysql/client"

	"github.com/vstream-cdc/vstream/position"
)

// binlogSetting is a server variable a change stream depends on and the value it needs.
type binlogSetting struct {
	name string
	// need is the value the stream needs, as the server prints it.
	need string
	// alsoFits are other values the stream runs under.
	alsoFits []string
	// flavor limits the rule to one flavor; "" applies to both.
	flavor position.Flavor
	// why says what goes wrong under another value.
	why string
}

// binlogSettings are checked when a stream starts, which includes every reconnect of a
// client. A variable the server does not have (binlog_row_metadata before MySQL 8.0.1 and
// MariaDB 10.5, binlog_row_value_options on MariaDB) is not checked. While a stream runs,
// a change of these settings shows in the events themselves and ends the stream there
// (see checkRows and the GTID events).
var binlogSettings = []binlogSetting{
	{name: "log_bin", need: "ON", why: "there is no binlog to stream; start the server with log_bin"},
	// A server whose sessions log statements by default would stream almost every change as
	// SQL text without row images; only sessions that choose STATEMENT themselves, on a ROW
	// server, are streamed that way.
	{name: "binlog_format", need: "ROW", why: "changes are logged as statements, not rows"},
	// NOBLOB leaves out unchanged BLOB and TEXT columns, which rows mark in data_columns, as
	// Vitess does. MINIMAL leaves out every column but the key of a before image, and Vitess
	// refuses a server logging so (TestMinimalMode); a session that sets it is still streamed,
	// with data_columns.
	{name: "binlog_row_image", need: "FULL", alsoFits: []string{"NOBLOB"}, why: "rows are logged without their columns"},
	// Without column names a row is matched to today's schema by position, which names
	// the columns wrongly after a DDL that reordered them; BEST_EFFORT streams accept that.
	{name: "binlog_row_metadata", need: "FULL", why: "rows are logged without their column names; or use field_event_mode BEST_EFFORT"},
	// Partial JSON diffs are applied to the before image, which holds the column a diff
	// changes under FULL and NOBLOB alike; a session under MINIMAL is refused at the event.
	{name: "binlog_row_value_options", need: "", alsoFits: []string{"PARTIAL_JSON"}, flavor: position.MySQL56, why: "JSON updates are logged as partial diffs, not values"},
	{name: "gtid_mode", need: "ON", flavor: position.MySQL56, why: "transactions without a GTID have no position to resume from"},
}

// readSettings reads the server's binlog settings (name -> global value), which
// settingsProblem judges.
func readSettings(conn *client.Conn) (map[string]string, error) {
	names := make([]string, len(binlogSettings))
	for i, s := range binlogSettings {
		names[i] = "'" + s.name + "'"
	}
	r, err := conn.Execute("SHOW GLOBAL VARIABLES WHERE Variable_name IN (" + strings.Join(names, ", ") + ")")
	if err != nil {
		return nil, fmt.Errorf("%w: read binlog settings: %v", ErrUnavailable, err)
	}
	defer r.Close()
	vars := make(map[string]string, r.RowNumber())
	for i := range r.RowNumber() {
		vars[strings.ToLower(resultString(r, i, 0))] = resultString(r, i, 1)
	}
	return vars, nil
}

// settingsProblem returns ErrServerConfig naming every variable in vars (name -> global value)
// whose value a stream cannot run under, with the value it needs; nil when all fit.
func settingsProblem(flavor position.Flavor, vars map[string]string, bestEffort bool) error {
	var bad []string
	for _, s := range binlogSettings {
		if s.flavor != "" && s.flavor != flavor {
			continue
		}
		v, ok := vars[s.name]
		if !ok {
			if s.name == "log_bin" {
				bad = append(bad, "log_bin is not reported by the server; the stream needs log_bin=ON")
			}
			continue
		}
		if fits(s, v) || s.name == "binlog_row_metadata" && bestEffort {
			continue
		}
		shown := v
		if shown == "" {
			shown = "''"
		}
		need := s.need
		if need == "" {
			need = "''"
		}
		bad = append(bad, fmt.Sprintf("%s is %s; the stream needs %s=%s (%s)", s.name, shown, s.name, need, s.why))
	}
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrServerConfig, strings.Join(bad, "; "))
}

func fits(s binlogSetting, v string) bool {
	v = strings.TrimSpace(v)
	if s.name == "log_bin" && v == "1" {
		return true
	}
	if strings.EqualFold(v, s.need) {
		return true
	}
	for _, a := range s.alsoFits {
		if strings.EqualFold(v, a) {
			return true
		}
	}
	return false
}
