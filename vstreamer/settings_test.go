package vstreamer

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/internal/testkit"
	"github.com/vstream-cdc/vstream/position"
)

func TestSettingsProblem(t *testing.T) {
	mysql8 := func(change ...string) map[string]string {
		v := map[string]string{"log_bin": "ON", "binlog_format": "ROW", "binlog_row_image": "FULL",
			"binlog_row_metadata": "FULL", "binlog_row_value_options": "", "gtid_mode": "ON"}
		for i := 0; i < len(change); i += 2 {
			v[change[i]] = change[i+1]
		}
		return v
	}
	cases := []struct {
		name       string
		flavor     position.Flavor
		vars       map[string]string
		bestEffort bool
		// want lists what the error names; none means no error.
		want []string
	}{
		{name: "MySQL 8 as needed", flavor: position.MySQL56, vars: mysql8()},
		{name: "MariaDB has no gtid_mode or binlog_row_value_options", flavor: position.MariaDB,
			vars: map[string]string{"log_bin": "ON", "binlog_format": "ROW", "binlog_row_image": "FULL", "binlog_row_metadata": "FULL"}},
		{name: "a server without binlog_row_metadata (MySQL 5.7, MariaDB 10.4)", flavor: position.MySQL56,
			vars: map[string]string{"log_bin": "1", "binlog_format": "ROW", "binlog_row_image": "FULL", "gtid_mode": "ON"}},
		{name: "log_bin off", flavor: position.MySQL56, vars: mysql8("log_bin", "OFF"), want: []string{"log_bin is OFF; the stream needs log_bin=ON"}},
		{name: "MIXED", flavor: position.MySQL56, vars: mysql8("binlog_format", "MIXED"), want: []string{"binlog_format is MIXED; the stream needs binlog_format=ROW"}},
		{name: "STATEMENT", flavor: position.MariaDB, vars: mysql8("binlog_format", "STATEMENT"), want: []string{"binlog_format is STATEMENT; the stream needs binlog_format=ROW"}},
		{name: "MINIMAL image", flavor: position.MySQL56, vars: mysql8("binlog_row_image", "MINIMAL"), want: []string{"binlog_row_image is MINIMAL; the stream needs binlog_row_image=FULL"}},
		// NOBLOB rows carry data_columns (TestPartialImages).
		{name: "NOBLOB image", flavor: position.MySQL56, vars: mysql8("binlog_row_image", "NOBLOB")},
		{name: "MINIMAL metadata", flavor: position.MySQL56, vars: mysql8("binlog_row_metadata", "MINIMAL"),
			want: []string{"binlog_row_metadata is MINIMAL; the stream needs binlog_row_metadata=FULL", "BEST_EFFORT"}},
		{name: "MINIMAL metadata, BEST_EFFORT", flavor: position.MySQL56, vars: mysql8("binlog_row_metadata", "MINIMAL"), bestEffort: true},
		// JSON diffs are applied to the before image (TestMySQLPartialJSONUpdates).
		{name: "PARTIAL_JSON", flavor: position.MySQL56, vars: mysql8("binlog_row_value_options", "PARTIAL_JSON")},
		{name: "PARTIAL_JSON with NOBLOB", flavor: position.MySQL56, vars: mysql8("binlog_row_value_options", "PARTIAL_JSON", "binlog_row_image", "NOBLOB")},
		{name: "an unknown value options", flavor: position.MySQL56, vars: mysql8("binlog_row_value_options", "SOMETHING_NEW"),
			want: []string{"binlog_row_value_options is SOMETHING_NEW; the stream needs binlog_row_value_options=''"}},
		{name: "gtid_mode ON_PERMISSIVE", flavor: position.MySQL56, vars: mysql8("gtid_mode", "ON_PERMISSIVE"),
			want: []string{"gtid_mode is ON_PERMISSIVE; the stream needs gtid_mode=ON"}},
		{name: "gtid_mode OFF", flavor: position.MySQL56, vars: mysql8("gtid_mode", "OFF"), want: []string{"gtid_mode is OFF; the stream needs gtid_mode=ON"}},
		{name: "every problem at once", flavor: position.MySQL56, vars: mysql8("binlog_format", "MIXED", "gtid_mode", "OFF"),
			want: []string{"binlog_format is MIXED", "gtid_mode is OFF"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := settingsProblem(c.flavor, c.vars, c.bestEffort)
			if len(c.want) == 0 {
				if err != nil {
					t.Fatalf("err = %v, want none", err)
				}
				return
			}
			if !errors.Is(err, ErrServerConfig) {
				t.Fatalf("err = %v, want ErrServerConfig", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v, want it to say %q", err, w)
				}
			}
		})
	}
}

// TestServerSettingsCheckedAtStart changes the server's global settings under the engine: a
// stream started then is refused up front, naming the variable, its value and the one needed.
func TestServerSettingsCheckedAtStart(t *testing.T) {
	e := newEngine(t)
	for _, c := range []struct{ set, reset, want string }{
		{"SET GLOBAL binlog_format = 'MIXED'", "SET GLOBAL binlog_format = 'ROW'", "binlog_format is MIXED; the stream needs binlog_format=ROW"},
		{"SET GLOBAL binlog_row_image = 'MINIMAL'", "SET GLOBAL binlog_row_image = 'FULL'", "binlog_row_image is MINIMAL; the stream needs binlog_row_image=FULL"},
		{"SET GLOBAL binlog_row_metadata = 'MINIMAL'", "SET GLOBAL binlog_row_metadata = 'FULL'", "binlog_row_metadata is MINIMAL; the stream needs binlog_row_metadata=FULL"},
	} {
		t.Run(c.want, func(t *testing.T) {
			testkit.MustExec(t, db, c.set)
			defer testkit.MustExec(t, db, c.reset)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := e.Stream(ctx, Request{Position: "current"}, func([]*binlogdata.VEvent) error { return nil })
			if !errors.Is(err, ErrServerConfig) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want ErrServerConfig saying %q", err, c.want)
			}
		})
	}
}
