package importer

// gce.go: cloud-provider-gcp. Its cloud config, gce.conf, is
// providers/gce/gce.go ConfigFile / ConfigGlobal, read by readConfig and
// GenerateCloudConfig; its own flags and controllers are in
// cmd/cloud-controller-manager/main.go and
// cmd/cloud-controller-manager/options/nodeipamcontroller.go.

import (
	"regexp"
	"strings"

	"github.com/spf13/pflag"
)

type gceImporter struct {
	global   map[string]iniEntry // [global], by tag; nil: no gce.conf
	nodeTags []string
	tagsFrom string
	alpha    []iniEntry
	tokenURL string // "" unset, "nil", or a URL
}

func (*gceImporter) upstream() string        { return "cloud-provider-gcp" }
func (*gceImporter) providerNames() []string { return []string{"gce"} }

// Only GOOGLE_APPLICATION_CREDENTIALS matters; the rest of the process
// environment is not the CCM's.
func (*gceImporter) readsEnv(name string) bool { return name == "GOOGLE_APPLICATION_CREDENTIALS" }

func (g *gceImporter) cloudConfig() func(*builder, []iniEntry) {
	return func(b *builder, entries []iniEntry) {
		g.global = map[string]iniEntry{}
		for _, e := range entries {
			if !strings.EqualFold(e.Section, "global") {
				b.unmappedf(e.where(b.cfgName), "gce.conf has no [%s] section (cloud-provider-gcp ignores it); polyccm has no such setting", e.Section)
				continue
			}
			n := strings.ToLower(e.Name) // gcfg tags match without case
			switch n {
			case "node-tags":
				// Multi-valued: each line adds one, a blank one clears.
				if e.Value == "" && !e.Bare {
					g.nodeTags = nil
				} else {
					g.nodeTags = append(g.nodeTags, e.Value)
				}
				g.tagsFrom = e.where(b.cfgName)
			case "alpha-features":
				g.alpha = append(g.alpha, e)
			default:
				g.global[n] = e
			}
		}
		g.tokenURL = g.global["token-url"].Value
	}
}

// gceRegionOfZone is upstream's GetGCERegion: the zone without its last
// dash-separated part.
func gceRegionOfZone(zone string) string {
	if i := strings.LastIndexByte(zone, '-'); i > 0 {
		return zone[:i]
	}
	return ""
}

// gceV1Base matches an api-endpoint polyccm can take: a root followed by
// the v1 API's path (polyccm adds /compute/v1/ itself).
var gceV1Base = regexp.MustCompile(`^(https?://[^/]+(?:/[^?#]*?)?)/compute/v1/?(?:projects/?)?$`)

func (g *gceImporter) mapGlobal(b *builder) {
	for _, n := range byLine(g.global) {
		e := g.global[n]
		v := e.Value
		s := e.where(b.cfgName)
		switch n {
		case "project-id":
			if v != "" {
				b.setDriver("project", v, s)
			}
		case "network-project-id":
			if v != "" {
				b.setDriver("networkProject", v, s)
			}
		case "network-name":
			if v != "" {
				b.setDriver("network", v, s)
			}
		case "subnetwork-name":
			if v != "" {
				b.setDriver("subnetwork", v, s)
			}
		case "stack-type":
			if v != "" {
				b.setDriver("stackType", v, s)
			}
		case "local-zone":
			if v == "" {
				continue
			}
			if r := gceRegionOfZone(v); r != "" {
				b.setDriver("region", r, s)
				if !g.boolean("multizone") && !g.boolean("regional") {
					b.note(s, "upstream managed instances in zone %s only (neither multizone nor regional); polyccm finds instances in every zone of %s", v, r)
				}
			} else {
				b.invalidf("%s: %q is not a zone (cloud-provider-gcp does not start with it)", s, v)
			}
		case "api-endpoint":
			if v == "" {
				continue
			}
			m := gceV1Base.FindStringSubmatch(v)
			if m == nil {
				b.unmappedf(s, "polyccm calls the Compute v1 API under <endpoint>/compute/v1/; %s is not such a path (a beta, alpha or staging API), so polyccm cannot use it", v)
				continue
			}
			if b.urlValue(s, v) {
				b.setDriver("endpoint", m[1], s)
			}
		case "token-url":
			switch v {
			case "":
			case "nil":
				// Application Default Credentials, polyccm's default.
			default:
				b.unmappedf(s, "polyccm cannot fetch tokens from a token URL; give it a service-account key (drivers.gce.credentials) or run it where Application Default Credentials or the metadata server's service account serve")
			}
		case "token-body":
			// A secret: named, never shown.
			if v != "" && g.tokenURL != "" && g.tokenURL != "nil" {
				b.unmappedf(s, "goes with token-url, which polyccm cannot use (the value was not copied)")
			}
		case "container-api-endpoint":
			if v != "" {
				b.note(s, "polyccm does not call the GKE container API; left out")
			}
		case "node-instance-prefix":
			if v != "" {
				b.note(s, "upstream narrowed instance listings by it; polyccm looks instances up by name and needs no prefix")
			}
		case "secondary-range-name":
			if v != "" {
				b.note(s, "upstream used it only to add alias ranges (--cidr-allocator-type=IPAMFromCluster), which polyccm does not do; left out")
			}
		case "multizone", "regional":
			if _, ok := gcfgBool(e); !ok {
				b.invalidf("%s: %q is not a boolean (cloud-provider-gcp does not start with it)", s, v)
			}
			// polyccm finds instances in every zone of the region.
		default:
			b.unmappedf(s, "gce.conf has no such key (cloud-provider-gcp ignores it); polyccm has no such setting")
		}
	}
	if g.tagsFrom != "" && len(g.nodeTags) > 0 {
		b.setDriver("nodeTags", g.nodeTags, g.tagsFrom)
	}
	for _, e := range g.alpha {
		if e.Value != "" {
			b.unmappedf(e.where(b.cfgName), "polyccm has no GCE alpha features (%s)", e.Value)
		}
	}
}

// boolean is a gce.conf boolean; false when absent.
func (g *gceImporter) boolean(n string) bool {
	e, ok := g.global[n]
	v, _ := gcfgBool(e)
	return ok && v
}

func (g *gceImporter) env(b *builder, env map[string]string) {
	for _, name := range sortedKeys(env) {
		v := env[name]
		if name != "GOOGLE_APPLICATION_CREDENTIALS" {
			b.unmappedf(name, "cloud-provider-gcp does not read it; polyccm has no setting for it")
			continue
		}
		if v == "" {
			continue
		}
		// Upstream reads Application Default Credentials, and with them
		// this file, only with token-url = nil; otherwise it asks the
		// metadata server for its service account's token.
		if g.tokenURL == "nil" {
			b.secretFile("credentials", v, name)
		} else {
			b.note(name, "cloud-provider-gcp ignored it (its gce.conf has no token-url = nil) and used the metadata server's service account; polyccm reads it when set, so leave it out of polyccm's environment to keep that account")
		}
	}
}

// The GCE flags (main.go) and their meaning for polyccm.
var gceFlags = []struct {
	name string
	why  string // "" if mapped in finish
}{
	{"enable-multi-project", "polyccm calls the project of its config (drivers.gce.project), not the one a Node's providerID names"},
	{"enable-rbs-default-l4-netlb", "polyccm leaves backend-service-based external load balancers to GKE's L4 controllers"},
	{"enable-l4-lb-annotations", "polyccm does not write the resource annotations of GKE's L4 controllers on Services"},
	{"enable-l4-deny-firewall", ""},
	{"enable-l4-deny-firewall-rollback-cleanup", ""},
	{"enable-gke-tenant-controller", "polyccm has no GKE tenant controller manager"},
	{"enable-l4-ilb-fine-grained-lock", ""},
	{"enable-multi-subnet-cluster", "polyccm's node IPAM reads the default interface's ranges only; it has no node topology (docs/node-ipam.md)"},
	{"enable-multi-networking", "polyccm's node IPAM reads the default interface only; it has no multi-networking (docs/node-ipam.md)"},
}

func (g *gceImporter) cloudFlags(c *commandLine) {
	for _, f := range gceFlags {
		c.fs.Bool(f.name, false, "")
	}
	c.fs.String("service-cluster-ip-range", "", "")
	c.fs.Int32("node-cidr-mask-size", 0, "")
	c.fs.Int32("node-cidr-mask-size-ipv4", 0, "")
	c.fs.Int32("node-cidr-mask-size-ipv6", 0, "")
	c.addController("node-ipam-controller", "nodeipam", false)
	c.addController("gkenetworkparamset", "", true)
	c.addController("gke-service-lb-controller", "gke-service", true)
	c.addController("gke-tenant-controller-manager", "gke-tenant", true)
	c.cloud = func(b *builder, f *pflag.Flag) bool {
		switch f.Name {
		case "service-cluster-ip-range":
			if c.str("cidr-allocator-type") == "CloudAllocator" && c.boolean("allocate-node-cidrs") {
				b.note("--"+f.Name, "polyccm's node IPAM takes the Nodes' stack (IPv4, dual-stack, IPv6) from drivers.gce.stackType (gce.conf stack-type), where upstream's cloud allocator took it from the service CIDRs: check they agree")
			}
			return true
		case "node-cidr-mask-size", "node-cidr-mask-size-ipv4", "node-cidr-mask-size-ipv6":
			// Only upstream's range allocators read them, and polyccm
			// refuses those (finish); the cloud allocator takes each
			// range from its instance.
			return true
		}
		for _, gf := range gceFlags {
			if gf.name != f.Name {
				continue
			}
			switch {
			case f.Value.String() != "true" || gf.why == "":
			default:
				b.unmappedf("--"+f.Name, "%s", gf.why)
			}
			return true
		}
		return false
	}
}

func (g *gceImporter) finish(b *builder, c *commandLine) {
	g.mapGlobal(b)
	finishCommon(b, c, true, true, true)
	if !c.given {
		return
	}
	// The deny firewall (docs/gce-load-balancers.md).
	switch deny, cleanup := c.boolean("enable-l4-deny-firewall"), c.boolean("enable-l4-deny-firewall-rollback-cleanup"); {
	case deny:
		b.setDriver("l4DenyFirewall", "enabled", "--enable-l4-deny-firewall")
	case cleanup:
		b.setDriver("l4DenyFirewall", "cleanup", "--enable-l4-deny-firewall-rollback-cleanup")
	}
	// Node IPAM: upstream's node-ipam-controller allocates only with
	// --allocate-node-cidrs; polyccm's copies the cloud allocator's ranges.
	if c.enabled("node-ipam-controller") && c.boolean("allocate-node-cidrs") {
		switch t := c.str("cidr-allocator-type"); t {
		case "CloudAllocator":
			b.set("controllers.nodeIPAM", true, "--allocate-node-cidrs, --cidr-allocator-type=CloudAllocator")
			if routes, _ := b.vals["controllers.routes"].value.(bool); routes {
				b.set("controllers.routes", false, "--allocate-node-cidrs, --cidr-allocator-type=CloudAllocator")
				b.unmappedf("--configure-cloud-routes", "upstream also ran its route controller beside the cloud allocator; polyccm does not (alias ranges are routed by the VPC, docs/node-ipam.md): add --configure-cloud-routes=false if upstream's routes were not needed")
			}
		default:
			b.unmappedf("--cidr-allocator-type="+t, "polyccm's node IPAM copies the ranges the cloud gives instances (CloudAllocator) and allocates none itself; leave pod CIDR allocation to kube-controller-manager")
		}
	}
	for _, ctl := range []string{"gkenetworkparamset", "gke-service-lb-controller", "gke-tenant-controller-manager"} {
		if c.enabled(ctl) {
			b.unmappedf("--controllers", "upstream ran %s; polyccm has no such controller", ctl)
		}
	}
}
