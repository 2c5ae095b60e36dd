package runner

import (
	"context"
	"github.com/polyccm/polyccm/core/assembly"
	"testing"

	genericcontrollermanager "k8s.io/controller-manager/app"

	"github.com/polyccm/polyccm/core/instances"
)

// podCIDRCloud's instances carry pod ranges.
type podCIDRCloud struct{ plainCloud }

type podCIDRInstances struct{ noInstances }

func (podCIDRInstances) PodCIDRHint() string { return "an alias IP range" }

func (podCIDRCloud) Instances() instances.Source { return podCIDRInstances{} }

func TestAssembleFindsPodCIDRSources(t *testing.T) {
	o := instances.Options{Driver: "fake"}
	c, err := assembly.Assemble(testDriver(), podCIDRCloud{}, o, nil)
	if err != nil || c.PodCIDRHint() != "an alias IP range" {
		t.Fatalf("assemble = %+v, %v; want the source's hint", c, err)
	}
	if c, err := assembly.Assemble(testDriver(), plainCloud{}, o, nil); err != nil || c.PodCIDRHint() != "" {
		t.Fatalf("assemble = %+v, %v; want no hint", c, err)
	}
}

// A driver whose instances carry no pod ranges leaves the controller
// idle: not started, no error, nothing touched (the nil config would
// panic if used).
func TestNodeIPAMIdleWithoutPodCIDRs(t *testing.T) {
	c, err := assembly.Assemble(testDriver(), plainCloud{}, instances.Options{Driver: "fake"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	init := nodeIPAMController.Constructor(nodeIPAMController.InitContext, nil, c)
	ctrl, started, err := init(context.Background(), genericcontrollermanager.ControllerContext{})
	if ctrl != nil || started || err != nil {
		t.Errorf("init = %v, %v, %v; want an idle controller", ctrl, started, err)
	}
}
