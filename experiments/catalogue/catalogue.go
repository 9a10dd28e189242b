// Package catalogue lists every design a run can name: the endpoint
// designs of package algos, qperf's ceiling and the real TCP design,
// with where and how each runs, and the questions figures ask of a
// design's name.
package catalogue

import (
	"fmt"
	"os"
	"strings"

	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/tcpshuffle"
)

// Entry is one design a run can name: an endpoint design of package
// algos, and where and how it runs. Designs are values, immutable once
// listed, and safe to share.
type Entry struct {
	algos.Design
	// Ceiling: not an endpoint but the network's ceiling for the
	// shuffle's traffic, measured with perftest's all-to-all (the qperf
	// baseline); it moves no tuples.
	Ceiling bool
	// RealOnly: moves real bytes through real sockets in real time, so it
	// runs on real hosts (a fabric backend), not on the simulator.
	RealOnly bool
}

// LocalData is the design name of TPC-H Q4's local-data plan (tables
// partitioned by orderkey: no shuffle).
const LocalData = "local"

// EnvTCPHost names the address the TCP design listens on (default
// 127.0.0.1): on a cluster, the node's IPoIB address.
const EnvTCPHost = "RDMASHUFFLE_TCP_HOST"

// catalogue is every design, in the order help texts, overviews and
// sweeps list them: Liu19's eight, our variants of them, its baselines
// (qperf first), the peer designs, and the real TCP design.
var catalogue = func() []Entry {
	var out []Entry
	add := func(ds ...algos.Design) {
		for _, d := range ds {
			out = append(out, Entry{Design: d})
		}
	}
	add(algos.Designs()...)
	add(algos.Variants()...)
	out = append(out, Entry{Ceiling: true, Design: algos.Design{Name: "qperf", Family: algos.FamilyBaseline,
		About:     "the network's ceiling: perftest's all-to-all of RC sends from one buffer, no tuples moved",
		Transport: fabric.RC, Verb: algos.VerbSend, MsgBytes: 64 << 10, Groups: false}})
	add(algos.Baselines()...)
	add(algos.Peers()...)
	out = append(out, Entry{RealOnly: true, Design: algos.Design{Name: "TCP", Family: algos.FamilyBaseline,
		About:     "real TCP sockets between real hosts (the IPoIB baseline for real): explore run --backend tcp",
		Transport: 0, Verb: algos.VerbSockets, MsgBytes: algos.IPoIBMsgBytes, Groups: true,
		Open: func(th fabric.Thread, cfg algos.Config) (algos.Endpoint, error) {
			host := os.Getenv(EnvTCPHost)
			if host == "" {
				host = "127.0.0.1"
			}
			return tcpshuffle.Open(th, cfg, host)
		}}})
	return out
}()

// Catalogue returns every design in order (a fresh slice).
func Catalogue() []Entry { return append([]Entry(nil), catalogue...) }

// DesignNames lists, in catalogue order, the names of the designs that
// keep accepts (every design when keep is nil).
func DesignNames(keep func(Entry) bool) []string {
	var out []string
	for _, d := range catalogue {
		if keep == nil || keep(d) {
			out = append(out, d.Name)
		}
	}
	return out
}

// CanonicalDesign is the catalogue's spelling of the design called name
// in any case ("memq/sr": "MEMQ/SR"; "LOCAL": LocalData), or name itself
// when no design is called so.
func CanonicalDesign(name string) string {
	for _, d := range catalogue {
		if strings.EqualFold(d.Name, name) {
			return d.Name
		}
	}
	if strings.EqualFold(name, LocalData) {
		return LocalData
	}
	return name
}

// LookupDesign returns the design called name (in any case), or an error
// that lists the names to choose from.
func LookupDesign(name string) (Entry, error) {
	name = CanonicalDesign(name)
	for _, d := range catalogue {
		if d.Name == name {
			return d, nil
		}
	}
	return Entry{}, fmt.Errorf("unknown design %q: choose one of %s", name, strings.Join(DesignNames(nil), ", "))
}

// DesignOf is the design of a record or configuration, or the zero entry
// (no family, no transport) for a name this build does not know, such as
// one of the I-Store plans or a record from another version.
func DesignOf(name string) Entry {
	d, _ := LookupDesign(name)
	return d
}

// IsPaperDesign keeps Liu19's eight endpoint designs.
func IsPaperDesign(d Entry) bool { return d.Family == algos.FamilyDesign }

// OnSimulator keeps every design the simulator runs (all but RealOnly).
func OnSimulator(d Entry) bool { return !d.RealOnly }

// MovesTuples keeps the simulated designs with endpoints (not the qperf
// ceiling): what queries, soaks and I-Store's shuffle plan can use.
func MovesTuples(d Entry) bool { return !d.RealOnly && !d.Ceiling }

// IsBaseline keeps Liu19's simulated baselines (qperf, IPoIB, MPI).
func IsBaseline(d Entry) bool { return d.Family == algos.FamilyBaseline && !d.RealOnly }

// PaperDesigns lists the names of Liu19's eight designs in the paper's
// order.
func PaperDesigns() []string { return DesignNames(IsPaperDesign) }

// IsVariant keeps our improvements on Liu19's designs (MQ/WR+cw).
func IsVariant(d Entry) bool { return d.Family == algos.FamilyVariant }

// Questions the figures and the judge ask of a record's design.

// IsUD reports whether the design called name moves its data over UD
// (the SQ designs).
func IsUD(name string) bool { return DesignOf(name).Transport == fabric.UD }

// IsPaperMQ reports whether the design called name is one of Liu19's
// designs with an RC queue pair per peer, optionally of one verb ("" for
// any).
func IsPaperMQ(name string, verb algos.Verb) bool {
	d := DesignOf(name)
	return d.Family == algos.FamilyDesign && d.Transport == fabric.RC && (verb == "" || d.Verb == verb)
}
