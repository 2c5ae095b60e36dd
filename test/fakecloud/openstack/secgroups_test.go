package openstack

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/rules"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
)

func ruleKeys(rs []rules.SecGroupRule) []string {
	var out []string
	for _, r := range rs {
		out = append(out, fmt.Sprintf("%s/%s/%s/%d-%d/%s/%s", r.Direction, r.EtherType, r.Protocol, r.PortRangeMin,
			r.PortRangeMax, r.RemoteIPPrefix, r.RemoteGroupID))
	}
	return out
}

// TestSecurityGroups follows upstream's load balancer security group:
// the group by name, its rules listed, created (a duplicate is 409) and
// deleted, the group put on the nodes' ports and taken off, deleted.
func TestSecurityGroups(t *testing.T) {
	s := start(t)
	ctx := context.Background()
	_, srvs := cluster(s, 1)
	_, network := clients(t, s)
	g, err := groups.Create(ctx, network, groups.CreateOpts{Name: "lb-sg-uid-default-web",
		Description: "Security Group for default/web Service LoadBalancer in cluster c1"}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if g.Name != "lb-sg-uid-default-web" || !g.Stateful || g.ProjectID != s.Account().ProjectID ||
		fmt.Sprint(ruleKeys(g.Rules)) != "[egress/IPv4//0-0// egress/IPv6//0-0//]" {
		t.Fatalf("group = %+v", g)
	}
	// By name, as gophercloud/utils' IDFromName looks it up; the default
	// group is there too.
	pages, err := groups.List(network, groups.ListOpts{Name: "lb-sg-uid-default-web"}).AllPages(ctx)
	gs, _ := groups.ExtractGroups(pages)
	if err != nil || len(gs) != 1 || gs[0].ID != g.ID {
		t.Fatalf("by name: %+v %v", gs, err)
	}
	pages, _ = groups.List(network, groups.ListOpts{Name: "default"}).AllPages(ctx)
	def, _ := groups.ExtractGroups(pages)
	if len(def) != 1 || len(def[0].Rules) != 4 || def[0].ID != s.DefaultSecurityGroup("") {
		t.Fatalf("default group: %+v", def)
	}
	// Rules for a NodePort, from the members' subnet.
	create := func(opts rules.CreateOpts) (*rules.SecGroupRule, error) {
		return rules.Create(ctx, network, opts).Extract()
	}
	nodePort := rules.CreateOpts{Direction: rules.DirIngress, Protocol: rules.ProtocolTCP, EtherType: rules.EtherType4,
		RemoteIPPrefix: "10.0.0.0/24", SecGroupID: g.ID, PortRangeMin: 30080, PortRangeMax: 30080}
	r, err := create(nodePort)
	if err != nil || r.Protocol != "tcp" || r.PortRangeMin != 30080 || r.SecGroupID != g.ID || r.RemoteIPPrefix != "10.0.0.0/24" {
		t.Fatalf("rule = %+v %v", r, err)
	}
	_, err = create(nodePort)
	if !gophercloud.ResponseCodeIs(err, http.StatusConflict) {
		t.Fatalf("duplicate: %v", err)
	}
	jsonEq(t, errBody(t, err), `{"NeutronError": {"type": "SecurityGroupRuleExists", "message": "Security group rule already exists. Rule id is `+
		r.ID+`.", "detail": ""}}`)
	pages, err = rules.List(network, rules.ListOpts{SecGroupID: g.ID, Direction: "ingress"}).AllPages(ctx)
	rs, _ := rules.ExtractRules(pages)
	if err != nil || fmt.Sprint(ruleKeys(rs)) != "[ingress/IPv4/tcp/30080-30080/10.0.0.0/24/]" {
		t.Fatalf("ingress rules: %v %v", ruleKeys(rs), err)
	}
	// Refusals, in Neutron's words.
	for _, tc := range []struct {
		opts rules.CreateOpts
		typ  string
		msg  string
	}{
		{rules.CreateOpts{Direction: "ingress", EtherType: "IPv4", SecGroupID: g.ID, PortRangeMin: 80, PortRangeMax: 80},
			"SecurityGroupProtocolRequiredWithPorts", "Must also specify protocol if port range is given."},
		{rules.CreateOpts{Direction: "ingress", EtherType: "IPv6", SecGroupID: g.ID, RemoteIPPrefix: "10.0.0.0/24"},
			"SecurityGroupConflictingEtherType", "Conflicting value ethertype IPv6 for CIDR 10.0.0.0/24"},
		{rules.CreateOpts{Direction: "ingress", EtherType: "IPv4", SecGroupID: g.ID, Protocol: "tcp", PortRangeMin: 90, PortRangeMax: 80},
			"SecurityGroupInvalidPortRange", "For TCP/UDP protocols, port_range_min must be <= port_range_max"},
		{rules.CreateOpts{Direction: "ingress", EtherType: "IPv4", SecGroupID: g.ID, RemoteIPPrefix: "10.0.0.0/24", RemoteGroupID: g.ID},
			"SecurityGroupRemoteGroupAndRemoteIpPrefix", "Only remote_ip_prefix or remote_group_id may be provided."},
	} {
		_, err := create(tc.opts)
		if !gophercloud.ResponseCodeIs(err, http.StatusBadRequest) {
			t.Errorf("%s: %v", tc.typ, err)
			continue
		}
		jsonEq(t, errBody(t, err), `{"NeutronError": {"type": "`+tc.typ+`", "message": "`+tc.msg+`", "detail": ""}}`)
	}
	_, err = create(rules.CreateOpts{Direction: "ingress", EtherType: "IPv4", SecGroupID: "nope"})
	jsonEq(t, errBody(t, err), `{"NeutronError": {"type": "SecurityGroupNotFound", "message": "Security group nope does not exist", "detail": ""}}`)

	// The group on the node's port, then a delete refused while in use.
	nic := s.ServerPorts(srvs[0])[0]
	sgs := append(nic.SecurityGroups, g.ID)
	p, err := ports.Update(ctx, network, nic.ID, ports.UpdateOpts{SecurityGroups: &sgs}).Extract()
	if err != nil || fmt.Sprint(p.SecurityGroups) != fmt.Sprint(sgs) {
		t.Fatalf("port groups: %+v %v", p, err)
	}
	err = groups.Delete(ctx, network, g.ID).ExtractErr()
	if !gophercloud.ResponseCodeIs(err, http.StatusConflict) {
		t.Fatalf("in use: %v", err)
	}
	jsonEq(t, errBody(t, err), `{"NeutronError": {"type": "SecurityGroupInUse", "message": "Security Group `+g.ID+` in use.", "detail": ""}}`)
	err = groups.Delete(ctx, network, def[0].ID).ExtractErr()
	jsonEq(t, errBody(t, err), `{"NeutronError": {"type": "SecurityGroupCannotRemoveDefault", "message": "Insufficient rights for removing default security group.", "detail": ""}}`)
	// Off the port: the rule, then the group, go.
	sgs = sgs[:1]
	if _, err := ports.Update(ctx, network, nic.ID, ports.UpdateOpts{SecurityGroups: &sgs}).Extract(); err != nil {
		t.Fatal(err)
	}
	if err := rules.Delete(ctx, network, r.ID).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	if _, err := rules.Get(ctx, network, r.ID).Extract(); !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		t.Fatalf("deleted rule: %v", err)
	}
	if err := groups.Delete(ctx, network, g.ID).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	if _, err := groups.Get(ctx, network, g.ID).Extract(); !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		t.Fatalf("deleted group: %v", err)
	}
	// The knob, and groups' tags.
	id := s.AddSecurityGroup(SecurityGroupSpec{Name: "nodes", Tags: []string{"c1"}, Rules: []SecurityGroupRuleSpec{
		{Direction: "ingress", Protocol: "udp", PortRangeMin: 30000, PortRangeMax: 32767, RemoteIPPrefix: "0.0.0.0/0"}}})
	cg, _ := s.SecurityGroup(id)
	if len(cg.Rules) != 3 || cg.Rules[2].Protocol != "udp" || cg.Rules[2].PortRangeMax != 32767 {
		t.Errorf("knob group: %+v", cg)
	}
	pages, _ = groups.List(network, groups.ListOpts{Tags: "c1"}).AllPages(ctx)
	if gs, _ := groups.ExtractGroups(pages); len(gs) != 1 || gs[0].ID != id || len(gs[0].Tags) != 1 {
		t.Errorf("by tag: %+v", gs)
	}
	for _, name := range []string{SecurityGroupsCreate, SecurityGroupsList, SecurityGroupsDelete, SecurityGroupRulesCreate,
		SecurityGroupRulesList, SecurityGroupRulesDelete, PortsUpdate} {
		if s.Faults().CallCount(name) == 0 {
			t.Errorf("%s not counted", name)
		}
	}
}
