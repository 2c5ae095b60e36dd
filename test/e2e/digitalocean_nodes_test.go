//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	fakedo "github.com/polyccm/polyccm/test/fakecloud/digitalocean"
	"github.com/polyccm/polyccm/test/fakecloud/faults"
	"github.com/polyccm/polyccm/test/harness"
)

// Nodes registered tainted get the droplet's identity, type, region and
// addresses, found by providerID or by name, in few batched cloud calls.
func TestDigitalOceanNodesAreInitialized(t *testing.T) {
	const n = 60
	sizes := []string{"s-2vcpu-4gb", "c-4", "g-8vcpu-32gb"}
	regions := []string{"fra1", "nyc3"}
	var droplets []fakedo.Droplet
	for i := range n {
		d := fakedo.Droplet{
			Name:     fmt.Sprintf("testdigitaloceannodesareinitialized-%03d", i),
			Status:   fakedo.StatusActive,
			SizeSlug: sizes[i%len(sizes)],
			Region:   regions[i%len(regions)],
		}
		if i%4 == 0 {
			d.IPv6 = fmt.Sprintf("2a03:b0c0:3:d0::%x:1", i+1)
		}
		droplets = append(droplets, d)
	}
	e := newDOEnv(t, droplets, nil)
	if droplets[0].Name != e.nodeName(0) {
		t.Fatalf("test bug: droplet names %q do not match node names %q", droplets[0].Name, e.nodeName(0))
	}

	// A third of the kubelets were given --provider-id; the rest are found
	// by name. All register at once.
	var names []string
	var wg sync.WaitGroup
	for i, d := range droplets {
		name := e.nodeName(i)
		names = append(names, name)
		pid := ""
		if i%3 == 0 {
			pid = "digitalocean://" + strconv.Itoa(d.ID)
		}
		wg.Go(func() { e.register(name, pid) })
	}
	wg.Wait()
	e.waitInitialized(names, 60*time.Second)
	calls := e.dropletCalls()

	for i, d := range droplets {
		node, err := e.node(names[i])
		if err != nil {
			t.Fatal(err)
		}
		if want := "digitalocean://" + strconv.Itoa(d.ID); node.Spec.ProviderID != want {
			t.Errorf("%s: providerID %q, want %q", node.Name, node.Spec.ProviderID, want)
		}
		for _, l := range []string{v1.LabelInstanceTypeStable, v1.LabelInstanceType} {
			if got := node.Labels[l]; got != d.SizeSlug {
				t.Errorf("%s: label %s=%q, want %q", node.Name, l, got, d.SizeSlug)
			}
		}
		if got := node.Labels[v1.LabelTopologyRegion]; got != d.Region {
			t.Errorf("%s: label %s=%q, want %q", node.Name, v1.LabelTopologyRegion, got, d.Region)
		}
		if z, ok := node.Labels[v1.LabelTopologyZone]; ok {
			t.Errorf("%s: DigitalOcean has no zones, but label %s=%q", node.Name, v1.LabelTopologyZone, z)
		}
		want := []v1.NodeAddress{
			{Type: v1.NodeInternalIP, Address: d.PrivateIPv4},
			{Type: v1.NodeExternalIP, Address: d.PublicIPv4},
		}
		if d.IPv6 != "" {
			want = append(want, v1.NodeAddress{Type: v1.NodeExternalIP, Address: d.IPv6})
		}
		want = append(want, v1.NodeAddress{Type: v1.NodeHostName, Address: d.Name})
		// The status patch can land a moment after the taint is gone.
		eventually(t, 10*time.Second, node.Name+" addresses", func() (bool, string) {
			node, err := e.node(names[i])
			if err != nil {
				return false, err.Error()
			}
			return slices.Equal(node.Status.Addresses, want), fmt.Sprintf("%v, want %v", node.Status.Addresses, want)
		})
	}

	// Batched: one listing answers many nodes; no per-node GETs.
	if calls > n/4 {
		t.Errorf("initializing %d nodes took %d droplet API calls (%v); want at most %d: lookups are not batched", n, calls, e.fake.Faults().Calls(), n/4)
	}
	if got := e.fake.Faults().CallCount("GET /v2/droplets/{id}"); got > 0 {
		t.Errorf("%d per-droplet GETs while every droplet was in the listing", got)
	}
	t.Logf("%d nodes initialized with %d droplet API calls", n, calls)
}

// A droplet that is powered off puts the shutdown taint on its Node.
func TestDigitalOceanPoweredOffDropletTaintsNode(t *testing.T) {
	e := newDOEnv(t, nil, nil)
	d1 := e.fake.AddDroplet(fakedo.Droplet{Name: e.nodeName(1), Status: fakedo.StatusActive, SizeSlug: "s-1vcpu-1gb", Region: "ams3"})
	d2 := e.fake.AddDroplet(fakedo.Droplet{Name: e.nodeName(2), Status: fakedo.StatusActive, SizeSlug: "s-1vcpu-1gb", Region: "ams3"})
	e.register(d1.Name, "")
	e.register(d2.Name, "")
	e.waitInitialized([]string{d1.Name, d2.Name}, 30*time.Second)

	if _, _, err := e.user.DropletActions.PowerOff(context.Background(), d1.ID); err != nil {
		t.Fatalf("powering off droplet %d: %v", d1.ID, err)
	}
	eventually(t, 20*time.Second, "shutdown taint on "+d1.Name, func() (bool, string) {
		node, err := e.node(d1.Name)
		if err != nil {
			return false, err.Error()
		}
		return harness.HasTaint(node, harness.ShutdownTaint), fmt.Sprintf("taints %v", node.Spec.Taints)
	})
	node, err := e.node(d2.Name)
	if err != nil {
		t.Fatal(err)
	}
	if harness.HasTaint(node, harness.ShutdownTaint) {
		t.Errorf("%s got the shutdown taint, but its droplet is running", d2.Name)
	}
}

// A droplet that is gone takes its NotReady Node with it, but a storm of
// server errors, which says nothing about the droplets, deletes nothing.
func TestDigitalOceanDeletedDropletDeletesNodeButErrorsNever(t *testing.T) {
	e := newDOEnv(t, nil, nil)
	var ds []fakedo.Droplet
	var names []string
	for i := range 3 {
		d := e.fake.AddDroplet(fakedo.Droplet{Name: e.nodeName(i), Status: fakedo.StatusActive, SizeSlug: "s-1vcpu-2gb", Region: "lon1"})
		ds = append(ds, d)
		names = append(names, d.Name)
		e.register(d.Name, "")
	}
	e.waitInitialized(names, 30*time.Second)

	// Every droplet call now fails with 500 or 503; then a droplet really
	// goes away. polyccm must keep every Node while it cannot tell.
	f := e.fake.Faults()
	r1 := f.AddRule(faults.Rule{Match: "GET /v2/droplets*", Probability: 0.5, Status: 500})
	r2 := f.AddRule(faults.Rule{Match: "GET /v2/droplets*", Status: 503})
	before := f.Injected()
	if !e.fake.RemoveDroplet(ds[0].ID) {
		t.Fatal("removing the droplet from the fake failed")
	}
	never(t, 8*time.Second, "a node was deleted during a 5xx storm", func() (bool, string) {
		for _, n := range names {
			if !e.exists(n) {
				return true, n + " deleted"
			}
		}
		return false, ""
	})
	if got := f.Injected() - before; got < 3 {
		t.Fatalf("only %d injected errors reached polyccm during the storm; the test proved nothing", got)
	}

	f.RemoveRule(r1)
	f.RemoveRule(r2)
	eventually(t, 20*time.Second, names[0]+" deleted after its droplet was", func() (bool, string) {
		return !e.exists(names[0]), "still there"
	})
	for _, n := range names[1:] {
		if !e.exists(n) {
			t.Errorf("%s was deleted but its droplet exists", n)
		}
	}
}
