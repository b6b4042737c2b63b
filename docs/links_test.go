// Package docs holds the project's documentation pages; its test checks that every link
// between them, and from them into the repository, resolves.
package docs

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// link is a Markdown inline link's target: [text](target).
var link = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestLinks: every relative link of every Markdown file the repository tracks names a file
// or directory that exists, and every #fragment a heading of the page it points into (as
// GitHub makes heading anchors).
func TestLinks(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("git", "-C", root, "ls-files", "*.md").Output()
	if err != nil {
		t.Skipf("git ls-files: %v (not a git checkout)", err)
	}
	anchors := map[string]map[string]bool{}
	anchorsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		body, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		a := headingAnchors(string(body))
		anchors[path] = a
		return a
	}
	pages := strings.Fields(string(out))
	if len(pages) < 10 {
		t.Fatalf("only %d Markdown files tracked: %v", len(pages), pages)
	}
	checked := 0
	for _, page := range pages {
		path := filepath.Join(root, page)
		body, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for n, line := range prose(string(body)) {
			for _, m := range link.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				file, frag, _ := strings.Cut(target, "#")
				dest := path
				if file != "" {
					dest = filepath.Join(filepath.Dir(path), file)
					if _, err := os.Stat(dest); err != nil {
						t.Errorf("%s:%d: link %q: %v", page, n+1, target, err)
						continue
					}
				}
				checked++
				if frag == "" || !strings.HasSuffix(dest, ".md") {
					continue
				}
				if !anchorsOf(dest)[frag] {
					t.Errorf("%s:%d: link %q: %s has no heading with anchor #%s", page, n+1, target, filepath.Base(dest), frag)
				}
			}
		}
	}
	if checked < 50 {
		t.Fatalf("only %d relative links found: the link pattern no longer matches the pages", checked)
	}
}

// prose is a page's lines with those inside fenced code blocks blanked, so that the line
// numbers stay right and code is not read as links.
func prose(body string) []string {
	lines := strings.Split(body, "\n")
	inCode := false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			inCode = !inCode
			lines[i] = ""
			continue
		}
		if inCode {
			lines[i] = ""
		}
	}
	return lines
}

// headingAnchors are the anchors GitHub gives a page's headings: lower case, spaces as "-",
// punctuation dropped, a repeated anchor suffixed -1, -2, ...
func headingAnchors(body string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, l := range prose(body) {
		if !strings.HasPrefix(l, "#") {
			continue
		}
		rest := strings.TrimLeft(l, "#")
		text := strings.TrimSpace(rest)
		if len(l)-len(rest) > 6 || !strings.HasPrefix(rest, " ") || text == "" {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case r == ' ':
				b.WriteByte('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out[a+"-"+strconv.Itoa(n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}
