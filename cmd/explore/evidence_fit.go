package main

import (
	"fmt"
	"runtime"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/experiments/evidence"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// fitFlags are explore evidence's fit flags.
type fitFlags struct {
	axes, points []string
	profile      string
	top, jobs    int
	numberings   int // queue-pair numberings each point runs under (its median is compared)
}

// runFit runs explore evidence --fit: the selected points on their
// profile at every combination of the axes' values, best first.
func runFit(cmd *cobra.Command, all []evidence.Point, f fitFlags) error {
	if len(f.points) == 0 {
		return fmt.Errorf("--fit without --points: name the points to fit to, by id or glob, e.g. --points 'rcswarm-apt-read32-qps-*'")
	}
	if f.numberings < 1 {
		return fmt.Errorf("--numberings %d: must be at least 1", f.numberings)
	}
	if f.top < 1 {
		return fmt.Errorf("--top %d: must be at least 1", f.top)
	}
	pts, err := evidence.Select(all, f.points...)
	if err != nil {
		return fmt.Errorf("--points %w", err)
	}
	var axes []evidence.Axis
	software := true // only software costs move: each point may keep its own profile
	for _, s := range f.axes {
		a, err := evidence.ParseAxis(s)
		if err != nil {
			return err
		}
		axes = append(axes, a)
		software = software && evidence.IsSoftware(a.Field)
	}
	name := f.profile
	for _, p := range pts {
		switch {
		case p.Profile == "":
			return fmt.Errorf("--points: %s names no profile (no built-in profile fits its NIC), so nothing can be fitted to it", p.ID)
		case software && f.profile == "":
		case name == "":
			name = p.Profile
		case f.profile == "" && p.Profile != name:
			return fmt.Errorf("--points: %s is a point of %s and %s one of %s: fit one profile at a time, or name it with --profile", pts[0].ID, name, p.ID, p.Profile)
		}
	}
	var base *sim.Profile // nil: each point on its own profile
	on := "each point's own profile"
	if name != "" {
		if base, err = sim.LoadProfile(name); err != nil {
			return err
		}
		on = name
	}
	jobs := f.jobs
	if jobs <= 0 {
		jobs = runtime.NumCPU()
	}
	n := 1
	for _, a := range axes {
		n *= len(a.Values)
	}
	// The model as it is: its own values of the fitted parameters.
	cur := make([]float64, len(axes))
	for i, a := range axes {
		if evidence.IsSoftware(a.Field) {
			c, err := algos.Cost(algos.DefaultMPICosts, algos.DefaultIPoIBCosts, a.Field)
			if err != nil {
				return err
			}
			cur[i] = float64(c)
		} else if cur[i], _, err = base.Field(a.Field); err != nil {
			return err
		}
	}
	asIs, err := evidence.Fit(pts, base, []evidence.Axis{}, f.numberings, 1, nil)
	if err != nil {
		return err
	}
	prog := newTask(cmd.ErrOrStderr(), "fit", "combinations", n)
	rs, err := evidence.Fit(pts, base, axes, f.numberings, jobs, func() { prog.step(1, "") })
	prog.finish()
	if err != nil {
		return err
	}
	w := cmd.OutOrStdout()
	fmt.Fprintf(w, "fit on %s to %d points (errors in this order): %s\n", on, len(pts), pointIDs(pts))
	if f.numberings > 1 {
		fmt.Fprintf(w, "each point's model value is the median of %d queue-pair numberings\n", f.numberings)
	}
	t := newTable(w)
	var head []any
	for _, a := range axes {
		head = append(head, a.Field)
	}
	t.Header(append(head, "worst", "mean", "within", "errors, %")...)
	row := func(values []float64, r evidence.FitResult, mark string) {
		var cells []string
		for _, v := range values {
			cells = append(cells, fmt.Sprintf("%g", v))
		}
		cells[0] = mark + cells[0]
		if r.Err != nil {
			t.Append(append(cells, "-", "-", "-", r.Err.Error()))
			return
		}
		var errs []string
		for _, e := range r.Errors {
			errs = append(errs, fmt.Sprintf("%+.0f", 100*e))
		}
		t.Append(append(cells, fmt.Sprintf("%.1f%%", 100*r.Worst), fmt.Sprintf("%.1f%%", 100*r.Mean),
			fmt.Sprintf("%d/%d", r.Within, len(pts)), strings.Join(errs, " ")))
	}
	row(cur, asIs[0], "as is: ")
	for _, r := range rs[:min(f.top, len(rs))] {
		row(r.Values, r, "")
	}
	t.Render()
	fmt.Fprintf(w, "%d combinations, best first (smallest worst-case error, then mean); the first row is the model as it is\n", len(rs))
	return nil
}

// pointIDs lists the points' ids.
func pointIDs(pts []evidence.Point) string {
	ids := make([]string, len(pts))
	for i, p := range pts {
		ids[i] = p.ID
	}
	return strings.Join(ids, ", ")
}
