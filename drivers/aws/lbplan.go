package aws

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"

	"github.com/polyccm/polyccm/core/loadbalancers"
)

// Kinds of the resources a plan changes.
const (
	kindSG       = "security group"
	kindLB       = "load balancer"
	kindTG       = "target group"
	kindListener = "listener"
	kindNodeSG   = "node security group"
)

type (
	change = loadbalancers.Change
	field  = loadbalancers.Field
)

// planNLB computes the changes that make what AWS has (obs) the NLB the
// Service asks for: one change per resource, in an order AWS accepts
// (a security group before the NLB that uses it, target groups before the
// listeners that forward to them, listeners off a target group before it
// is deleted). It makes no call; ap only gives the changes their Apply,
// and is nil for a plan that is only shown.
func planNLB(spec *nlbSpec, subnets []subnet, targets []string, obs *observed, ap *applier) loadbalancers.Plan {
	var p loadbalancers.Plan
	planSecurityGroup(&p, spec, obs, ap)
	planLoadBalancer(&p, spec, subnets, obs, ap)
	planDetachedGroup(&p, spec, obs, ap)
	used := planTargetGroups(&p, spec, targets, obs, ap)
	planListeners(&p, spec, obs, ap)
	// Target groups the NLB no longer needs: a port went away, or changed
	// protocol or node port (which a target group cannot change).
	for _, tg := range obs.attached {
		arn := aws.ToString(tg.TargetGroupArn)
		if used[arn] {
			continue
		}
		p.Add(change{Action: loadbalancers.Delete, Kind: kindTG, Name: aws.ToString(tg.TargetGroupName),
			Apply: ap.run(func(ctx context.Context, a *applier) error { return a.l.deleteTargetGroup(ctx, a.cl, arn) })})
	}
	if obs.nodes != nil {
		planNodeGroups(&p, spec.name, nlbTrafficOf(spec, subnets).rules(), obs.nodes, ap)
	}
	return p
}

func planSecurityGroup(p *loadbalancers.Plan, spec *nlbSpec, obs *observed, ap *applier) {
	if obs.noSG || len(spec.byoSGs) > 0 {
		return
	}
	want := wantedIngress(spec)
	if obs.sg == nil {
		p.Add(change{Action: loadbalancers.Create, Kind: kindSG, Name: spec.sgName,
			Fields: []field{{Name: "Ingress", From: "none", To: showIngress(want)}},
			Apply:  ap.run(func(ctx context.Context, a *applier) error { return a.createSecurityGroup(ctx) })})
		return
	}
	id := aws.ToString(obs.sg.GroupId)
	have := ingressOf(obs.sg)
	var fields []field
	tags := adoptTags(obs.sgAdopted, spec)
	if aws.ToString(obs.sg.GroupName) != spec.sgName && ec2TagMap(obs.sg.Tags)[TagServiceName] == "" {
		// The AWS CCM's group under another name (managedGroupOn): it is
		// tagged with the Service, so that the Service's deletion finds it
		// once the NLB, which names it, is gone.
		tags = maps.Clone(tags)
		if tags == nil {
			tags = map[string]string{}
		}
		tags[TagServiceName] = spec.service
	}
	if _, f := tagChange(ec2TagMap(obs.sg.Tags), tags); f != nil {
		fields = append(fields, *f)
	}
	add, remove := loadbalancers.Delta(want, have, compareIngress)
	if len(add)+len(remove) > 0 {
		fields = append(fields, field{Name: "Ingress", From: showIngress(have), To: showIngress(want)})
	}
	p.Add(change{Action: loadbalancers.Update, Kind: kindSG, Name: id, Fields: fields,
		Apply: ap.run(func(ctx context.Context, a *applier) error { return a.updateSecurityGroup(ctx, id, tags, add, remove) })})
}

func planLoadBalancer(p *loadbalancers.Plan, spec *nlbSpec, subnets []subnet, obs *observed, ap *applier) {
	var want []string
	for _, s := range subnets {
		want = append(want, s.id)
	}
	slices.Sort(want)
	if obs.lb == nil {
		p.Add(change{Action: loadbalancers.Create, Kind: kindLB, Name: spec.name,
			Fields: []field{{Name: "Scheme", From: "none", To: string(scheme(spec))}, {Name: "Subnets", From: "none", To: showList(want)}},
			Apply:  ap.run(func(ctx context.Context, a *applier) error { return a.createLB(ctx) })})
		return
	}
	lb := obs.lb
	var u lbUpdate
	var fields []field
	if lb.IpAddressType != ipAddressType(spec) {
		u.ipType = true
		fields = append(fields, field{Name: "IpAddressType", From: string(lb.IpAddressType), To: string(ipAddressType(spec))})
	}
	var have []string
	for _, az := range lb.AvailabilityZones {
		have = append(have, aws.ToString(az.SubnetId))
	}
	slices.Sort(have)
	if !slices.Equal(have, want) {
		u.subnets = want
		fields = append(fields, field{Name: "Subnets", From: showList(have), To: showList(want)})
	}
	if len(spec.byoSGs) > 0 {
		// The Service's own groups (security-groups) replace polyccm's.
		if have, want := sortedCopy(lb.SecurityGroups), sortedCopy(spec.byoSGs); !obs.noSG && !slices.Equal(have, want) {
			u.sg = true
			fields = append(fields, field{Name: "SecurityGroups", From: showList(have), To: showList(want)})
		}
	} else if !obs.noSG && (obs.sg == nil || !slices.Contains(lb.SecurityGroups, aws.ToString(obs.sg.GroupId))) {
		u.sg = true
		to := spec.sgName // made by this plan: its ID is not known yet
		if obs.sg != nil {
			to = aws.ToString(obs.sg.GroupId)
		}
		fields = append(fields, field{Name: "SecurityGroups", From: showList(lb.SecurityGroups), To: to})
	}
	var f *field
	if u.tags, f = tagChange(obs.lbTags, spec.tags); f != nil {
		fields = append(fields, *f)
	}
	u.attrs, fields = attrChanges(spec.lbAttrs, obs.lbAttrs, fields)
	p.Add(change{Action: loadbalancers.Update, Kind: kindLB, Name: spec.name, Fields: fields,
		Apply: ap.run(func(ctx context.Context, a *applier) error { return a.updateLB(ctx, u) })})
}

// planTargetGroups plans one target group per listener and returns the
// ARNs of those that exist and stay.
func planTargetGroups(p *loadbalancers.Plan, spec *nlbSpec, targets []string, obs *observed, ap *applier) map[string]bool {
	used := map[string]bool{}
	for _, ls := range spec.listeners {
		port := ls.tg.port
		want := map[target]bool{}
		for _, id := range targets {
			want[target{id, port}] = true
		}
		o := obs.tgs[ls.tg.name]
		if o == nil {
			p.Add(change{Action: loadbalancers.Create, Kind: kindTG, Name: ls.tg.name,
				Fields: []field{
					{Name: "Protocol", From: "none", To: string(ls.tg.protocol)},
					{Name: "Port", From: "none", To: strconv.Itoa(int(port))},
					{Name: "Targets", From: "none", To: showTargets(want, port)},
				},
				Apply: ap.run(func(ctx context.Context, a *applier) error { return a.createTargetGroup(ctx, ls.tg) })})
			continue
		}
		arn := aws.ToString(o.tg.TargetGroupArn)
		used[arn] = true
		var u tgUpdate
		var fields []field
		if o.adopted {
			var f *field
			if u.tags, f = tagChange(o.tags, spec.tags); f != nil {
				fields = append(fields, *f)
			}
		}
		hc := healthCheckDiff(&o.tg, spec.healthCheck)
		u.healthCheck = len(hc) > 0
		fields = append(fields, hc...)
		u.attrs = attributeChanges(spec.tgAttrs, o.attrs)
		for _, at := range u.attrs {
			k := aws.ToString(at.Key)
			fields = append(fields, field{Name: k, From: showValue(o.attrs[k]), To: showValue(aws.ToString(at.Value))})
		}
		u.register, u.deregister = loadbalancers.Delta(want, o.targets, compareTarget)
		if len(u.register)+len(u.deregister) > 0 {
			fields = append(fields, field{Name: "Targets", From: showTargets(o.targets, port), To: showTargets(want, port)})
		}
		p.Add(change{Action: loadbalancers.Update, Kind: kindTG, Name: aws.ToString(o.tg.TargetGroupName), Fields: fields,
			Apply: ap.run(func(ctx context.Context, a *applier) error { return a.updateTargetGroup(ctx, arn, u) })})
	}
	return used
}

// planListeners gives each Service port a listener forwarding to its
// target group, and removes the listeners of ports that are gone.
func planListeners(p *loadbalancers.Plan, spec *nlbSpec, obs *observed, ap *applier) {
	names := map[string]string{} // target group ARN -> name, for showing
	for _, tg := range obs.attached {
		names[aws.ToString(tg.TargetGroupArn)] = aws.ToString(tg.TargetGroupName)
	}
	for _, o := range obs.tgs {
		names[aws.ToString(o.tg.TargetGroupArn)] = aws.ToString(o.tg.TargetGroupName)
	}
	left := maps.Clone(obs.listeners)
	for _, want := range spec.listeners {
		name := listenerName(spec, want.port)
		cur, ok := left[want.port]
		delete(left, want.port)
		if !ok {
			fields := []field{{Name: "Protocol", From: "none", To: string(want.protocol)}, {Name: "TargetGroup", From: "none", To: want.tg.name}}
			if extra := extraCerts(want); len(extra) > 0 {
				fields = append(fields, field{Name: "ListenerCertificates", From: "none", To: showList(extra)})
			}
			p.Add(change{Action: loadbalancers.Create, Kind: kindListener, Name: name,
				Fields: fields,
				Apply:  ap.run(func(ctx context.Context, a *applier) error { return a.createListener(ctx, want) })})
			continue
		}
		tgARN := ""
		if o := obs.tgs[want.tg.name]; o != nil {
			tgARN = aws.ToString(o.tg.TargetGroupArn)
		}
		arn := aws.ToString(cur.ListenerArn)
		p.Add(change{Action: loadbalancers.Update, Kind: kindListener, Name: name, Fields: listenerFields(cur, want, tgARN, names),
			Apply: ap.run(func(ctx context.Context, a *applier) error { return a.modifyListener(ctx, arn, want) })})
		planListenerCerts(p, name, cur, want, obs.listenerCerts[want.port], ap)
	}
	for _, port := range slices.Sorted(maps.Keys(left)) {
		arn := aws.ToString(left[port].ListenerArn)
		p.Add(change{Action: loadbalancers.Delete, Kind: kindListener, Name: listenerName(spec, port),
			Apply: ap.run(func(ctx context.Context, a *applier) error { return a.deleteListener(ctx, arn) })})
	}
}

// listenerName names a listener in a plan: its NLB and port (AWS gives
// it only an ARN, and only once made).
func listenerName(spec *nlbSpec, port int32) string { return fmt.Sprintf("%s:%d", spec.name, port) }

// listenerFields are what differs between a listener and the one wanted;
// tgARN is "" when its target group is made by the same plan. Settings a
// protocol does not use (certificates off TLS) are not compared.
func listenerFields(cur elbtypes.Listener, want listenerSpec, tgARN string, names map[string]string) []field {
	var out []field
	if cur.Protocol != want.protocol {
		out = append(out, field{Name: "Protocol", From: string(cur.Protocol), To: string(want.protocol)})
	}
	if len(cur.DefaultActions) != 1 || tgARN == "" || aws.ToString(cur.DefaultActions[0].TargetGroupArn) != tgARN {
		var have []string
		for _, act := range cur.DefaultActions {
			arn := aws.ToString(act.TargetGroupArn)
			have = append(have, cmp.Or(names[arn], arn))
		}
		out = append(out, field{Name: "TargetGroup", From: showList(have), To: want.tg.name})
	}
	if want.protocol != elbtypes.ProtocolEnumTls {
		return out
	}
	// No policy asked for leaves the listener's own, whatever it is.
	if have := aws.ToString(cur.SslPolicy); want.sslPolicy != "" && have != want.sslPolicy {
		out = append(out, field{Name: "SslPolicy", From: showValue(have), To: showValue(want.sslPolicy)})
	}
	have, to := "", ""
	if len(cur.Certificates) > 0 {
		have = aws.ToString(cur.Certificates[0].CertificateArn)
	}
	if len(want.certs) > 0 {
		to = want.certs[0]
	}
	if have != to {
		out = append(out, field{Name: "Certificate", From: showValue(have), To: showValue(to)})
	}
	return out
}

// tagChange returns the tags of want that have lacks or has otherwise,
// and the field showing them; nil when there are none. Other tags are
// left as they are.
func tagChange(have, want map[string]string) (map[string]string, *field) {
	missing := map[string]string{}
	var from, to []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if v, ok := have[k]; !ok || v != want[k] {
			missing[k] = want[k]
			if ok {
				from = append(from, k+"="+v)
			}
			to = append(to, k+"="+want[k])
		}
	}
	if len(missing) == 0 {
		return nil, nil
	}
	return missing, &field{Name: "Tags", From: showList(from), To: showList(to)}
}

// attributeChanges are the target group attributes to set, by key.
func attributeChanges(want, have map[string]string) []elbtypes.TargetGroupAttribute {
	var out []elbtypes.TargetGroupAttribute
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if have[k] != want[k] {
			out = append(out, elbtypes.TargetGroupAttribute{Key: aws.String(k), Value: aws.String(want[k])})
		}
	}
	return out
}

// healthCheck is a target group's health check as a plan compares it,
// the fields named as in the ELBv2 API.
type healthCheck struct {
	Protocol  elbtypes.ProtocolEnum `json:"HealthCheckProtocol"`
	Port      string                `json:"HealthCheckPort"`
	Path      string                `json:"HealthCheckPath"`
	Interval  int32                 `json:"HealthCheckIntervalSeconds"`
	Timeout   int32                 `json:"HealthCheckTimeoutSeconds"`
	Healthy   int32                 `json:"HealthyThresholdCount"`
	Unhealthy int32                 `json:"UnhealthyThresholdCount"`
}

// healthCheckDiff lists what differs between a target group's health
// check and the wanted one.
func healthCheckDiff(tg *elbtypes.TargetGroup, hc healthCheckSpec) []field {
	have := healthCheck{
		Protocol: tg.HealthCheckProtocol, Port: aws.ToString(tg.HealthCheckPort), Path: aws.ToString(tg.HealthCheckPath),
		Interval: aws.ToInt32(tg.HealthCheckIntervalSeconds), Timeout: aws.ToInt32(tg.HealthCheckTimeoutSeconds),
		Healthy: aws.ToInt32(tg.HealthyThresholdCount), Unhealthy: aws.ToInt32(tg.UnhealthyThresholdCount),
	}
	want := healthCheck{Protocol: hc.protocol, Port: hc.port, Path: hc.path, Interval: hc.interval, Timeout: hc.timeout, Healthy: hc.healthy, Unhealthy: hc.unhealthy}
	return loadbalancers.Diff(have, want)
}

func showList(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ",")
}

func showValue(s string) string { return cmp.Or(s, "none") }

// showIngress lists rules as protocol/ports/source, sorted.
func showIngress(rules map[ingressRule]bool) string {
	var out []string
	for _, r := range slices.SortedFunc(maps.Keys(rules), compareIngress) {
		ports := strconv.Itoa(int(r.from))
		switch {
		case r.from == -1:
			ports = "all"
		case r.to != r.from:
			ports += "-" + strconv.Itoa(int(r.to))
		}
		out = append(out, r.proto+"/"+ports+"/"+r.cidr)
	}
	return showList(out)
}

// showTargets lists the instance IDs, with the port where it is not the
// target group's node port.
func showTargets(ts map[target]bool, port int32) string {
	var out []string
	for _, t := range slices.SortedFunc(maps.Keys(ts), compareTarget) {
		if t.port == port {
			out = append(out, t.id)
		} else {
			out = append(out, fmt.Sprintf("%s:%d", t.id, t.port))
		}
	}
	return showList(out)
}

// attrChanges are the attributes whose value differs from what the NLB
// has, with a field for each.
func attrChanges(want, have map[string]string, fields []field) (map[string]string, []field) {
	var out map[string]string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if have[k] == want[k] {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k] = want[k]
		fields = append(fields, field{Name: k, From: showValue(have[k]), To: want[k]})
	}
	return out, fields
}

// planDetachedGroup deletes polyccm's own group of an NLB that now uses
// the Service's groups instead (security-groups), after the NLB lets go
// of it, as the AWS CCM cleans up a detached managed group. The rule has
// the last word when it is deleted: one only adopted (nothing marks it as
// the Service's) stays, with a Warning event, as in a deletion.
func planDetachedGroup(p *loadbalancers.Plan, spec *nlbSpec, obs *observed, ap *applier) {
	if len(spec.byoSGs) == 0 || obs.sg == nil || slices.Contains(spec.byoSGs, aws.ToString(obs.sg.GroupId)) {
		return
	}
	sg := *obs.sg
	p.Add(change{Action: loadbalancers.Delete, Kind: kindSG, Name: aws.ToString(sg.GroupId),
		Apply: ap.run(func(ctx context.Context, a *applier) error {
			if ok, err := a.j.MayDelete(ctx, obs.sgRes); err != nil || !ok {
				return err
			}
			return a.l.deleteSecurityGroup(ctx, a.cl, sg)
		})})
}

func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}
