// Package deploy is vstreamd's operations kit: a Grafana dashboard, Prometheus alerting rules,
// a systemd unit and an example configuration (see README.md). Its tests run a real vstreamd
// on a real MariaDB or MySQL and check that every metric the dashboard and the rules query is
// one that vstreamd exports, parsing the queries and the rule file with Prometheus's own
// parsers.
//
// It is a module of its own so that Prometheus's server module, which those parsers come
// from and which is large, stays out of the service's go.mod. The unit and the example
// configuration are checked against vstreamd's flag and configuration loader in cmd/vstreamd.
package deploy
