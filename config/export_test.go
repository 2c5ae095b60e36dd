package config

import (
	"fmt"
	"reflect"
	"sort"

	"github.com/polyccm/polyccm/core/driver"
)

// SchemaLeaves returns every leaf key path the loader accepts at the top
// level and in the sections of the named drivers, walked exactly as Load
// walks them, for the external example-file test.
func SchemaLeaves(reg *driver.Registry, drivers []string) ([]string, error) {
	s := newSchema()
	s.walk("", reflect.TypeOf(Config{}))
	for _, name := range drivers {
		d, ok := reg.Lookup(name)
		if !ok {
			return nil, fmt.Errorf("driver %q is not registered", name)
		}
		s.walk("drivers."+name, reflect.TypeOf(d.NewConfig()))
	}
	out := make([]string, 0, len(s.leaves))
	for p := range s.leaves {
		out = append(out, p)
	}
	sort.Strings(out)
	return out, nil
}
