package assembly_test

import (
	"context"
	"strings"
	"testing"

	"github.com/polyccm/polyccm/core/assembly"
	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/driver"
	"github.com/polyccm/polyccm/core/instances"
	"github.com/polyccm/polyccm/core/loadbalancers"
)

type source struct{ instances.Source }

type plain struct{}

func (plain) Instances() instances.Source { return source{} }

type withTasks struct{ plain }

func (withTasks) Tasks() []driver.Task { return nil }

type withInventory struct{ plain }

func (withInventory) LoadBalancerInventory(context.Context) ([]loadbalancers.Resource, error) {
	return nil, nil
}

func declaring(caps ...driver.Capability) driver.Driver {
	return driver.Driver{
		Name:         "fake",
		Capabilities: append([]driver.Capability{driver.Instances}, caps...),
		Classify:     func(error) cloudapi.Classification { return cloudapi.Classification{} },
	}
}

// A driver's declared capabilities are what its cloud has, both ways: the
// registry (and every list checked against it) must not promise a part
// the cloud lacks or hide one it has.
func TestAssembleHoldsTheDeclaration(t *testing.T) {
	o := instances.Options{Driver: "fake"}
	for _, tc := range []struct {
		name string
		d    driver.Driver
		dc   driver.Cloud
		want string // "" assembles
	}{
		{"plain", declaring(), plain{}, ""},
		{"tasks", declaring(driver.Tasks), withTasks{}, ""},
		{"undeclared tasks", declaring(), withTasks{}, "declared tasks"},
		{"missing tasks", declaring(driver.Tasks), plain{}, "declared tasks"},
		{"inventory", declaring(driver.Inventory), withInventory{}, ""},
		{"undeclared inventory", declaring(), withInventory{}, "inventory"},
		{"missing inventory", declaring(driver.Inventory), plain{}, "inventory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := assembly.Assemble(tc.d, tc.dc, o, nil)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Assemble = %v, want no error", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Assemble = %v, want an error about %q", err, tc.want)
			}
		})
	}
}
