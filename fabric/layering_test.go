package fabric_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestLayering keeps the algorithm packages on the fabric contract: neither
// they nor anything they import may depend on a backend, so every design
// runs unchanged on the simulator and on hardware.
func TestLayering(t *testing.T) {
	const mod = "github.com/rdmashuffle/rdmashuffle/"
	backends := []string{mod + "fabric/sim", mod + "fabric/ibv"}
	for _, pkg := range []string{"algos", "flowctl", "adaptive"} {
		out, err := exec.Command("go", "list", "-deps", "./../"+pkg+"/...").CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, b := range backends {
				if dep == b || strings.HasPrefix(dep, b+"/") {
					t.Errorf("%s depends on backend %s; algorithm packages may import only fabric", pkg, dep)
				}
			}
		}
	}
}

// TestNoWallClock keeps the algorithm packages off the wall clock, sleeps,
// goroutines and global randomness: they take these from fabric.Thread.
func TestNoWallClock(t *testing.T) {
	for _, pkg := range []string{"algos", "flowctl", "adaptive"} {
		out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}: {{join .Imports " "}}`, "./../"+pkg+"/...").CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", pkg, err, out)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			for _, bad := range []string{" math/rand ", " time ", " math/rand\n"} {
				if strings.Contains(line+" ", bad) {
					t.Errorf("%s imports %q: take time and randomness from fabric.Thread", line[:strings.Index(line, ":")], strings.TrimSpace(bad))
				}
			}
		}
	}
}

// TestNoGoStatements: algorithm packages start threads with Thread.Spawn,
// never with a go statement.
func TestNoGoStatements(t *testing.T) {
	fset := token.NewFileSet()
	for _, dir := range []string{"../algos", "../flowctl", "../adaptive"} {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				if g, ok := n.(*ast.GoStmt); ok {
					t.Errorf("%s: go statement; use fabric.Thread.Spawn", fset.Position(g.Pos()))
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
