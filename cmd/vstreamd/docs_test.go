package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/vstream-cdc/vstream/internal/doccheck"
	"github.com/vstream-cdc/vstream/server"
)

// TestDocsFlags holds docs/configuration.md's vstreamd table to flagDefs: a flag added without
// a row, or a row for a flag that is gone, fails the test naming it.
func TestDocsFlags(t *testing.T) {
	const page = "../../docs/configuration.md"
	documented, err := doccheck.TableNames(page, "vstreamd")
	if err != nil {
		t.Fatal(err)
	}
	code := []string{"--config", "--check-config"} // cliconfig's own
	for _, d := range flagDefs {
		code = append(code, "--"+d.name)
	}
	for _, e := range doccheck.Diff(page+" (## vstreamd)", code, documented) {
		t.Error(e)
	}
}

// TestDocsMetrics holds docs/metrics.md's vstreamd table to the metrics vstreamd registers:
// the server's (described through a recording Registerer) and those main registers itself.
func TestDocsMetrics(t *testing.T) {
	const page = "../../docs/metrics.md"
	documented, err := doccheck.TableNames(page, "vstreamd metrics")
	if err != nil {
		t.Fatal(err)
	}
	rec := &doccheck.Describer{}
	server.New(nil, server.Options{Registerer: rec})
	code := slices.Concat(rec.Names, mainMetrics(t))
	// The gRPC metrics are go-grpc-middleware's; the page names one and "the other grpc_server_*".
	var ours []string
	for _, n := range code {
		if strings.HasPrefix(n, "vstream_") {
			ours = append(ours, n)
		}
	}
	var docOurs []string
	for _, n := range documented {
		if strings.HasPrefix(n, "grpc_server_") {
			if !strings.HasSuffix(n, "*") && !slices.Contains(code, n) {
				t.Errorf("%s is documented in %s but the server does not register it", n, page)
			}
			continue
		}
		docOurs = append(docOurs, n)
	}
	for _, e := range doccheck.Diff(page+" (## vstreamd metrics)", ours, docOurs) {
		t.Error(e)
	}
}

// mainMetrics reads the metrics main.go registers itself: the prometheus.*Opts literals with a
// literal Namespace and Name.
func mainMetrics(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "main.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	ast.Inspect(f, func(n ast.Node) bool {
		lit, ok := n.(*ast.CompositeLit)
		if !ok {
			return true
		}
		sel, ok := lit.Type.(*ast.SelectorExpr)
		if !ok || !strings.HasSuffix(sel.Sel.Name, "Opts") {
			return true
		}
		var ns, name string
		for _, e := range lit.Elts {
			kv, ok := e.(*ast.KeyValueExpr)
			if !ok {
				continue
			}
			key, _ := kv.Key.(*ast.Ident)
			val, _ := kv.Value.(*ast.BasicLit)
			if key == nil || val == nil || val.Kind != token.STRING {
				continue
			}
			s, _ := strconv.Unquote(val.Value)
			switch key.Name {
			case "Namespace":
				ns = s
			case "Name":
				name = s
			}
		}
		if ns != "" && name != "" {
			names = append(names, ns+"_"+name)
		}
		return true
	})
	if len(names) == 0 {
		t.Fatal("main.go registers no metric of its own: has the registration moved? Update mainMetrics")
	}
	return names
}
