package vstreamer

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestSharedTableMapsOnlyRead: the streams of one binlog reader share its decoded events,
// and go-mysql's TableMapEvent fills caches on the first call of these methods, a write
// that would race with the other streams. Only rowcodec.FromTableMap calls them, on a
// copy of the event.
func TestSharedTableMapsOnlyRead(t *testing.T) {
	caching := map[string]bool{
		"ColumnNameString": true, "EnumStrValueString": true, "SetStrValueString": true,
		"EnumStrValueMap": true, "SetStrValueMap": true,
	}
	allowed := filepath.Join("rowcodec", "tablemap.go")
	calls := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || !caching[sel.Sel.Name] {
				return true
			}
			calls++
			if path != allowed {
				t.Errorf("%s: %s on a table map shared by a reader's streams; call rowcodec.FromTableMap, which reads a copy", fset.Position(call.Pos()), sel.Sel.Name)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls == 0 {
		t.Fatal("no call of a caching TableMapEvent method found, not even rowcodec.FromTableMap's: the check looks in the wrong place")
	}
}
