package sink

import (
	"errors"
	"fmt"
	"strings"
)

// TopicMap turns a message's topic into the destination's: an exact entry of Names wins,
// then Prefix is put before the topic. Default names messages whose format gives no topic.
type TopicMap struct {
	Names   map[string]string
	Prefix  string
	Default string
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

// Map returns the destination topic of a message's topic.
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
