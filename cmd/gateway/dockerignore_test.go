package main

// The Docker build context (.dockerignore, read as Docker reads it) leaves
// out local state, version control and local binaries, and keeps every file
// the Dockerfile's build needs.

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
)

// repoRoot is the module's root, the Docker build context.
const repoRoot = "../.."

func dockerignore(t *testing.T) *patternmatcher.PatternMatcher {
	t.Helper()
	f, err := os.Open(filepath.Join(repoRoot, ".dockerignore"))
	if err != nil {
		t.Fatalf("the build context has no .dockerignore: %v", err)
	}
	defer f.Close()
	patterns, err := ignorefile.ReadAll(f)
	if err != nil {
		t.Fatalf("read .dockerignore: %v", err)
	}
	pm, err := patternmatcher.New(patterns)
	if err != nil {
		t.Fatalf("parse .dockerignore: %v", err)
	}
	return pm
}

// buildInputs are the files `go build ./cmd/gateway` reads in the Dockerfile:
// go.mod, go.sum, and the Go and embedded files of every package of the
// module it builds; and fixtures/, which the image copies.
func buildInputs(t *testing.T) []string {
	t.Helper()
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "list", "-deps", "-f",
		`{{if .Module}}{{if .Module.Main}}{{$d := .Dir}}{{range .GoFiles}}{{$d}}/{{.}}{{"\n"}}{{end}}{{range .EmbedFiles}}{{$d}}/{{.}}{{"\n"}}{{end}}{{end}}{{end}}`,
		"./cmd/gateway")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	files := []string{"go.mod", "go.sum"}
	for _, abs := range strings.Fields(string(out)) {
		rel, err := filepath.Rel(root, abs)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, filepath.ToSlash(rel))
	}
	err = filepath.WalkDir(filepath.Join(root, "fixtures"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(root, path)
		files = append(files, filepath.ToSlash(rel))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestDockerignore(t *testing.T) {
	t.Parallel()
	pm := dockerignore(t)
	excluded := func(path string) bool {
		t.Helper()
		ok, err := pm.MatchesOrParentMatches(path)
		if err != nil {
			t.Fatalf("match %s: %v", path, err)
		}
		return ok
	}
	for _, path := range []string{
		"data/gateway.db", "data/bodies/01a2.json", "data/generated-secrets",
		".git/HEAD", ".git/objects/pack/pack-1.pack",
		"gateway", "ingestbench", "cmd/gateway/gateway.test",
		"gateway.db", "gateway.db-wal", "gateway.db-shm", "internal/store/x.db",
		"cpu.prof", "coverage.out",
		".idea/workspace.xml", ".vscode/settings.json", "cmd/gateway/.cli.go.swp", "README.md~", ".DS_Store",
	} {
		if !excluded(path) {
			t.Errorf("%s is in the build context; .dockerignore should leave it out", path)
		}
	}
	inputs := buildInputs(t)
	if len(inputs) < 50 {
		t.Fatalf("found only %d build inputs: %v", len(inputs), inputs)
	}
	for _, path := range inputs {
		if excluded(path) {
			t.Errorf("%s, which the Dockerfile's build needs, is left out of the build context", path)
		}
	}
}
