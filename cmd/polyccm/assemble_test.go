package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/polyccm/polyccm/config"
	"github.com/polyccm/polyccm/core/controllers/nodeipam"
	"github.com/polyccm/polyccm/core/driver"
)

// A count past int32 is refused, never wrapped to 0 workers: the config's
// ranges keep it from getting here, and this keeps the conversion honest
// if a range is ever widened.
func TestOptionsRefuseCountsThatWrap(t *testing.T) {
	c := config.Defaults()
	c.Driver = "digitalocean"
	c.Nodes.ConcurrentSyncs = 1 << 32
	if _, err := ccmOptions(c, controllerPlan{}); err == nil || !strings.Contains(err.Error(), "nodes.concurrentSyncs") {
		t.Fatalf("ccmOptions = %v, want an error naming nodes.concurrentSyncs", err)
	}
	c.Nodes.ConcurrentSyncs = 10_000
	o, err := ccmOptions(c, controllerPlan{})
	if err != nil {
		t.Fatal(err)
	}
	if o.NodeController.ConcurrentNodeSyncs != 10_000 {
		t.Errorf("ConcurrentNodeSyncs = %d", o.NodeController.ConcurrentNodeSyncs)
	}
}

// The node-ipam controller runs only when asked for.
func TestPlanNodeIPAM(t *testing.T) {
	c := config.Defaults()
	c.Driver = "gce"
	d := driver.Driver{Name: "gce", Capabilities: []driver.Capability{driver.Instances}}
	if p := planControllers(c, d); slices.Contains(p.enabled, nodeipam.ControllerName) || p.skipped[nodeipam.ControllerName] == "" {
		t.Errorf("default plan %+v runs %s", p, nodeipam.ControllerName)
	}
	c.Controllers.NodeIPAM = true
	if p := planControllers(c, d); !slices.Contains(p.enabled, nodeipam.ControllerName) {
		t.Errorf("plan %+v does not run %s", p, nodeipam.ControllerName)
	}
}
