package connectors

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// internalPrefix is where the gateway's application packages live; the
// adapters under connectors/ stay pure (verify, name, parse) and never reach
// into them.
const internalPrefix = "github.com/trackergateway/gateway/internal/"

// internalImports lists "file: import" for every Go file under root (tests
// included, testdata and hidden folders skipped as the go tool does) that
// imports a package under internalPrefix.
func internalImports(root string) ([]string, error) {
	var found []string
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				return err
			}
			if strings.HasPrefix(p, internalPrefix) {
				found = append(found, path+": "+p)
			}
		}
		return nil
	})
	return found, err
}

func TestConnectorsImportNothingInternal(t *testing.T) {
	t.Parallel()
	found, err := internalImports(".")
	if err != nil {
		t.Fatal(err)
	}
	if len(found) > 0 {
		t.Fatalf("packages under connectors/ import internal packages (adapters stay pure; application code belongs under internal/):\n%s",
			strings.Join(found, "\n"))
	}
}

// The check itself finds a violation in a test file of a nested package.
func TestInternalImportsFindsAViolation(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	files := map[string]string{
		"clean/clean.go":         "package clean\n\nimport \"github.com/trackergateway/gateway/connectors\"\n\nvar _ = connectors.ProviderJira\n",
		"bad/nested/bad_test.go": "package nested\n\nimport (\n\t\"testing\"\n\n\tstore \"" + internalPrefix + "store\"\n)\n",
		"bad/testdata/skip.go":   "package skip\n\nimport \"" + internalPrefix + "config\"\n",
	}
	for name, text := range files {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	found, err := internalImports(root)
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(root, "bad/nested/bad_test.go") + ": " + internalPrefix + "store"
	if len(found) != 1 || found[0] != want {
		t.Fatalf("found %q, want [%q]", found, want)
	}
}
