package docs_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	// The generated client's runtime: imported here so go.mod pins the
	// version the generated module builds against.
	_ "github.com/oapi-codegen/runtime"
	"gopkg.in/yaml.v3"

	"github.com/trackergateway/gateway/docs"
)

// document is the part of the OpenAPI document the naming checks read.
type document struct {
	Paths      map[string]map[string]yaml.Node `yaml:"paths"`
	Components struct {
		Schemas map[string]yaml.Node `yaml:"schemas"`
	} `yaml:"components"`
}

var methods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// TestOpenAPIOperationNames: every operation has an operationId, none is
// used twice, and no component schema takes a name client generators give
// an operation's own types (oapi-codegen: <OperationId>Response,
// <OperationId>JSONBody, <OperationId>Params...).
func TestOpenAPIOperationNames(t *testing.T) {
	t.Parallel()
	var doc document
	if err := yaml.Unmarshal(docs.OpenAPI, &doc); err != nil {
		t.Fatalf("parse openapi.yaml: %v", err)
	}
	seen := map[string]string{}
	for path, item := range doc.Paths {
		for method, node := range item {
			if !slices.Contains(methods, method) {
				continue
			}
			var op struct {
				OperationID string `yaml:"operationId"`
			}
			if err := node.Decode(&op); err != nil {
				t.Fatalf("%s %s: %v", method, path, err)
			}
			where := strings.ToUpper(method) + " " + path
			switch {
			case op.OperationID == "":
				t.Errorf("%s has no operationId", where)
			case seen[op.OperationID] != "":
				t.Errorf("operationId %s names %s and %s", op.OperationID, seen[op.OperationID], where)
			}
			seen[op.OperationID] = where
			for _, suffix := range []string{"Response", "JSONBody", "JSONRequestBody", "Params", "RequestBody"} {
				generated := strings.ToUpper(op.OperationID[:1]) + op.OperationID[1:] + suffix
				if _, ok := doc.Components.Schemas[generated]; ok {
					t.Errorf("schema %s collides with the type generators give %s", generated, where)
				}
			}
		}
	}
}

// TestOpenAPIClientBuilds: a client generated from the document with
// oapi-codegen's client and models (the tool pinned in go.mod) compiles
// and passes go vet.
func TestOpenAPIClientBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("generates and builds a client")
	}
	t.Parallel()
	dir := t.TempDir()
	config := "package: trackerclient\noutput: " + filepath.Join(dir, "client.go") + "\ngenerate:\n  models: true\n  client: true\n"
	write(t, filepath.Join(dir, "oapi-codegen.yaml"), config)
	// The go.sum of this module holds the runtime's and its dependencies'
	// sums, so the module builds from the module cache.
	sums, err := os.ReadFile(filepath.Join("..", "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "go.sum"), string(sums))
	version := goOutput(t, ".", "list", "-m", "-f", "{{.Version}}", "github.com/oapi-codegen/runtime")
	write(t, filepath.Join(dir, "go.mod"), "module example.com/trackerclient\n\ngo 1.24\n\nrequire github.com/oapi-codegen/runtime "+version+"\n")

	goOutput(t, ".", "tool", "oapi-codegen", "-config", filepath.Join(dir, "oapi-codegen.yaml"), "openapi.yaml")
	goOutput(t, dir, "mod", "tidy")
	goOutput(t, dir, "vet", "./...")
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// goOutput runs the go command in dir and returns its output, trimmed.
func goOutput(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	// The generated module is its own, not this one's workspace.
	cmd.Env = append(os.Environ(), "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}
