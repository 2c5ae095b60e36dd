package importer

// hetzner.go: hcloud-cloud-controller-manager, configured by environment
// variables only (internal/config/config.go Read and
// internal/config/load_balancer_envs.go); it reads no cloud config file.

import (
	"strconv"
	"strings"
	"time"
)

type hetznerImporter struct {
	network       bool // HCLOUD_NETWORK set: upstream has routes
	routesOff     bool // HCLOUD_NETWORK_ROUTES_ENABLED=false
	loadBalancers bool // HCLOUD_LOAD_BALANCERS_ENABLED, true by default
}

func (*hetznerImporter) upstream() string        { return "hcloud-cloud-controller-manager" }
func (*hetznerImporter) providerNames() []string { return []string{"hcloud"} }
func (*hetznerImporter) cloudConfig() func(*builder, []iniEntry) {
	return nil
}
func (*hetznerImporter) cloudFlags(*commandLine) {}

func (*hetznerImporter) readsEnv(name string) bool {
	return strings.HasPrefix(name, "HCLOUD_") || strings.HasPrefix(name, "ROBOT_")
}

// hcloudLB maps the HCLOUD_LOAD_BALANCERS_* variables that are plain
// strings onto drivers.hetzner.loadBalancer keys.
var hcloudLB = map[string]string{
	"HCLOUD_LOAD_BALANCERS_LOCATION":                "loadBalancer.location",
	"HCLOUD_LOAD_BALANCERS_NETWORK_ZONE":            "loadBalancer.networkZone",
	"HCLOUD_LOAD_BALANCERS_TYPE":                    "loadBalancer.type",
	"HCLOUD_LOAD_BALANCERS_PRIVATE_SUBNET_IP_RANGE": "loadBalancer.privateSubnetIPRange",
}

// hcloudLBBool are its booleans: unset and false mean the same upstream.
var hcloudLBBool = map[string]string{
	"HCLOUD_LOAD_BALANCERS_USE_PRIVATE_IP":          "loadBalancer.usePrivateIP",
	"HCLOUD_LOAD_BALANCERS_DISABLE_PRIVATE_INGRESS": "loadBalancer.disablePrivateIngress",
	"HCLOUD_LOAD_BALANCERS_DISABLE_IPV6":            "loadBalancer.disableIPv6",
}

// hcloudLBTristate are the booleans upstream keeps unset, true or false
// (getEnvBoolPtr): polyccm's false is "unset".
var hcloudLBTristate = map[string]string{
	"HCLOUD_LOAD_BALANCERS_DISABLE_PUBLIC_NETWORK": "loadBalancer.disablePublicNetwork",
	"HCLOUD_LOAD_BALANCERS_USES_PROXYPROTOCOL":     "loadBalancer.usesProxyProtocol",
}

func (h *hetznerImporter) env(b *builder, env map[string]string) {
	h.loadBalancers = true
	boolean := func(name, v string) (bool, bool) {
		x, err := strconv.ParseBool(v)
		if err != nil {
			b.invalidf("%s: %q is not a boolean (the upstream CCM does not start with it)", name, v)
			return false, false
		}
		return x, true
	}
	duration := func(name, v string) (time.Duration, bool) {
		d, err := time.ParseDuration(v)
		if err != nil {
			b.invalidf("%s: %q is not a duration like 15s (the upstream CCM does not start with it)", name, v)
			return 0, false
		}
		return d, true
	}

	// The token: upstream reads HCLOUD_TOKEN, else the file
	// HCLOUD_TOKEN_FILE names (hcloud-go's envutil.LookupEnvWithFile).
	_, hasToken := env["HCLOUD_TOKEN"]
	tokenFile, hasFile := env["HCLOUD_TOKEN_FILE"]
	switch {
	case hasToken:
		b.secretEnv("token", "HCLOUD_TOKEN", "HCLOUD_TOKEN")
		if hasFile {
			b.note("HCLOUD_TOKEN_FILE", "ignored, as upstream ignores it while HCLOUD_TOKEN is set")
		}
	case hasFile && tokenFile != "":
		b.secretFile("token", tokenFile, "HCLOUD_TOKEN_FILE")
	default:
		b.secretEnv("token", "HCLOUD_TOKEN", "")
		b.note("HCLOUD_TOKEN", "neither it nor HCLOUD_TOKEN_FILE is in %s (the upstream CCM requires one, usually from a Secret); give polyccm the same variable, or change drivers.hetzner.token to {file: PATH} or {credential: NAME}", b.in.EnvName)
	}

	robot := false
	if v, ok := env["ROBOT_ENABLED"]; ok {
		robot, _ = boolean("ROBOT_ENABLED", v)
	}
	for _, name := range sortedKeys(env) {
		v := env[name]
		if key, ok := hcloudLB[name]; ok {
			if v != "" {
				b.setDriver(key, v, name)
			}
			continue
		}
		if key, ok := hcloudLBBool[name]; ok {
			if x, ok := boolean(name, v); ok && x {
				b.setDriver(key, true, name)
			}
			continue
		}
		if key, ok := hcloudLBTristate[name]; ok {
			if x, ok := boolean(name, v); ok && x {
				b.setDriver(key, true, name)
			} else if ok {
				b.note(name, "false: polyccm leaves what each load balancer has as it is (drivers.hetzner.%s: false), where upstream set it to false on every load balancer whose Service has no annotation for it; give those Services the annotation to keep that", key)
			}
			continue
		}
		switch name {
		case "HCLOUD_TOKEN", "HCLOUD_TOKEN_FILE", "ROBOT_ENABLED":
		case "HCLOUD_ENDPOINT":
			if v != "" && b.urlValue(name, v) {
				b.setDriver("apiURL", v, name)
			}
		case "HCLOUD_NETWORK":
			if v != "" {
				b.setDriver("network", v, name)
				h.network = true
			}
		case "HCLOUD_NETWORK_ROUTES_ENABLED":
			if x, ok := boolean(name, v); ok && !x {
				h.routesOff = true
			}
		case "HCLOUD_NETWORK_DISABLE_ATTACHED_CHECK":
			boolean(name, v)
			b.note(name, "polyccm does not check at start that its server is attached to the Network")
		case "HCLOUD_INSTANCES_ADDRESS_FAMILY":
			if v != "" {
				b.setDriver("instances.addressFamily", v, name)
			}
		case "HCLOUD_INSTANCES_ZONE_LABEL_ENABLED":
			if x, ok := boolean(name, v); ok {
				b.setDriver("instances.zoneLabel", x, name)
			}
		case "HCLOUD_LOAD_BALANCERS_ENABLED":
			if x, ok := boolean(name, v); ok {
				h.loadBalancers = x
			}
		case "HCLOUD_LOAD_BALANCERS_ALGORITHM_TYPE":
			// Upstream trims and lower-cases it.
			if a := strings.ToLower(strings.TrimSpace(v)); a != "" {
				b.setDriver("loadBalancer.algorithm", a, name)
			}
		case "HCLOUD_LOAD_BALANCERS_HEALTH_CHECK_INTERVAL":
			if v == "" {
				continue // upstream's getEnvDuration: unset
			}
			if d, ok := duration(name, v); ok {
				b.setDriver("loadBalancer.healthCheck.interval", d, name)
			}
		case "HCLOUD_LOAD_BALANCERS_HEALTH_CHECK_TIMEOUT":
			if v == "" {
				continue
			}
			if d, ok := duration(name, v); ok {
				b.setDriver("loadBalancer.healthCheck.timeout", d, name)
			}
		case "HCLOUD_LOAD_BALANCERS_HEALTH_CHECK_RETRIES":
			if v == "" {
				continue
			}
			n, err := strconv.Atoi(v)
			if err != nil {
				b.invalidf("%s: %q is not an integer (the upstream CCM does not start with it)", name, v)
				continue
			}
			b.setDriver("loadBalancer.healthCheck.retries", n, name)
		case "HCLOUD_SERVER_CACHE_MAX_AGE":
			if d, ok := duration(name, v); ok {
				b.set("cloudAPI.cacheTTL", d, name)
			}
		case "HCLOUD_SERVER_CACHE_MODE":
			switch v {
			case "all", "one":
				b.note(name, "polyccm batches server lookups and picks between single reads and listings itself")
			case "off":
				b.set("cloudAPI.cacheTTL", time.Duration(0), name)
			default:
				b.invalidf("%s: %q is not all, one or off (the upstream CCM does not start with it)", name, v)
			}
		case "HCLOUD_DEBUG":
			if x, ok := boolean(name, v); ok && x {
				b.unmappedf(name, "polyccm has no hcloud-go debug log; logging.verbosity 4 and above logs its cloud calls")
			}
		case "HCLOUD_METRICS_ENABLED":
			if x, ok := boolean(name, v); ok && !x {
				b.note(name, "polyccm always serves /metrics on its secure port, where callers need the API server's authorization")
			}
		case "HCLOUD_METRICS_ADDRESS":
			b.unmappedf(name, "polyccm serves its metrics at /metrics on its secure port (serving.bindAddress, serving.securePort 10258, HTTPS, callers authorized by the API server), not on a separate address; point the scraper there")
		case "ROBOT_USER", "ROBOT_USER_FILE", "ROBOT_PASSWORD", "ROBOT_PASSWORD_FILE", "ROBOT_CACHE_TIMEOUT", "ROBOT_RATE_LIMIT_WAIT_TIME", "ROBOT_FORWARD_INTERNAL_IPS":
			if robot {
				b.unmappedf(name, "polyccm does not manage Hetzner Robot (dedicated) servers")
			} else {
				b.note(name, "ignored, as upstream ignores it without ROBOT_ENABLED=true")
			}
		default:
			b.unmappedf(name, "hcloud-cloud-controller-manager does not read it; polyccm has no setting for it")
		}
	}
	if robot {
		b.unmappedf("ROBOT_ENABLED", "polyccm does not manage Hetzner Robot (dedicated) servers: Nodes on them get no metadata from polyccm, and load balancers do not target them")
	}
}

func (h *hetznerImporter) finish(b *builder, c *commandLine) {
	hasRoutes := h.network && !h.routesOff
	finishCommon(b, c, h.loadBalancers, hasRoutes, false)
	if !c.given {
		if !h.loadBalancers {
			b.set("controllers.services", false, "HCLOUD_LOAD_BALANCERS_ENABLED")
		}
		if hasRoutes {
			b.note("HCLOUD_NETWORK", "upstream runs its route controller with a Network unless --configure-cloud-routes=false or --controllers leaves it out; without the command line, controllers.routes stays off: turn it on with routes.clusterCIDR if upstream made routes")
		}
	}
}
