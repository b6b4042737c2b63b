package sink

import (
	"errors"
	"fmt"
	"strings"
)

// TopicMap turns a message into its destination topic: the first of Routes that matches the
// message's table wins (its topic after Prefix), then an exact entry of Names for the
// message's topic, then Prefix is put before the topic. Default names messages whose format
// gives no topic. Partitions choose what partitions a table's records.
type TopicMap struct {
	Names      map[string]string
	Prefix     string
	Default    string
	Routes     []Route
	Partitions []PartitionRule
}

// ParseTopicMap reads "from=to" pairs separated by commas; empty is none.
func ParseTopicMap(s string) (map[string]string, error) {
	m := map[string]string{}
	for part := range strings.SplitSeq(s, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		from, to, ok := strings.Cut(part, "=")
		from, to = strings.TrimSpace(from), strings.TrimSpace(to)
		if !ok || from == "" || to == "" {
			return nil, fmt.Errorf("topic map entry %q: want from=to", part)
		}
		m[from] = to
	}
	return m, nil
}

var errNoTopic = errors.New("the message has no topic (its format names none): set a default topic")

// Route returns the destination topic of a message of a topic and a table (schema and table
// empty for a message of no one table).
func (t TopicMap) Route(topic, schema, table string) (string, error) {
	if to, ok, err := t.route(topic, schema, table); ok || err != nil {
		return to, err
	}
	return t.Map(topic)
}

// Map returns the destination topic of a message's topic, by Names, Prefix and Default.
func (t TopicMap) Map(topic string) (string, error) {
	if to, ok := t.Names[topic]; ok {
		return to, nil
	}
	if topic == "" {
		if t.Default == "" {
			return "", errNoTopic
		}
		topic = t.Default
	}
	return t.Prefix + topic, nil
}
