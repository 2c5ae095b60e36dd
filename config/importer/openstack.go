package importer

// openstack.go: openstack-cloud-controller-manager. Its cloud config,
// cloud.conf, is pkg/openstack/openstack.go Config ([Global], the
// client.AuthOpts of pkg/client/client.go; [Networking], [Route],
// [LoadBalancer], [LoadBalancerClass "name"], [Metadata]), read by
// ReadConfig with gcfg: a key matches its gcfg tag, or an untagged
// field's name (username, password, region), without regard to case, and
// a key or section gcfg does not know is ignored (gcfg.FatalOnly). Of the
// environment it reads OS_CCM_REGIONAL (pkg/openstack/instances.go) and
// OCCM_WAIT_LB_ACTIVE_STEPS; its OS_* credentials it never reads
// (clientconfig's environment lookup is turned off, EnvPrefix "_").

import (
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/cloud-provider/names"

	"github.com/polyccm/polyccm/config/secret"
)

type openstackImporter struct {
	global map[string]iniEntry // [Global], by lower-cased name; nil: no cloud.conf
	// What later sources need: the secrets referenced (by variable), the
	// router (upstream has routes), load balancers and clouds.yaml.
	secretEnv     map[string]string // variable -> drivers.openstack key
	routes        bool
	loadBalancers bool
	useClouds     bool
}

func (*openstackImporter) upstream() string        { return "openstack-cloud-controller-manager" }
func (*openstackImporter) providerNames() []string { return []string{"openstack"} }

// The variables upstream reads, and clouds.yaml's (with use-clouds); the
// rest of this process's environment is not the CCM's.
func (*openstackImporter) readsEnv(name string) bool {
	switch name {
	case "OS_CCM_REGIONAL", "OCCM_WAIT_LB_ACTIVE_STEPS", "OS_CLIENT_CONFIG_FILE", "OS_CLOUD":
		return true
	}
	return false
}

// osGlobal maps the [Global] keys polyccm has, by their gcfg name, to
// drivers.openstack keys.
var osGlobal = map[string]string{
	"auth-url": "authURL", "region": "region",
	"username": "username", "user-id": "userID",
	"user-domain-name": "userDomainName", "user-domain-id": "userDomainID",
	"tenant-name": "projectName", "tenant-id": "projectID",
	"tenant-domain-name": "projectDomainName", "tenant-domain-id": "projectDomainID",
	"domain-name": "domainName", "domain-id": "domainID",
	"application-credential-id": "applicationCredentialID", "application-credential-name": "applicationCredentialName",
	"ca-file": "caFile",
}

// osProjectAliases are clouds.yaml's names of the tenant-* keys; in
// cloud.conf gcfg does not know them.
var osProjectAliases = map[string]string{
	"project-name": "tenant-name", "project-id": "tenant-id",
	"project-domain-name": "tenant-domain-name", "project-domain-id": "tenant-domain-id",
}

// osSecrets are the [Global] secrets polyccm has: each becomes a reference
// to the variable an openrc file would set, never a copy.
var osSecrets = map[string]struct{ key, env, credential string }{
	"password":                      {"password", "OS_PASSWORD", "openstack-password"},
	"application-credential-secret": {"applicationCredentialSecret", "OS_APPLICATION_CREDENTIAL_SECRET", "openstack-application-credential-secret"},
}

// osNetworkLists are the repeatable [Networking] keys.
var osNetworkLists = map[string]string{
	"public-network-name":   "networking.publicNetworkNames",
	"internal-network-name": "networking.internalNetworkNames",
}

func (o *openstackImporter) cloudConfig() func(*builder, []iniEntry) {
	return func(b *builder, entries []iniEntry) {
		o.global = map[string]iniEntry{}
		o.loadBalancers = true // upstream's default: [LoadBalancer] enabled
		nets := map[string][]string{}
		netFrom := map[string]string{}
		for _, e := range entries {
			n, s := strings.ToLower(e.Name), e.where(b.cfgName)
			switch sec := strings.ToLower(e.Section); sec {
			case "global":
				o.global[n] = e
			case "networking":
				switch n {
				case "public-network-name", "internal-network-name":
					// Multi-valued: each line adds one, a blank one clears.
					if e.Value == "" && !e.Bare {
						nets[n] = nil
					} else {
						nets[n] = append(nets[n], e.Value)
					}
					netFrom[n] = s
				case "address-sort-order":
					if e.Value != "" {
						b.setDriver("networking.addressSortOrder", e.Value, s)
					}
				case "ipv6-support-disabled":
					if v, ok := o.boolean(b, e); ok && v {
						b.setDriver("networking.ipv6SupportDisabled", true, s)
					}
				default:
					b.unmappedf(s, "openstack-cloud-controller-manager has no such [Networking] key (it ignores it); polyccm has no such setting")
				}
			case "route":
				if n != "router-id" {
					b.unmappedf(s, "openstack-cloud-controller-manager has no such [Route] key (it ignores it); polyccm has no such setting")
				} else if e.Value != "" {
					b.setDriver("routerID", e.Value, s)
					o.routes = true
				}
			case "loadbalancer", "loadbalancerclass":
				if sec == "loadbalancer" && n == "enabled" {
					if v, ok := o.boolean(b, e); ok {
						o.loadBalancers = v
					}
					continue
				}
				// A note per key: each is a setting left to upstream.
				b.note(s, "polyccm serves no OpenStack load balancers yet (Octavia comes later), so it has no load balancer settings: keep openstack-cloud-controller-manager's service controller running with this cloud.conf for them (docs/switching.md, \"Switching from openstack-cloud-controller-manager\"); left out")
			case "metadata":
				o.metadata(b, e, n, s)
			case "blockstorage":
				b.note(s, "read by the Cinder CSI driver (a cloud.conf it shares), not by openstack-cloud-controller-manager; left out")
			default:
				b.unmappedf(s, "openstack-cloud-controller-manager has no [%s] section (it ignores it); polyccm has no such setting", e.Section)
			}
		}
		for n, key := range osNetworkLists {
			if len(nets[n]) > 0 {
				b.setDriver(key, nets[n], netFrom[n])
			}
		}
		o.mapGlobal(b)
	}
}

// boolean is a gcfg boolean; a bad one stops upstream.
func (o *openstackImporter) boolean(b *builder, e iniEntry) (bool, bool) {
	v, ok := gcfgBool(e)
	if !ok {
		b.invalidf("%s: %q is not a boolean (openstack-cloud-controller-manager does not start with it)", e.where(b.cfgName), e.Value)
	}
	return v, ok
}

func (o *openstackImporter) metadata(b *builder, e iniEntry, n, s string) {
	switch n {
	case "search-order":
		b.note(s, "polyccm reads no instance metadata (config drive or metadata service): it finds every server through Nova's API; left out")
	case "request-timeout":
		if e.Value == "" {
			return
		}
		d, err := time.ParseDuration(e.Value)
		if err != nil {
			b.invalidf("%s: %q is not a duration like 30s (openstack-cloud-controller-manager does not start with it)", s, e.Value)
			return
		}
		b.set("cloudAPI.timeout", d, s)
		b.note(s, "cloudAPI.timeout bounds each attempt of every cloud call, as upstream's HTTP client timeout did; polyccm retries throttling and 5xx itself")
	default:
		b.unmappedf(s, "openstack-cloud-controller-manager has no such [Metadata] key (it ignores it); polyccm has no such setting")
	}
}

func (o *openstackImporter) mapGlobal(b *builder) {
	get := func(n string) string { return o.global[n].Value }
	// Read first: clouds-file and cloud may come before it.
	if e, ok := o.global["use-clouds"]; ok {
		o.useClouds, _ = gcfgBool(e)
	}
	for _, n := range byLine(o.global) {
		e := o.global[n]
		v, s := e.Value, e.where(b.cfgName)
		if key, ok := osGlobal[n]; ok {
			if v != "" && (n != "auth-url" || b.urlValue(s, v)) {
				b.setDriver(key, v, s)
			}
			continue
		}
		if sec, ok := osSecrets[n]; ok {
			switch {
			case v == "":
			case n == "password" && get("application-credential-secret") != "":
				// polyccm takes one; which one upstream's gophercloud sent
				// depends on its version (a password, unscoped, in v2).
				b.note(s, "cloud.conf gives a password and an application credential; polyccm authenticates with one, the application credential, and leaves the password out (the value was not copied): check that the credential works, as upstream's gophercloud may have sent the password")
			default:
				o.inlineSecret(b, sec.key, sec.env, sec.credential, s)
			}
			continue
		}
		if tenant, ok := osProjectAliases[n]; ok {
			switch {
			case v == "":
			case get(tenant) != "":
				b.note(s, "ignored, as upstream ignores it (its cloud.conf key is %s, set here too; %s is clouds.yaml's name)", tenant, n)
			default:
				b.setDriver(osGlobal[tenant], v, s)
				b.note(s, "openstack-cloud-controller-manager ignores it in cloud.conf (its key is %s; %s is clouds.yaml's name), so upstream authenticated without it; polyccm takes it as meant: check it is the cluster's project", tenant, n)
			}
			continue
		}
		switch n {
		case "os-endpoint-type":
			switch v {
			case "":
			case "public", "internal", "admin":
				b.setDriver("endpointType", v, s)
			default:
				b.unmappedf(s, "%q is not a catalog interface: gophercloud refuses it, so upstream made no API client; give public, internal or admin", v)
			}
		case "tls-insecure":
			// Upstream skips verification for exactly "true".
			if v == "true" {
				b.unmappedf(s, "polyccm always verifies the API's certificates: give ca-file (drivers.openstack.caFile) the CA that signed Keystone's and the services' certificates")
			}
		case "cafilecontents":
			if v != "" {
				b.unmappedf(s, "polyccm reads the CA bundle from a file: give it as ca-file (drivers.openstack.caFile)")
			}
		case "cert-file", "key-file":
			if v != "" {
				b.unmappedf(s, "polyccm presents no TLS client certificate to the API; authenticate with an application credential or a password")
			}
		case "token":
			if v != "" {
				b.unmappedf(s, "polyccm does not authenticate with a fixed Keystone token (it expires); give an application credential (the value was not copied)")
			}
		case "trust-id":
			if v != "" {
				b.unmappedf(s, "polyccm has no Keystone trust authentication; create an application credential for the CCM instead")
			}
		case "trustee-id", "trustee-password":
			switch {
			case v == "":
			case get("trust-id") != "":
				b.unmappedf(s, "goes with trust-id, which polyccm cannot use (a value was not copied)")
			default:
				b.note(s, "ignored, as upstream ignores it without trust-id")
			}
		case "use-clouds":
			if x, ok := o.boolean(b, e); ok && x {
				// Upstream's clientconfig finds the file in OS_CLIENT_CONFIG_FILE,
				// else ./clouds.yaml, ~/.config/openstack/ or /etc/openstack/.
				b.secretFile("clouds", "/etc/openstack/clouds.yaml", s)
				b.note(s, "upstream found clouds.yaml through OS_CLIENT_CONFIG_FILE, else ./clouds.yaml, ~/.config/openstack/clouds.yaml or /etc/openstack/clouds.yaml: point drivers.openstack.clouds at the one it read; keys in cloud.conf win over it, as upstream")
			}
		case "cloud":
			switch {
			case v != "" && o.useClouds:
				b.setDriver("cloud", v, s)
			case v != "":
				b.note(s, "ignored, as upstream ignores it without use-clouds = true")
			}
		case "clouds-file":
			if v != "" {
				b.note(s, "ignored, as upstream ignores it (its clientconfig finds clouds.yaml by OS_CLIENT_CONFIG_FILE and the standard places)")
			}
		default:
			b.unmappedf(s, "openstack-cloud-controller-manager has no such [Global] key (it ignores it); polyccm has no such setting")
		}
	}
	if o.global["password"].Value == "" && o.global["application-credential-secret"].Value == "" && !o.useClouds {
		b.note("[Global]", "%s has no password or application-credential-secret, without which upstream cannot authenticate: set drivers.openstack.applicationCredentialSecret (with applicationCredentialID) or password, as %s", b.cfgName, secret.Forms)
	}
}

// inlineSecret stands for a secret cloud.conf holds in the clear: the
// value is never copied; polyccm reads the variable an openrc file sets.
func (o *openstackImporter) inlineSecret(b *builder, key, env, credential, from string) {
	b.setDriver(key, secret.Secret{Env: env}, from)
	if o.secretEnv == nil {
		o.secretEnv = map[string]string{}
	}
	o.secretEnv[env] = key
	b.note(from, "cloud.conf holds the secret itself, which is never copied: drivers.openstack.%s is {env: %s}; run polyccm with %s set to it, or change the reference to {file: PATH} or {credential: %s} (docs/deploy-systemd.md)", key, env, env, credential)
}

func (o *openstackImporter) env(b *builder, env map[string]string) {
	for _, name := range sortedKeys(env) {
		v := env[name]
		switch {
		case name == "OS_CCM_REGIONAL":
			// Upstream compares with exactly "true".
			if v == "true" {
				b.setDriver("regionalProviderID", true, name)
			} else if v != "" && v != "false" {
				b.note(name, "upstream writes openstack:///<id> providerIDs unless it is exactly \"true\"; so does polyccm (drivers.openstack.regionalProviderID: false)")
			}
		case name == "OCCM_WAIT_LB_ACTIVE_STEPS":
			b.note(name, "polyccm serves no OpenStack load balancers yet; left out")
		case (name == "OS_CLIENT_CONFIG_FILE" || name == "OS_CLOUD") && !o.useClouds:
			b.note(name, "ignored, as upstream reads clouds.yaml only with use-clouds = true")
		case name == "OS_CLIENT_CONFIG_FILE":
			if v != "" {
				b.secretFile("clouds", v, name)
			}
		case name == "OS_CLOUD":
			// cloud.conf's cloud wins, as upstream passes it to clientconfig.
			if v != "" && !b.has("drivers.openstack.cloud") {
				b.setDriver("cloud", v, name)
			}
		case o.secretEnv[name] != "":
			b.note(name, "openstack-cloud-controller-manager does not read it (its secret is cloud.conf's); polyccm reads drivers.openstack.%s from it, so it must hold cloud.conf's value", o.secretEnv[name])
		case strings.HasPrefix(name, "OS_"):
			b.note(name, "openstack-cloud-controller-manager does not read OS_* variables (its credentials are cloud.conf's); left out")
		default:
			b.unmappedf(name, "openstack-cloud-controller-manager does not read it; polyccm has no setting for it")
		}
	}
}

// cloudFlags adds AddExtraFlags' --user-agent.
func (*openstackImporter) cloudFlags(c *commandLine) {
	c.fs.StringArray("user-agent", nil, "")
	c.cloud = func(b *builder, f *pflag.Flag) bool {
		if f.Name != "user-agent" {
			return false
		}
		b.note("--user-agent", "polyccm sends its own User-Agent (polyccm/<version>, with gophercloud's); left out")
		return true
	}
}

func (o *openstackImporter) finish(b *builder, c *commandLine) {
	if o.global == nil {
		b.invalidf("openstack-cloud-controller-manager does not start without its cloud.conf: pass it with --cloud-config")
		return
	}
	if o.useClouds && !b.has("drivers.openstack.cloud") {
		b.note("[Global] use-clouds", "neither cloud.conf's cloud nor OS_CLOUD names the clouds.yaml entry: set drivers.openstack.cloud to the one upstream used")
	}
	finishCommon(b, c, false, o.routes, false)
	// Upstream served Services of type LoadBalancer unless told not to.
	if o.loadBalancers && (!c.given || c.enabled(names.ServiceLBController)) {
		b.note("[LoadBalancer]", "upstream's service controller made Octavia load balancers for Services of type LoadBalancer; polyccm serves none yet, so it leaves them alone: keep openstack-cloud-controller-manager running for them with --controllers=service-lb-controller and a Lease of its own, --leader-elect-resource-name (docs/switching.md)")
	}
	if o.routes && !c.given {
		b.note("[Route] router-id", "upstream runs its route controller with a router unless --configure-cloud-routes=false or --controllers leaves it out; without the command line, controllers.routes stays off: turn it on with routes.clusterCIDR if upstream made routes")
	}
}
