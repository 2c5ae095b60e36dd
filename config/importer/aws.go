package importer

// aws.go: cloud-provider-aws. Its cloud config is
// pkg/providers/v1/config/config.go CloudConfig ([Global] and
// [ServiceOverride "N"]), read in pkg/providers/v1/aws.go
// (readAWSCloudConfig, newAWSCloud2, getRegionFromMetadata); its own flags
// and controller are the tagging controller's
// (cmd/aws-cloud-controller-manager/main.go,
// pkg/controllers/options/tagging_controller.go); the AWS SDK reads its
// AWS_* variables.

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/spf13/pflag"
)

type awsImporter struct {
	global    map[string]iniEntry // [Global], by gcfgName; nil: no cloud config
	families  []string
	famFrom   string
	overrides map[string]map[string]iniEntry // [ServiceOverride "N"] -> key -> entry
}

func (*awsImporter) upstream() string        { return "cloud-provider-aws" }
func (*awsImporter) providerNames() []string { return []string{"aws"} }
func (*awsImporter) readsEnv(name string) bool {
	return strings.HasPrefix(name, "AWS_")
}

func (a *awsImporter) cloudConfig() func(*builder, []iniEntry) {
	return func(b *builder, entries []iniEntry) {
		a.global = map[string]iniEntry{}
		a.overrides = map[string]map[string]iniEntry{}
		for _, e := range entries {
			switch strings.ToLower(e.Section) {
			case "global":
				n := gcfgName(e.Name)
				if n == "nodeipfamilies" {
					// Multi-valued: each line adds one, a blank one clears.
					if e.Value == "" && !e.Bare {
						a.families = nil
					} else {
						a.families = append(a.families, e.Value)
					}
					a.famFrom = e.where(b.cfgName)
					continue
				}
				a.global[n] = e
			case "serviceoverride":
				if a.overrides[e.Subsection] == nil {
					a.overrides[e.Subsection] = map[string]iniEntry{}
				}
				a.overrides[e.Subsection][gcfgName(e.Name)] = e
			default:
				b.unmappedf(e.where(b.cfgName), "cloud-provider-aws has no [%s] section (it ignores it); polyccm has no such setting", e.Section)
			}
		}
	}
}

// awsRegionOfZone is upstream's azToRegion.
var awsRegionOfZone = regexp.MustCompile(`^([a-zA-Z]+-)+\d+`)

func (a *awsImporter) mapGlobal(b *builder, clusterName string, clusterNameSet bool) {
	get := func(n string) (iniEntry, string, bool) {
		e, ok := a.global[n]
		return e, e.Value, ok && (e.Value != "" || e.Bare)
	}
	src := func(e iniEntry) string { return e.where(b.cfgName) }
	boolean := func(e iniEntry) bool {
		v, ok := gcfgBool(e)
		if !ok {
			b.invalidf("%s: %q is not a boolean (cloud-provider-aws does not start with it)", src(e), e.Value)
		}
		return v
	}

	// The region: Zone wins over Region, as in getRegionFromMetadata.
	region := ""
	if e, v, ok := get("zone"); ok {
		region = awsRegionOfZone.FindString(v)
		if region == "" {
			b.invalidf("%s: %q is not an availability zone (cloud-provider-aws does not start with it)", src(e), v)
		} else {
			b.setDriver("region", region, src(e))
			if r, rv, ok := get("region"); ok && rv != region {
				b.note(src(r), "cloud-provider-aws used the region of Zone (%s), not %s; so does polyccm", region, rv)
			}
		}
	} else if e, v, ok := get("region"); ok {
		region = v
		b.setDriver("region", v, src(e))
	}

	// The cluster ID (awsTagging.init): the legacy tag's, or the new one's.
	id, idSrc := "", ""
	legacy, legacyOK := a.global["kubernetesclustertag"]
	current, currentOK := a.global["kubernetesclusterid"]
	switch {
	case legacyOK && legacy.Value != "" && currentOK && current.Value != "" && legacy.Value != current.Value:
		b.invalidf("%s and KubernetesClusterID differ (cloud-provider-aws does not start: \"clusterID tags did not match\")", src(legacy))
	case legacyOK && legacy.Value != "":
		id, idSrc = legacy.Value, src(legacy)
		b.note(idSrc, "upstream also wrote the legacy KubernetesCluster=%s tag on what it made; polyccm counts that tag as the cluster's but tags only kubernetes.io/cluster/%s", id, id)
	case currentOK && current.Value != "":
		id, idSrc = current.Value, src(current)
	}
	// drivers.aws.clusterID only where it is not clusterName: unset, the
	// driver takes clusterName when the config sets it, else the cluster
	// tag of its instance.
	switch {
	case id != "" && (!clusterNameSet || id != clusterName):
		b.setDriver("clusterID", id, idSrc)
	case id == "" && clusterNameSet:
		b.note("--cluster-name", "upstream took the cluster ID (the <id> of the kubernetes.io/cluster/<id> tags) from the instance it ran on, having no KubernetesClusterID; polyccm takes clusterName, %s: if that instance's tag names another <id>, set drivers.aws.clusterID to it", clusterName)
	case id == "":
		b.note("clusterName", "left unset, as no KubernetesClusterID or --cluster-name was given: polyccm then finds the cluster ID where upstream did, in the kubernetes.io/cluster/<id> tag of the instance it runs on, and names security groups after the default cluster name, kubernetes, as upstream did")
	}

	tagged := id != ""
	_, _, hasSubnet := get("subnetid")
	_, _, hasRole := get("rolearn")
	_, _, hasVPC := get("vpc")
	// newAWSCloud2: VPC and SubnetID count only for a CCM outside the VPC.
	outside := hasVPC && (hasSubnet || hasRole) && tagged

	for _, n := range byLine(a.global) {
		e := a.global[n]
		v := e.Value
		s := src(e)
		switch n {
		case "zone", "region", "kubernetesclustertag", "kubernetesclusterid":
		case "vpc":
			if v != "" {
				b.setDriver("vpcID", v, s)
				if !outside {
					b.note(s, "cloud-provider-aws used the VPC of the instance it ran on and read VPC only with SubnetID or RoleARN and a cluster ID; polyccm uses VPC: check it is that instance's VPC")
				}
			}
		case "subnetid":
			if v == "" {
				continue
			}
			if outside {
				b.unmappedf(s, "polyccm has no setting for the subnet load balancers fall back to when no subnet is tagged (it falls back to the subnet of the instance it runs on); tag the load balancer subnets kubernetes.io/cluster/<id> and kubernetes.io/role/elb instead")
			} else {
				b.note(s, "ignored, as cloud-provider-aws ignored it (it reads SubnetID only with VPC, RoleARN or a cluster ID set, for a CCM outside the VPC)")
			}
		case "routetableid":
			if v != "" {
				b.unmappedf(s, "polyccm routes pod CIDRs in every route table of the VPC tagged kubernetes.io/cluster/<id>; it has no setting for one table: tag %s instead", v)
			}
		case "rolearn":
			if v != "" {
				b.setDriver("roleARN", v, s)
			}
		case "sourcearn":
			if v != "" {
				b.unmappedf(s, "polyccm does not send the aws:SourceArn context of an assumed role; drop that condition from the role's trust policy, or use drivers.aws.externalID")
			}
		case "disablesecuritygroupingress":
			if boolean(e) {
				b.setDriver("disableSecurityGroupIngress", true, s)
			}
		case "elbsecuritygroup":
			if v != "" {
				b.unmappedf(s, "polyccm gives each Classic Load Balancer a security group of its own (as upstream does without ElbSecurityGroup); give Services the aws-load-balancer-security-groups annotation to use %s", v)
			}
		case "supportedtopologyinstancetypepattern":
			if v != "" {
				b.setDriver("supportedTopologyInstanceTypePattern", v, s)
			}
		case "nlbsecuritygroupmode":
			switch v {
			case "":
			case "Managed":
				// polyccm's NLBs always get a managed group.
			default:
				b.unmappedf(s, "%q is not a mode (cloud-provider-aws takes only Managed and refuses NLBs with anything else)", v)
			}
		case "clusterserviceloadbalancerhealthprobemode":
			switch v {
			case "", "ServiceNodePort":
			case "Shared":
				b.unmappedf(s, "polyccm health-checks each Service on its own node port (or healthCheckNodePort), as upstream's ServiceNodePort mode; it has no shared kube-proxy probe")
			default:
				b.unmappedf(s, "%q is not a mode (cloud-provider-aws takes ServiceNodePort or Shared, and refuses load balancers with anything else)", v)
			}
		case "clusterservicesharedloadbalancerhealthprobeport", "clusterservicesharedloadbalancerhealthprobepath":
			if a.global["clusterserviceloadbalancerhealthprobemode"].Value == "Shared" {
				b.unmappedf(s, "goes with ClusterServiceLoadBalancerHealthProbeMode = Shared, which polyccm does not have")
			} else if v != "" {
				b.note(s, "ignored, as upstream ignores it without ClusterServiceLoadBalancerHealthProbeMode = Shared")
			}
		default:
			b.unmappedf(s, "cloud-provider-aws has no such [Global] key (it ignores it); polyccm has no such setting")
		}
	}
	if a.famFrom != "" && len(a.families) > 0 {
		b.setDriver("nodeIPFamilies", a.families, a.famFrom)
	}
	if a.global != nil && a.global["nlbsecuritygroupmode"].Value != "Managed" {
		b.note("NLBSecurityGroupMode", "upstream made new NLBs without a security group (NLBSecurityGroupMode is not Managed); polyccm gives a new NLB a managed one, and adopts existing NLBs as they are (docs/aws-load-balancers.md)")
	}
	a.mapOverrides(b, region)
}

// awsOverride is a [ServiceOverride] service polyccm has an endpoint for.
type awsOverride struct {
	keys []string // drivers.aws.endpoints keys
	id   string   // the service ID cloud-provider-aws compares, exactly
}

// awsOverrides by the lower-cased Service value: the AWS SDK v2 service IDs
// cloud-provider-aws compares, and the SDK v1 names older versions took.
var awsOverrides = map[string]awsOverride{
	"ec2":                       {[]string{"ec2"}, "EC2"},
	"elastic load balancing":    {[]string{"elb"}, "Elastic Load Balancing"},
	"elastic load balancing v2": {[]string{"elbv2"}, "Elastic Load Balancing v2"},
	"ec2imds":                   {[]string{"imds"}, "ec2imds"},
	// SDK v1: one name for both load balancing APIs.
	"elasticloadbalancing": {[]string{"elb", "elbv2"}, "Elastic Load Balancing and Elastic Load Balancing v2"},
	"ec2metadata":          {[]string{"imds"}, "ec2imds"},
}

// awsSigningName is each service's own SigV4 name.
var awsSigningName = map[string]string{"ec2": "ec2", "elb": "elasticloadbalancing", "elbv2": "elasticloadbalancing"}

func (a *awsImporter) mapOverrides(b *builder, region string) {
	seen := map[string]string{}
	for _, sub := range sortedKeys(a.overrides) {
		o := a.overrides[sub]
		where := fmt.Sprintf("%s: [ServiceOverride %q]", b.cfgName, sub)
		val := func(n string) string { return strings.TrimSpace(o[n].Value) }
		svc, reg, u, sreg := val("service"), val("region"), val("url"), val("signingregion")
		// ValidateOverrides: these four are required, service+region unique.
		for _, req := range []struct{ n, v string }{{"Service", svc}, {"Region", reg}, {"URL", u}, {"SigningRegion", sreg}} {
			if req.v == "" {
				b.invalidf("%s has no %s (cloud-provider-aws does not start without it)", where, req.n)
			}
		}
		if svc == "" || reg == "" || u == "" || sreg == "" {
			continue
		}
		if prev, dup := seen[svc+"_"+reg]; dup {
			b.invalidf("%s and [ServiceOverride %q] both override %s in %s (cloud-provider-aws does not start)", where, prev, svc, reg)
			continue
		}
		seen[svc+"_"+reg] = sub
		for _, n := range sortedKeys(o) {
			switch n {
			case "service", "region", "url", "signingregion", "signingname", "signingmethod":
			default:
				b.unmappedf(where+" "+o[n].Name, "cloud-provider-aws has no such override key (it ignores it)")
			}
		}

		ov, known := awsOverrides[strings.ToLower(svc)]
		keys := ov.keys
		if !known {
			switch strings.ToLower(svc) {
			case "kms":
				b.note(where, "polyccm makes no KMS calls; left out")
			case "sts":
				b.note(where, "cloud-provider-aws's STS client takes no override, so it used the regional STS endpoint; so does polyccm unless drivers.aws.endpoints.sts is set")
			default:
				b.note(where, "polyccm does not call %s; left out", svc)
			}
			continue
		}
		imds := ov.id == "ec2imds"
		if !imds && region != "" && reg != region {
			b.note(where, "cloud-provider-aws used it only in region %s and the cluster's region is %s, so it was not used; left out", reg, region)
			continue
		}
		if !b.urlValue(where, u) {
			continue
		}
		if !imds && sreg != reg {
			b.unmappedf(where, "polyccm signs %s requests for the cluster's region; it cannot sign them for SigningRegion %s", svc, sreg)
			continue
		}
		if sn := val("signingname"); sn != "" && !imds && sn != awsSigningName[keys[0]] {
			b.unmappedf(where, "polyccm signs %s requests with the service's own name, %s; it cannot use SigningName %s", svc, awsSigningName[keys[0]], sn)
			continue
		}
		for _, k := range keys {
			b.setDriver("endpoints."+k, u, where)
		}
		if ov.id != svc {
			b.note(where, "Service = %s: cloud-provider-aws now compares the AWS SDK's service ID (%s) exactly, so a recent version ignored this override; polyccm uses it", svc, ov.id)
		}
		if !imds && region == "" {
			b.note(where, "cloud-provider-aws used it only when its region (from the instance metadata service) was %s; polyccm uses it whatever the region", reg)
		}
	}
}

// cloudFlags adds the tagging controller and its flags (upstream's
// TaggingControllerOptions.AddFlags).
func (*awsImporter) cloudFlags(c *commandLine) {
	c.fs.StringToString("tags", nil, "")
	c.fs.StringArray("resources", nil, "")
	c.fs.Float64("tagging-controller-rate-limit", 0, "")
	c.fs.Int("tagging-controller-burst-limit", 0, "")
	c.fs.Int("tagging-controller-concurrent-node-syncs", 1, "")
	c.fs.Bool("tagging-controller-enable-batching", false, "")
	c.addController("tagging-controller", "tagging-controller", true)
	c.cloud = func(b *builder, f *pflag.Flag) bool {
		if f.Name == "tags" || f.Name == "resources" || strings.HasPrefix(f.Name, "tagging-controller-") {
			// The tagging controller's; refused with it (finish).
			return true
		}
		return false
	}
}

// env maps the static keys and the profile; every other AWS_* variable is
// the AWS SDK's, which polyccm's SDK reads as upstream's did.
func (*awsImporter) env(b *builder, env map[string]string) {
	_, id := env["AWS_ACCESS_KEY_ID"]
	_, key := env["AWS_SECRET_ACCESS_KEY"]
	_, session := env["AWS_SESSION_TOKEN"]
	switch {
	case id && key && session:
		b.note("AWS_SESSION_TOKEN", "temporary keys: drivers.aws.accessKeyID and secretAccessKey take long-term keys only, so they are left unset and polyccm's AWS SDK reads AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN itself, as upstream's did: run polyccm with them set (they expire; an instance role or drivers.aws.roleARN does not)")
	case id && key:
		b.secretEnv("accessKeyID", "AWS_ACCESS_KEY_ID", "AWS_ACCESS_KEY_ID")
		b.secretEnv("secretAccessKey", "AWS_SECRET_ACCESS_KEY", "AWS_SECRET_ACCESS_KEY")
	case id || key:
		b.note("AWS_ACCESS_KEY_ID", "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY go together; the AWS SDK ignored the one given, and so does polyccm")
	}
	for _, name := range sortedKeys(env) {
		v := env[name]
		switch {
		case name == "AWS_ACCESS_KEY_ID" || name == "AWS_SECRET_ACCESS_KEY" || name == "AWS_SESSION_TOKEN":
		case name == "AWS_PROFILE" || name == "AWS_DEFAULT_PROFILE":
			if v != "" && !b.has("drivers.aws.profile") {
				b.setDriver("profile", v, name)
			}
		case name == "AWS_REGION" || name == "AWS_DEFAULT_REGION":
			b.note(name, "cloud-provider-aws takes the region from the cloud config's Region or Zone, else the instance metadata service, never from %s; so does polyccm (drivers.aws.region)", name)
		case name == "AWS_MAX_ATTEMPTS" || name == "AWS_RETRY_MODE":
			b.note(name, "polyccm retries AWS calls itself (cloudAPI.timeout; throttling and 5xx with backoff) and turns the SDK's retries off; left out")
		case strings.HasPrefix(name, "AWS_"):
			b.note(name, "read by the AWS SDK, which polyccm uses as upstream did: keep it in polyccm's environment")
		default:
			b.unmappedf(name, "cloud-provider-aws does not read it; polyccm has no setting for it")
		}
	}
}

func (a *awsImporter) finish(b *builder, c *commandLine) {
	name, nameSet := "", false
	if c.given && c.changed("cluster-name") {
		name, nameSet = c.str("cluster-name"), true
	}
	a.mapGlobal(b, name, nameSet)
	finishCommon(b, c, true, true, false)
	if c.given && c.enabled("tagging-controller") {
		b.unmappedf("--controllers", "upstream ran its tagging-controller (the --tags on its instances); polyccm has no tagging controller: tag the instances another way")
	}
}
