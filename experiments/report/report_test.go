package report

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/buildinfo"
	"github.com/rdmashuffle/rdmashuffle/experiments/figures"
)

// docsFigures is the tracked quick-scale run the tests report on.
const (
	docsFigures = "../../docs/figures"
	docsAdvice  = "../../docs/advise"
)

var (
	docsOnce sync.Once
	docsPage *Page
	docsHTML []byte
	docsErr  error
)

// docsReport collects and writes the page of docs/figures once per test
// binary (about a second).
func docsReport(t *testing.T) (*Page, []byte) {
	t.Helper()
	docsOnce.Do(func() {
		b := buildinfo.Info{Version: "v9.9.9-test", Commit: "abc123", Go: "go-test"}
		docsPage, docsErr = Collect(context.Background(), Options{Dir: docsFigures, Sensitivity: filepath.Join(docsFigures, "..", "sensitivity.json"), Advice: docsAdvice, Command: "explore report", Build: &b})
		if docsErr != nil {
			return
		}
		var buf bytes.Buffer
		docsErr = Write(&buf, docsPage)
		docsHTML = buf.Bytes()
	})
	if docsErr != nil {
		t.Fatal(docsErr)
	}
	return docsPage, docsHTML
}

// TestPageStructure checks the page of the tracked run: one verdict row
// per claim, every plot of the directory embedded, the evidence table and
// the provenance present, and nothing that would be fetched.
func TestPageStructure(t *testing.T) {
	p, html := docsReport(t)
	page := string(html)
	if n := strings.Count(page, `<tr class="claim"`); n != len(figures.Claims) || n != 31 {
		t.Errorf("%d verdict rows, want %d (one per claim: 31)", n, len(figures.Claims))
	}
	if p.Counts.Total != 31 || p.Counts.Pass+p.Counts.Partial+p.Counts.Fail+p.Counts.NotRun != 31 {
		t.Errorf("counts %+v do not add up to 31 claims", p.Counts)
	}
	if p.Counts.NotRun != 0 {
		t.Errorf("%d claims not-run from the full tracked run", p.Counts.NotRun)
	}
	for _, c := range figures.Claims {
		if !strings.Contains(page, `id="`+c.ID+`"`) {
			t.Errorf("no row for %s", c.ID)
		}
	}
	// Every plot in the directory is on the page, embedded, and no
	// figure misses one.
	plots, _ := filepath.Glob(filepath.Join(docsFigures, "*.png"))
	if len(plots) == 0 {
		t.Fatal("no plots in docs/figures")
	}
	for _, f := range plots {
		name := strings.TrimSuffix(filepath.Base(f), ".png")
		if !strings.Contains(page, `data-name="`+name+`"`) {
			t.Errorf("plot %s is not on the page", name)
		}
	}
	imgs := regexp.MustCompile(`<img src="([^"]*)"`).FindAllStringSubmatch(page, -1)
	if len(imgs) != len(plots)+1 {
		t.Errorf("%d images on the page, %d plots in the directory and the advice's map", len(imgs), len(plots))
	}
	// The advice: the answer's summary, a row per ranked design, and the
	// map with its crossovers.
	if p.Advice == nil || p.Advice.Answer == nil || p.Advice.Map == nil || p.Advice.MapImage == nil {
		t.Fatalf("advice section %+v", p.Advice)
	}
	if n := strings.Count(page, `<tr class="advice`); n != len(p.Advice.Rows) || n < 5 {
		t.Errorf("%d advice rows on the page, %d ranked designs", n, len(p.Advice.Rows))
	}
	for _, want := range []string{`id="advice"`, "Use " + strings.ReplaceAll(p.Advice.Answer.Winner, "+", "&#43;") + ":", `data-name="map"`, `<ul class="crossovers"><li>`} {
		if !strings.Contains(page, want) {
			t.Errorf("the advice section lacks %s", want)
		}
	}
	for _, m := range imgs {
		if !strings.HasPrefix(m[1], "data:image/png;base64,") {
			t.Errorf("image not embedded as PNG data: %.60s", m[1])
		}
	}
	for _, f := range p.Figures {
		if len(f.Missing) > 0 || len(f.Images) == 0 {
			t.Errorf("%s: %d images, missing %v", f.ID, len(f.Images), f.Missing)
		}
		if f.Steady == "" {
			t.Errorf("%s: no steady-state line from docs/validation.md", f.ID)
		}
	}
	// Self-contained: nothing the browser would fetch.
	if m := regexp.MustCompile(`(?i)(src|href)="(https?:|//)[^"]*"|<link |<script`).FindString(page); m != "" {
		t.Errorf("the page refers outside itself: %s", m)
	}
	for _, want := range []string{"v9.9.9-test", "abc123", "go-test", "edr-cx4", "fdr-cx3", `id="provenance"`, `id="evidence-table"`, "explore report"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if n := strings.Count(page, `<tr class="evidence">`); p.Evidence == nil || n != len(p.Evidence.Modelled) || n == 0 {
		t.Errorf("%d evidence rows on the page", n)
	}
	pv := p.Provenance
	if pv.Records == 0 || len(pv.Versions) == 0 || len(pv.Commits) == 0 || len(pv.Profiles) < 3 || pv.Date == "" || pv.DateSource == "" {
		t.Errorf("provenance incomplete: %+v", pv)
	}
	for _, pi := range pv.Profiles {
		if !regexp.MustCompile(`^[0-9a-f]{16}$`).MatchString(pi.Hash) {
			t.Errorf("profile %s: hash %q", pi.Name, pi.Hash)
		}
	}
}

// TestPageDeterministic: the same directory gives the same page (the
// page carries no wall-clock time).
func TestPageDeterministic(t *testing.T) {
	p, html := docsReport(t)
	var again bytes.Buffer
	if err := Write(&again, p); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again.Bytes(), html) {
		t.Error("two writes of one page differ")
	}
}

// TestRejudgedAgainstRecorded: the verdicts judged now match the ones
// docs/validation.md recorded (the two are written from one run), and a
// verdict that differs is shown as such.
func TestRejudgedAgainstRecorded(t *testing.T) {
	p, _ := docsReport(t)
	for _, r := range p.Claims {
		if r.Recorded != "" {
			t.Errorf("%s: judged %s, recorded %s: docs/validation.md and docs/figures disagree (regenerate with make reproduce)", r.ID, r.Verdict, r.Recorded)
		}
	}
	rec := parseValidation("| C1 | x | y | fig13 | e | m | **fail** | r |\n")
	rows, _ := claimRows([]figures.Verdict{{Claim: "C1", Figure: "fig13", Verdict: figures.Pass}}, nil, rec)
	if rows[0].Recorded != "fail" {
		t.Errorf("a changed verdict is not flagged: %+v", rows[0])
	}
}

func TestParseValidation(t *testing.T) {
	for _, tc := range []struct {
		name, text        string
		full              bool
		fig, steady       string
		points            int
		claim, verdictWas string
	}{
		{"quick", "Written by `explore reproduce --update-docs` (quick scale); do not\n\n- fig21, Connection setup time (Liu19 fig. 21): 20 points (0 failed). steady-state check not applicable\n| C17 | a | b \\| c | fig21 | e | m | **partial** | r |\n",
			false, "fig21", "steady-state check not applicable", 20, "C17", "partial"},
		{"full, colon in the title", "Written by `explore reproduce --full` (full (the paper's scale) scale); x\n- istore-fanout, I-Store: one server: 10 points (2 failed). NOT steady (short)\n",
			true, "istore-fanout", "NOT steady (short)", 10, "", ""},
		{"not a claims report", "# hello\n- a list, of: things\n", false, "", "", 0, "", ""},
		{"empty", "", false, "", "", 0, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := parseValidation(tc.text)
			if r.full() != tc.full {
				t.Errorf("full = %v", r.full())
			}
			if tc.fig != "" && (r.steadyOf(tc.fig) != tc.steady || r.points[tc.fig] != tc.points) {
				t.Errorf("%s: steady %q, %d points", tc.fig, r.steadyOf(tc.fig), r.points[tc.fig])
			}
			if tc.fig == "" && len(r.steady) != 0 {
				t.Errorf("found figures in %q: %v", tc.text, r.steady)
			}
			if tc.claim != "" && r.verdictOf(tc.claim) != tc.verdictWas {
				t.Errorf("%s: %q", tc.claim, r.verdictOf(tc.claim))
			}
		})
	}
	var none *recorded
	if none.full() || none.steadyOf("fig13") != "" || none.verdictOf("C1") != "" || none.scale() != "quick" {
		t.Error("a missing claims report should read as not recorded")
	}
}

func FuzzParseValidation(f *testing.F) {
	data, err := os.ReadFile("../../docs/validation.md")
	if err == nil {
		f.Add(string(data[:min(len(data), 4000)]))
	}
	f.Add("- fig13, a: b: 99999999999999999999999 points (0 failed). x\n| C1 | **pass** |")
	f.Fuzz(func(t *testing.T, text string) {
		r := parseValidation(text)
		for id, s := range r.steady {
			if strings.Contains(s, "\n") || id == "" {
				t.Fatalf("figure %q: steady line %q spans lines", id, s)
			}
		}
	})
}

// TestCollectErrors: a bad directory gets an error naming the fix.
func TestCollectErrors(t *testing.T) {
	empty := t.TempDir()
	notDir := filepath.Join(empty, "file")
	if err := os.WriteFile(notDir, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, "fig16.jsonl"), []byte("{not json}\n{\"point\":0}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, dir, want string }{
		{"missing", filepath.Join(empty, "nope"), "explore reproduce"},
		{"a file", notDir, "not found"},
		{"no records", empty, "holds no figure records"},
		{"corrupt records", bad, "fig16.jsonl:1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Collect(context.Background(), Options{Dir: tc.dir, NoEvidence: true})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one with %q", err, tc.want)
			}
		})
	}
}

// TestMissingPlotAndSubset: a directory with one figure's records but
// not its plot reports the plot as missing and that figure's claims as
// judged, the others as not-run; an SVG stands in for a missing PNG.
func TestMissingPlotAndSubset(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"fig16.jsonl", "fig21.jsonl", "fig21.svg"} {
		data, err := os.ReadFile(filepath.Join(docsFigures, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p, err := Collect(context.Background(), Options{Dir: dir, NoEvidence: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Figures) != 2 || p.Figures[0].ID != "fig16" || len(p.Figures[0].Missing) != 1 || p.Figures[0].Missing[0] != "fig16" {
		t.Fatalf("figures %+v", p.Figures)
	}
	if im := p.Figures[1].Images; len(im) != 1 || im[0].Format != "svg" || !strings.HasPrefix(im[0].URI, "data:image/svg+xml;base64,") {
		t.Errorf("fig21's SVG not embedded: %+v", im)
	}
	judged := map[string]bool{"C5": true, "C17": true, "C23": true, "C30": true, "C31": true}
	for _, r := range p.Claims {
		if judged[r.ID] == (r.Verdict == figures.NotRun) {
			t.Errorf("%s: %s", r.ID, r.Verdict)
		}
	}
	if p.Counts.NotRun != 26 || p.Evidence != nil {
		t.Errorf("counts %+v, evidence %v", p.Counts, p.Evidence != nil)
	}
	var buf bytes.Buffer
	if err := Write(&buf, p); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "plot fig16 is missing") || strings.Contains(buf.String(), `id="evidence"`) {
		t.Error("the page does not say the plot is missing, or shows evidence it was told to leave out")
	}
}

func TestImageSrc(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"data:image/png;base64,AAAA", `src="data:image/png;base64,AAAA"`},
		{"data:image/svg+xml;base64,PHN2+Zz4=", `src="data:image/svg+xml;base64,PHN2+Zz4="`},
		{"javascript:alert(1)", `src="data:,"`},
		{"http://example.invalid/x.png", `src="data:,"`},
		{"data:text/html;base64,AAAA", `src="data:,"`},
		{`data:image/png;base64,AA" onerror="alert(1)`, `src="data:,"`},
	} {
		if got := string(imageSrc(tc.in)); got != tc.want {
			t.Errorf("imageSrc(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestReadReference reads docs/validation.md's verdicts and measured
// cells: every claim, each with its verdict, and C9's measured ratio.
func TestReadReference(t *testing.T) {
	ref, err := ReadReference("../../docs/validation.md")
	if err != nil || ref == nil {
		t.Fatal(ref, err)
	}
	if len(ref.Verdicts) != len(figures.Claims) || ref.Scale != "quick" {
		t.Fatalf("%d verdicts (%s scale), want %d", len(ref.Verdicts), ref.Scale, len(figures.Claims))
	}
	for id, v := range ref.Verdicts {
		if v.Verdict == "" || v.Measured == "" {
			t.Errorf("%s: %+v", id, v)
		}
	}
	if c9 := ref.Verdicts["C9"].Measured; !strings.HasPrefix(c9, "MESQ/SR ") || !strings.Contains(c9, "x") {
		t.Errorf("C9 measured %q", c9)
	}
	if ref, err := ReadReference(filepath.Join(t.TempDir(), "none.md")); ref != nil || err != nil {
		t.Errorf("a missing report: %v %v", ref, err)
	}
}
