package importer

// flags.go reads the upstream CCM's command line with the upstream flag
// set itself (k8s.io/cloud-provider's options, the logging flags, and each
// CCM's own), so every flag, its type and its default are upstream's, and
// maps the flags polyccm's config covers.

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/cloud-provider/app"
	"k8s.io/cloud-provider/names"
	"k8s.io/cloud-provider/options"
	logsapi "k8s.io/component-base/logs/api/v1"
	_ "k8s.io/component-base/logs/json/register" // the --log-json-* flags, as a component registers them

	"github.com/polyccm/polyccm/config"
)

// commandLine is the upstream command line, parsed.
type commandLine struct {
	fs *pflag.FlagSet
	// The upstream CCM's controllers: its names, aliases, and those off
	// unless --controllers names them.
	controllers       []string
	aliases           map[string]string
	disabledByDefault map[string]bool
	// cloud handles the CCM's own flags; it returns false for others.
	cloud func(b *builder, f *pflag.Flag) bool

	given           bool
	cloudConfigPath string
}

func newCommandLine(imp importer) *commandLine {
	c := &commandLine{
		controllers:       app.ControllerNames(app.DefaultInitFuncConstructors),
		aliases:           names.CCMControllerAliases(),
		disabledByDefault: map[string]bool{},
		cloud:             func(*builder, *pflag.Flag) bool { return false },
	}
	for _, n := range app.ControllersDisabledByDefault.List() {
		c.disabledByDefault[n] = true
	}
	o, err := options.NewCloudControllerManagerOptions()
	if err != nil {
		// Only a broken build of k8s.io/cloud-provider gets here.
		panic(fmt.Sprintf("upstream options: %v", err))
	}
	c.fs = pflag.NewFlagSet("cloud-controller-manager", pflag.ContinueOnError)
	c.fs.ParseErrorsAllowlist.UnknownFlags = true // named by parse, which knows the set
	c.fs.SetOutput(io.Discard)
	imp.cloudFlags(c)
	fss := o.Flags(c.controllers, nil, c.aliases, app.AllWebhooks, app.DisabledByDefaultWebhooks)
	for _, name := range fss.Order {
		fss.FlagSets[name].VisitAll(func(f *pflag.Flag) {
			// Upstream's --feature-gates writes the process-wide gate;
			// here it is only read.
			if f.Name != "feature-gates" && c.fs.Lookup(f.Name) == nil {
				c.fs.AddFlag(f)
			}
		})
	}
	c.fs.String("feature-gates", "", "")
	logsapi.AddFlags(logsapi.NewLoggingConfiguration(), c.fs)
	// verflag's --version and globalflag's --help write globals too.
	c.fs.String("version", "false", "")
	c.fs.Lookup("version").NoOptDefVal = "true"
	c.fs.BoolP("help", "h", false, "")
	return c
}

// addController adds one of the CCM's own controllers.
func (c *commandLine) addController(name, alias string, disabledByDefault bool) {
	c.controllers = append(c.controllers, name)
	if alias != "" {
		c.aliases[alias] = name
	}
	c.disabledByDefault[name] = disabledByDefault
}

// parse reads the command line; flags are mapped by visit.
func (c *commandLine) parse(b *builder, args []string) {
	c.given = true
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		args = args[1:] // the program
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			b.invalidf("command line: %q is not a flag; the upstream CCM takes no arguments", a)
			continue
		}
		var f *pflag.Flag
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "--") {
			f = c.fs.Lookup(name)
		} else if len(name) >= 1 {
			f = c.fs.ShorthandLookup(name[:1])
			hasValue = hasValue || len(name) > 1
		}
		if f == nil {
			b.invalidf("command line: %s is not a flag of %s", strings.SplitN(a, "=", 2)[0], b.upstreamName())
			// pflag skips an unknown flag's value the same way.
			if !hasValue && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				i++
			}
			continue
		}
		if !hasValue && f.NoOptDefVal == "" {
			i++ // its value
		}
	}
	if err := c.fs.Parse(args); err != nil {
		b.invalidf("command line: %v", err)
		return
	}
	c.fs.Visit(func(f *pflag.Flag) { c.visit(b, f) })
}

// unmappedFlags are upstream flags polyccm has no setting for, with why.
// Set to their defaults they change nothing and are left out quietly.
var unmappedFlags = map[string]string{
	"master":                                 "polyccm takes the API server from its kubeconfig (kubeconfig, or in-cluster credentials); put the address there",
	"min-resync-period":                      "polyccm's informers resync on upstream's default schedule; it has no setting for it",
	"controller-start-interval":              "polyccm starts its controllers together; it has no setting for it",
	"kube-api-content-type":                  "polyccm sends protobuf, upstream's default; it has no setting for it",
	"external-cloud-volume-plugin":           "it serves kube-controller-manager's in-tree volume plugins; polyccm has none",
	"enable-leader-migration":                "polyccm has no leader migration; it takes over through the same Lease (docs/switching.md)",
	"leader-migration-config":                "polyccm has no leader migration; it takes over through the same Lease (docs/switching.md)",
	"feature-gates":                          "polyccm has no setting for Kubernetes feature gates",
	"tls-cipher-suites":                      "polyccm's secure port takes only a certificate and key (serving.certFile, serving.keyFile)",
	"tls-min-version":                        "polyccm's secure port takes only a certificate and key (serving.certFile, serving.keyFile)",
	"tls-curve-preferences":                  "polyccm's secure port takes only a certificate and key (serving.certFile, serving.keyFile)",
	"tls-sni-cert-key":                       "polyccm's secure port takes one certificate and key (serving.certFile, serving.keyFile)",
	"http2-max-streams-per-connection":       "polyccm's secure port has no setting for it",
	"disable-http2-serving":                  "polyccm's secure port has no setting for it",
	"permit-port-sharing":                    "polyccm's secure port has no setting for it",
	"permit-address-sharing":                 "polyccm's secure port has no setting for it",
	"authentication-skip-lookup":             "polyccm authenticates /metrics callers by token review with its kubeconfig; it has no setting for it",
	"authentication-tolerate-lookup-failure": "polyccm authenticates /metrics callers by token review with its kubeconfig; it has no setting for it",
	"authentication-token-webhook-cache-ttl": "polyccm authenticates /metrics callers by token review with its kubeconfig; it has no setting for it",
	"client-ca-file":                         "polyccm authenticates /metrics callers by token review only, not client certificates",
	"authorization-always-allow-paths":       "polyccm always allows /healthz, /readyz and /livez and authorizes every other path",
	"vmodule":                                "polyccm has one verbosity (logging.verbosity)",
	"log-flush-frequency":                    "polyccm's logging takes a verbosity and a format only",
	"contention-profiling":                   "polyccm serves no profiling endpoints",
	"webhooks":                               "polyccm runs no webhooks",
	"help":                                   "the upstream CCM prints its help and exits; it is not a setting",
	"version":                                "the upstream CCM prints its version and exits; it is not a setting",
}

// unmappedPrefixes covers families of flags the way unmappedFlags does.
var unmappedPrefixes = []struct{ prefix, why string }{
	{"requestheader-", "polyccm authenticates /metrics callers by token review only, not through a front proxy"},
	{"authorization-webhook-cache-", "polyccm has no setting for its authorization cache"},
	{"webhook-", "polyccm runs no webhooks"},
	{"log-json-", "polyccm's logging takes a verbosity and a format only"},
	{"log-text-", "polyccm's logging takes a verbosity and a format only"},
}

// visit maps one flag the command line set.
func (c *commandLine) visit(b *builder, f *pflag.Flag) {
	src := flagName(f)
	val := f.Value.String()
	dur := func() time.Duration { d, _ := c.fs.GetDuration(f.Name); return d }
	integer := func() int { n, _ := strconv.Atoi(val); return n }
	if c.cloud(b, f) {
		return
	}
	switch f.Name {
	case "cloud-provider":
		ok := false
		for _, n := range b.imp.providerNames() {
			ok = ok || val == n
		}
		if !ok {
			b.invalidf("command line: --cloud-provider=%s is not %s (import --from the CCM this command line ran)", val, b.upstreamName())
		}
	case "cloud-config":
		c.cloudConfigPath = val
	case "cluster-name", "controllers", "configure-cloud-routes", "allocate-node-cidrs", "cidr-allocator-type", "cluster-cidr":
		// Decided with every source at hand (finish).
	case "leader-elect":
		b.set("leaderElection.enabled", val == "true", src)
	case "leader-elect-lease-duration":
		b.set("leaderElection.leaseDuration", dur(), src)
	case "leader-elect-renew-deadline":
		b.set("leaderElection.renewDeadline", dur(), src)
	case "leader-elect-retry-period":
		b.set("leaderElection.retryPeriod", dur(), src)
	case "leader-elect-resource-name":
		b.set("leaderElection.leaseName", val, src)
	case "leader-elect-resource-namespace":
		b.set("leaderElection.namespace", val, src)
	case "leader-elect-resource-lock":
		if val != "leases" {
			b.unmappedf(src+"="+val, "polyccm holds a Lease (leases), upstream's default and the only lock current Kubernetes has; switch the upstream CCM to leases first, or make sure it is stopped before polyccm starts")
		}
	case "kube-api-qps":
		q, _ := strconv.ParseFloat(val, 64)
		b.set("kubeAPI.qps", q, src)
	case "kube-api-burst":
		b.set("kubeAPI.burst", integer(), src)
	case "kubeconfig":
		b.set("kubeconfig", val, src)
	case "authentication-kubeconfig", "authorization-kubeconfig":
		if kc, _ := c.fs.GetString("kubeconfig"); val != "" && val != kc {
			b.unmappedf(src, "polyccm checks /metrics callers with its own kubeconfig (kubeconfig); it cannot use another one")
		}
	case "node-status-update-frequency":
		b.set("nodes.statusUpdateFrequency", dur(), src)
	case "node-monitor-period":
		b.set("nodes.monitorPeriod", dur(), src)
	case "route-reconciliation-period":
		b.set("routes.reconcilePeriod", dur(), src)
	case "concurrent-node-syncs":
		b.set("nodes.concurrentSyncs", integer(), src)
		// Upstream: status updates use as many workers unless told.
		if n, _ := c.fs.GetInt32("concurrent-node-status-updates"); n == 0 {
			b.set("nodes.concurrentStatusUpdates", integer(), src)
		}
	case "concurrent-node-status-updates":
		if integer() > 0 {
			b.set("nodes.concurrentStatusUpdates", integer(), src)
		}
	case "concurrent-node-lifecycle-syncs":
		b.set("nodes.concurrentLifecycleSyncs", integer(), src)
	case "concurrent-service-syncs":
		b.set("services.concurrentSyncs", integer(), src)
	case "bind-address":
		b.set("serving.bindAddress", val, src)
	case "secure-port":
		b.set("serving.securePort", integer(), src)
	case "tls-cert-file":
		b.set("serving.certFile", val, src)
	case "tls-private-key-file":
		b.set("serving.keyFile", val, src)
	case "cert-dir":
		if tls, _ := c.fs.GetString("tls-cert-file"); tls == "" {
			b.note(src, "polyccm keeps its self-signed serving certificate in memory, so it needs no directory")
		}
	case "v":
		b.set("logging.verbosity", integer(), src)
	case "logging-format":
		b.set("logging.format", val, src)
	case "profiling":
		if val == "true" {
			b.unmappedf(src, "polyccm serves no profiling endpoints")
		}
	case "allow-untagged-cloud":
		// polyccm never refuses to start for want of a cluster ID.
	case "use-service-account-credentials":
		if val == "true" {
			b.note(src, "polyccm's controllers act as one identity (system:polyccm, packaging/kubernetes/rbac.yaml), not one service account each")
		}
	case "node-sync-period":
		// Deprecated upstream and a no-op there.
	default:
		why, ok := unmappedFlags[f.Name]
		for _, p := range unmappedPrefixes {
			if !ok && strings.HasPrefix(f.Name, p.prefix) {
				why, ok = p.why, true
			}
		}
		if !ok {
			why = "polyccm has no setting for it"
		}
		if val != f.DefValue {
			// A URL's credentials (--master) are a secret: never shown.
			b.unmappedf(src+"="+config.RedactURL(val), "%s", why)
		}
	}
}

// flagName is a flag as it is written: -v, --cluster-name.
func flagName(f *pflag.Flag) string {
	if len(f.Name) == 1 {
		return "-" + f.Name
	}
	return "--" + f.Name
}

// enabled says whether the upstream CCM ran a controller, by its
// --controllers (upstream's rules: the first mention wins, "*" turns on
// all but the disabled-by-default ones).
func (c *commandLine) enabled(name string) bool {
	star := false
	for _, e := range c.controllerList() {
		off := strings.HasPrefix(e, "-")
		n := strings.TrimPrefix(e, "-")
		if a, ok := c.aliases[n]; ok {
			n = a
		}
		if n == name {
			return !off
		}
		star = star || e == "*"
	}
	return star && !c.disabledByDefault[name]
}

func (c *commandLine) controllerList() []string {
	list, _ := c.fs.GetStringSlice("controllers")
	return list
}

// checkControllers reports --controllers entries upstream does not know.
func (c *commandLine) checkControllers(b *builder) {
	list := c.controllerList()
	known := map[string]bool{"*": true}
	for _, n := range c.controllers {
		known[n] = true
	}
	for a := range c.aliases {
		known[a] = true
	}
	for _, e := range list {
		if !known[strings.TrimPrefix(e, "-")] {
			b.invalidf("command line: --controllers: %q is not a controller of %s (it has %s)", e, b.upstreamName(), strings.Join(c.controllers, ", "))
		}
	}
}

// changed says whether the command line set a flag.
func (c *commandLine) changed(name string) bool {
	f := c.fs.Lookup(name)
	return f != nil && f.Changed
}

func (c *commandLine) str(name string) string {
	f := c.fs.Lookup(name)
	if f == nil {
		return ""
	}
	return f.Value.String()
}

func (c *commandLine) boolean(name string) bool { return c.str(name) == "true" }

// mapControllers maps upstream's four shared controllers; the cloud says
// whether it had load balancers and routes at all.
func (c *commandLine) mapControllers(b *builder, hasLoadBalancers, hasRoutes bool) {
	c.checkControllers(b)
	src := "upstream's default --controllers=*"
	if c.changed("controllers") {
		src = "--controllers=" + strings.Join(c.controllerList(), ",")
	}
	b.set("controllers.nodes", c.enabled(names.CloudNodeController), src)
	b.set("controllers.nodeLifecycle", c.enabled(names.CloudNodeLifecycleController), src)
	b.set("controllers.services", c.enabled(names.ServiceLBController) && hasLoadBalancers, src)
	routes := c.enabled(names.NodeRouteController) && c.boolean("configure-cloud-routes") && hasRoutes
	if routes && strings.TrimSpace(c.str("cluster-cidr")) == "" {
		b.unmappedf("--configure-cloud-routes", "the upstream CCM runs its route controller (--controllers and --configure-cloud-routes, true by default) but the command line has no --cluster-cidr, without which that controller does not start; add the --cluster-cidr it ran with, or --configure-cloud-routes=false")
		routes = false
	}
	b.set("controllers.routes", routes, src+", --configure-cloud-routes")
	if cidr := c.str("cluster-cidr"); cidr != "" {
		b.set("routes.clusterCIDR", cidr, "--cluster-cidr")
	}
}
