package sink

import (
	"fmt"
	"path"
	"strings"
)

// Route sends the records of the tables it matches to a topic of its own, as TiCDC's topic
// dispatchers do: Schema and Table are glob patterns (path.Match: *, ?, [...]) on a
// record's database and table, and Topic may hold {schema}, {table} and {topic} (the topic
// the format suggests).
type Route struct {
	Schema, Table, Topic string
	// Rule is the rule as written, for errors.
	Rule string
}

// Partitioning says what picks the partition of a table's records.
const (
	// PartitionByKey hashes the record's key (the format's: the primary key's values), so a
	// row's changes stay in order in one partition: the default.
	PartitionByKey = "key"
	// PartitionByTable hashes the database and table, so all a table's changes stay in
	// order in one partition.
	PartitionByTable = "table"
)

// PartitionRule says how the records of the tables it matches are partitioned.
type PartitionRule struct {
	Schema, Table string
	// By is PartitionByKey or PartitionByTable.
	By   string
	Rule string
}

var placeholders = []string{"{schema}", "{table}", "{topic}"}

// parseMatcher reads "SCHEMA.TABLE" of glob patterns (the first dot separates them).
func parseMatcher(m string) (schema, table string, err error) {
	schema, table, ok := strings.Cut(strings.TrimSpace(m), ".")
	if !ok || schema == "" || table == "" {
		return "", "", fmt.Errorf("matcher %q: want SCHEMA.TABLE, each a name or a glob such as shop.order_* or *.*", m)
	}
	for _, p := range []string{schema, table} {
		if _, err := path.Match(p, ""); err != nil {
			return "", "", fmt.Errorf("matcher %q: pattern %q: %w", m, p, err)
		}
	}
	return schema, table, nil
}

func matches(schemaPat, tablePat, schema, table string) bool {
	ok, _ := path.Match(schemaPat, schema)
	if !ok {
		return false
	}
	ok, _ = path.Match(tablePat, table)
	return ok
}

// rules splits "A=B;C=D" into its pairs; empty is none. each checks that a rule has its "=".
func rules(s string, each func(rule, left, right string) error) error {
	for rule := range strings.SplitSeq(s, ";") {
		if rule = strings.TrimSpace(rule); rule == "" {
			continue
		}
		left, right, _ := strings.Cut(rule, "=")
		if err := each(rule, strings.TrimSpace(left), strings.TrimSpace(right)); err != nil {
			return err
		}
	}
	return nil
}

// ParseRoutes reads topic routes, "SCHEMA.TABLE=TOPIC" separated by ";", in the order they
// are tried.
func ParseRoutes(s string) ([]Route, error) {
	var out []Route
	err := rules(s, func(rule, left, right string) error {
		if !strings.Contains(rule, "=") {
			return fmt.Errorf("route %q: want SCHEMA.TABLE=TOPIC", rule)
		}
		schema, table, err := parseMatcher(left)
		if err != nil {
			return fmt.Errorf("route %q: %w", rule, err)
		}
		if right == "" {
			return fmt.Errorf("route %q: the topic is empty", rule)
		}
		// Every {...} must be a known placeholder.
		rest := right
		for _, p := range placeholders {
			rest = strings.ReplaceAll(rest, p, "")
		}
		if strings.ContainsAny(rest, "{}") {
			return fmt.Errorf("route %q: topic %q: unknown placeholder; want {schema}, {table} or {topic}", rule, right)
		}
		out = append(out, Route{Schema: schema, Table: table, Topic: right, Rule: rule})
		return nil
	})
	return out, err
}

// ParsePartitions reads partition rules, "SCHEMA.TABLE=key|table" separated by ";", in the
// order they are tried.
func ParsePartitions(s string) ([]PartitionRule, error) {
	var out []PartitionRule
	err := rules(s, func(rule, left, right string) error {
		if !strings.Contains(rule, "=") {
			return fmt.Errorf("partition rule %q: want SCHEMA.TABLE=%s or SCHEMA.TABLE=%s", rule, PartitionByKey, PartitionByTable)
		}
		schema, table, err := parseMatcher(left)
		if err != nil {
			return fmt.Errorf("partition rule %q: %w", rule, err)
		}
		if right != PartitionByKey && right != PartitionByTable {
			return fmt.Errorf("partition rule %q: partition by %q: want %s (the record's key) or %s", rule, right, PartitionByKey, PartitionByTable)
		}
		out = append(out, PartitionRule{Schema: schema, Table: table, By: right, Rule: rule})
		return nil
	})
	return out, err
}

// UsesTopic reports whether a route's topic takes the format's topic ({topic}).
func (r Route) UsesTopic() bool { return strings.Contains(r.Topic, "{topic}") }

// route returns the topic of the first route matching the table, or ok false.
func (t TopicMap) route(topic, schema, table string) (string, bool, error) {
	if table == "" {
		return "", false, nil
	}
	for _, r := range t.Routes {
		if !matches(r.Schema, r.Table, schema, table) {
			continue
		}
		if r.UsesTopic() && topic == "" {
			return "", false, fmt.Errorf("topic route %q: the record of %s.%s has no topic of its format for {topic}", r.Rule, schema, table)
		}
		to := strings.NewReplacer("{schema}", schema, "{table}", table, "{topic}", topic).Replace(r.Topic)
		return t.Prefix + to, true, nil
	}
	return "", false, nil
}

// PartitionKey returns what partitions a record of the table other than its key (nil: the
// key), by the first partition rule that matches it.
func (t TopicMap) PartitionKey(schema, table string) []byte {
	if table == "" {
		return nil
	}
	for _, p := range t.Partitions {
		if matches(p.Schema, p.Table, schema, table) {
			if p.By == PartitionByTable {
				return []byte(schema + "." + table)
			}
			return nil
		}
	}
	return nil
}
