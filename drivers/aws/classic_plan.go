package aws

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbctypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing/types"

	"github.com/polyccm/polyccm/core/loadbalancers"
)

// Kinds of the Classic resources a plan changes, besides kindLB,
// kindListener, kindSG and kindNodeSG.
const (
	kindPolicy         = "policy"
	kindListenerPolicy = "listener policies"
	kindBackendPolicy  = "backend policies"
	kindHealthCheck    = "health check"
	kindAttributes     = "attributes"
	kindInstances      = "instances"
)

// instanceBatch is how many instances one (de)registration names. The
// API documents no limit per call (the AWS CCM sends every instance in
// one); the account's default quota is 1,000 registered instances per
// Classic Load Balancer (adjustable), so one call covers a load balancer
// within that quota and a request stays some 50 KB.
const instanceBatch = 1000

// planClassic computes the changes that make what AWS has (obs) the
// Classic Load Balancer the Service asks for, in an order AWS accepts:
// its group, the load balancer, listeners, policies (made before they
// are set), health check, attributes, instances, then the node groups.
// A load balancer the plan creates is planned as if it had the
// listeners it is created with and nothing else, so its create is
// followed by every setting it needs. It makes no call; ap only gives the
// changes their Apply, and is nil for a plan that is only shown.
func planClassic(spec *classicSpec, subnets, targets []string, obs *classicObserved, ap *classicApplier) loadbalancers.Plan {
	var p loadbalancers.Plan
	if len(spec.ownSGs) == 0 {
		planClassicSG(&p, spec, obs, ap)
	}
	lb, attrs := obs.lb, obs.attrs
	if lb == nil {
		lb = &elbctypes.LoadBalancerDescription{}
		for _, l := range spec.listeners {
			lb.ListenerDescriptions = append(lb.ListenerDescriptions, elbctypes.ListenerDescription{Listener: awsListener(l)})
		}
		attrs = &elbctypes.LoadBalancerAttributes{}
		p.Add(change{Action: loadbalancers.Create, Kind: kindLB, Name: spec.name, Fields: []field{
			{Name: "Scheme", From: "none", To: classicScheme(spec)},
			{Name: "Subnets", From: "none", To: showList(subnets)},
			{Name: "SecurityGroups", From: "none", To: showList(wantedSGs(spec, obs))},
			{Name: "Listeners", From: "none", To: showClassicListeners(spec.listeners)},
		}, Apply: ap.run(func(ctx context.Context, a *classicApplier) error { return a.create(ctx) })})
	} else {
		planClassicLB(&p, spec, subnets, obs, ap)
		planClassicListeners(&p, spec, lb, ap)
	}
	planClassicPolicies(&p, spec, lb, obs.policies, ap)
	planClassicHealth(&p, spec, lb, ap)
	planClassicAttributes(&p, spec, attrs, ap)
	planClassicInstances(&p, spec, lb, targets, ap)
	if obs.nodes != nil {
		planClassicNodeGroups(&p, wantedSGs(spec, obs)[0], obs.nodes, ap)
	}
	return p
}

func classicScheme(spec *classicSpec) string {
	if spec.internal {
		return "internal"
	}
	return "internet-facing"
}

// wantedSGs are the load balancer's groups: the Service's own or the
// managed one (by name while it is not made yet), then the extra ones.
func wantedSGs(spec *classicSpec, obs *classicObserved) []string {
	own := spec.ownSGs
	if len(own) == 0 {
		own = []string{classicSGName(spec.name)}
		if obs.sg != nil {
			own = []string{aws.ToString(obs.sg.GroupId)}
		}
	}
	return slices.Concat(own, spec.extraSGs)
}

// classicIngress is what the managed group lets in: each listener port,
// and ICMP "fragmentation needed" for MTU discovery, from the source
// ranges, as the AWS CCM sets it.
func classicIngress(spec *classicSpec) map[ingressRule]bool {
	out := map[ingressRule]bool{}
	for _, c := range spec.sources {
		for _, l := range spec.listeners {
			out[ingressRule{proto: "tcp", from: l.port, to: l.port, cidr: c}] = true
		}
		out[ingressRule{proto: "icmp", from: 3, to: 4, cidr: c}] = true
	}
	return out
}

func planClassicSG(p *loadbalancers.Plan, spec *classicSpec, obs *classicObserved, ap *classicApplier) {
	want := classicIngress(spec)
	if obs.sg == nil {
		p.Add(change{Action: loadbalancers.Create, Kind: kindSG, Name: classicSGName(spec.name),
			Fields: []field{{Name: "Ingress", From: "none", To: showIngress(want)}},
			Apply:  ap.run(func(ctx context.Context, a *classicApplier) error { return a.createSG(ctx) })})
		return
	}
	id := aws.ToString(obs.sg.GroupId)
	have := ingressOf(obs.sg)
	var fields []field
	if obs.sgAdopted {
		if _, f := tagChange(ec2TagMap(obs.sg.Tags), spec.tags); f != nil {
			fields = append(fields, *f)
		}
	}
	add, remove := loadbalancers.Delta(want, have, compareIngress)
	if len(add)+len(remove) > 0 {
		fields = append(fields, field{Name: "Ingress", From: showIngress(have), To: showIngress(want)})
	}
	adopt := obs.sgAdopted
	p.Add(change{Action: loadbalancers.Update, Kind: kindSG, Name: id, Fields: fields,
		Apply: ap.run(func(ctx context.Context, a *classicApplier) error {
			return a.nlb().updateSecurityGroup(ctx, id, a.adoptTags(adopt), add, remove)
		})})
}

func planClassicLB(p *loadbalancers.Plan, spec *classicSpec, subnets []string, obs *classicObserved, ap *classicApplier) {
	var u classicLBUpdate
	var fields []field
	have := slices.Sorted(slices.Values(obs.lb.Subnets))
	u.attach, u.detach = loadbalancers.Delta(setOf(subnets), setOf(have), strings.Compare)
	if len(u.attach)+len(u.detach) > 0 {
		fields = append(fields, field{Name: "Subnets", From: showList(have), To: showList(subnets)})
	}
	want := wantedSGs(spec, obs)
	if !slices.Equal(slices.Sorted(slices.Values(obs.lb.SecurityGroups)), slices.Sorted(slices.Values(want))) {
		u.sgs = true
		fields = append(fields, field{Name: "SecurityGroups", From: showList(obs.lb.SecurityGroups), To: showList(want)})
	}
	var f *field
	if u.tags, f = tagChange(obs.tags, spec.tags); f != nil {
		fields = append(fields, *f)
	}
	p.Add(change{Action: loadbalancers.Update, Kind: kindLB, Name: spec.name, Fields: fields,
		Apply: ap.run(func(ctx context.Context, a *classicApplier) error { return a.updateLB(ctx, u) })})
}

func setOf(s []string) map[string]bool {
	m := map[string]bool{}
	for _, x := range s {
		m[x] = true
	}
	return m
}

// planClassicListeners replaces each listener that differs (a Classic
// listener cannot be changed in place) and removes those of ports gone.
func planClassicListeners(p *loadbalancers.Plan, spec *classicSpec, lb *elbctypes.LoadBalancerDescription, ap *classicApplier) {
	have := map[int32]classicListener{}
	for _, d := range lb.ListenerDescriptions {
		if d.Listener != nil {
			have[d.Listener.LoadBalancerPort] = fromAWSListener(*d.Listener)
		}
	}
	for _, want := range spec.listeners {
		name := spec.name + ":" + strconv.Itoa(int(want.port))
		cur, ok := have[want.port]
		delete(have, want.port)
		switch {
		case !ok:
			p.Add(change{Action: loadbalancers.Create, Kind: kindListener, Name: name,
				Fields: []field{{Name: "Listener", From: "none", To: want.String()}},
				Apply:  ap.run(func(ctx context.Context, a *classicApplier) error { return a.createListener(ctx, want) })})
		case !sameListener(cur, want):
			p.Add(change{Action: loadbalancers.Update, Kind: kindListener, Name: name,
				Fields: []field{{Name: "Listener", From: cur.String(), To: want.String()}},
				Apply: ap.run(func(ctx context.Context, a *classicApplier) error {
					if err := a.deleteListener(ctx, want.port); err != nil {
						return err
					}
					return a.createListener(ctx, want)
				})})
		}
	}
	for _, port := range slices.Sorted(maps.Keys(have)) {
		p.Add(change{Action: loadbalancers.Delete, Kind: kindListener, Name: spec.name + ":" + strconv.Itoa(int(port)),
			Apply: ap.run(func(ctx context.Context, a *classicApplier) error { return a.deleteListener(ctx, port) })})
	}
}

// sameListener compares as AWS does: protocols and certificate ARNs
// without regard to case.
func sameListener(a, b classicListener) bool {
	return a.port == b.port && a.nodePort == b.nodePort && strings.EqualFold(a.proto, b.proto) &&
		strings.EqualFold(a.instance, b.instance) && strings.EqualFold(a.cert, b.cert)
}

func fromAWSListener(l elbctypes.Listener) classicListener {
	return classicListener{port: l.LoadBalancerPort, nodePort: aws.ToInt32(l.InstancePort),
		proto: strings.ToUpper(aws.ToString(l.Protocol)), instance: strings.ToUpper(aws.ToString(l.InstanceProtocol)),
		cert: aws.ToString(l.SSLCertificateId)}
}

func awsListener(l classicListener) *elbctypes.Listener {
	out := &elbctypes.Listener{LoadBalancerPort: l.port, InstancePort: aws.Int32(l.nodePort),
		Protocol: aws.String(l.proto), InstanceProtocol: aws.String(l.instance)}
	if l.cert != "" {
		out.SSLCertificateId = aws.String(l.cert)
	}
	return out
}

func showClassicListeners(ls []classicListener) string {
	var out []string
	for _, l := range ls {
		out = append(out, l.String())
	}
	return showList(out)
}

// planClassicPolicies makes the proxy protocol and SSL negotiation
// policies the Service needs and sets them where they belong: the SSL
// one on every SSL and HTTPS listener, the proxy one on every node port
// (and no policy on node ports no listener uses any more), as upstream.
func planClassicPolicies(p *loadbalancers.Plan, spec *classicSpec, lb *elbctypes.LoadBalancerDescription, policies map[string]bool, ap *classicApplier) {
	if spec.proxy && !policies[proxyProtocolPolicy] {
		p.Add(change{Action: loadbalancers.Create, Kind: kindPolicy, Name: proxyProtocolPolicy,
			Fields: []field{{Name: "ProxyProtocol", From: "none", To: "true"}},
			Apply:  ap.run(func(ctx context.Context, a *classicApplier) error { return a.createProxyPolicy(ctx) })})
	}
	ssl := ""
	if spec.sslPolicy != "" {
		ssl = sslPolicyPrefix + spec.sslPolicy
		if !policies[ssl] {
			p.Add(change{Action: loadbalancers.Create, Kind: kindPolicy, Name: ssl,
				Fields: []field{{Name: "Reference-Security-Policy", From: "none", To: spec.sslPolicy}},
				Apply:  ap.run(func(ctx context.Context, a *classicApplier) error { return a.createSSLPolicy(ctx, ssl) })})
		}
	}
	havePolicies := map[int32][]string{}
	for _, d := range lb.ListenerDescriptions {
		if d.Listener != nil {
			havePolicies[d.Listener.LoadBalancerPort] = d.PolicyNames
		}
	}
	if ssl != "" {
		for _, l := range spec.listeners {
			if l.proto != "SSL" && l.proto != "HTTPS" {
				continue
			}
			have := havePolicies[l.port]
			if cur := fromListenerPort(lb, l.port); cur == nil || !sameListener(*cur, l) {
				have = nil // replaced by this plan: no policies yet
			}
			if !slices.Equal(have, []string{ssl}) {
				port := l.port
				p.Add(change{Action: loadbalancers.Update, Kind: kindListenerPolicy, Name: spec.name + ":" + strconv.Itoa(int(port)),
					Fields: []field{{Name: "PolicyNames", From: showList(have), To: ssl}},
					Apply:  ap.run(func(ctx context.Context, a *classicApplier) error { return a.setListenerPolicies(ctx, port, ssl) })})
			}
		}
	}
	backends := map[int32][]string{}
	for _, b := range lb.BackendServerDescriptions {
		backends[aws.ToInt32(b.InstancePort)] = b.PolicyNames
	}
	used := map[int32]bool{}
	for _, l := range spec.listeners {
		used[l.nodePort] = true
	}
	ports := slices.Collect(maps.Keys(used))
	for port, have := range backends {
		if !used[port] && len(have) > 0 {
			ports = append(ports, port) // a node port gone: its policies go
		}
	}
	slices.Sort(ports)
	for _, port := range ports {
		have := backends[port]
		var names []string
		if used[port] && spec.proxy {
			names = []string{proxyProtocolPolicy}
		}
		if used[port] && slices.Contains(have, proxyProtocolPolicy) == spec.proxy {
			continue // upstream changes a used port's policies only to turn proxy protocol on or off
		}
		p.Add(change{Action: loadbalancers.Update, Kind: kindBackendPolicy, Name: spec.name + ":" + strconv.Itoa(int(port)),
			Fields: []field{{Name: "PolicyNames", From: showList(have), To: showList(names)}},
			Apply:  ap.run(func(ctx context.Context, a *classicApplier) error { return a.setBackendPolicies(ctx, port, names) })})
	}
}

func fromListenerPort(lb *elbctypes.LoadBalancerDescription, port int32) *classicListener {
	for _, d := range lb.ListenerDescriptions {
		if d.Listener != nil && d.Listener.LoadBalancerPort == port {
			l := fromAWSListener(*d.Listener)
			return &l
		}
	}
	return nil
}

func planClassicHealth(p *loadbalancers.Plan, spec *classicSpec, lb *elbctypes.LoadBalancerDescription, ap *classicApplier) {
	var have classicHealth
	if hc := lb.HealthCheck; hc != nil {
		have = classicHealth{Target: aws.ToString(hc.Target), Interval: aws.ToInt32(hc.Interval), Timeout: aws.ToInt32(hc.Timeout),
			HealthyThreshold: aws.ToInt32(hc.HealthyThreshold), UnhealthyThreshold: aws.ToInt32(hc.UnhealthyThreshold)}
	}
	fields := loadbalancers.Diff(have, spec.health)
	p.Add(change{Action: loadbalancers.Update, Kind: kindHealthCheck, Name: spec.name, Fields: fields,
		Apply: ap.run(func(ctx context.Context, a *classicApplier) error { return a.configureHealthCheck(ctx) })})
}

// planClassicAttributes compares the attributes the Service sets; those
// it leaves unset (zero in want) are compared as AWS has them.
func planClassicAttributes(p *loadbalancers.Plan, spec *classicSpec, attrs *elbctypes.LoadBalancerAttributes, ap *classicApplier) {
	have := classicAttrsOf(attrs)
	want := spec.attrs
	if want.DrainingTimeout == 0 {
		want.DrainingTimeout = have.DrainingTimeout
	}
	if want.EmitInterval == 0 {
		want.EmitInterval = have.EmitInterval
	}
	if want.Bucket == "" {
		want.Bucket = have.Bucket
	}
	if want.Prefix == "" {
		want.Prefix = have.Prefix
	}
	fields := loadbalancers.Diff(have, want)
	p.Add(change{Action: loadbalancers.Update, Kind: kindAttributes, Name: spec.name, Fields: fields,
		Apply: ap.run(func(ctx context.Context, a *classicApplier) error { return a.modifyAttributes(ctx, want) })})
}

func classicAttrsOf(at *elbctypes.LoadBalancerAttributes) classicAttrs {
	var c classicAttrs
	if at == nil {
		return c
	}
	if at.CrossZoneLoadBalancing != nil {
		c.CrossZone = at.CrossZoneLoadBalancing.Enabled
	}
	if d := at.ConnectionDraining; d != nil {
		c.Draining, c.DrainingTimeout = d.Enabled, aws.ToInt32(d.Timeout)
	}
	if at.ConnectionSettings != nil {
		c.IdleTimeout = aws.ToInt32(at.ConnectionSettings.IdleTimeout)
	}
	if l := at.AccessLog; l != nil {
		c.AccessLog, c.EmitInterval, c.Bucket, c.Prefix = l.Enabled, aws.ToInt32(l.EmitInterval), aws.ToString(l.S3BucketName), aws.ToString(l.S3BucketPrefix)
	}
	return c
}

func planClassicInstances(p *loadbalancers.Plan, spec *classicSpec, lb *elbctypes.LoadBalancerDescription, targets []string, ap *classicApplier) {
	var have []string
	for _, in := range lb.Instances {
		have = append(have, aws.ToString(in.InstanceId))
	}
	slices.Sort(have)
	register, deregister := loadbalancers.Delta(setOf(targets), setOf(have), strings.Compare)
	if len(register)+len(deregister) == 0 {
		return
	}
	p.Add(change{Action: loadbalancers.Update, Kind: kindInstances, Name: spec.name,
		Fields: []field{{Name: "Instances", From: showList(have), To: showList(targets)}},
		Apply:  ap.run(func(ctx context.Context, a *classicApplier) error { return a.syncInstances(ctx, register, deregister) })})
}

// planClassicNodeGroups lets the load balancer's group into the groups of
// its instances, and takes it out of cluster groups none of them use, as
// the AWS CCM's updateInstanceSecurityGroupsForLoadBalancer. lbSG is the
// managed group's name while it is not made yet.
func planClassicNodeGroups(p *loadbalancers.Plan, lbSG string, ng *classicNodeGroups, ap *classicApplier) {
	for _, id := range slices.Sorted(maps.Keys(ng.want)) {
		if ng.have[id] {
			continue
		}
		p.Add(change{Action: loadbalancers.Update, Kind: kindNodeSG, Name: id,
			Fields: []field{{Name: "IngressGranted", From: "none", To: "all from " + lbSG}},
			Apply:  ap.run(func(ctx context.Context, a *classicApplier) error { return a.grantNodeGroup(ctx, id) })})
	}
	for _, id := range slices.Sorted(maps.Keys(ng.have)) {
		if ng.want[id] || !ng.tagged[id] || len(ng.shared) > 0 {
			continue
		}
		p.Add(change{Action: loadbalancers.Update, Kind: kindNodeSG, Name: id,
			Fields: []field{{Name: "IngressRevoked", From: "all from " + lbSG, To: "none"}},
			Apply:  ap.run(func(ctx context.Context, a *classicApplier) error { return a.l.revokeGroupRule(ctx, a.cl, id, lbSG) })})
	}
	if ng.released != "" {
		p.Add(change{Action: loadbalancers.Update, Kind: kindNodeSG, Name: "rules naming " + ng.released,
			Fields: []field{{Name: "IngressRevoked", From: "all from " + ng.released + " (no longer named, unless another Service uses it)", To: "none"}},
			Apply: ap.run(func(ctx context.Context, a *classicApplier) error {
				return a.l.releaseNamedGroup(ctx, a.cl, a.vpc, a.svc, ng.released)
			})})
	}
}
