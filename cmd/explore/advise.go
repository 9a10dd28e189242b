package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/rdmashuffle/rdmashuffle/experiments"
	"github.com/rdmashuffle/rdmashuffle/experiments/advise"
	"github.com/rdmashuffle/rdmashuffle/experiments/chart"
	"github.com/rdmashuffle/rdmashuffle/experiments/sweep"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// adviseRunFlags are the run flags advise takes: the cluster and the
// workload (the design is what it chooses).
var adviseRunFlags = []string{"profile", "nodes", "threads", "pattern", "bytes-per-node", "cycles-per-tuple", "node-cycles", "seed"}

type adviseFlags struct {
	q       advise.Question
	connect string
	band    string
	designs []string
	workers int
	jsonOut bool
	brief   bool
	points  string
	noReuse bool
	sweeps  []string
	mapOut  string
	save    string
	net     netFlags
}

func adviseCmd() *cobra.Command {
	f := &adviseFlags{}
	f.q.Base = experiments.DefaultConfig()
	f.q.Base.Nodes, f.q.Base.Threads, f.q.Base.BytesPerNode = 16, 14, 4<<30
	cmd := &cobra.Command{
		Use:   "advise",
		Short: "Which design on this cluster? Every design ranked by expected shuffle time, with its band, bottleneck and costs",
		Long: `advise runs every design that applies on the simulated cluster and ranks them by the
expected time of the asked shuffle, set-up included (unless --connect pre-connected). Each
design runs at a screening input and twice it, and its data phase is extrapolated to the asked
input from the two (a fixed part and a marginal rate). Designs within 25% of the best are
contenders: they grow, doubling, until their marginal rate settles within 3%, and are rerun
with other seeds, other queue-pair numberings and the decisive estimated parameters at half and
double; the least and greatest of those is the band. A design whose band reaches the winner's is
tied with it. Each design's bottleneck is read from the simulator's busy times and counters.
docs/advise.md says how, and what it cannot see.`,
		Example: `  explore advise --profile edr-cx4 --nodes 16 --threads 14 --bytes-per-node 4GiB
  explore advise --profile fdr-cx3 --nodes 8 --threads 4 --memory-budget 64MiB --json
  explore advise --nodes 64 --topology fat-tree --oversubscription 2:1 --connect pre-connected
  explore advise --profile fdr-cx3 --threads 4 --sweep nodes=2,4,8,16 --sweep bytes-per-node=64MiB,256MiB,1GiB`,
		Args: flagsOnly,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.check(cmd); err != nil {
				return err
			}
			if len(f.sweeps) > 0 {
				return f.sweep(cmd)
			}
			a, err := f.run(cmd)
			if err != nil {
				return err
			}
			if f.save != "" {
				if err := advise.WriteJSON(f.save, a); err != nil {
					return fmt.Errorf("--save %s: %w", f.save, err)
				}
			}
			if f.jsonOut {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(a)
			}
			if f.brief {
				fmt.Fprintln(cmd.OutOrStdout(), wrapText("For this cluster ("+a.Question+"): "+lowerFirst(a.Summary()), tableWidth(), "  "))
				return nil
			}
			printAdvice(cmd.OutOrStdout(), a)
			return nil
		},
	}
	fl := cmd.Flags()
	all := pflag.NewFlagSet("run", pflag.ContinueOnError)
	addRunFlags(all, &f.q.Base)
	all.VisitAll(func(x *pflag.Flag) {
		if slices.Contains(adviseRunFlags, x.Name) {
			fl.AddFlag(x)
		}
	})
	fl.Lookup("nodes").DefValue, fl.Lookup("threads").DefValue = "16", "half the profile's cores: 14 on edr-cx4"
	fl.Lookup("bytes-per-node").DefValue = "4GiB"
	f.net.register(fl)
	fl.StringVar(&f.connect, "connect", string(advise.PerQuery), "per-query (set-up is part of every shuffle) or pre-connected (endpoints reused: data phase only)")
	fl.Var(byteSize{&f.q.MemoryBudget}, "memory-budget", "registered memory a node may use, e.g. 256MiB; designs over it are refused (default: no budget)")
	fl.StringSliceVar(&f.designs, "designs", nil, "rank only these designs (default: every design the simulator runs that moves tuples)")
	fl.Var(byteSize{&f.q.ScreenBytes}, "screen-bytes", "screening input per node (default 16MiB, or the asked input when smaller)")
	fl.Int64Var(&f.q.MaxGrowth, "max-growth", advise.DefaultMaxGrowth, "a contender grows to at most this many times the screening input")
	fl.StringVar(&f.band, "band", string(advise.BandFull), "reruns behind the bands: full (seeds, numberings, decisive estimates x0.5/x2), controls (seeds and numberings), none")
	fl.IntVar(&f.workers, "workers", runtime.GOMAXPROCS(0), "runs at once (the answer does not depend on it)")
	fl.BoolVar(&f.jsonOut, "json", false, "print the answer as one JSON object (docs/results.md)")
	fl.BoolVar(&f.brief, "brief", false, "print the recommendation alone, in a sentence or two (with --sweep: the crossovers alone)")
	fl.StringVar(&f.points, "points", "results/advise/points", "directory that keeps finished runs (keyed by configuration, profile parameters and model ID); a later advice reuses them")
	fl.StringArrayVar(&f.sweeps, "sweep", nil, "map which design wins where: PARAM=V1,V2,... once or twice, PARAM one of "+paramList()+" (a figure and the crossovers in words)")
	fl.StringVar(&f.mapOut, "map-out", filepath.Join("results", "advise", advise.MapFigure), "with --sweep: the map's path without extension: the figure (.png, .svg) and the map as JSON (.json, which explore report --advice shows)")
	fl.StringVar(&f.save, "save", filepath.Join("results", "advise", advise.AnswerFile), "also write the answer as JSON to this file, which explore report --advice shows (\"\": do not)")
	fl.BoolVar(&f.noReuse, "no-reuse", false, "run every point, neither reading nor keeping finished runs")
	return cmd
}

// check reads the flags into the question, refusing values that would ask
// something else.
func (f *adviseFlags) check(cmd *cobra.Command) error {
	q := &f.q
	if !cmd.Flags().Changed("threads") {
		// As many sending and receiving threads as the node has cores.
		if p, err := sim.LoadProfile(q.Base.Profile); err == nil {
			q.Base.Threads = max(p.Host.Cores/2, 1)
		}
	}
	if q.Base.Threads < 1 {
		return fmt.Errorf("--threads %d: want at least 1", q.Base.Threads)
	}
	if q.MaxGrowth < 1 {
		return fmt.Errorf("--max-growth %d: want at least 1 (1: no growth past the screening)", q.MaxGrowth)
	}
	if f.workers < 1 {
		return fmt.Errorf("--workers %d: want at least 1", f.workers)
	}
	var err error
	if q.Base.Network, err = f.net.spec(cmd.Flags().Changed); err != nil {
		return err
	}
	q.Connect, q.Band, q.Designs = advise.Connect(f.connect), advise.Band(f.band), f.designs
	return nil
}

// run answers the question with progress on standard error.
func (f *adviseFlags) run(cmd *cobra.Command) (*advise.Answer, error) {
	t := newTask(cmd.ErrOrStderr(), "advise", "runs", 0)
	defer t.finish()
	if note := fileSpeedNote(f.q.Base.Network, f.q.Base.Profile); note != "" {
		t.note(cmd.ErrOrStderr(), note)
	}
	return advise.Advise(f.q, f.options(cmd, t, nil))
}

// options are the runs' options: the workers, the store of finished runs,
// and progress on t, each phase's line prefixed by prefix() when set.
func (f *adviseFlags) options(cmd *cobra.Command, t *task, prefix func() string) advise.Options {
	before := 0 // runs done before the current batch
	o := advise.Options{Workers: f.workers, Progress: func(p advise.Progress) {
		if p.Done == 1 {
			before = t.doneSoFar()
		}
		t.setTotal(before + p.Total)
		detail := p.Phase
		if prefix != nil {
			detail = prefix() + detail
		}
		t.step(1, detail)
	}}
	f.setStore(cmd, &o)
	return o
}

// paramList names the parameters --sweep takes.
func paramList() string {
	s := make([]string, len(advise.Params))
	for i, p := range advise.Params {
		s[i] = string(p)
	}
	return strings.Join(s, ", ")
}

// sweep answers the question at every point of the --sweep axes, prints
// the map as a table and the crossovers in words (or the map as JSON),
// and draws the map.
func (f *adviseFlags) sweep(cmd *cobra.Command) error {
	var axes []advise.Axis
	for _, s := range f.sweeps {
		a, err := advise.ParseAxis(s)
		if err != nil {
			return fmt.Errorf("--sweep %s: %w", s, err)
		}
		if flag := string(a.Param); cmd.Flags().Changed(flag) {
			return fmt.Errorf("--%s and --sweep %s: the parameter is swept; give one of the two", flag, s)
		}
		axes = append(axes, a)
	}
	t := newTask(cmd.ErrOrStderr(), "advise map", "runs", 0)
	point := ""
	o := f.options(cmd, t, func() string { return point })
	m, err := advise.Sweep(f.q, axes, o, func(i, n int, values []int64) {
		var at []string
		for k, v := range values {
			at = append(at, fmt.Sprintf("%s=%s", axes[k].Param, axes[k].Param.Format(v)))
		}
		point = fmt.Sprintf("point %d/%d (%s): ", i+1, n, strings.Join(at, " "))
	})
	t.finish()
	if err != nil {
		return err
	}
	title := fmt.Sprintf("Which design wins: %s, %d threads, %s", f.q.Base.Profile, f.q.Base.Threads, f.q.Base.Pattern)
	if err := os.MkdirAll(filepath.Dir(f.mapOut), 0o755); err != nil {
		return err
	}
	if err := chart.WriteMap(f.mapOut, m.Figure(title)); err != nil {
		return err
	}
	if err := advise.WriteJSON(f.mapOut+".json", m); err != nil {
		return err
	}
	w := cmd.OutOrStdout()
	if f.jsonOut {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(m)
	}
	if f.brief {
		for _, c := range m.Crossovers {
			fmt.Fprintln(w, wrapText(c, tableWidth(), "  "))
		}
		return nil
	}
	printMap(w, m)
	fmt.Fprintf(w, "Map: %s.png and .svg; as JSON: %s.json\n", f.mapOut, f.mapOut)
	return nil
}

// printMap prints the winner of every point as a table (rows: the second
// axis's values), then the crossovers.
func printMap(w io.Writer, m *advise.Map) {
	fmt.Fprintf(w, "Question: %s (swept below)\n", m.Question)
	head, rows := m.Table()
	t := newWrappedTable(w)
	t.Header(head)
	for _, r := range rows {
		t.Append(r)
	}
	t.Render()
	fmt.Fprintln(w, wrapText("~: not clear of the runner-up (tied with it under a rerun, or their bands overlap).", tableWidth(), "  "))
	fmt.Fprintln(w, "Crossovers:")
	for _, c := range m.Crossovers {
		fmt.Fprintln(w, "  "+wrapText(c, tableWidth()-2, "    "))
	}
	for _, c := range m.Cells {
		if c.Error != "" {
			fmt.Fprintln(w, wrapText(fmt.Sprintf("No advice at %v: %s", c.Values, c.Error), tableWidth(), "  "))
		}
	}
	runs := fmt.Sprintf("%d simulated runs", m.Runs)
	if m.Reused > 0 {
		runs += fmt.Sprintf(", %d of them shared between points or reused from earlier advice", m.Reused)
	}
	fmt.Fprintln(w, runs+".")
}

// setStore gives o the store of finished runs the flags name; a store
// that cannot keep a run is said once on standard error.
func (f *adviseFlags) setStore(cmd *cobra.Command, o *advise.Options) {
	if f.noReuse || f.points == "" {
		return
	}
	// Runs are kept per build: the model ID names the profiles and the
	// mechanism switches, not every change to the code, so a run made by
	// other code could differ from the run it would stand for.
	code, err := sweep.Code(cacheBuild())
	if err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "advise: finished runs neither taken from nor kept in %s: %v, so they could come from other code (build with make build, from a checkout with every change committed)\n", f.points, err)
		return
	}
	o.Store = advise.DirStore{Dir: sweep.CodeDir(f.points, code)}
	var once sync.Once
	o.StoreErr = func(err error) {
		once.Do(func() {
			fmt.Fprintf(cmd.ErrOrStderr(), "advise: cannot keep finished runs in %s (%v); going on without (--points DIR to choose another directory, --no-reuse to stop trying)\n", f.points, err)
		})
	}
}

// printAdvice prints the answer: the recommendation in words, the ranked
// designs, and the ones left out with the reason.
func printAdvice(w io.Writer, a *advise.Answer) {
	fmt.Fprintf(w, "Question: %s\n", a.Question)
	if a.Network != "" {
		fmt.Fprintf(w, "Network: %s\n", a.Network)
	}
	fmt.Fprintln(w, wrapText(a.Summary(), tableWidth(), "  "))
	renderOrNarrow(w, rankedTable(a, false), rankedTable(a, true))
	fmt.Fprintln(w, "Why (the contenders' bottlenecks, from the simulator's busy times and counters):")
	for _, d := range a.Designs {
		if d.Status == advise.Ranked && d.Contender {
			line := fmt.Sprintf("%s: %s.", d.Name, d.Bottleneck.Why)
			if d.Tied {
				line += fmt.Sprintf(" Tied with %s: as fast or faster under %s.", a.Winner, d.TiedBy)
			}
			fmt.Fprintln(w, "  "+wrapText(line, tableWidth()-2, "    "))
		}
	}
	for _, d := range a.Designs {
		if d.Status != advise.Ranked {
			fmt.Fprintln(w, wrapText(fmt.Sprintf("%s %s: %s", d.Name, d.Status, d.Reason), tableWidth(), "  "))
		}
	}
	screening := fmt.Sprintf("screening at %s and twice it per node, extrapolated to %s", humanize.IBytes(uint64(a.ScreenBytes)), humanize.IBytes(uint64(a.BytesNode)))
	if a.ScreenBytes >= a.BytesNode {
		screening = fmt.Sprintf("every design run at the asked %s per node", humanize.IBytes(uint64(a.BytesNode)))
	}
	runs := fmt.Sprintf("%d simulated runs", a.Runs)
	if a.Reused > 0 {
		runs += fmt.Sprintf(" (%d of them reused from earlier advice)", a.Reused)
	}
	notes := []string{fmt.Sprintf("%s; %s.", runs, screening),
		"(out): more than 25% slower than the best at screening; not grown or banded. *: its rates had not settled within 3% when growth stopped (--max-growth). Designs that model another host stack (sockets over Gigabit Ethernet, software iWARP) are screened only when named in --designs."}
	if a.CeilingGiBs > 0 {
		notes = append(notes, fmt.Sprintf("The network's ceiling for this traffic (perftest all-to-all, the qperf baseline): %.2f GiB/s per node over the network; a design's rate also counts the tuples that stay on their node (1 in %d).", a.CeilingGiBs, a.Nodes))
	}
	for _, n := range notes {
		fmt.Fprintln(w, wrapText(n, tableWidth(), "  "))
	}
}

// lowerFirst lowers a sentence's first letter, to continue another.
func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// rankedTable is the ranked designs of a: one line a design, or, narrow,
// the band and the set-up under the time and the tie under the rank, for
// a terminal narrower than the one line.
func rankedTable(a *advise.Answer, narrow bool) tableData {
	d := tableData{header: []string{"rank", "design", "time [ms]", "band [ms]", "set-up [ms]", "rate [GiB/s]", "registered", "QPs", "idle send/recv", "bottleneck"}}
	tied, out := " (tied)", " (out)"
	if narrow {
		d.header = []string{"rank", "design", "time, band, set-up [ms]", "rate [GiB/s]", "memory", "QPs", "idle s/r", "bottleneck"}
		tied, out = "\ntied", "\nout"
	}
	for i, x := range a.Designs {
		if x.Status != advise.Ranked {
			continue
		}
		rank := fmt.Sprint(i + 1)
		switch {
		case x.Tied:
			rank += tied
		case !x.Contender:
			rank += out
		}
		band := "-"
		if x.Contender {
			band = fmt.Sprintf("%.1f-%.1f", x.BandLowS*1e3, x.BandHighS*1e3)
		}
		steady := ""
		if x.Contender && !x.Steady {
			steady = "*"
		}
		times := []string{fmt.Sprintf("%.1f", x.TimeS*1e3), band, fmt.Sprintf("%.1f", x.SetupS*1e3)}
		if narrow {
			times = []string{fmt.Sprintf("%s\n%s\nset-up %s", times[0], band, times[2])}
		}
		row := append([]string{rank, x.Name}, times...)
		d.rows = append(d.rows, append(row,
			fmt.Sprintf("%.2f%s", x.RateGiBs, steady), humanize.IBytes(uint64(x.RegisteredBytes)), fmt.Sprint(x.QPs),
			fmt.Sprintf("%.0f/%.0f%%", 100*x.SenderIdle, 100*x.ReceiverIdle), string(x.Bottleneck.Resource)))
	}
	return d
}
