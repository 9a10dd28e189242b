package results

// Statistics over sweep results: the repeated runs of a configuration (one
// per seed) summarized as mean, standard deviation and a 95% confidence
// interval, for the summary table of `explore sweep` and for error bars in
// charts (package chart). The keys are the point keys of sweep results
// ("design=MEMQ/SR nodes=8"): KeyValue and KeyFields read them.

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// Summary describes a sample: its size, mean, sample standard deviation
// (n-1 in the denominator) and the half-width of the 95% confidence
// interval of the mean from Student's t distribution. With fewer than two
// values there is no interval: HasCI is false and Std and CI95 are 0.
// Values are in the unit of the summarized quantity.
type Summary struct {
	Group string // the group's name (see Summarize); "" from Summarize1
	N     int
	Mean  float64
	Std   float64
	CI95  float64
	HasCI bool
}

// Summarize1 summarizes xs. An empty xs gives N = 0 and a NaN mean.
func Summarize1(xs []float64) Summary {
	s := Summary{N: len(xs)}
	if s.N == 0 {
		s.Mean = math.NaN()
		return s
	}
	s.Mean = stat.Mean(xs, nil)
	if s.N < 2 {
		return s
	}
	s.Std = stat.StdDev(xs, nil)
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(s.N - 1)}.Quantile(0.975)
	s.CI95 = t * s.Std / math.Sqrt(float64(s.N))
	s.HasCI = true
	return s
}

// Format prints the mean with prec decimals and, if there is an interval,
// "± half-width (n=N)"; a single value says that it has no interval,
// values all equal say so, and an interval too small to show at prec is
// "± <0.01" (never "± 0.00", which reads as a measured zero).
func (s Summary) Format(prec int) string {
	switch {
	case s.N == 0:
		return "no values"
	case !s.HasCI:
		return fmt.Sprintf("%.*f (n=1, no interval)", prec, s.Mean)
	}
	if pm, equal := s.spread(prec); !equal {
		return fmt.Sprintf("%.*f %s (n=%d)", prec, s.Mean, pm, s.N)
	}
	return fmt.Sprintf("%.*f (n=%d, all equal)", prec, s.Mean, s.N)
}

// MeanCI prints the mean with prec decimals and its interval ("± 0.12",
// "± <0.01" below the precision, "(all equal)" when the values are), for
// a summary with an interval (HasCI).
func (s Summary) MeanCI(prec int) string {
	if pm, equal := s.spread(prec); !equal {
		return fmt.Sprintf("%.*f %s", prec, s.Mean, pm)
	}
	return fmt.Sprintf("%.*f (all equal)", prec, s.Mean)
}

// spread is the interval as printed after the mean, or equal when the
// values are all equal: never "± 0.00", which reads as a measured zero.
func (s Summary) spread(prec int) (pm string, equal bool) {
	half := math.Pow(10, -float64(prec))
	switch {
	case s.Std == 0:
		return "", true
	case s.CI95 < half/2: // would print as ± 0.00
		return fmt.Sprintf("± <%.*f", prec, half), false
	}
	return fmt.Sprintf("± %.*f", prec, s.CI95), false
}

// String is Format(3).
func (s Summary) String() string { return s.Format(3) }

// Summarize groups the results that have a record (failed points are left
// out) by group(r) and summarizes value(r) in each group. Groups come in
// the order of their first result, so sorted results give groups in sweep
// order.
func Summarize(rs []Result, group func(Result) string, value func(Result) float64) []Summary {
	var order []string
	vals := map[string][]float64{}
	for _, r := range rs {
		if r.Failed() {
			continue
		}
		g := group(r)
		if _, ok := vals[g]; !ok {
			order = append(order, g)
		}
		vals[g] = append(vals[g], value(r))
	}
	out := make([]Summary, len(order))
	for i, g := range order {
		out[i] = Summarize1(vals[g])
		out[i].Group = g
	}
	return out
}

// KeyWithout returns a group function for Summarize: the point's key
// without the given parameters, e.g. KeyWithout("seed") groups the seeds
// of each configuration. A key left empty becomes "all".
func KeyWithout(params ...string) func(Result) string {
	return func(r Result) string {
		return KeyDrop(r.Key, params...)
	}
}

// KeyDrop removes the given parameters from a point key ("design=X
// nodes=2 seed=1" without seed is "design=X nodes=2"); an empty result
// is "all".
func KeyDrop(key string, params ...string) string {
	var keep []string
	for _, f := range KeyFields(key) {
		name, _, _ := strings.Cut(f, "=")
		drop := false
		for _, p := range params {
			drop = drop || name == p
		}
		if !drop {
			keep = append(keep, f)
		}
	}
	if len(keep) == 0 {
		return "all"
	}
	return strings.Join(keep, " ")
}

// KeyValue returns the value of parameter param in a point key, and
// whether it is there.
func KeyValue(key, param string) (string, bool) {
	for _, f := range KeyFields(key) {
		if name, v, ok := strings.Cut(f, "="); ok && name == param {
			if u, err := strconv.Unquote(v); err == nil && strings.HasPrefix(v, `"`) {
				v = u
			}
			return v, true
		}
	}
	return "", false
}

// KeyFields splits a point key into its name=value fields; a value with
// spaces is quoted as in Go (network="fat-tree routing=ftree ...") and
// stays one field.
func KeyFields(key string) []string {
	var out []string
	rest := strings.TrimSpace(key)
	for rest != "" {
		name, after, ok := strings.Cut(rest, "=")
		if ok && !strings.ContainsRune(name, ' ') && strings.HasPrefix(after, `"`) {
			if q, err := strconv.QuotedPrefix(after); err == nil {
				out = append(out, name+"="+q)
				rest = strings.TrimSpace(after[len(q):])
				continue
			}
		}
		f, r, _ := strings.Cut(rest, " ")
		out = append(out, f)
		rest = strings.TrimSpace(r)
	}
	return out
}

// KeyQuote is a value as a point key writes it: quoted when it has
// spaces (KeyValue reads it back).
func KeyQuote(v string) string {
	if strings.ContainsAny(v, " \t\"") {
		return strconv.Quote(v)
	}
	return v
}
