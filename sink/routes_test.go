package sink

import (
	"strings"
	"testing"
)

// TestRoute: the first route matching a message's table names its topic, after the prefix
// and before the topic map; a message of no table, or of a table no route matches, goes by
// the topic map, the prefix and the default.
func TestRoute(t *testing.T) {
	routes, err := ParseRoutes("shop.orders=o;shop.ord*=glob.{table};*.*={topic}.x")
	if err != nil {
		t.Fatal(err)
	}
	tm := TopicMap{Prefix: "p.", Default: "d", Names: map[string]string{"srv.shop.items": "renamed"}, Routes: routes}
	for _, tc := range []struct {
		topic, schema, table, want, err string
	}{
		{"srv.shop.orders", "shop", "orders", "p.o", ""},
		{"srv.shop.ordinals", "shop", "ordinals", "p.glob.ordinals", ""},
		{"srv.shop.items", "shop", "items", "p.srv.shop.items.x", ""},
		{"srv.shop.items", "", "", "renamed", ""},
		{"", "", "", "p.d", ""},
		{"", "crm", "users", "", "has no topic of its format for {topic}"},
	} {
		got, err := tm.Route(tc.topic, tc.schema, tc.table)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s %s.%s: got %q, %v; want an error with %q", tc.topic, tc.schema, tc.table, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s %s.%s: got %q, %v; want %q", tc.topic, tc.schema, tc.table, got, err, tc.want)
		}
	}
}
