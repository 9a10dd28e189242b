package fabric_test

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/rdmashuffle/rdmashuffle/"

// layer is one row of the layering table: a package of the algorithm
// floors, the project packages it may import, and whether it is held to
// the execution contract (no wall clock, no global randomness, no blocking
// synchronization, no goroutines, no operating system: these come from
// fabric.Thread, so that the package runs unchanged and deterministically
// on the simulator, and on real threads on hardware).
type layer struct {
	pkg   string   // relative to the module
	may   []string // project packages it may import (relative)
	execs bool     // held to the execution contract
}

// layers is the table. The backends (fabric/sim, fabric/ibv) and the
// floors above (experiments, cmd) appear in no row's may-list: an
// algorithm package that reached one would no longer run unchanged on
// the other backend.
var layers = []layer{
	{pkg: "fabric", may: nil, execs: false},
	{pkg: "flowctl", may: nil, execs: true},
	{pkg: "adaptive", may: []string{"fabric"}, execs: true},
	{pkg: "algos", may: []string{"fabric", "flowctl", "adaptive", "internal/setting"}, execs: true},
	{pkg: "fabric/perftest", may: []string{"fabric", "internal/setting"}, execs: true},
	{pkg: "tpch", may: []string{"fabric", "algos"}, execs: true},
	{pkg: "istore", may: []string{"fabric", "algos", "tpch"}, execs: true},
	// The network as data: a topology, its readers and its routing
	// engines, which the simulator builds its switches from and which
	// know nothing of any backend.
	{pkg: "fabric/topo", may: nil, execs: false},
	{pkg: "fabric/topo/ibnet", may: []string{"fabric/topo"}, execs: false},
	{pkg: "fabric/route", may: []string{"fabric/topo"}, execs: false},
	// A network specification as data (netbuild wires it for the
	// simulator): records carry it, so it must not reach the simulator.
	{pkg: "fabric/netspec", may: []string{"fabric/topo", "fabric/route"}, execs: false},
	// A simulated run's event trace as data: files and diffs, nothing
	// of the simulator.
	{pkg: "fabric/sim/trace", may: []string{"fabric"}, execs: false},
	// The run layer below its root (experiments), one floor each, each
	// below the one that calls it: the catalogue of designs, the engine
	// (a backend opened, a shuffle's node drivers, the record), and the
	// runners of the other workloads. None may reach the root or the
	// floors above it (sweeps, figures): see TestRunLayerWalk.
	{pkg: "experiments/catalogue", may: []string{"algos", "fabric", "tcpshuffle"}, execs: false},
	{pkg: "experiments/engine", may: []string{"adaptive", "algos", "experiments/catalogue", "experiments/results", "fabric", "fabric/netbuild", "fabric/netspec", "fabric/perftest", "fabric/sim", "internal/setting"}, execs: false},
	{pkg: "experiments/tpchrun", may: []string{"algos", "buildinfo", "experiments/catalogue", "experiments/engine", "experiments/results", "fabric", "fabric/sim", "internal/setting", "tpch"}, execs: false},
	{pkg: "experiments/istorerun", may: []string{"algos", "experiments/catalogue", "experiments/engine", "experiments/results", "experiments/tpchrun", "fabric", "fabric/sim", "internal/setting", "istore", "tpch"}, execs: false},
}

// forbidden are the standard packages a package held to the execution
// contract must not import, with what to use instead. sync/atomic stays
// allowed: an atomic never blocks a thread behind the scheduler's back.
var forbidden = map[string]string{
	"time":         "fabric.Thread's Now, Wait and Busy",
	"math/rand":    "fabric.Thread.Rand (seeded per thread)",
	"math/rand/v2": "fabric.Thread.Rand (seeded per thread)",
	"sync":         "fabric.Node's NewMutex and NewSignal",
	"os":           "nothing: algorithm packages touch no files or processes",
	"net":          "the fabric's out-of-band channel (fabric.OOB)",
	"os/exec":      "nothing: algorithm packages start no processes",
}

type goPackage struct {
	ImportPath string
	Imports    []string
}

func listPackage(t *testing.T, rel string) goPackage {
	t.Helper()
	out, err := exec.Command("go", "list", "-json", "./../"+rel).CombinedOutput()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", rel, err, out)
	}
	var p goPackage
	if err := json.Unmarshal(out, &p); err != nil {
		t.Fatalf("go list %s: %v", rel, err)
	}
	return p
}

// TestLayering checks every row of the table: project imports within the
// row's may-list, and no forbidden standard package where the execution
// contract holds.
func TestLayering(t *testing.T) {
	for _, l := range layers {
		t.Run(l.pkg, func(t *testing.T) {
			p := listPackage(t, l.pkg)
			for _, imp := range p.Imports {
				if rel, ok := strings.CutPrefix(imp, module); ok {
					if !slices.Contains(l.may, rel) {
						t.Errorf("%s imports %s; the layering table allows only %v (a backend or a higher floor would tie the package to one execution)", l.pkg, rel, l.may)
					}
					continue
				}
				if use, bad := forbidden[imp]; bad && l.execs {
					t.Errorf("%s imports %q: use %s", l.pkg, imp, use)
				}
			}
		})
	}
}

// TestLayeringCoversTree makes every package under the table's
// directories a row of it, so that a new package is placed on purpose.
func TestLayeringCoversTree(t *testing.T) {
	out, err := exec.Command("go", "list", "./../...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	roots := []string{"algos", "flowctl", "adaptive", "tpch", "istore", "fabric/perftest", "fabric/topo", "fabric/route",
		"experiments/catalogue", "experiments/engine", "experiments/tpchrun", "experiments/istorerun"}
	for _, imp := range strings.Fields(string(out)) {
		rel := strings.TrimPrefix(imp, module)
		for _, r := range roots {
			if rel == r || strings.HasPrefix(rel, r+"/") {
				if !slices.ContainsFunc(layers, func(l layer) bool { return l.pkg == rel }) {
					t.Errorf("%s has no row in the layering table (fabric/layering_test.go): add one with the imports it may use", rel)
				}
			}
		}
	}
}

// TestNoGoStatements: packages held to the execution contract start
// threads with Thread.Spawn, never with a go statement.
func TestNoGoStatements(t *testing.T) {
	for _, l := range layers {
		if !l.execs {
			continue
		}
		inspect(t, l.pkg, func(fset *token.FileSet, n ast.Node) {
			if g, ok := n.(*ast.GoStmt); ok {
				t.Errorf("%s: go statement; use fabric.Thread.Spawn", fset.Position(g.Pos()))
			}
		})
	}
}

// inspect parses the non-test files of the package pkg (relative to the
// module) and calls visit on every node of their syntax.
func inspect(t *testing.T, pkg string, visit func(*token.FileSet, ast.Node)) {
	t.Helper()
	fset := token.NewFileSet()
	paths, err := filepath.Glob(filepath.Join("..", filepath.FromSlash(pkg), "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			visit(fset, n)
			return true
		})
	}
}

// runners are the packages the run layer's root (experiments) hands a
// point to, with the call that does it: each is called once, from Exec.
var runners = map[string]string{
	"experiments/engine":    "engine.Run",
	"experiments/tpchrun":   "tpchrun.RunPoint",
	"experiments/istorerun": "istorerun.RunPoint",
}

// TestRunLayerWalk checks the walk of a point from explore run to its
// record (docs/architecture.md): the root calls each runner once and no
// runner depends, even indirectly (go list -deps), on the root or on a
// floor above it, so the walk goes down through each package once and
// never comes back to the root; and no function of the root takes a
// fabric.Thread, so no backend runs code of the root (the node drivers,
// meters and record are the engine's and the runners').
func TestRunLayerWalk(t *testing.T) {
	for pkg := range runners {
		out, err := exec.Command("go", "list", "-deps", "./../"+pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			rel, ok := strings.CutPrefix(dep, module)
			if !ok || !(rel == "experiments" || strings.HasPrefix(rel, "experiments/") || strings.HasPrefix(rel, "cmd/")) {
				continue
			}
			if rel != pkg && rel != "experiments/results" && rel != "experiments/catalogue" && runners[rel] == "" {
				t.Errorf("%s depends on %s: a runner below the run layer's root must not reach the root or a floor above it", pkg, rel)
			}
		}
	}
	calls := map[string]int{}
	inspect(t, "experiments", func(fset *token.FileSet, n ast.Node) {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if x, ok := n.X.(*ast.Ident); ok && x.Name == "fabric" && n.Sel.Name == "Thread" {
				t.Errorf("%s: the root names fabric.Thread: code a backend runs belongs below the root (the engine or a runner)", fset.Position(n.Pos()))
			}
		case *ast.CallExpr:
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok {
				if x, ok := sel.X.(*ast.Ident); ok {
					calls[x.Name+"."+sel.Sel.Name]++
				}
			}
		}
	})
	for pkg, call := range runners {
		if calls[call] != 1 {
			t.Errorf("the root calls %s (%s) %d times; the walk wants one call, from Exec", call, pkg, calls[call])
		}
	}
}
