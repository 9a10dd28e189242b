package experiments

import (
	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/experiments/catalogue"
)

// The catalogue of designs (package catalogue), as the run layer's
// callers name it.

// CatalogueEntry is one design a run can name (catalogue.Entry).
type CatalogueEntry = catalogue.Entry

// LocalData is the design name of Q4's local-data plan (no shuffle).
const LocalData = catalogue.LocalData

// EnvTCPHost names the address the TCP design listens on.
const EnvTCPHost = catalogue.EnvTCPHost

// Catalogue returns every design in order (a fresh slice).
func Catalogue() []CatalogueEntry { return catalogue.Catalogue() }

// DesignNames lists, in catalogue order, the names of the designs that
// keep accepts (every design when keep is nil).
func DesignNames(keep func(CatalogueEntry) bool) []string { return catalogue.DesignNames(keep) }

// CanonicalDesign is the catalogue's spelling of the design called name.
func CanonicalDesign(name string) string { return catalogue.CanonicalDesign(name) }

// LookupDesign returns the design called name (in any case).
func LookupDesign(name string) (CatalogueEntry, error) { return catalogue.LookupDesign(name) }

// DesignOf is the design of a record or configuration, or the zero entry.
func DesignOf(name string) CatalogueEntry { return catalogue.DesignOf(name) }

// IsPaperDesign keeps Liu19's eight endpoint designs.
func IsPaperDesign(d CatalogueEntry) bool { return catalogue.IsPaperDesign(d) }

// OnSimulator keeps every design the simulator runs.
func OnSimulator(d CatalogueEntry) bool { return catalogue.OnSimulator(d) }

// MovesTuples keeps the simulated designs with endpoints.
func MovesTuples(d CatalogueEntry) bool { return catalogue.MovesTuples(d) }

// IsBaseline keeps Liu19's simulated baselines.
func IsBaseline(d CatalogueEntry) bool { return catalogue.IsBaseline(d) }

// IsVariant keeps our improvements on Liu19's designs.
func IsVariant(d CatalogueEntry) bool { return catalogue.IsVariant(d) }

// PaperDesigns lists the names of Liu19's eight designs in order.
func PaperDesigns() []string { return catalogue.PaperDesigns() }

// IsUD reports whether the design called name moves its data over UD.
func IsUD(name string) bool { return catalogue.IsUD(name) }

// IsPaperMQ reports whether the design called name is one of Liu19's
// designs with an RC queue pair per peer, optionally of one verb.
func IsPaperMQ(name string, verb algos.Verb) bool { return catalogue.IsPaperMQ(name, verb) }
