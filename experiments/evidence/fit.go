package evidence

import (
	"errors"
	"fmt"
	"math"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// Axis is one parameter a fit moves and the values it tries: a profile
// field, named as in a profile file ("nic.qp_cache_entries"), or one of the
// baselines' software costs, named as the sensitivity analysis names them
// (algos.CostNames: "mpi.call_cycles"). An Axis is a value.
type Axis struct {
	Field  string
	Values []float64
}

// ParseAxis reads "field=v1,v2,...", as explore evidence --fit takes it.
func ParseAxis(s string) (Axis, error) {
	field, list, ok := strings.Cut(s, "=")
	field = strings.TrimSpace(field)
	if !ok || field == "" || strings.TrimSpace(list) == "" {
		return Axis{}, fmt.Errorf("fit axis %q: want <profile field>=<value>,<value>,..., e.g. nic.qp_cache_ways=1,2,4", s)
	}
	a := Axis{Field: field}
	for _, v := range strings.Split(list, ",") {
		x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return Axis{}, fmt.Errorf("fit axis %q: %q is not a number", s, strings.TrimSpace(v))
		}
		a.Values = append(a.Values, x)
	}
	return a, nil
}

// FitResult is one combination of a fit's values and how the model did at
// its points. A FitResult is a value.
type FitResult struct {
	Values []float64 // one per axis, in the axes' order
	Model  []float64 // the model's value at each point, in the points' order
	Errors []float64 // its relative error at each point
	Worst  float64   // the largest absolute relative error
	Mean   float64   // the mean absolute relative error
	Within int       // points within their tolerance
	Err    error     // why the combination could not be run (a value the profile refuses, a failed run)
}

// Select returns the points of all whose id matches one of the patterns
// (path.Match globs), in all's order; a pattern that matches nothing, or
// is malformed, is an error that names it.
func Select(all []Point, patterns ...string) ([]Point, error) {
	var out []Point
	used := make([]bool, len(patterns))
	for _, p := range all {
		for i, pat := range patterns {
			ok, err := path.Match(pat, p.ID)
			if err != nil {
				return nil, fmt.Errorf("%q: %v", pat, err)
			}
			if ok {
				used[i] = true
				out = append(out, p)
				break
			}
		}
	}
	for i, u := range used {
		if !u {
			return nil, fmt.Errorf("%q matches no point of experiments/evidence (explore evidence lists them)", patterns[i])
		}
	}
	return out, nil
}

// maxFitRuns bounds a fit's combinations times points, so that a typo in
// a grid cannot start a run of days.
const maxFitRuns = 100000

// Fit runs every point of pts on base (nil: each point on its own
// profile, which only a fit of software costs can do) with each
// combination of the axes' values and returns the combinations ordered by
// the rule the context caches are fitted by (docs/model.md, "Message rate
// versus number of QPs"): the smallest worst-case absolute error, then the
// smallest mean; combinations that could not be run come last. jobs
// combinations run at once (at least one); each point runs under
// numberings queue-pair numberings (EvaluateOn); step, if set, is called
// after each combination (never concurrently). It fails when a point has no
// benchmark on the model, when an axis names no parameter, or when the
// grid is empty or too large.
func Fit(pts []Point, base *sim.Profile, axes []Axis, numberings, jobs int, step func()) ([]FitResult, error) {
	if len(pts) == 0 {
		return nil, errors.New("fit: no points")
	}
	for _, p := range pts {
		if _, _, why := benchmarkOf(p, Software{}); why != "" {
			return nil, fmt.Errorf("fit: point %s is not modelled: %s", p.ID, why)
		}
	}
	combos := [][]float64{nil}
	for _, a := range axes {
		if len(a.Values) == 0 {
			return nil, fmt.Errorf("fit: axis %s has no values", a.Field)
		}
		switch {
		case a.Field == "mpi.relock_cycles":
			return nil, fmt.Errorf("fit: %s moves nothing in the evidence runs: each MPI point sets its library's wait (MPICH's, or polling without letting the lock go)", a.Field)
		case IsSoftware(a.Field):
			if _, err := algos.Cost(algos.DefaultMPICosts, algos.DefaultIPoIBCosts, a.Field); err != nil {
				return nil, fmt.Errorf("fit: %w", err)
			}
		case base == nil:
			return nil, fmt.Errorf("fit: %s is a profile field: name the profile whose field moves", a.Field)
		default:
			if _, _, err := base.Field(a.Field); err != nil {
				return nil, fmt.Errorf("fit: %w", err)
			}
		}
		var next [][]float64
		for _, c := range combos {
			for _, v := range a.Values {
				next = append(next, append(append([]float64(nil), c...), v))
			}
		}
		combos = next
	}
	if numberings < 1 {
		return nil, fmt.Errorf("fit: %d queue-pair numberings: want at least 1", numberings)
	}
	if n := len(combos) * len(pts) * numberings; n > maxFitRuns || n/numberings != len(combos)*len(pts) {
		return nil, fmt.Errorf("fit: %d combinations x %d points x %d numberings = %d runs, more than %d: use fewer values or numberings", len(combos), len(pts), numberings, n, maxFitRuns)
	}
	out := make([]FitResult, len(combos))
	var mu sync.Mutex
	var wg sync.WaitGroup
	work := make(chan int)
	for range max(jobs, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				out[i] = fitOne(pts, base, axes, combos[i], numberings)
				if step != nil {
					mu.Lock()
					step()
					mu.Unlock()
				}
			}
		}()
	}
	for i := range combos {
		work <- i
	}
	close(work)
	wg.Wait()
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if (a.Err == nil) != (b.Err == nil) {
			return a.Err == nil
		}
		if a.Worst != b.Worst {
			return a.Worst < b.Worst
		}
		return a.Mean < b.Mean
	})
	return out, nil
}

// IsSoftware says whether name is in the baselines' software costs
// namespace (mpi.*, ipoib.*: algos.CostNames) rather than a profile's.
func IsSoftware(name string) bool {
	return strings.HasPrefix(name, "mpi.") || strings.HasPrefix(name, "ipoib.")
}

// fitOne runs pts on base with the axes set to values.
func fitOne(pts []Point, base *sim.Profile, axes []Axis, values []float64, numberings int) FitResult {
	r := FitResult{Values: values}
	prof := base
	mpi, ipoib := algos.DefaultMPICosts, algos.DefaultIPoIBCosts
	var sw Software
	for i, a := range axes {
		v := values[i]
		if !IsSoftware(a.Field) {
			q, err := prof.WithField(a.Field, v)
			if err != nil {
				r.Err = err
				return r
			}
			prof = q
			continue
		}
		if v != math.Trunc(v) || math.Abs(v) > 1<<53 {
			r.Err = fmt.Errorf("software cost %s: %g is not a whole number", a.Field, v)
			return r
		}
		if err := algos.SetCost(&mpi, &ipoib, a.Field, int64(v)); err != nil {
			r.Err = err
			return r
		}
		if strings.HasPrefix(a.Field, "mpi.") {
			sw.MPI = &mpi
		} else {
			sw.IPoIB = &ipoib
		}
	}
	for _, p := range pts {
		res := EvaluateOn(p, prof, sw, numberings)
		if !res.Modelled {
			r.Err = fmt.Errorf("%s: %s", p.ID, res.How)
			return r
		}
		e := math.Abs(res.Error)
		r.Model = append(r.Model, res.Model)
		r.Errors = append(r.Errors, res.Error)
		r.Worst = max(r.Worst, e)
		r.Mean += e / float64(len(pts))
		if res.Within {
			r.Within++
		}
	}
	return r
}
