package report

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// chromiumNames are the headless browsers tried, in order; CHROMIUM names
// another binary.
var chromiumNames = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome"}

func findChromium() string {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, n := range chromiumNames {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	return ""
}

// imageCheck is appended to a copy of the page (the page itself has no
// script): once the page has loaded it writes how many images decoded
// (complete, with a natural width) into the DOM.
const imageCheck = `<script>window.addEventListener("load", function () {
  var im = document.images, n = 0;
  for (var i = 0; i < im.length; i++) { if (im[i].complete && im[i].naturalWidth > 0) n++; }
  var p = document.createElement("p"); p.id = "image-check";
  p.textContent = "loaded=" + n + " total=" + im.length + " rows=" + document.querySelectorAll("#verdict-table tr.claim").length +
    " advice=" + document.querySelectorAll("#advice-table tr.advice").length;
  document.body.appendChild(p);
});</script>`

// TestRenderChromium renders the page of docs/figures in headless
// Chromium and checks that every image loaded (the advice's map too), that
// the verdict table has a row per claim (31) and the advice table a row
// per ranked design. It skips when no Chromium is installed,
// unless REPORT_REQUIRE_CHROMIUM is set (make report-check installs it).
func TestRenderChromium(t *testing.T) {
	bin := findChromium()
	if bin == "" && os.Getenv("REPORT_REQUIRE_CHROMIUM") != "" {
		t.Fatal("no chromium binary found and REPORT_REQUIRE_CHROMIUM is set (make report-check installs Debian's chromium)")
	}
	if bin == "" {
		t.Skip("no chromium binary found (install Debian's chromium, or run make report-check): page not rendered")
	}
	p, html := docsReport(t)
	want := 1 // the advice's map
	for _, f := range p.Figures {
		want += len(f.Images)
	}
	page := filepath.Join(t.TempDir(), "index.html")
	withCheck := bytes.Replace(html, []byte("</body>"), []byte(imageCheck+"\n</body>"), 1)
	if err := os.WriteFile(page, withCheck, 0o644); err != nil {
		t.Fatal(err)
	}
	dom := dumpDOM(t, bin, page)
	m := regexp.MustCompile(`<p id="image-check">loaded=(\d+) total=(\d+) rows=(\d+) advice=(\d+)</p>`).FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("the check did not run: no image-check line in the DOM Chromium dumped (%d bytes)", len(dom))
	}
	loaded, _ := strconv.Atoi(m[1])
	total, _ := strconv.Atoi(m[2])
	rows, _ := strconv.Atoi(m[3])
	advice, _ := strconv.Atoi(m[4])
	if total != want || loaded != total {
		t.Errorf("%d of %d images loaded, the page embeds %d", loaded, total, want)
	}
	if rows != 31 {
		t.Errorf("the rendered verdict table has %d rows, want 31", rows)
	}
	if advice != len(p.Advice.Rows) {
		t.Errorf("the rendered advice table has %d rows, want %d", advice, len(p.Advice.Rows))
	}
	t.Logf("Chromium: %d of %d images loaded, %d verdict rows, %d advice rows", loaded, total, rows, advice)
}

// dumpDOM runs Chromium headless on file and returns the DOM after load.
func dumpDOM(t *testing.T, bin, file string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // generous: a loaded 2-core machine took a minute
	defer cancel()
	args := []string{"--headless", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run", "--disable-extensions",
		"--user-data-dir=" + t.TempDir(), "--virtual-time-budget=5000", "--dump-dom", "file://" + file}
	if os.Geteuid() == 0 {
		args = append([]string{"--no-sandbox"}, args...) // Chromium refuses to run as root with its sandbox
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "DBUS_SESSION_BUS_ADDRESS=disabled:")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if ctx.Err() != nil {
		t.Fatalf("%s did not finish rendering the page within 5 minutes", bin)
	}
	if err != nil {
		tail := stderr.String()
		if len(tail) > 2000 {
			tail = tail[len(tail)-2000:]
		}
		t.Fatalf("%s: %v\n%s", bin, err, tail)
	}
	return string(out)
}
