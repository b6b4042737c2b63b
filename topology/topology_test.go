package topology

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, err string
	}{
		{"two shards", `
keyspaces:
  - name: commerce
    shards:
      - name: "-80"
        servers:
          - {addr: "db1:3306"}
          - {addr: "db1r:3306", tablet_type: REPLICA, cell: zone2}
      - name: "80-"
        servers: [{addr: "db2:3306", tablet_type: primary}]
`, ""},
		{"unsharded", "keyspaces: [{name: ks, database: app, shards: [{name: \"0\", servers: [{addr: \"h:1\"}]}]}]", ""},
		{"no keyspaces", "keyspaces: []", "no keyspaces"},
		{"unknown key", "keyspaces: [{name: ks, shard: []}]", "field shard not found"},
		{"keyspace twice", "keyspaces: [{name: ks, shards: [{name: \"0\", servers: [{addr: \"h:1\"}]}]}, {name: ks, shards: [{name: \"0\", servers: [{addr: \"h:1\"}]}]}]", "named twice"},
		{"bad shard name", "keyspaces: [{name: ks, shards: [{name: zz, servers: [{addr: \"h:1\"}]}]}]", "named by its key range"},
		{"overlap", "keyspaces: [{name: ks, shards: [{name: \"-80\", servers: [{addr: \"h:1\"}]}, {name: \"40-\", servers: [{addr: \"h:2\"}]}]}]", "overlaps"},
		{"no servers", "keyspaces: [{name: ks, shards: [{name: \"-80\"}]}]", "has no servers"},
		{"two primaries", "keyspaces: [{name: ks, shards: [{name: \"0\", servers: [{addr: \"h:1\"}, {addr: \"h:2\"}]}]}]", "2 primaries"},
		{"bad tablet type", "keyspaces: [{name: ks, shards: [{name: \"0\", servers: [{addr: \"h:1\", tablet_type: leader}]}]}]", `tablet_type "leader"`},
		{"no addr", "keyspaces: [{name: ks, shards: [{name: \"0\", servers: [{cell: z}]}]}]", "has no addr"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			top, err := Parse([]byte(tc.yaml))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %v, want an error with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, ks := range top.Keyspaces {
				if ks.Database == "" {
					t.Errorf("keyspace %s: no database default", ks.Name)
				}
				for _, sh := range ks.Shards {
					for _, s := range sh.Servers {
						if s.TabletType != Primary && s.TabletType != Replica {
							t.Errorf("%s: tablet type %q", s.Addr, s.TabletType)
						}
					}
				}
			}
		})
	}
}
