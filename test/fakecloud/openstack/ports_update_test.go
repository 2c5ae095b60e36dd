package openstack

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/attributestags"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/portsecurity"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
)

// TestPortUpdates follows upstream's route controller (a pod CIDR as an
// allowed address pair of the node's port) and its load balancer code
// (tags on the ports it puts a security group on).
func TestPortUpdates(t *testing.T) {
	s := start(t)
	ctx := context.Background()
	_, srvs := cluster(s, 2)
	_, network := clients(t, s)
	nic := s.ServerPorts(srvs[0])[0]

	// The port as upstream reads it: port security on, no pairs.
	pages, err := ports.List(network, ports.ListOpts{FixedIPs: []ports.FixedIPOpts{{IPAddress: "10.0.0.2"}}}).AllPages(ctx)
	var found []struct {
		ports.Port
		portsecurity.PortSecurityExt
	}
	if err != nil || ports.ExtractPortsInto(pages, &found) != nil || len(found) != 1 || !found[0].PortSecurityEnabled ||
		found[0].AllowedAddressPairs == nil || len(found[0].AllowedAddressPairs) != 0 {
		t.Fatalf("port = %+v %v", found, err)
	}
	pairs := []ports.AddressPair{{IPAddress: "10.244.0.0/24"}}
	p, err := ports.Update(ctx, network, nic.ID, ports.UpdateOpts{AllowedAddressPairs: &pairs}).Extract()
	if err != nil || len(p.AllowedAddressPairs) != 1 || p.AllowedAddressPairs[0].MACAddress != nic.MAC ||
		p.RevisionNumber != 2 {
		t.Fatalf("pairs: %+v %v", p, err)
	}
	if cp, _ := s.Port(nic.ID); fmt.Sprint(cp.AllowedAddressPairs) != "[{10.244.0.0/24 "+nic.MAC+"}]" {
		t.Errorf("knob: %+v", cp.AllowedAddressPairs)
	}
	// Name and admin state; a stale revision is 412.
	name, down, stale := "node-0-nic", false, 1
	p, err = ports.Update(ctx, network, nic.ID, ports.UpdateOpts{Name: &name, AdminStateUp: &down}).Extract()
	if err != nil || p.Name != name || p.AdminStateUp {
		t.Fatalf("name: %+v %v", p, err)
	}
	_, err = ports.Update(ctx, network, nic.ID, ports.UpdateOpts{Name: &name, RevisionNumber: &stale}).Extract()
	if !gophercloud.ResponseCodeIs(err, http.StatusPreconditionFailed) {
		t.Fatalf("stale revision: %v", err)
	}
	// Refusals.
	dup := []ports.AddressPair{{IPAddress: "10.244.1.0/24"}, {IPAddress: "10.244.1.0/24"}}
	_, err = ports.Update(ctx, network, nic.ID, ports.UpdateOpts{AllowedAddressPairs: &dup}).Extract()
	jsonEq(t, errBody(t, err), `{"NeutronError": {"type": "DuplicateAddressPairInRequest", "message": "Request contains duplicate address pair: mac_address None ip_address 10.244.1.0/24.", "detail": ""}}`)
	bogus := []string{"00000000-0000-4000-8000-000000000000"}
	_, err = ports.Update(ctx, network, nic.ID, ports.UpdateOpts{SecurityGroups: &bogus}).Extract()
	if !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		t.Fatalf("unknown group: %v", err)
	}
	_, err = ports.Update(ctx, network, "nope", ports.UpdateOpts{Name: &name}).Extract()
	jsonEq(t, errBody(t, err), `{"NeutronError": {"type": "PortNotFound", "message": "Port nope could not be found.", "detail": ""}}`)
	tok := token(t, s)
	_, b := raw(t, s, tok, http.MethodPut, "/network/v2.0/ports/"+nic.ID, `{"port": {"network_id": "x"}}`, nil)
	jsonEq(t, b, `{"NeutronError": {"type": "HTTPBadRequest", "message": "Cannot update read-only attribute network_id", "detail": ""}}`)

	// Tags, added and taken off one by one, and listed by.
	sg := s.AddSecurityGroup(SecurityGroupSpec{Name: "lb-sg"})
	if err := attributestags.Add(ctx, network, "ports", nic.ID, sg).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	pages, err = ports.List(network, ports.ListOpts{TagsAny: sg}).AllPages(ctx)
	tagged, _ := ports.ExtractPorts(pages)
	if err != nil || len(tagged) != 1 || tagged[0].ID != nic.ID || fmt.Sprint(tagged[0].Tags) != "["+sg+"]" {
		t.Fatalf("tagged: %+v %v", tagged, err)
	}
	tags, err := attributestags.ReplaceAll(ctx, network, "ports", nic.ID, attributestags.ReplaceAllOpts{Tags: []string{sg, "b"}}).Extract()
	if err != nil || fmt.Sprint(tags) != "["+sg+" b]" {
		t.Fatalf("replace: %v %v", tags, err)
	}
	if err := attributestags.Delete(ctx, network, "ports", nic.ID, sg).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	err = attributestags.Delete(ctx, network, "ports", nic.ID, sg).ExtractErr()
	if !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		t.Fatalf("tag gone: %v", err)
	}
	if cp, _ := s.Port(nic.ID); fmt.Sprint(cp.Tags) != "[b]" {
		t.Errorf("tags: %v", cp.Tags)
	}

	// Without the extension, ports have no pairs and take none.
	s.SetNetworkExtensions("router", "extraroute", "security-group")
	_, b = raw(t, s, tok, http.MethodGet, "/network/v2.0/ports/"+nic.ID, "", nil)
	if _, ok := doc(t, b)["port"].(map[string]any)["allowed_address_pairs"]; ok {
		t.Errorf("pairs without the extension: %s", b)
	}
	_, err = ports.Update(ctx, network, nic.ID, ports.UpdateOpts{AllowedAddressPairs: &pairs}).Extract()
	jsonEq(t, errBody(t, err), `{"NeutronError": {"type": "HTTPBadRequest", "message": "Unrecognized attribute(s) 'allowed_address_pairs'", "detail": ""}}`)
	for _, name := range []string{PortsUpdate, PortTagsAdd, PortTagsDelete, PortTagsReplace} {
		if s.Faults().CallCount(name) == 0 {
			t.Errorf("%s not counted", name)
		}
	}
}
