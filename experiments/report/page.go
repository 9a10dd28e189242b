package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"regexp"
	"strings"

	"github.com/dustin/go-humanize"
)

//go:embed page.html.tmpl
var pageTemplate string

var tmpl = template.Must(template.New("page").Funcs(template.FuncMap{
	"imageSrc": imageSrc,
	"pct":      func(x float64) string { return fmt.Sprintf("%+.0f%%", 100*x) },
	"tol":      func(x float64) string { return fmt.Sprintf("%.0f%%", 100*x) },
	"num":      func(x float64) string { return fmt.Sprintf("%.4g", x) },
	"kib":      func(n int) string { return fmt.Sprintf("%.0f KiB", float64(n)/1024) },
	"join":     strings.Join,
	"ibytes":   func(n int64) string { return humanize.IBytes(uint64(n)) },
	"orNone": func(xs []string, none string) string {
		if len(xs) == 0 {
			return none
		}
		return strings.Join(xs, ", ")
	},
	"how": func(how, profile string) string { return strings.TrimSuffix(how, " on "+profile) },
}).Parse(pageTemplate))

// base64Text is what may follow "base64," in an embedded plot's URI.
var base64Text = regexp.MustCompile(`^[A-Za-z0-9+/]*=*$`)

// imageSrc is an embedded plot's src attribute, written as it is (as a
// URL html/template would write every '+' of the base64 as "&#43;"):
// only data: URIs of the image types this package writes, with nothing
// but base64 after the comma, pass; anything else would be a bug and
// gives an empty image.
func imageSrc(uri string) template.HTMLAttr {
	for _, t := range mediaTypes {
		prefix := "data:" + t.mime + ";base64,"
		if strings.HasPrefix(uri, prefix) && base64Text.MatchString(uri[len(prefix):]) {
			return template.HTMLAttr(`src="` + uri + `"`)
		}
	}
	return template.HTMLAttr(`src="data:,"`)
}

// Write writes p as one self-contained HTML page: styles inline, plots
// as data: URIs, no script and nothing fetched.
func Write(w io.Writer, p *Page) error {
	return tmpl.Execute(w, p)
}
