package sensitivity

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rdmashuffle/rdmashuffle/buildinfo"
	"github.com/rdmashuffle/rdmashuffle/experiments"
	"github.com/rdmashuffle/rdmashuffle/experiments/figures"
	"github.com/rdmashuffle/rdmashuffle/experiments/sweep"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// Options controls Run.
type Options struct {
	Changes []Change // default: DefaultChanges(0.5, 2)
	Figures []string // figure IDs to judge with; empty: all
	OutDir  string   // working files and outcomes.jsonl (resumed)
	Jobs    int      // parallel runs (0: one per core)
	// Memory, if set, admits the parallel runs (figures.FigureOptions.Memory).
	Memory *experiments.MemoryBudget
	// Rejudge judges every change again from the runs kept in OutDir
	// (after a change to the judge, which leaves the runs valid) instead
	// of reading the stored verdicts; a point missing from them is run.
	// outcomes.jsonl is replaced once all are judged.
	Rejudge bool
	Log     io.Writer
	// Progress, if set, is called after each point of each figure's sweeps
	// (see sweep.SweepOptions.Progress).
	Progress func(sweep.Progress)
}

// Outcome is the verdicts of every claim under one change ("" for the
// baseline: the profiles as they are).
type Outcome struct {
	Change   string            `json:"change"`
	Figures  []string          `json:"figures,omitempty"`
	Verdicts []figures.Verdict `json:"verdicts,omitempty"`
	Error    string            `json:"error,omitempty"`
	Version  string            `json:"version"`
	Commit   string            `json:"commit"`
	Model    string            `json:"model,omitempty"` // ModelID when judged
}

// Run judges the claims on the built-in profiles as they are and then under
// each change, appending one Outcome per change to OutDir/outcomes.jsonl;
// changes already there (for the same figures, judged on this model) are
// not run again, so an interrupted analysis resumes; ones another model
// judged are run again and their runs replaced. A change that makes a profile invalid is
// an Outcome with its error, not a failure of the analysis.
func Run(ctx context.Context, o Options) ([]Outcome, error) {
	if len(o.Changes) == 0 {
		o.Changes = DefaultChanges(0.5, 2)
	}
	if err := os.MkdirAll(o.OutDir, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(o.OutDir, "outcomes.jsonl")
	done, other, err := readOutcomes(path, o.Figures)
	if err != nil {
		return nil, err
	}
	if other != "" && o.Rejudge {
		return nil, fmt.Errorf("sensitivity: cannot rejudge: %s, and the runs kept in %s are that model's: judge this model without --rejudge, in a new --out", other, o.OutDir)
	}
	if other != "" && o.Log != nil {
		fmt.Fprintf(o.Log, "sensitivity: %s; those changes are judged again\n", other)
	}
	out := path
	flags := os.O_CREATE | os.O_APPEND | os.O_WRONLY
	if o.Rejudge {
		done = map[string]Outcome{}
		out, flags = path+".rejudged", os.O_CREATE|os.O_TRUNC|os.O_WRONLY
	}
	f, err := os.OpenFile(out, flags, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	todo := append([]*Change{nil}, ptrs(o.Changes)...)
	var outs []Outcome
	for i, c := range todo {
		name := ""
		if c != nil {
			name = c.String()
		}
		if oc, ok := done[name]; ok {
			outs = append(outs, oc)
			continue
		}
		if o.Log != nil {
			fmt.Fprintf(o.Log, "sensitivity [%d/%d] %s\n", i+1, len(todo), orBaseline(name))
		}
		oc, err := judgeUnder(ctx, c, o)
		if err != nil {
			return outs, err // interrupted: what was done is saved
		}
		b, _ := json.Marshal(oc)
		if _, err := f.Write(append(b, '\n')); err != nil {
			return outs, err
		}
		outs = append(outs, oc)
	}
	if o.Rejudge {
		if err := f.Close(); err != nil {
			return outs, err
		}
		if err := os.Rename(out, path); err != nil {
			return outs, err
		}
	}
	return outs, nil
}

// currentModel is ModelID; a test replaces it to stand for a change of
// the model's numbers.
var currentModel = ModelID

// Stored returns the outcomes already judged in o.OutDir for o's
// changes (the baseline first), running nothing, and the changes not
// judged yet: what an interrupted or running analysis has so far. It
// fails when the baseline is not judged yet.
func Stored(o Options) (outs []Outcome, pending []string, err error) {
	if len(o.Changes) == 0 {
		o.Changes = DefaultChanges(0.5, 2)
	}
	path := filepath.Join(o.OutDir, "outcomes.jsonl")
	done, other, err := readOutcomes(path, o.Figures)
	if err != nil {
		return nil, nil, err
	}
	base, ok := done[""]
	if !ok {
		if other != "" {
			return nil, nil, fmt.Errorf("sensitivity: %s has no judged baseline of this model yet (%s): nothing to report so far", path, other)
		}
		return nil, nil, fmt.Errorf("sensitivity: %s has no judged baseline yet: nothing to report so far", path)
	}
	outs = append(outs, base)
	for _, c := range o.Changes {
		if oc, ok := done[c.String()]; ok {
			outs = append(outs, oc)
		} else {
			pending = append(pending, c.String())
		}
	}
	return outs, pending, nil
}

func ptrs(cs []Change) []*Change {
	out := make([]*Change, len(cs))
	for i := range cs {
		out[i] = &cs[i]
	}
	return out
}

func orBaseline(name string) string {
	if name == "" {
		return "baseline (the profiles as they are)"
	}
	return name
}

// judgeUnder reruns the figures with every built-in profile changed by c
// (nil: unchanged) and judges the claims.
func judgeUnder(ctx context.Context, c *Change, o Options) (Outcome, error) {
	b := buildinfo.Get()
	oc := Outcome{Figures: o.Figures, Version: b.Version, Commit: b.Commit, Model: currentModel()}
	dir := filepath.Join(o.OutDir, "baseline")
	wrap := onProfiles(nil)
	if c != nil {
		oc.Change = c.String()
		dir = filepath.Join(o.OutDir, strings.NewReplacer(" ", "", "*", "").Replace(oc.Change))
		if c.IsSeed() {
			wrap = withSeed(uint64(c.Factor))
		} else if isSoftware(c.Field) {
			s, err := ApplySoftware(*c)
			if err != nil {
				oc.Error = err.Error()
				return oc, nil
			}
			wrap = withSoftware(s)
		} else {
			paths, err := writeProfiles(dir, *c)
			if err != nil {
				oc.Error = err.Error()
				return oc, nil
			}
			wrap = onProfiles(paths)
		}
	}
	rep, err := figures.Reproduce(ctx, figures.ReproduceOptions{
		FigureOptions: figures.FigureOptions{OutDir: dir, Jobs: o.Jobs, NoSteadyCheck: true, NoPlots: true, Wrap: wrap, Progress: o.Progress, Resume: o.Rejudge, Memory: o.Memory},
		Figures:       o.Figures,
	})
	if err != nil {
		if ctx.Err() != nil {
			return oc, err
		}
		oc.Error = err.Error()
		return oc, nil
	}
	oc.Verdicts = rep.Verdicts
	return oc, nil
}

// withSeed runs every point with its seed plus k; the record keeps the
// seed it ran with.
func withSeed(k uint64) func(func(experiments.RunConfig) (*experiments.Record, error)) func(experiments.RunConfig) (*experiments.Record, error) {
	return func(run func(experiments.RunConfig) (*experiments.Record, error)) func(experiments.RunConfig) (*experiments.Record, error) {
		return func(cfg experiments.RunConfig) (*experiments.Record, error) {
			cfg.Seed += k
			return run(cfg)
		}
	}
}

// writeProfiles writes every built-in profile changed by c to dir and
// returns their paths by name.
func writeProfiles(dir string, c Change) (map[string]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	paths := map[string]string{}
	for _, name := range sim.BuiltinProfiles() {
		p, err := sim.LoadProfile(name)
		if err != nil {
			return nil, err
		}
		q, err := Apply(p, c)
		if err != nil {
			return nil, err
		}
		data, err := marshalProfile(q)
		if err != nil {
			return nil, err
		}
		path := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return nil, err
		}
		paths[name] = path
	}
	return paths, nil
}

// onProfiles runs each point on the changed profile of its name and labels
// the record with the name again, so that the judge finds it.
func onProfiles(paths map[string]string) func(func(experiments.RunConfig) (*experiments.Record, error)) func(experiments.RunConfig) (*experiments.Record, error) {
	return func(run func(experiments.RunConfig) (*experiments.Record, error)) func(experiments.RunConfig) (*experiments.Record, error) {
		return func(cfg experiments.RunConfig) (*experiments.Record, error) {
			name := cfg.Profile
			if name == "" {
				name = sim.DefaultProfileName
			}
			path, ok := paths[name]
			if !ok {
				return run(cfg)
			}
			cfg.Profile = path
			rec, err := run(cfg)
			if rec != nil {
				rec.Profile = name
			}
			return rec, err
		}
	}
}

// readOutcomes reads the outcomes already in path for the same figures
// and judged on this model (currentModel; an outcome without a model
// predates the stamp and is taken). other, if not empty, says how many
// outcomes were left out because another model judged them: an analysis
// resumed after a change of the model's numbers judges those changes
// again rather than mixing two models' verdicts in one report.
func readOutcomes(path string, figs []string) (done map[string]Outcome, other string, err error) {
	done = map[string]Outcome{}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return done, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	model := currentModel()
	stale, models := 0, map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for n := 1; sc.Scan(); n++ {
		var oc Outcome
		if err := json.Unmarshal(sc.Bytes(), &oc); err != nil {
			return nil, "", fmt.Errorf("%s line %d: %w (delete the file to start the analysis afresh)", path, n, err)
		}
		if strings.Join(oc.Figures, ",") != strings.Join(figs, ",") {
			continue
		}
		if oc.Model != "" && oc.Model != model {
			// Judged on other numbers: it does not describe this model.
			stale++
			models[oc.Model] = true
			continue
		}
		done[oc.Change] = oc
	}
	if err := sc.Err(); err != nil {
		return nil, "", err
	}
	if stale > 0 {
		other = fmt.Sprintf("%d outcome(s) in %s were judged on model %s, not on this one (%s)", stale, path, strings.Join(slices.Sorted(maps.Keys(models)), ", "), model)
	}
	return done, other, nil
}
