package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/rdmashuffle/rdmashuffle/experiments/figures"
)

// TestFigureDeterministic runs the cheapest figure twice: same code and
// seed, byte-identical JSONL; the table, CSV and plots are written.
func TestFigureDeterministic(t *testing.T) {
	var files [2][]byte
	for i := range files {
		dir := t.TempDir()
		out, err := run(t, "figure", "fig21", "--out", dir, "--no-steady-check")
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if !strings.Contains(out, "nodes ->") || !strings.Contains(out, "│ 16 ") || !strings.Contains(out, "C17") {
			t.Fatalf("table or verdict missing:\n%s", out)
		}
		for _, f := range []string{"fig21.csv", "fig21.png", "fig21.svg"} {
			if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
				t.Errorf("%s: %v", f, err)
			}
		}
		if files[i], err = os.ReadFile(filepath.Join(dir, "fig21.jsonl")); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(files[0], files[1]) || len(files[0]) == 0 {
		t.Fatalf("two runs of fig21 differ:\n%s\n---\n%s", files[0], files[1])
	}
}

// TestReproduceSubset judges every claim from one figure: the report has
// a row per claim, not-run ones with their reason.
func TestReproduceSubset(t *testing.T) {
	dir := t.TempDir()
	val := filepath.Join(dir, "validation.md")
	out, err := run(t, "reproduce", "--figures", "fig21", "--out", dir, "--validation", val, "--no-steady-check")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	b, err := os.ReadFile(val)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{"| C1 |", "| C17 |", "| C29 |", "figure fig13 was not run", "not-run"} {
		if !strings.Contains(s, want) {
			t.Errorf("validation report lacks %q", want)
		}
	}
}

func TestFigureBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"figure", "fig99"}, `"fig99" is not a figure: choose one of fig13`},
		{[]string{"figure"}, "figure needs a figure: one of fig13"},
		{[]string{"reproduce", "--figures", "nope"}, "unknown figure"},
	} {
		if out, err := run(t, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v (%s), want %q", tc.args, err, out, tc.want)
		}
	}
}

// TestCalibrateAndValidateOnTheSimulator runs both commands with the
// simulator standing in for hardware, and checks their bad input.
func TestCalibrateAndValidateOnTheSimulator(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "measured.yaml")
	text, err := run(t, "calibrate", "--backend", "sim", "--target", "edr-cx4", "--base", "fdr-cx3", "--out", out)
	if err != nil || !strings.Contains(text, "wrote "+out) {
		t.Fatalf("%v\n%s", err, text)
	}
	calibrated := text
	text, err = run(t, "validate", "--backend", "sim", "--target", "edr-cx4", "--profile", out, "--design", "MESQ/SR", "--bytes-per-node", "1048576")
	if err != nil || !strings.Contains(text, "throughput per node") {
		t.Fatalf("%v\n%s", err, text)
	}
	for _, line := range strings.Split(calibrated+text, "\n") {
		if n := utf8.RuneCountInString(line); n > 100 {
			t.Errorf("a line of %d columns: %s", n, line)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"calibrate", "--backend", "ibv"}, "--local"},
		{[]string{"calibrate", "--base", "nope"}, "--base"},
		{[]string{"validate", "--target", "nope"}, "--target"},
		{[]string{"calibrate", "--backend", "bogus"}, "choose sim, ibv or tcp"},
		{[]string{"validate", "--backend", "bogus"}, "choose sim, ibv or tcp"},
		// More than two nodes on one adapter would measure its loopback.
		{[]string{"validate", "--backend", "ibv", "--local", "--nodes", "3"}, "--nodes 3 with --local"},
	} {
		if out, err := run(t, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v (%s), want %q", tc.args, err, out, tc.want)
		}
	}
	// validate runs one node per process, as run does: without --local it
	// opens this process's node (here: a build without libibverbs says
	// so) instead of asking for --local.
	if out, err := run(t, "validate", "--backend", "ibv", "--nodes", "2"); err == nil || strings.Contains(err.Error(), "--local") {
		t.Errorf("validate --backend ibv without --local: got %v (%s), want an error of opening the fabric, not a demand for --local", err, out)
	}
}

// TestFigureScaleFlags: --quick=false asks for the paper's scale (it used
// to run the quick one); --quick and --full that disagree are an error.
func TestFigureScaleFlags(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		wantFull bool
		wantErr  string
	}{
		{nil, false, ""},
		{[]string{"--quick"}, false, ""},
		{[]string{"--quick=false"}, true, ""},
		{[]string{"--full"}, true, ""},
		{[]string{"--full", "--quick=false"}, true, ""},
		{[]string{"--full=false", "--quick"}, false, ""},
		{[]string{"--full", "--quick"}, false, "choose one scale"},
		{[]string{"--full=false", "--quick=false"}, false, "choose one scale"},
	} {
		cmd := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { return nil }}
		var ff figureFlags
		ff.register(cmd, "out")
		cmd.SetArgs(tc.args)
		err := cmd.Execute()
		switch {
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%v: got %v, want %q", tc.args, err, tc.wantErr)
		case tc.wantErr == "" && (err != nil || ff.full != tc.wantFull):
			t.Errorf("%v: full %v, err %v; want full %v", tc.args, ff.full, err, tc.wantFull)
		}
	}
}

// TestVerdictsAgainstReference: a figure's verdicts are said to be this
// run's, at its scale, and each that differs from docs/validation.md is
// named with the reference's verdict and measurement; agreement and a
// missing reference are said too.
func TestVerdictsAgainstReference(t *testing.T) {
	ref := "../../docs/validation.md"
	vs := []figures.Verdict{{Claim: "C9", Verdict: "pass"}, {Claim: "C10", Verdict: "fail"}, {Claim: "C1", Verdict: "pass"}}
	for _, tc := range []struct {
		name  string
		ff    figureFlags
		path  string
		only  []string
		wants []string
	}{
		{"quick run", figureFlags{}, ref, []string{"C9", "C10"}, []string{"this run's (quick scale, points as run)", "1 differs: C9 is pass here, partial in ../../docs/validation.md (MESQ/SR 11.33 vs MPI 5.84 GiB/s: 1.94x)"}},
		{"agrees", figureFlags{grow: true}, ref, []string{"C10"}, []string{"grown to steady state", "agrees on every claim of this figure"}},
		{"no reference", figureFlags{}, filepath.Join(t.TempDir(), "v.md"), nil, []string{"v.md, the reference to compare them with, is not here"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			if err := printAgainstReference(&b, vs, tc.only, tc.ff, tc.path); err != nil {
				t.Fatal(err)
			}
			out := strings.Join(strings.Fields(b.String()), " ")
			for _, w := range tc.wants {
				if !strings.Contains(out, w) {
					t.Errorf("%q lacks %q", out, w)
				}
			}
		})
	}
}

// TestFigureWithoutClaims: a figure that judges no claim (scale) says so
// and prints no table of the other figures' claims as not-run, nor their
// verdicts in docs/validation.md.
func TestFigureWithoutClaims(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the scale figure at the quick scale")
	}
	out, err := run(t, "figure", "scale", "--out", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "scale judges no claim") || strings.Contains(out, "not-run") || strings.Contains(out, "validation.md") {
		t.Errorf("output:\n%s", out)
	}
}
