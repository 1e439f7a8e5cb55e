package docs_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/trackergateway/gateway/internal/config"
	"github.com/trackergateway/gateway/internal/tracing"
)

// markdownFiles are the documents whose links are checked: the README and
// every page in docs/, as paths from the repository root.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	files := []string{"README.md"}
	for _, p := range pages {
		files = append(files, filepath.Join("docs", p))
	}
	return files
}

// readRoot reads a file by its path from the repository root (the tests
// run in docs/).
func readRoot(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", path))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// unfenced are the lines of a Markdown document outside fenced code
// blocks, each with its line number.
func unfenced(doc string) (lines []string, numbers []int) {
	inFence, fence := false, ""
	for i, line := range strings.Split(doc, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case inFence:
			inFence = !strings.HasPrefix(trimmed, fence)
		case strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~"):
			inFence, fence = true, trimmed[:3]
		default:
			lines = append(lines, line)
			numbers = append(numbers, i+1)
		}
	}
	return lines, numbers
}

// proseLines are the unfenced lines with inline code spans blanked: a
// link written as code is an example, not a link.
func proseLines(doc string) (lines []string, numbers []int) {
	lines, numbers = unfenced(doc)
	for i, line := range lines {
		lines[i] = codeSpan.ReplaceAllString(line, "``")
	}
	return lines, numbers
}

var (
	codeSpan = regexp.MustCompile("`[^`]*`")
	// link matches [text](target) and ![alt](target), the target without
	// spaces (an optional "title" after it is not captured).
	link    = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	heading = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	// inlineLink is a link inside a heading, whose text alone makes the slug.
	inlineLink = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// anchors are the #anchors of a Markdown document's headings, as GitHub
// makes them: the heading's text lower-cased, every character that is not
// a letter, digit, space, hyphen or underscore dropped, spaces made
// hyphens; a repeated slug gets -1, -2, … in order.
func anchors(doc string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	lines, _ := unfenced(doc)
	for _, line := range lines {
		m := heading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		slug := githubSlug(m[2])
		if n := seen[slug]; n > 0 {
			out[slug+"-"+strconv.Itoa(n)] = true
		} else {
			out[slug] = true
		}
		seen[slug]++
	}
	return out
}

func githubSlug(text string) string {
	text = inlineLink.ReplaceAllString(text, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

func TestGitHubSlug(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ heading, want string }{
		{"Agents (MCP)", "agents-mcp"},
		{"Task events out: signed webhooks", "task-events-out-signed-webhooks"},
		{"`create_task`", "create_task"},
		{"`list_deliveries` (admin)", "list_deliveries-admin"},
		{"Providers without a delivery history: reconciliation", "providers-without-a-delivery-history-reconciliation"},
		{"`on_merge: archive | none`", "on_merge-archive--none"},
		{"The [README](../README.md) links", "the-readme-links"},
	} {
		if got := githubSlug(tc.heading); got != tc.want {
			t.Fatalf("githubSlug(%q) = %q, want %q", tc.heading, got, tc.want)
		}
	}
}

// TestLinksResolve: every relative link in the README and docs/*.md names
// a file of the repository, and every #anchor a heading of the document it
// points into.
func TestLinksResolve(t *testing.T) {
	t.Parallel()
	docs := map[string]string{}
	read := func(path string) string {
		if d, ok := docs[path]; ok {
			return d
		}
		docs[path] = readRoot(t, path)
		return docs[path]
	}
	checked := 0
	for _, file := range markdownFiles(t) {
		lines, numbers := proseLines(read(file))
		for i, line := range lines {
			for _, m := range link.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				checked++
				path, anchor, _ := strings.Cut(target, "#")
				resolved := file
				if path != "" {
					resolved = filepath.Clean(filepath.Join(filepath.Dir(file), path))
					if strings.HasPrefix(resolved, "..") {
						t.Errorf("%s:%d: link %q leaves the repository", file, numbers[i], target)
						continue
					}
					if _, err := os.Stat(filepath.Join("..", resolved)); err != nil {
						t.Errorf("%s:%d: link %q: no file %s", file, numbers[i], target, resolved)
						continue
					}
				}
				if anchor == "" {
					continue
				}
				if !strings.HasSuffix(resolved, ".md") {
					t.Errorf("%s:%d: link %q: an anchor into %s, which is not Markdown", file, numbers[i], target, resolved)
					continue
				}
				if !anchors(read(resolved))[anchor] {
					t.Errorf("%s:%d: link %q: %s has no heading #%s", file, numbers[i], target, resolved, anchor)
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no relative link found: the link pattern no longer matches the documents")
	}
}

// referenceEntries are the names in the first column of the tables under
// the heading named section of docs/configuration.md (up to the next
// heading of any level), each with how many rows name it.
func referenceEntries(t *testing.T, doc, section string) map[string]int {
	t.Helper()
	out := map[string]int{}
	in, found := false, false
	lines, _ := unfenced(doc)
	for _, line := range lines {
		if m := heading.FindStringSubmatch(line); m != nil {
			in = m[2] == section
			found = found || in
			continue
		}
		if !in || !strings.HasPrefix(line, "| `") {
			continue
		}
		cell, _, _ := strings.Cut(strings.TrimPrefix(line, "| `"), "`")
		out[cell]++
	}
	if !found {
		t.Fatalf("docs/configuration.md has no heading %q", section)
	}
	return out
}

// compareReference fails for every name the code has and the reference
// does not, every name the reference has and the code does not, and every
// name the reference lists more than once.
func compareReference(t *testing.T, what string, code []string, reference map[string]int) {
	t.Helper()
	for _, name := range code {
		if reference[name] == 0 {
			t.Errorf("%s %s is read by the code but missing from docs/configuration.md", what, name)
		}
	}
	for name, n := range reference {
		if !slices.Contains(code, name) {
			t.Errorf("%s %s is in docs/configuration.md but not read by the code", what, name)
		}
		if n > 1 {
			t.Errorf("%s %s is listed %d times in docs/configuration.md", what, name, n)
		}
	}
}

// TestConfigurationReferenceKeys: the reference lists every key of the
// configuration file, as the parser takes them, once, and no other.
func TestConfigurationReferenceKeys(t *testing.T) {
	t.Parallel()
	doc := readRoot(t, "docs/configuration.md")
	compareReference(t, "configuration key", config.Keys(), referenceEntries(t, doc, "Every key"))
}

// gatewayVariable is a GATEWAY_* name inside a Go string literal.
var gatewayVariable = regexp.MustCompile(`\bGATEWAY_[A-Z0-9]+(?:_[A-Z0-9]+)*\b`)

// binaryVariables are the GATEWAY_* variables named in the string literals
// of the gateway binary's own packages (every non-test file, whatever its
// build tags): the variables it reads.
func binaryVariables(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps",
		"-f", `{{if .Module}}{{if eq .Module.Path "github.com/trackergateway/gateway"}}{{.Dir}}{{end}}{{end}}`,
		"github.com/trackergateway/gateway/cmd/gateway").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var vars []string
	fset := token.NewFileSet()
	for _, dir := range strings.Fields(string(out)) {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, file := range files {
			if strings.HasSuffix(file, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(f, func(n ast.Node) bool {
				lit, ok := n.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				s, err := strconv.Unquote(lit.Value)
				if err != nil {
					return true
				}
				for _, v := range gatewayVariable.FindAllString(s, -1) {
					if !slices.Contains(vars, v) {
						vars = append(vars, v)
					}
				}
				return true
			})
		}
	}
	if len(vars) == 0 {
		t.Fatal("no GATEWAY_ variable found in the binary's packages")
	}
	return vars
}

// otelVariables are the OTEL_* variables the binary honours, from the
// tracing package's own list of them.
var otelVariables = tracing.EnvironmentVariables

// TestConfigurationReferenceVariables: the reference lists every GATEWAY_*
// variable the binary reads and every OTEL_* variable it honours, once,
// and no other.
func TestConfigurationReferenceVariables(t *testing.T) {
	t.Parallel()
	doc := readRoot(t, "docs/configuration.md")
	compareReference(t, "environment variable", binaryVariables(t), referenceEntries(t, doc, "Environment variables"))
	compareReference(t, "OpenTelemetry variable", otelVariables, referenceEntries(t, doc, "OpenTelemetry variables"))
}
