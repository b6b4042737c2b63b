package main

import (
	"fmt"
	"net"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/vstream-cdc/vstream/internal/cliconfig"
	"github.com/vstream-cdc/vstream/sink/nats"
)

// Many pipelines, one process. A `pipelines:` list in the YAML file names pipelines, each a
// sink of its own (its stream from vstreamd, its broker session, its committed position and
// record IDs under its name, its metrics under its pipeline label) that takes every key of the
// configuration from the top level (file, environment and flags) unless its entry sets it:
//
//	sink: kafka
//	kafka-brokers: kafka-1:9092
//	pipelines:
//	  - name: orders
//	    tables: orders,customers
//	    format: debezium-json
//	  - name: audit
//	    tables: audit_log
//	    format: avro
//	    topic-prefix: audit.
//
// Without `pipelines:` the top level is the one pipeline, as it always was.

// processKeys are settings of the process as a whole, which no pipeline sets apart.
var processKeys = map[string]bool{"metrics-listen": true, "log-level": true}

// expandPipelines makes c.pipelines from c.Pipelines: each entry's keys over a copy of c,
// validated as a single sink's configuration is. Names must be unique: a name keys the
// committed position and the record IDs.
func (c *config) expandPipelines() error {
	if err := c.validateProcess(); err != nil {
		return err
	}
	defs := make(map[string]cliconfig.Flag[config], len(flagDefs))
	for _, d := range flagDefs {
		defs[d.Name] = d
	}
	byName := map[string]int{}
	for i := range c.Pipelines {
		n := &c.Pipelines[i]
		where := fmt.Sprintf("pipelines entry %d (line %d)", i+1, n.Line)
		if n.Kind != yaml.MappingNode {
			return fmt.Errorf("%s: want a mapping of keys (name: ..., tables: ..., format: ...)", where)
		}
		p := &config{}
		*p = *c
		p.Pipelines, p.pipelines, p.parsed = nil, nil, settings{}
		named := false
		for k := 0; k+1 < len(n.Content); k += 2 {
			key, val := n.Content[k], n.Content[k+1]
			d, ok := defs[key.Value]
			switch {
			case processKeys[key.Value]:
				return fmt.Errorf("%s: %s is the process's, not a pipeline's: set it at the top level", where, key.Value)
			case !ok:
				return fmt.Errorf("%s: unknown key %q (line %d): a pipeline takes the keys of the top level but %s", where, key.Value, key.Line, strings.Join(sortedKeys(processKeys), " and "))
			case val.Kind != yaml.ScalarNode:
				return fmt.Errorf("%s: %s (line %d): want a single value", where, key.Value, key.Line)
			}
			v := val.Value
			if val.Tag == "!!null" {
				v = ""
			}
			*d.Field(p) = v
			named = named || key.Value == "name"
		}
		if !named || p.Name == "" {
			return fmt.Errorf("%s: name is required: each pipeline needs a name of its own, which keys its committed position, its record IDs and its metrics", where)
		}
		if j, dup := byName[p.Name]; dup {
			return fmt.Errorf("pipelines entries %d and %d are both named %q: each pipeline needs a name of its own, which keys its committed position, its record IDs and its metrics", j+1, i+1, p.Name)
		}
		byName[p.Name] = i
		if err := p.validate(); err != nil {
			return fmt.Errorf("pipeline %q: %w", p.Name, err)
		}
		c.pipelines = append(c.pipelines, p)
	}
	return checkShared(c.pipelines)
}

// validateProcess checks the keys of the process as a whole.
func (c *config) validateProcess() error {
	if err := c.parsed.level.UnmarshalText([]byte(c.LogLevel)); err != nil {
		return fmt.Errorf("log-level %q: want debug, info, warn or error", c.LogLevel)
	}
	if c.MetricsListen != "" {
		if _, _, err := net.SplitHostPort(c.MetricsListen); err != nil {
			return fmt.Errorf("metrics-listen %q: %w", c.MetricsListen, err)
		}
	}
	return nil
}

// checkShared refuses pipelines that would trip over each other in one broker: two NATS
// pipelines writing into one JetStream stream must share its subject prefix, since the
// stream takes the subjects of one (topic-prefix + ">"), and two NATS pipelines of one
// server and bucket must not have names that make the same checkpoint key.
func checkShared(ps []*config) error {
	type stream struct{ url, name string }
	first := map[stream]*config{}
	keys := map[stream]*config{}
	for _, p := range ps {
		if p.Sink != "nats" {
			continue
		}
		k := stream{p.NATSURL + " " + p.NATSBucket, nats.CheckpointKey(p.Name)}
		if o, ok := keys[k]; ok {
			return fmt.Errorf("pipelines %q and %q would keep their positions under one key, %q, of the NATS bucket %s (a key holds letters, digits, - _ and =; the rest become _): rename one",
				o.Name, p.Name, k.name, p.NATSBucket)
		}
		keys[k] = p
		s := stream{p.NATSURL, p.NATSStream}
		if o, ok := first[s]; ok && o.TopicPrefix != p.TopicPrefix {
			return fmt.Errorf("pipelines %q and %q write into the NATS stream %s with topic-prefix %q and %q: a stream holds the subjects of one prefix; give %q a nats-stream of its own, or the same topic-prefix",
				o.Name, p.Name, p.NATSStream, o.TopicPrefix, p.TopicPrefix, p.Name)
		} else if !ok {
			first[s] = p
		}
	}
	return nil
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
