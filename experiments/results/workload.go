package results

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// WorkloadKind is what a point runs.
type WorkloadKind string

// Workload kinds. The zero kind is the synthetic shuffle of R(a, b).
const (
	Shuffle     WorkloadKind = ""             // the synthetic shuffle of R(a, b) (the zero Workload)
	TPCH        WorkloadKind = "tpch"         // a TPC-H query's distributed plan (Liu19 figures 26, 27)
	IStoreMicro WorkloadKind = "istore-micro" // I-Store's scan microbenchmark
	IStoreJoin  WorkloadKind = "istore-join"  // I-Store's star join
)

// Workload is a point's work beyond the cluster and the design: the
// synthetic shuffle (the zero value), a TPC-H query, or an I-Store
// experiment, with the fields its kind uses (the others zero).
type Workload struct {
	Kind WorkloadKind `json:"kind"`
	// TPCH: the query (Q3, Q4, Q10), whether it runs Q4's local-data
	// plan (no shuffle), and the scale factor per node.
	Query     string  `json:"query,omitempty"`
	Local     bool    `json:"local,omitempty"`
	SFPerNode float64 `json:"sf_per_node,omitempty"`
	// IStoreMicro: blocks scanned per reader.
	Blocks int `json:"blocks,omitempty"`
	// IStoreJoin: tables of the star and the scale factor.
	Tables int     `json:"tables,omitempty"`
	SF     float64 `json:"sf,omitempty"`
}

// ErrWorkload reports a workload that is not one.
var ErrWorkload = errors.New("invalid workload")

// IsShuffle says whether w is the synthetic shuffle.
func (w Workload) IsShuffle() bool { return w == Workload{} }

// Validate checks w's fields for its kind, running nothing.
func (w Workload) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrWorkload, w.Label(), fmt.Sprintf(format, args...))
	}
	switch w.Kind {
	case Shuffle:
		if !w.IsShuffle() {
			return fmt.Errorf("%w: a shuffle has no workload fields: %+v", ErrWorkload, w)
		}
	case TPCH:
		switch {
		case w.Query != "Q3" && w.Query != "Q4" && w.Query != "Q10":
			return bad("query %q: choose Q3, Q4 or Q10", w.Query)
		case w.Local && w.Query != "Q4":
			return bad("the local-data plan is Q4's")
		case !(w.SFPerNode > 0):
			return bad("scale factor per node %v: must be positive", w.SFPerNode)
		case w.Blocks != 0 || w.Tables != 0 || w.SF != 0:
			return bad("I-Store fields on a TPC-H point")
		}
	case IStoreMicro:
		if w.Blocks < 1 || w.Query != "" || w.Local || w.SFPerNode != 0 || w.Tables != 0 || w.SF != 0 {
			return bad("want blocks >= 1 and no other field")
		}
	case IStoreJoin:
		if w.Tables < 2 || !(w.SF > 0) || w.Query != "" || w.Local || w.SFPerNode != 0 || w.Blocks != 0 {
			return bad("want tables >= 2, sf > 0 and no other field")
		}
	default:
		return fmt.Errorf("%w: kind %q: choose %q, %q or %q (or none for the shuffle)", ErrWorkload, w.Kind, TPCH, IStoreMicro, IStoreJoin)
	}
	return nil
}

// Label is how records have named the workload in their label since
// before the workload had fields of its own: "tpch Q4 [local]
// sfpn=0.005", "istore micro blocks=64", "istore join tables=3 sf=0.02";
// empty for the shuffle.
func (w Workload) Label() string {
	g := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	switch w.Kind {
	case TPCH:
		l := "tpch " + w.Query
		if w.Local {
			l += " local"
		}
		return l + " sfpn=" + g(w.SFPerNode)
	case IStoreMicro:
		return fmt.Sprintf("istore micro blocks=%d", w.Blocks)
	case IStoreJoin:
		return fmt.Sprintf("istore join tables=%d sf=%s", w.Tables, g(w.SF))
	}
	return ""
}

// ParseLabel reads a workload from a label as Label writes it (records
// written before records had a workload field name theirs so); ok is
// false for a label that names no workload (a figure's mark, or none).
func ParseLabel(label string) (w Workload, ok bool, err error) {
	f := strings.Fields(label)
	if len(f) < 2 || f[0] != "tpch" && f[0] != "istore" {
		return Workload{}, false, nil
	}
	kv := map[string]string{}
	var words []string
	for _, p := range f[1:] {
		if k, v, isKV := strings.Cut(p, "="); isKV {
			kv[k] = v
		} else {
			words = append(words, p)
		}
	}
	num := func(k string) float64 {
		x, perr := strconv.ParseFloat(kv[k], 64)
		if perr != nil && err == nil {
			err = fmt.Errorf("%w: label %q: %s=%q is not a number", ErrWorkload, label, k, kv[k])
		}
		delete(kv, k)
		return x
	}
	switch {
	case f[0] == "tpch" && len(words) >= 1:
		w = Workload{Kind: TPCH, Query: words[0], Local: len(words) == 2 && words[1] == "local", SFPerNode: num("sfpn")}
		if len(words) > 2 || len(words) == 2 && !w.Local {
			err = fmt.Errorf("%w: label %q: want \"tpch Q4 [local] sfpn=0.1\"", ErrWorkload, label)
		}
	case f[0] == "istore" && len(words) == 1 && words[0] == "micro":
		w = Workload{Kind: IStoreMicro, Blocks: int(num("blocks"))}
	case f[0] == "istore" && len(words) == 1 && words[0] == "join":
		w = Workload{Kind: IStoreJoin, Tables: int(num("tables")), SF: num("sf")}
	default:
		return Workload{}, true, fmt.Errorf("%w: label %q: not a TPC-H or I-Store point (want \"tpch Q4 [local] sfpn=0.1\", \"istore micro blocks=N\" or \"istore join tables=N sf=X\")", ErrWorkload, label)
	}
	if err == nil && len(kv) > 0 {
		err = fmt.Errorf("%w: label %q: unknown fields %v", ErrWorkload, label, kv)
	}
	if err == nil {
		err = w.Validate()
	}
	if err != nil {
		return Workload{}, true, err
	}
	return w, true, nil
}

// WorkloadOf is the workload a record was made with: its workload field,
// or for records written before there was one, the workload its label
// names (the zero Workload, the shuffle, when it names none).
func WorkloadOf(r *Record) (Workload, error) {
	if r == nil {
		return Workload{}, nil
	}
	if r.Workload != nil {
		return *r.Workload, nil
	}
	w, _, err := ParseLabel(r.Label)
	return w, err
}
