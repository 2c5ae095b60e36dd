package all

import (
	"go/ast"
	"go/build/constraint"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/polyccm/polyccm/core/driver"
)

const driversImport = "github.com/polyccm/polyccm/drivers/"

// constraints returns the build constraint expressions of a file (both
// //go:build and legacy // +build lines), from the comments before the
// package clause.
func constraints(t *testing.T, f *ast.File) []string {
	t.Helper()
	var out []string
	for _, g := range f.Comments {
		if g.Pos() >= f.Package {
			break
		}
		for _, c := range g.List {
			if !constraint.IsGoBuild(c.Text) && !constraint.IsPlusBuild(c.Text) {
				continue
			}
			x, err := constraint.Parse(c.Text)
			if err != nil {
				t.Fatalf("%s: %v", c.Text, err)
			}
			out = append(out, x.String())
		}
	}
	return out
}

// shims parses the directory and returns driver name -> shim file, failing
// the test for any file that breaks the scheme.
func shims(t *testing.T) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		cons := constraints(t, f)
		if name == "all.go" {
			// all.go carries the package doc and must build everywhere.
			if len(cons) != 0 {
				t.Errorf("all.go has build constraints %q, want none", cons)
			}
			if len(f.Imports) != 0 || len(f.Decls) != 0 {
				t.Errorf("all.go has imports or declarations; it is documentation only")
			}
			continue
		}
		drv := strings.TrimSuffix(name, ".go")
		out[drv] = name

		want := "!custom || drivers || drivers." + drv
		if len(cons) != 1 || cons[0] != want {
			t.Errorf("%s: build constraints %q, want exactly [%q]", name, cons, want)
		}
		if len(f.Imports) != 1 {
			t.Errorf("%s: %d imports, want exactly one", name, len(f.Imports))
		} else {
			imp := f.Imports[0]
			path, _ := strconv.Unquote(imp.Path.Value)
			if imp.Name == nil || imp.Name.Name != "_" {
				t.Errorf("%s: import of %s is not blank", name, path)
			}
			if path != driversImport+drv {
				t.Errorf("%s: imports %s, want %s", name, path, driversImport+drv)
			}
		}
		// The one import is the only declaration allowed.
		for _, d := range f.Decls {
			if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.IMPORT {
				continue
			}
			t.Errorf("%s: has a declaration at %s; shims only import", name, fset.Position(d.Pos()))
		}
		if f.Name.Name != "all" {
			t.Errorf("%s: package %s, want all", name, f.Name.Name)
		}
	}
	return out
}

func TestShims(t *testing.T) {
	got := shims(t)
	if len(got) == 0 {
		t.Fatal("no shims found")
	}

	// Every driver directory has a shim, and every shim a directory.
	entries, err := os.ReadDir("..")
	if err != nil {
		t.Fatal(err)
	}
	dirs := map[string]bool{}
	for _, e := range entries {
		if e.IsDir() && e.Name() != "all" {
			dirs[e.Name()] = true
			if _, ok := got[e.Name()]; !ok {
				t.Errorf("drivers/%s has no shim drivers/all/%s.go", e.Name(), e.Name())
			}
		}
	}
	for drv, file := range got {
		if !dirs[drv] {
			t.Errorf("%s is a shim for drivers/%s, which does not exist", file, drv)
		}
	}
}

// customBuild is set by custom_test.go under -tags custom.
var customBuild bool

// shimNames lists the shims by file name only; TestShims checks them.
func shimNames(t *testing.T) map[string]bool {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, f := range files {
		if f != "all.go" && !strings.HasSuffix(f, "_test.go") {
			out[strings.TrimSuffix(f, ".go")] = true
		}
	}
	return out
}

func TestShimsRegisterTheirDrivers(t *testing.T) {
	all := shimNames(t)
	var want []string
	for drv := range all {
		want = append(want, drv)
	}
	sort.Strings(want)
	got := driver.Default().Names()
	if customBuild {
		// A subset was selected; each must still come from a shim.
		for _, n := range got {
			if !all[n] {
				t.Errorf("driver %q is registered but has no shim", n)
			}
		}
		return
	}
	// A plain `go test` sets no tags, so every shim is built: what is
	// registered must be exactly the set of shims, each under its own name.
	if !reflect.DeepEqual(got, want) {
		t.Errorf("registered drivers = %q, shims = %q", got, want)
	}
}
