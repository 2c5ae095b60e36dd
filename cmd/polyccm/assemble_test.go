package main

import (
	"strings"
	"testing"

	"github.com/polyccm/polyccm/config"
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
