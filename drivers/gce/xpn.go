package gce

import (
	"fmt"
	"slices"
	"strings"

	"cloud.google.com/go/compute/apiv1/computepb"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/polyccm/polyccm/core/cloudapi"
)

// In a Shared VPC the firewall rules live in the host project, where the
// cluster's service account often may not change them (that is the
// security admin's). As upstream does, a refused firewall change is not a
// failed load balancer: an event gives the admin the gcloud command to run,
// and the sync goes on.

// ReasonManualChange is upstream's event reason for a firewall change left
// to the host project's admin.
const ReasonManualChange = "LoadBalancerManualChange"

// onXPN reports whether the network is another project's.
func onXPN(env *environment) bool { return env.networkProject != env.project }

// firewallOpts are the call options of firewall writes: in a host project
// a 403 is about that project's permissions, not polyccm's credentials.
func firewallOpts(env *environment) []cloudapi.CallOption {
	if onXPN(env) {
		return []cloudapi.CallOption{cloudapi.ResourcePermission()}
	}
	return nil
}

// xpnFallback turns a refused firewall change in the host project into a
// Normal event with cmd, the gcloud command that makes it; any other error
// is returned.
func (l *loadBalancers) xpnFallback(env *environment, spec *lbSpec, err error, cmd string) error {
	if !leftToAdmin(env, err) {
		return err
	}
	klog.InfoS("No permission to change firewall rules in the network's project: left to its admin", "service", spec.service, "project", env.networkProject, "command", cmd)
	l.askAdmin(spec, cmd)
	return nil
}

// leftToAdmin reports whether err is a firewall change the host project
// refused, which xpnFallback leaves to its admin.
func leftToAdmin(env *environment, err error) bool {
	return err != nil && onXPN(env) && cloudapi.KindOf(err) == cloudapi.KindUnauthorized
}

// askAdmin is the event that gives the admin the command to run.
func (l *loadBalancers) askAdmin(spec *lbSpec, cmd string) {
	if rec := l.c.deps.Recorder; rec != nil && spec.obj != nil {
		rec.Event(spec.obj, v1.EventTypeNormal, ReasonManualChange, fmt.Sprintf("Firewall change required by security admin: `%s`", cmd))
	}
}

func gcloudFirewallCreate(env *environment, fw *computepb.Firewall) string {
	return fmt.Sprintf("gcloud compute firewall-rules create %s --project %s --network %s %s", fw.GetName(), env.networkProject, env.network, gcloudFirewallArgs(fw, true))
}

func gcloudFirewallUpdate(env *environment, fw *computepb.Firewall) string {
	return fmt.Sprintf("gcloud compute firewall-rules update %s --project %s %s", fw.GetName(), env.networkProject, gcloudFirewallArgs(fw, false))
}

func gcloudFirewallDelete(env *environment, name string) string {
	return fmt.Sprintf("gcloud compute firewall-rules delete %s --project %s", name, env.networkProject)
}

// gcloudFirewallArgs are the flags that give a rule fw's settings, in
// upstream's order. A deny rule's are gcloud's --action DENY (on create
// only: a rule's action cannot change) and --rules; upstream's "--deny"
// is no gcloud flag.
func gcloudFirewallArgs(fw *computepb.Firewall, create bool) string {
	args := []string{fmt.Sprintf("--description %q", fw.GetDescription())}
	specs := func(proto string, ports []string) []string {
		if len(ports) == 0 {
			return []string{proto}
		}
		var out []string
		for _, p := range ports {
			out = append(out, proto+":"+p)
		}
		return out
	}
	var allow, deny []string
	for _, a := range fw.GetAllowed() {
		allow = append(allow, specs(a.GetIPProtocol(), a.GetPorts())...)
	}
	for _, d := range fw.GetDenied() {
		deny = append(deny, specs(d.GetIPProtocol(), d.GetPorts())...)
	}
	list := func(flag string, v []string) {
		if len(v) > 0 {
			args = append(args, flag+" "+strings.Join(slices.Sorted(slices.Values(v)), ","))
		}
	}
	list("--allow", allow)
	if len(deny) > 0 && create {
		args = append(args, "--action DENY")
	}
	list("--rules", deny)
	list("--source-ranges", fw.GetSourceRanges())
	list("--destination-ranges", fw.GetDestinationRanges())
	list("--target-tags", fw.GetTargetTags())
	if fw.GetPriority() != 0 {
		args = append(args, fmt.Sprintf("--priority %d", fw.GetPriority()))
	}
	return strings.Join(args, " ")
}
