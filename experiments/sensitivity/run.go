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
	"github.com/rdmashuffle/rdmashuffle/experiments/results"
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
	// Cache, if set, keeps every run's record across invocations (the
	// baseline's checked runs and the changes' unchecked ones apart): a
	// point it holds is not run again (sweep.Cache). Nil: every point runs.
	Cache *sweep.Cache
	// Resume, if set, is a summary written earlier of this analysis (on
	// this model, with these figures): the changes it judged are taken
	// from it (FromSummary) once the baseline, judged again, agrees with
	// its baseline on every claim. Changes already in OutDir win.
	Resume *Summary

	judged *figures.Judged // the microbenchmarks' verdicts, shared by every change (Run sets it)
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
	// Commits, for an outcome taken from a summary (FromSummary), are the
	// builds that judged that summary's analysis: one of them judged it.
	Commits []string `json:"commits,omitempty"`
	Model   string   `json:"model,omitempty"` // ModelID when judged
}

// ErrOtherModel is Run's refusal to rejudge runs another model made.
var ErrOtherModel = errors.New("sensitivity: outcomes of another model")

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
	if o.Rejudge && o.Resume != nil {
		// A rejudge judges every change from its runs; a summary has
		// verdicts, not runs.
		return nil, fmt.Errorf("%w: rejudging judges every change again from its runs, and a summary keeps only verdicts", ErrSummaryMismatch)
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
		return nil, fmt.Errorf("%w: cannot rejudge: %s, and the runs kept in %s for them are that model's: judge this model without rejudging (it judges those changes again), or in a new output directory", ErrOtherModel, other, o.OutDir)
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
	var seedBase *Outcome
	var seeds []Outcome
	if o.Resume != nil {
		b, cs, err := FromSummary(o.Resume, o.Figures)
		if err != nil {
			return nil, err
		}
		seedBase, seeds = &b, cs
	}
	write := func(oc Outcome) error {
		b, _ := json.Marshal(oc)
		_, err := f.Write(append(b, '\n'))
		return err
	}
	o.judged = figures.NewJudged()
	todo := append([]*Change{nil}, ptrs(o.Changes)...)
	var outs []Outcome
	for i, c := range todo {
		name := ""
		if c != nil {
			name = c.String()
		}
		oc, ok := done[name]
		if !ok {
			if o.Log != nil {
				fmt.Fprintf(o.Log, "sensitivity [%d/%d] %s\n", i+1, len(todo), orBaseline(name))
			}
			if oc, err = judgeUnder(ctx, c, o); err != nil {
				return outs, err // interrupted: what was done is saved
			}
			if err := write(oc); err != nil {
				return outs, err
			}
		}
		outs = append(outs, oc)
		if c != nil || seedBase == nil {
			continue
		}
		// The baseline is judged: take the summary's changes if it judged
		// the same baseline.
		if d := sameVerdicts(oc, *seedBase); d != "" || oc.Error != "" {
			return outs, fmt.Errorf("%w: the baseline judged now differs from the summary's (%s%s): the judge or the runs changed since it was written; run the analysis without resuming from it", ErrSummaryMismatch, d, oc.Error)
		}
		taken := 0
		for _, s := range seeds {
			if _, ok := done[s.Change]; ok {
				continue
			}
			if err := write(s); err != nil {
				return outs, err
			}
			done[s.Change] = s
			taken++
		}
		if o.Log != nil {
			fmt.Fprintf(o.Log, "sensitivity: the baseline agrees with the summary's; %d judged changes taken from it\n", taken)
		}
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
	if o.Resume != nil {
		b, cs, err := FromSummary(o.Resume, o.Figures)
		if err != nil {
			return nil, nil, err
		}
		if _, ok := done[""]; !ok {
			done[""] = b
		}
		for _, s := range cs {
			if _, ok := done[s.Change]; !ok {
				done[s.Change] = s
			}
		}
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
	var profile func(string) string // the microbenchmarks' profiles (figures.BenchJudges)
	var unchanged map[string]bool   // the profiles the change leaves as they are
	if c != nil {
		oc.Change = c.String()
		dir = filepath.Join(o.OutDir, strings.NewReplacer(" ", "", "*", "").Replace(oc.Change))
		if c.IsSeed() {
			wrap = withSeed(uint64(c.Factor))
		} else if c.IsNumbering() {
			wrap = withNumbering(uint64(c.Factor))
		} else if isSoftware(c.Field) {
			s, err := ApplySoftware(*c)
			if err != nil {
				oc.Error = err.Error()
				return oc, nil
			}
			wrap = withSoftware(s)
		} else {
			var paths map[string]string
			var err error
			paths, unchanged, err = writeProfiles(dir, *c)
			if err != nil {
				oc.Error = err.Error()
				return oc, nil
			}
			wrap = onProfiles(paths)
			profile = func(name string) string {
				if path, ok := paths[name]; ok {
					return path
				}
				return name
			}
		}
		// A change's runs go without the verbs-usage checker: records do
		// not depend on it (TestNoCheckSameResult), the baseline keeps it,
		// and it is a tenth of a UD design's work. The figures' own run
		// (experiments.Run) is what it replaces.
		checked := wrap
		unchecked := o.Cache.Wrap("unchecked", runUnchecked)
		wrap = func(func(experiments.RunConfig) (*results.Record, error)) func(experiments.RunConfig) (*results.Record, error) {
			return checked(unchecked)
		}
		var logReuse func()
		wrap, logReuse = reuseBaseline(wrap, *c, unchanged, o)
		defer logReuse()
	}
	figs := o.Figures
	if len(figs) == 0 {
		figs = figures.JudgingIDs() // no verdict reads the figures without claims
	}
	rep, err := figures.Reproduce(ctx, figures.ReproduceOptions{
		FigureOptions: figures.FigureOptions{OutDir: dir, Jobs: o.Jobs, NoSteadyCheck: true, NoPlots: true, Wrap: wrap, Profile: profile, Progress: o.Progress, Resume: o.Rejudge, Memory: o.Memory, Cache: o.Cache, Judged: o.judged},
		Figures:       figs,
	})
	if err != nil {
		if ctx.Err() != nil {
			return oc, err
		}
		oc.Error = err.Error()
		return oc, nil
	}
	if rep.Shared > 0 && o.Log != nil {
		fmt.Fprintf(o.Log, "sensitivity: %d points took the record of the same point in another figure or sweep instead of running\n", rep.Shared)
	}
	oc.Verdicts = rep.Verdicts
	return oc, nil
}

// reuseBaseline wraps a change's runner so that the points it cannot
// reach take the baseline's records: the points of designs outside its
// Reach, and the points on profiles it leaves unchanged. The function it
// returns logs how many did (call it when the change is judged).
func reuseBaseline(wrap func(func(experiments.RunConfig) (*results.Record, error)) func(experiments.RunConfig) (*results.Record, error),
	c Change, unchanged map[string]bool, o Options) (func(func(experiments.RunConfig) (*results.Record, error)) func(experiments.RunConfig) (*results.Record, error), func()) {
	baseline := filepath.Join(o.OutDir, "baseline")
	if c.IsControl() || !exists(baseline) {
		return wrap, func() {}
	}
	var byDesign, byProfile int64
	add := func(outer func(func(experiments.RunConfig) (*results.Record, error)) func(experiments.RunConfig) (*results.Record, error)) {
		inner := wrap
		wrap = func(run func(experiments.RunConfig) (*results.Record, error)) func(experiments.RunConfig) (*results.Record, error) {
			return outer(inner(run))
		}
	}
	designs := Reach(c.Field)
	if designs != nil {
		add(reuseOutside(designs, baseline, &byDesign))
	}
	if slices.Contains(slices.Collect(maps.Values(unchanged)), true) {
		add(reuseUnchanged(unchanged, baseline, &byProfile))
	}
	return wrap, func() {
		if o.Log == nil {
			return
		}
		if byDesign > 0 {
			fmt.Fprintf(o.Log, "sensitivity: %s reaches only %s: %d points took the baseline's records\n", c, strings.Join(designs, ", "), byDesign)
		}
		if byProfile > 0 {
			fmt.Fprintf(o.Log, "sensitivity: %s leaves some profiles as they are: %d of their points took the baseline's records\n", c, byProfile)
		}
	}
}

// runUnchecked runs a point as experiments.Run does, without the verbs
// checker (the record says verbs_check off).
func runUnchecked(cfg experiments.RunConfig) (*results.Record, error) {
	if cfg.Workload.Kind == results.IStoreMicro {
		// The I-Store microbenchmark runs no checker, and refuses to be
		// asked to turn it off.
		return experiments.RunSim(cfg, experiments.SimOptions{})
	}
	return experiments.RunSim(cfg, experiments.SimOptions{NoCheck: true})
}

// withSeed runs every point with its seed plus k. The record names the
// point's own seed, as onProfiles names the profile the point asked for:
// the runs are kept in the change's directory ("seed+k"), and a resumed
// or rejudged sweep matches its records to the points by their seed.
func withSeed(k uint64) func(func(experiments.RunConfig) (*results.Record, error)) func(experiments.RunConfig) (*results.Record, error) {
	return func(run func(experiments.RunConfig) (*results.Record, error)) func(experiments.RunConfig) (*results.Record, error) {
		return func(cfg experiments.RunConfig) (*results.Record, error) {
			seed := cfg.Seed
			cfg.Seed += k
			rec, err := run(cfg)
			if rec != nil {
				rec.Seed = seed
			}
			return rec, err
		}
	}
}

// withNumbering runs every point under queue-pair numbering k. As withSeed
// names the point's own seed, the record names the point's own numbering:
// the runs are kept in the change's directory ("qp-numberingk"), and a
// resumed or rejudged sweep matches its records to the points by it.
func withNumbering(k uint64) func(func(experiments.RunConfig) (*results.Record, error)) func(experiments.RunConfig) (*results.Record, error) {
	return func(run func(experiments.RunConfig) (*results.Record, error)) func(experiments.RunConfig) (*results.Record, error) {
		return func(cfg experiments.RunConfig) (*results.Record, error) {
			own := cfg.QPNumbering
			cfg.QPNumbering = k
			rec, err := run(cfg)
			if rec != nil {
				rec.QPNumbering = own
			}
			return rec, err
		}
	}
}

// writeProfiles writes every built-in profile changed by c to dir and
// returns their paths by name.
func writeProfiles(dir string, c Change) (paths map[string]string, unchanged map[string]bool, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, err
	}
	paths, unchanged = map[string]string{}, map[string]bool{}
	for _, name := range sim.BuiltinProfiles() {
		p, err := sim.LoadProfile(name)
		if err != nil {
			return nil, nil, err
		}
		q, err := Apply(p, c)
		if err != nil {
			return nil, nil, err
		}
		data, err := marshalProfile(q)
		if err != nil {
			return nil, nil, err
		}
		path := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return nil, nil, err
		}
		paths[name], unchanged[name] = path, q.Hash() == p.Hash()
	}
	return paths, unchanged, nil
}

// onProfiles runs each point on the changed profile of its name and labels
// the record with the name again, so that the judge finds it.
func onProfiles(paths map[string]string) func(func(experiments.RunConfig) (*results.Record, error)) func(experiments.RunConfig) (*results.Record, error) {
	return func(run func(experiments.RunConfig) (*results.Record, error)) func(experiments.RunConfig) (*results.Record, error) {
		return func(cfg experiments.RunConfig) (*results.Record, error) {
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
// and judged on this model (currentModel). other, if not empty, says
// which changes another model judged and this one has not judged since:
// an analysis resumed after a change of the model's numbers judges those
// again rather than mixing two models' verdicts in one report. Outcomes
// without a model predate the stamp: they are taken when no outcome in
// the file has one, and otherwise count as another model's.
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
	unstamped := map[string]Outcome{}
	oldModels := map[string]map[string]bool{} // change -> models that judged it
	stamped := false
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
		switch {
		case oc.Model == "":
			unstamped[oc.Change] = oc
		case oc.Model == model:
			stamped = true
			done[oc.Change] = oc
		default: // judged on other numbers: it does not describe this model
			stamped = true
			if oldModels[oc.Change] == nil {
				oldModels[oc.Change] = map[string]bool{}
			}
			oldModels[oc.Change][oc.Model] = true
		}
	}
	if err := sc.Err(); err != nil {
		return nil, "", err
	}
	for c, oc := range unstamped {
		switch {
		case !stamped:
			done[c] = oc
		case oldModels[c] == nil:
			oldModels[c] = map[string]bool{"(not recorded)": true}
		default:
			oldModels[c]["(not recorded)"] = true
		}
	}
	var stale []string
	models := map[string]bool{}
	for c, ms := range oldModels {
		if _, ok := done[c]; ok {
			continue // judged again on this model since
		}
		stale = append(stale, orBaseline(c))
		for m := range ms {
			models[m] = true
		}
	}
	if len(stale) > 0 {
		slices.Sort(stale)
		other = fmt.Sprintf("%s in %s judged on model %s, not on this one (%s), and not since: %s",
			changes(len(stale)), path, strings.Join(slices.Sorted(maps.Keys(models)), ", "), model, strings.Join(stale, ", "))
	}
	return done, other, nil
}
