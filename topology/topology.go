// Package topology reads the layout vstreamd serves when it stands for several servers, as
// vtgate stands for a Vitess cluster: keyspaces, their shards (named by key range, as
// Vitess names them: "-80", "80-", or "0" for an unsharded keyspace), and for each shard
// the servers that hold it, a primary and its replicas, each with a tablet type and a cell.
//
// A topology file is YAML:
//
//	keyspaces:
//	  - name: commerce
//	    database: commerce        # the schema on the servers; default: the keyspace's name
//	    shards:
//	      - name: "-80"
//	        servers:
//	          - {addr: "db1:3306", tablet_type: primary, cell: zone1}
//	          - {addr: "db1r:3306", tablet_type: replica, cell: zone2}
//	      - name: "80-"
//	        servers:
//	          - {addr: "db2:3306", tablet_type: primary, cell: zone1}
package topology

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/vstream-cdc/vstream/filter"
)

// Tablet types a server may have.
const (
	Primary = "primary"
	Replica = "replica"
	RdOnly  = "rdonly"
)

// Topology is the keyspaces vstreamd serves.
type Topology struct {
	Keyspaces []Keyspace `yaml:"keyspaces"`
}

// Keyspace is a keyspace and its shards.
type Keyspace struct {
	Name string `yaml:"name"`
	// Database is the schema on the keyspace's servers; empty means Name.
	Database string  `yaml:"database"`
	Shards   []Shard `yaml:"shards"`
}

// Shard is a shard and the servers that hold it.
type Shard struct {
	Name    string   `yaml:"name"`
	Servers []Server `yaml:"servers"`
}

// Server is one MySQL or MariaDB server of a shard.
type Server struct {
	// Addr is host:port.
	Addr string `yaml:"addr"`
	// TabletType is primary, replica or rdonly; empty means primary.
	TabletType string `yaml:"tablet_type"`
	Cell       string `yaml:"cell"`
}

// Load reads and checks a topology file.
func Load(path string) (*Topology, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("topology: %w", err)
	}
	t, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("topology %s: %w", path, err)
	}
	return t, nil
}

// Parse reads and checks a topology; unknown keys are refused.
func Parse(data []byte) (*Topology, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	t := &Topology{}
	if err := dec.Decode(t); err != nil {
		return nil, err
	}
	if err := t.check(); err != nil {
		return nil, err
	}
	return t, nil
}

// check fills the defaults and refuses what vstreamd could not serve: a keyspace or shard
// without a name or named twice, shard key ranges that overlap, a shard without a server
// or with two primaries, an unknown tablet type.
func (t *Topology) check() error {
	if len(t.Keyspaces) == 0 {
		return errors.New("no keyspaces")
	}
	seenKs := map[string]bool{}
	for ki := range t.Keyspaces {
		ks := &t.Keyspaces[ki]
		if ks.Name == "" {
			return fmt.Errorf("keyspaces[%d] has no name", ki)
		}
		if seenKs[ks.Name] {
			return fmt.Errorf("keyspace %s is named twice", ks.Name)
		}
		seenKs[ks.Name] = true
		if ks.Database == "" {
			ks.Database = ks.Name
		}
		if len(ks.Shards) == 0 {
			return fmt.Errorf("keyspace %s has no shards", ks.Name)
		}
		var ranges []filter.KeyRange
		for si := range ks.Shards {
			sh := &ks.Shards[si]
			if sh.Name == "" {
				return fmt.Errorf("keyspace %s: shards[%d] has no name", ks.Name, si)
			}
			if len(ks.Shards) > 1 || sh.Name != "0" {
				kr, err := filter.ParseKeyRange(sh.Name)
				if err != nil {
					return fmt.Errorf("keyspace %s: shard %q: a shard is named by its key range, such as -80 or 80-: %w", ks.Name, sh.Name, err)
				}
				for _, other := range ranges {
					if kr.Overlaps(other) {
						return fmt.Errorf("keyspace %s: shard %s overlaps another shard's key range", ks.Name, sh.Name)
					}
				}
				ranges = append(ranges, kr)
			}
			if len(sh.Servers) == 0 {
				return fmt.Errorf("keyspace %s shard %s has no servers", ks.Name, sh.Name)
			}
			primaries := 0
			for i := range sh.Servers {
				srv := &sh.Servers[i]
				if srv.Addr == "" {
					return fmt.Errorf("keyspace %s shard %s: servers[%d] has no addr", ks.Name, sh.Name, i)
				}
				srv.TabletType = strings.ToLower(srv.TabletType)
				if srv.TabletType == "" {
					srv.TabletType = Primary
				}
				if !slices.Contains([]string{Primary, Replica, RdOnly}, srv.TabletType) {
					return fmt.Errorf("keyspace %s shard %s server %s: tablet_type %q: want primary, replica or rdonly", ks.Name, sh.Name, srv.Addr, srv.TabletType)
				}
				if srv.TabletType == Primary {
					primaries++
				}
			}
			if primaries > 1 {
				return fmt.Errorf("keyspace %s shard %s has %d primaries; a shard has at most one", ks.Name, sh.Name, primaries)
			}
		}
	}
	return nil
}

// Keyspace returns the keyspace named name, or nil.
func (t *Topology) Keyspace(name string) *Keyspace {
	for i := range t.Keyspaces {
		if t.Keyspaces[i].Name == name {
			return &t.Keyspaces[i]
		}
	}
	return nil
}

// Shard returns the keyspace's shard named name, or nil.
func (k *Keyspace) Shard(name string) *Shard {
	for i := range k.Shards {
		if k.Shards[i].Name == name {
			return &k.Shards[i]
		}
	}
	return nil
}
