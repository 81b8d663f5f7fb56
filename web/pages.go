package web

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"time"

	"harrier.dev/harrier/timeseries"
)

//go:embed templates/*.html
var templateFiles embed.FS

var funcs = template.FuncMap{
	"add":   func(a, b int) int { return a + b },
	"sub":   func(a, b int) int { return a - b },
	"hours": func(d time.Duration) string { return fmt.Sprintf("%.2f h", d.Hours()) },
	"when":  when,
}

// parsePage parses a page's template with the layout around it.
func parsePage(name string) *template.Template {
	return template.Must(template.New(name).Funcs(funcs).ParseFS(templateFiles, "templates/layout.html", "templates/"+name))
}

// page is what every page shows around its content.
type page struct {
	Title  string
	Daemon string
	Now    time.Time
	Nav    []link
	Error  string
	Ranges []rangeLink
}

type link struct{ URL, Label string }

// A rangeLink offers one of the history's resolutions.
type rangeLink struct {
	URL, Label string
	Current    bool
}

// span is a resolution of the history a plot shows, and what its link
// calls it.
type span struct {
	Name, Label string
	Step        time.Duration
}

// spans are the plots' ranges, one per resolution of
// timeseries.DefaultResolutions: the query parameter range names one.
var spans = []span{{"day", "the last day, by the minute", time.Minute}, {"month", "the last month, by the hour", time.Hour}}

// pickSpan returns the span the request's range parameter names (the
// first by default) and the links to every span.
func pickSpan(r *http.Request, history *timeseries.Store) (span, []rangeLink) {
	cur := spans[0]
	have := map[time.Duration]bool{}
	for _, res := range history.Resolutions() {
		have[res.Step] = true
	}
	var links []rangeLink
	for _, s := range spans {
		if !have[s.Step] {
			continue
		}
		if r.URL.Query().Get("range") == s.Name {
			cur = s
		}
		links = append(links, rangeLink{URL: "?range=" + s.Name, Label: s.Label})
	}
	for i := range links {
		links[i].Current = links[i].URL == "?range="+cur.Name
	}
	return cur, links
}

// securityHeaders forbid the pages any script, frame or content from
// elsewhere: the pages need none, and should any user text slip past
// escaping, the browser still would not run it.
func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
}

// render writes the page t executed on data, with status code.
func render(w http.ResponseWriter, logger *slog.Logger, t *template.Template, code int, data any) {
	var b bytes.Buffer
	if err := t.ExecuteTemplate(&b, "layout", data); err != nil {
		logger.Error("render status page", "page", t.Name(), "err", err)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	securityHeaders(w.Header())
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	w.Write(b.Bytes())
}

// when formats a time for a table, or "" for none.
func when(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

// unixTime formats seconds since the epoch as when does; 0 is none.
func unixTime(sec int64) string {
	if sec <= 0 {
		return ""
	}
	return when(time.Unix(sec, 0))
}
