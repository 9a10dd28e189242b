package treecheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// root is the module's root, from this package's directory.
const root = "../.."

// sources parses every non-test Go file of the tree (testdata, hidden
// directories and the results/ output directory left out) and calls visit with its path
// relative to the root.
func sources(t *testing.T, visit func(rel string, fset *token.FileSet, f *ast.File)) {
	t.Helper()
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || path == filepath.Join(root, "results")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		visit(filepath.ToSlash(rel), fset, f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// flagName is a command-line flag in a message: --name.
var flagName = regexp.MustCompile(`(^|[^\w-])--[a-z]`)

// errorMakers are the calls that make an error from a message.
var errorMakers = map[string]bool{"Errorf": true, "New": true, "bad": true}

// TestNoFlagsInLibraryErrors: outside cmd/, no error message names a
// command-line flag. A library refuses a setting by its configuration's
// field (setting.Error), and the command line maps it to its flag.
func TestNoFlagsInLibraryErrors(t *testing.T) {
	n := 0
	sources(t, func(rel string, fset *token.FileSet, f *ast.File) {
		if strings.HasPrefix(rel, "cmd/") {
			return
		}
		ast.Inspect(f, func(x ast.Node) bool {
			call, ok := x.(*ast.CallExpr)
			if !ok {
				return true
			}
			var name string
			switch fn := call.Fun.(type) {
			case *ast.SelectorExpr:
				name = fn.Sel.Name
			case *ast.Ident:
				name = fn.Name
			}
			if !errorMakers[name] {
				return true
			}
			for _, a := range call.Args {
				lit, ok := a.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					continue
				}
				n++
				if s, err := strconv.Unquote(lit.Value); err == nil && flagName.MatchString(s) {
					t.Errorf("%s: an error names a command-line flag: %s", fset.Position(lit.Pos()), lit.Value)
				}
			}
			return true
		})
	})
	if n < 500 {
		t.Fatalf("found only %d error messages: the walk missed the tree", n)
	}
}

// maxLines is the longest a function may be, tables apart.
const maxLines = 120

// TestShortFunctions: no function outside tests is over maxLines lines,
// except a table (a function whose body is one return of a literal).
func TestShortFunctions(t *testing.T) {
	funcs := 0
	sources(t, func(rel string, fset *token.FileSet, f *ast.File) {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			funcs++
			lines := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
			if lines > maxLines && !isTable(fd) {
				t.Errorf("%s: %s is %d lines (at most %d outside tests and tables): split it", fset.Position(fd.Pos()), fd.Name.Name, lines, maxLines)
			}
		}
	})
	if funcs < 1000 {
		t.Fatalf("found only %d functions: the walk missed the tree", funcs)
	}
}

// isTable says whether fd's body is one return of a composite literal.
func isTable(fd *ast.FuncDecl) bool {
	if len(fd.Body.List) != 1 {
		return false
	}
	ret, ok := fd.Body.List[0].(*ast.ReturnStmt)
	if !ok || len(ret.Results) != 1 {
		return false
	}
	_, ok = ret.Results[0].(*ast.CompositeLit)
	return ok
}
