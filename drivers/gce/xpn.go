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
	if err == nil || !onXPN(env) || cloudapi.KindOf(err) != cloudapi.KindUnauthorized {
		return err
	}
	klog.InfoS("No permission to change firewall rules in the network's project: left to its admin", "service", spec.service, "project", env.networkProject, "command", cmd)
	if rec := l.c.deps.Recorder; rec != nil && spec.obj != nil {
		rec.Event(spec.obj, v1.EventTypeNormal, ReasonManualChange, fmt.Sprintf("Firewall change required by security admin: `%s`", cmd))
	}
	return nil
}

func gcloudFirewallCreate(env *environment, fw *computepb.Firewall) string {
	return fmt.Sprintf("gcloud compute firewall-rules create %s --project %s --network %s %s", fw.GetName(), env.networkProject, env.network, gcloudFirewallArgs(fw))
}

func gcloudFirewallUpdate(env *environment, fw *computepb.Firewall) string {
	return fmt.Sprintf("gcloud compute firewall-rules update %s --project %s %s", fw.GetName(), env.networkProject, gcloudFirewallArgs(fw))
}

func gcloudFirewallDelete(env *environment, name string) string {
	return fmt.Sprintf("gcloud compute firewall-rules delete %s --project %s", name, env.networkProject)
}

// gcloudFirewallArgs are the flags that give a rule fw's settings, in
// upstream's order.
func gcloudFirewallArgs(fw *computepb.Firewall) string {
	args := []string{fmt.Sprintf("--description %q", fw.GetDescription())}
	var allow []string
	for _, a := range fw.GetAllowed() {
		if len(a.GetPorts()) == 0 {
			allow = append(allow, a.GetIPProtocol())
		}
		for _, p := range a.GetPorts() {
			allow = append(allow, a.GetIPProtocol()+":"+p)
		}
	}
	list := func(flag string, v []string) {
		if len(v) > 0 {
			args = append(args, flag+" "+strings.Join(slices.Sorted(slices.Values(v)), ","))
		}
	}
	list("--allow", allow)
	list("--source-ranges", fw.GetSourceRanges())
	list("--destination-ranges", fw.GetDestinationRanges())
	list("--target-tags", fw.GetTargetTags())
	if fw.GetPriority() != 0 {
		args = append(args, fmt.Sprintf("--priority %d", fw.GetPriority()))
	}
	return strings.Join(args, " ")
}
