package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// fixtureRow is a row of a fixture table: its first cell, naming files.
var fixtureRow = regexp.MustCompile("(?m)^\\| ([^|]*`[^|]*) \\|")

// fixtureName is a file named in a row: `issues.opened.json`, or for the
// row's first name with another ending `.closed.json` (after its first
// dot) or `-renamed.json` (after its last dash).
var fixtureName = regexp.MustCompile("`([^`]+)`")

// Every fixture file has its row in fixtures/README.md, under its folder:
// where it came from and what it holds.
func TestEveryFixtureIsDescribed(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join(fixturesDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	described := map[string]bool{} // folder/file
	folder := ""
	for _, section := range strings.Split(string(readme), "\n## ")[1:] {
		folder, _, _ = strings.Cut(section, "/")
		for _, row := range fixtureRow.FindAllStringSubmatch(section, -1) {
			first := ""
			for _, m := range fixtureName.FindAllStringSubmatch(row[1], -1) {
				name := m[1]
				switch {
				case first == "":
				case strings.HasPrefix(name, "."):
					event, _, _ := strings.Cut(first, ".")
					name = event + name
				case strings.HasPrefix(name, "-"):
					name = first[:strings.LastIndex(first, "-")] + name
				}
				if first == "" {
					first = name
				}
				described[folder+"/"+name] = true
			}
		}
	}
	files, err := filepath.Glob(filepath.Join(fixturesDir, "*", "*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		name := filepath.Base(f)
		if strings.HasPrefix(name, "LICENSE") {
			continue
		}
		key := filepath.Base(filepath.Dir(f)) + "/" + name
		if !described[key] {
			t.Errorf("fixtures/%s has no row in fixtures/README.md", key)
		}
	}
}
