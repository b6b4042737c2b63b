// Package doccheck lets tests hold the docs' reference tables to the code: it reads the names in
// the first column of a table under a heading of a Markdown page, and compares them with the
// names the code defines.
package doccheck

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// name is a backticked name in a table's first cell: `--flag` or `metric{labels}`.
var name = regexp.MustCompile("`([^`{]+)(?:\\{[^`]*\\})?`")

// TableNames returns the backticked names in the first column of the tables of the section of
// page headed heading (a line "## heading" or "### heading"), up to the next heading of any
// level. A cell may hold several names ("`--tls-cert`, `--tls-key`").
func TableNames(page, heading string) ([]string, error) {
	data, err := os.ReadFile(page)
	if err != nil {
		return nil, err
	}
	in, found := false, false
	var names []string
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "#") {
			in = strings.TrimSpace(strings.TrimLeft(line, "#")) == heading
			found = found || in
			continue
		}
		if !in || !strings.HasPrefix(line, "|") {
			continue
		}
		cells := strings.Split(line, "|")
		if len(cells) < 3 {
			continue
		}
		for _, m := range name.FindAllStringSubmatch(cells[1], -1) {
			names = append(names, m[1])
		}
	}
	if !found {
		return nil, fmt.Errorf("%s has no heading %q", page, heading)
	}
	return names, nil
}

// Diff compares the names the code defines with the names documented and returns one line per
// difference, naming what is missing from page and what page documents but the code lacks.
func Diff(page string, code, documented []string) []string {
	var out []string
	for _, n := range code {
		if !slices.Contains(documented, n) {
			out = append(out, fmt.Sprintf("%s is defined in the code but missing from %s", n, page))
		}
	}
	for _, n := range documented {
		if !slices.Contains(code, n) {
			out = append(out, fmt.Sprintf("%s is documented in %s but the code no longer defines it", n, page))
		}
	}
	return out
}

// Describer is a prometheus.Registerer that registers nothing and keeps the names of the
// metrics registered with it, so that a test can list what a constructor registers, label
// vectors with no series yet included.
type Describer struct{ Names []string }

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

// Register records the names c describes.
func (d *Describer) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc)
	go func() { c.Describe(ch); close(ch) }()
	for desc := range ch {
		if m := fqName.FindStringSubmatch(desc.String()); m != nil && !slices.Contains(d.Names, m[1]) {
			d.Names = append(d.Names, m[1])
		}
	}
	return nil
}

// MustRegister records the names cs describe.
func (d *Describer) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		_ = d.Register(c)
	}
}

// Unregister does nothing.
func (d *Describer) Unregister(prometheus.Collector) bool { return true }
