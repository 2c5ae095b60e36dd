package importer

// digitalocean.go: digitalocean-cloud-controller-manager, configured by
// environment variables only (cloud-controller-manager/do/cloud.go newCloud
// and do/metadata.go dropletRegion); it reads no cloud config file.

import (
	"strconv"
	"strings"
)

type doImporter struct{}

func (doImporter) upstream() string        { return "digitalocean-cloud-controller-manager" }
func (doImporter) providerNames() []string { return []string{"digitalocean"} }
func (doImporter) cloudConfig() func(*builder, []iniEntry) {
	return nil
}
func (doImporter) cloudFlags(*commandLine) {}

// doEnv are the variables do/cloud.go and do/metadata.go read.
var doEnv = map[string]bool{
	"DO_ACCESS_TOKEN": true, "DO_OVERRIDE_URL": true, "DO_CLUSTER_ID": true, "DO_CLUSTER_VPC_ID": true,
	"DEBUG_ADDR": true, "METRICS_ADDR": true, "PUBLIC_ACCESS_FIREWALL_NAME": true, "PUBLIC_ACCESS_FIREWALL_TAGS": true,
	"REGION": true, "DO_API_RATE_LIMIT_QPS": true, "DEFAULT_LB_TYPE": true,
}

func (doImporter) readsEnv(name string) bool { return doEnv[name] || strings.HasPrefix(name, "DO_") }

func (doImporter) env(b *builder, env map[string]string) {
	// The token: upstream reads DO_ACCESS_TOKEN and nothing else, and
	// will not start without it, so polyccm reads the same variable.
	if _, ok := env["DO_ACCESS_TOKEN"]; ok {
		b.secretEnv("token", "DO_ACCESS_TOKEN", "DO_ACCESS_TOKEN")
	} else {
		b.secretEnv("token", "DO_ACCESS_TOKEN", "")
		b.note("DO_ACCESS_TOKEN", "not in %s (the upstream CCM requires it, usually from a Secret); give polyccm the same variable, or change drivers.digitalocean.token to {file: PATH} or {credential: NAME}", b.in.EnvName)
	}
	fwName, hasName := env["PUBLIC_ACCESS_FIREWALL_NAME"]
	fwTags, hasTags := env["PUBLIC_ACCESS_FIREWALL_TAGS"]
	if (fwName == "") != (fwTags == "") && (hasName || hasTags) {
		b.invalidf("PUBLIC_ACCESS_FIREWALL_NAME and PUBLIC_ACCESS_FIREWALL_TAGS go together (the upstream CCM does not start with one of them)")
	}
	for _, name := range sortedKeys(env) {
		v := env[name]
		switch name {
		case "DO_ACCESS_TOKEN":
		case "DO_OVERRIDE_URL":
			if v != "" && b.urlValue(name, v) {
				b.setDriver("apiURL", v, name)
			}
		case "DO_CLUSTER_ID":
			if v != "" {
				b.setDriver("clusterID", v, name)
			}
		case "DO_CLUSTER_VPC_ID":
			if v != "" {
				b.setDriver("vpcID", v, name)
			}
		case "REGION":
			if v != "" {
				b.setDriver("region", v, name)
			}
		case "PUBLIC_ACCESS_FIREWALL_NAME":
			if v != "" {
				b.setDriver("firewall.name", v, name)
			}
		case "PUBLIC_ACCESS_FIREWALL_TAGS":
			if v != "" {
				var tags []string
				for _, t := range strings.Split(v, ",") {
					tags = append(tags, strings.TrimSpace(t))
				}
				b.setDriver("firewall.tags", tags, name)
			}
		case "DEFAULT_LB_TYPE":
			// Upstream takes these two and quietly uses REGIONAL_NETWORK
			// for anything else.
			if v == "REGIONAL" || v == "REGIONAL_NETWORK" {
				b.setDriver("loadBalancer.defaultType", v, name)
			} else if v != "" {
				b.note(name, "the upstream CCM ignored %q (not REGIONAL or REGIONAL_NETWORK) and used REGIONAL_NETWORK, polyccm's default too", v)
			}
		case "DO_API_RATE_LIMIT_QPS":
			if v == "" {
				continue
			}
			q, err := strconv.ParseFloat(v, 64)
			if err != nil {
				b.invalidf("%s: %q is not a number (the upstream CCM does not start with it)", name, v)
				continue
			}
			b.set("cloudAPI.qps", q, name)
			b.note(name, "cloudAPI.qps is polyccm's client-side limit on every DigitalOcean call, as godo's static rate limit was; bursts of cloudAPI.burst (20) calls are allowed above it")
		case "DEBUG_ADDR":
			if v != "" {
				b.unmappedf(name, "polyccm serves /healthz, /livez and /readyz on its secure port (serving.bindAddress, serving.securePort 10258, HTTPS), not on a separate address; point the probes there")
			}
		case "METRICS_ADDR":
			if v != "" {
				b.unmappedf(name, "polyccm serves its metrics at /metrics on its secure port (serving.bindAddress, serving.securePort 10258, HTTPS, callers authorized by the API server), not on a separate address; point the scraper there")
			}
		case "DO_ACCESS_TOKEN_PATH", "DO_ACCESS_TOKEN_FILE":
			b.unmappedf(name, "digitalocean-cloud-controller-manager does not read it (only DO_ACCESS_TOKEN); if it names a file holding the token, set drivers.digitalocean.token to {file: PATH}")
		default:
			b.unmappedf(name, "digitalocean-cloud-controller-manager does not read it; polyccm has no setting for it")
		}
	}
}

func (doImporter) finish(b *builder, c *commandLine) {
	finishCommon(b, c, true, false, false)
}

// finishCommon maps the flags every CCM shares: the cluster name and the
// controllers. The booleans say what the upstream CCM had: load balancers,
// routes, a node IPAM controller.
func finishCommon(b *builder, c *commandLine, hasLoadBalancers, hasRoutes, hasNodeIPAM bool) {
	if !c.given {
		return
	}
	if c.changed("cluster-name") {
		b.set("clusterName", c.str("cluster-name"), "--cluster-name")
	}
	if !hasNodeIPAM && (c.changed("allocate-node-cidrs") || c.changed("cidr-allocator-type")) {
		b.note("--allocate-node-cidrs", "%s runs no node IPAM controller, so the flag changed nothing there; pod CIDRs stay with kube-controller-manager", b.upstreamName())
	}
	c.mapControllers(b, hasLoadBalancers, hasRoutes)
}
