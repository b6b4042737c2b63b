package shards

import (
	"fmt"
	"slices"
	"strings"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/topology"
	"github.com/vstream-cdc/vstream/vstreamer"
)

// Cluster is the servers of a topology, each with its engine: what vstreamd streams when
// it stands for several shards.
type Cluster struct {
	top *topology.Topology
	// members are each shard's servers in the topology's order, by "keyspace/shard".
	members map[string][]Member
}

// NewCluster makes an engine for every server of the topology, each configured as base
// (credentials, limits, ...) with the server's address, the keyspace's database and the
// keyspace and shard its events carry.
func NewCluster(top *topology.Topology, base vstreamer.Config) (*Cluster, error) {
	c := &Cluster{top: top, members: map[string][]Member{}}
	for _, ks := range top.Keyspaces {
		for _, sh := range ks.Shards {
			for _, srv := range sh.Servers {
				cfg := base
				cfg.Addr, cfg.Database, cfg.Keyspace, cfg.Shard = srv.Addr, ks.Database, ks.Name, sh.Name
				cfg.Databases = nil
				e, err := vstreamer.NewEngine(cfg)
				if err != nil {
					return nil, fmt.Errorf("keyspace %s shard %s server %s: %w", ks.Name, sh.Name, srv.Addr, err)
				}
				key := ks.Name + "/" + sh.Name
				c.members[key] = append(c.members[key], Member{Engine: e, TabletType: srv.TabletType, Cell: srv.Cell})
			}
		}
	}
	return c, nil
}

// Serves reports whether the topology has the keyspace.
func (c *Cluster) Serves(keyspace string) bool {
	return c != nil && c.top.Keyspace(keyspace) != nil
}

// Engine returns an engine of the keyspace (its first shard's first server): for what is
// the same on every shard, such as the server's description for encoders.
func (c *Cluster) Engine(keyspace string) *vstreamer.Engine {
	ks := c.top.Keyspace(keyspace)
	if ks == nil {
		return nil
	}
	return c.members[ks.Name+"/"+ks.Shards[0].Name][0].Engine
}

// Engines returns every engine of the cluster.
func (c *Cluster) Engines() []*vstreamer.Engine {
	var out []*vstreamer.Engine
	for _, ms := range c.members {
		for _, m := range ms {
			out = append(out, m.Engine)
		}
	}
	return out
}

// Selection is how a stream chooses a shard's servers (vtgate's tablet_type, cells,
// cell_preference and tablet_order).
type Selection struct {
	// TabletType is the type of the servers to stream from first (empty: primary).
	TabletType string
	// Cells puts the servers of these cells first, the earlier cells first.
	Cells []string
	// OnlyCells streams from the servers of Cells only (cell_preference onlyspecified),
	// failing over among them alone; a shard with none of them is refused.
	OnlyCells bool
}

// Sources turns a VGtid into the shards to stream, each with base as its request at the
// shard's own position. A ShardGtid with no shard stands for every shard of its keyspace
// (as vtgate reads it), which only a position that means the same on every shard can start
// from: "current" or "" (a copy). Servers come in the order to try them: those of
// sel.TabletType in sel.Cells order first (the topology's order within a cell), then the
// shard's other servers (of sel.Cells only with sel.OnlyCells), so that a stream fails over
// to them.
func (c *Cluster) Sources(v *binlogdata.VGtid, base vstreamer.Request, sel Selection) ([]Source, error) {
	tabletType, cells := sel.TabletType, sel.Cells
	if tabletType == "" {
		tabletType = topology.Primary
	}
	if sel.OnlyCells && len(cells) == 0 {
		return nil, fmt.Errorf("%w: cell_preference onlyspecified needs the cells to stream from in cells", vstreamer.ErrBadRequest)
	}
	var out []Source
	seen := map[string]bool{}
	add := func(ks *topology.Keyspace, shard string, sg *binlogdata.ShardGtid) error {
		key := ks.Name + "/" + shard
		if seen[key] {
			return fmt.Errorf("%w: the vgtid names shard %s twice", vstreamer.ErrBadRequest, key)
		}
		seen[key] = true
		req := base
		req.Keyspace, req.Keyspaces = "", nil
		req.Position, req.TableLastPKs = sg.GetGtid(), sg.GetTablePKs()
		ms := c.members[key]
		if sel.OnlyCells {
			ms = slices.DeleteFunc(slices.Clone(ms), func(m Member) bool { return !slices.Contains(cells, m.Cell) })
			if len(ms) == 0 {
				return fmt.Errorf("%w: shard %s has no server in cells %s (cell_preference onlyspecified); name a cell of its servers or prefer them instead", vstreamer.ErrBadRequest, key, strings.Join(cells, ","))
			}
		}
		out = append(out, Source{Members: order(ms, tabletType, cells), TabletType: tabletType, Request: req})
		return nil
	}
	for _, sg := range v.GetShardGtids() {
		ks := c.top.Keyspace(sg.GetKeyspace())
		if ks == nil {
			return nil, fmt.Errorf("%w: keyspace %q is not in the topology (it has %s)", vstreamer.ErrBadRequest, sg.GetKeyspace(), c.keyspaceNames())
		}
		if sg.GetShard() != "" {
			if ks.Shard(sg.GetShard()) == nil {
				return nil, fmt.Errorf("%w: keyspace %s has no shard %q (it has %s)", vstreamer.ErrBadRequest, ks.Name, sg.GetShard(), shardList(ks))
			}
			if err := add(ks, sg.GetShard(), sg); err != nil {
				return nil, err
			}
			continue
		}
		if g := sg.GetGtid(); g != "" && !strings.EqualFold(g, vstreamer.CurrentPosition) {
			return nil, fmt.Errorf("%w: keyspace %s: a position %q names one shard's transactions; give each shard its own ShardGtid, or start every shard from \"current\" or a copy", vstreamer.ErrBadRequest, ks.Name, g)
		}
		for _, sh := range ks.Shards {
			if err := add(ks, sh.Name, sg); err != nil {
				return nil, err
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: the vgtid names no shard", vstreamer.ErrBadRequest)
	}
	return out, nil
}

// order puts a shard's servers of the tablet type first, those of the earlier cells first
// among them, keeping the topology's order otherwise.
func order(ms []Member, tabletType string, cells []string) []Member {
	rank := func(m Member) int {
		r := 0
		if m.TabletType != tabletType {
			r += 1000
		}
		if i := slices.Index(cells, m.Cell); i >= 0 {
			r += i
		} else if len(cells) > 0 {
			r += len(cells)
		}
		return r
	}
	out := slices.Clone(ms)
	slices.SortStableFunc(out, func(a, b Member) int { return rank(a) - rank(b) })
	return out
}

func (c *Cluster) keyspaceNames() string {
	var names []string
	for _, ks := range c.top.Keyspaces {
		names = append(names, ks.Name)
	}
	return strings.Join(names, ", ")
}

func shardList(ks *topology.Keyspace) string {
	var names []string
	for _, sh := range ks.Shards {
		names = append(names, sh.Name)
	}
	return strings.Join(names, ", ")
}
