package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/experiments/figures"
)

// TestReportCommand writes the page of the tracked figures into a
// directory given as --out, and refuses flags that contradict each other
// or a directory without records, with the fix.
func TestReportCommand(t *testing.T) {
	dir := t.TempDir()
	out, err := run(t, "report", "--from", filepath.Join("..", "..", "docs", "figures"), "--out", dir, "--no-evidence")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// Every figure is tracked in docs/figures.
	figs := fmt.Sprintf("of %d claims; %d figures", len(figures.Claims), len(figures.AllFigures()))
	for _, want := range []string{"report: judging 31 claims", "report: fig19: ", "wrote " + filepath.Join(dir, "index.html"), figs} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	page, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), "explore report --from=") || strings.Contains(string(page), `id="evidence"`) {
		t.Error("the page does not name its command line, or has the evidence it was told to leave out")
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"report", "--run", "--from", dir}, "--run and --from"},
		{[]string{"report", "--from", dir, "--out", filepath.Join(dir, "x.html")}, "holds no figure records"},
		{[]string{"report", "extra"}, "unknown command"},
	} {
		if _, err := run(t, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one with %q", tc.args, err, tc.want)
		}
	}
}
