package storetest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestSuiteCallsEveryContractMethod: the conformance suite calls every
// method of store.Store (and of the Queries it embeds) at least once, so a
// method added to the contract without a conformance test fails here. The
// suite names the store it tests s and a transaction's queries tx; only
// calls on those count.
func TestSuiteCallsEveryContractMethod(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	interfaces := map[string]*ast.InterfaceType{}
	for _, f := range parseFiles(t, fset, "..") {
		ast.Inspect(f, func(n ast.Node) bool {
			if ts, ok := n.(*ast.TypeSpec); ok {
				if it, ok := ts.Type.(*ast.InterfaceType); ok {
					interfaces[ts.Name.Name] = it
				}
			}
			return true
		})
	}
	var methods []string
	var collect func(name string)
	collect = func(name string) {
		it, ok := interfaces[name]
		if !ok {
			t.Fatalf("interface store.%s not found", name)
		}
		for _, m := range it.Methods.List {
			if len(m.Names) == 0 { // an embedded interface
				collect(m.Type.(*ast.Ident).Name)
				continue
			}
			for _, n := range m.Names {
				methods = append(methods, n.Name)
			}
		}
	}
	collect("Store")

	called := map[string]bool{}
	for _, f := range parseFiles(t, fset, ".") {
		ast.Inspect(f, func(n ast.Node) bool {
			if c, ok := n.(*ast.CallExpr); ok {
				if sel, ok := c.Fun.(*ast.SelectorExpr); ok {
					if x, ok := sel.X.(*ast.Ident); ok && (x.Name == "s" || x.Name == "tx") {
						called[sel.Sel.Name] = true
					}
				}
			}
			return true
		})
	}
	if len(methods) < 50 {
		t.Fatalf("found %d contract methods, want the whole contract", len(methods))
	}
	for _, m := range methods {
		if !called[m] {
			t.Errorf("no conformance test calls %s", m)
		}
	}
}

// parseFiles parses the package in dir, test files left out.
func parseFiles(t *testing.T, fset *token.FileSet, dir string) []*ast.File {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return files
}
