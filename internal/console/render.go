package console

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"time"

	"github.com/trackergateway/gateway/internal/events"
	"github.com/trackergateway/gateway/internal/httpapi"
)

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed static/console.css
var stylesheet []byte

// pageNames are the templates under templates/, each rendered inside
// layout.html.
var pageNames = []string{"login", "error", "overview", "deliveries", "delivery", "replay",
	"suppressions", "tasks", "task", "recover", "installations", "subscriptions", "subscription"}

type pages map[string]*template.Template

func parsePages(funcs template.FuncMap) pages {
	out := pages{}
	for _, name := range pageNames {
		out[name] = template.Must(template.New("layout.html").Funcs(funcs).
			ParseFS(templateFiles, "templates/layout.html", "templates/"+name+".html"))
	}
	return out
}

// navItem is one link of the navigation bar. A new operator page is one
// entry here (and its route in internal/server).
type navItem struct {
	Path, Label string
	AdminOnly   bool
}

var navigation = []navItem{
	{Path: "/ui/", Label: "Overview"},
	{Path: "/ui/deliveries", Label: "Deliveries", AdminOnly: true},
	{Path: "/ui/replay", Label: "Bulk replay", AdminOnly: true},
	{Path: "/ui/suppressions", Label: "Suppressions", AdminOnly: true},
	{Path: "/ui/recover", Label: "Missed deliveries", AdminOnly: true},
	{Path: "/ui/subscriptions", Label: "Subscriptions"},
}

// layout is what every page's template gets: the page's own data in Data.
type layout struct {
	Title     string
	Principal *httpapi.Principal
	CSRF      string
	Nav       []navItem
	Active    string
	Notice    string
	Data      any
}

// render writes page name with data and status. A template error is
// written before anything reaches the client, so it can still be a 500.
func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, name, title string, data any) {
	l := layout{Title: title, Active: r.URL.Path, Notice: r.URL.Query().Get("notice"), Data: data}
	if s, ok := sessionFrom(r.Context()); ok {
		l.Principal, l.CSRF = &s.principal, s.csrf
		for _, n := range navigation {
			if !n.AdminOnly || s.principal.Admin {
				l.Nav = append(l.Nav, n)
			}
		}
	}
	var buf bytes.Buffer
	if err := c.pages[name].Execute(&buf, l); err != nil {
		c.logger.ErrorContext(r.Context(), "render console page", "page", name, "error", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	// Pages run no script and are never framed.
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// Stylesheet serves the console's one stylesheet.
func (c *Console) Stylesheet(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/css; charset=utf-8")
	w.Header().Set("Cache-Control", "max-age=300")
	_, _ = w.Write(stylesheet)
}

// seeOther ends a form post by redirecting to a page (post/redirect/get).
func seeOther(w http.ResponseWriter, r *http.Request, path string, query url.Values) {
	if len(query) > 0 {
		path += "?" + query.Encode()
	}
	http.Redirect(w, r, path, http.StatusSeeOther)
}

const timeLayout = "2006-01-02 15:04:05 UTC"

func (c *Console) templateFuncs() template.FuncMap {
	return template.FuncMap{
		"utc":        func(t time.Time) string { return t.UTC().Format(timeLayout) },
		"rfc3339":    func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
		"ago":        func(t time.Time) string { return relative(c.now().Sub(t)) },
		"age":        func(t time.Time) string { return duration(c.now().Sub(t)) },
		"deref":      func(t *time.Time) time.Time { return *t },
		"query":      func(v url.Values) template.URL { return template.URL(v.Encode()) },
		"evt":        events.FormatID,
		"parked":     parked,
		"replayable": replayable,
	}
}

// relative says how long ago (or, for a time ahead, in how long) d is.
func relative(d time.Duration) string {
	if d < 0 {
		return "in " + duration(-d)
	}
	if d < time.Second {
		return "just now"
	}
	return duration(d) + " ago"
}

// duration is d in its largest whole unit, and the next one when it
// matters: 45s, 3m 20s, 2h 5m, 3d 4h.
func duration(d time.Duration) string {
	s := int64(d / time.Second)
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return twoUnits(s/60, "m", s%60, "s")
	case s < 86400:
		return twoUnits(s/3600, "h", s%3600/60, "m")
	default:
		return twoUnits(s/86400, "d", s%86400/3600, "h")
	}
}

func twoUnits(a int64, au string, b int64, bu string) string {
	if b == 0 {
		return fmt.Sprintf("%d%s", a, au)
	}
	return fmt.Sprintf("%d%s %d%s", a, au, b, bu)
}
