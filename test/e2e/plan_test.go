//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/polyccm/polyccm/core/planning"
	fakedo "github.com/polyccm/polyccm/test/fakecloud/digitalocean"
	"github.com/polyccm/polyccm/test/harness"
)

// planTimeout bounds one plan run in these tests.
var planTimeout = 40 * time.Second

// planRun is one `polyccm plan -o json` through the binary.
type planRun struct {
	report         planning.Report
	code           int
	stdout, stderr string
}

// plan runs `polyccm plan -o json` with config and e's environment.
func (e *env) plan(t *testing.T, name, config string) planRun {
	t.Helper()
	path := e.writeFile(name+".yaml", config)
	ctx, cancel := context.WithTimeout(context.Background(), planTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, polyccmBin, "plan", "--config", path, "-o", "json")
	cmd.Env = append(harness.CleanEnv(), e.opts.Env...)
	// A plan that hangs dumps its goroutines (Go's SIGQUIT) into stderr.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGQUIT) }
	cmd.WaitDelay = 10 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := planRun{stdout: out.String(), stderr: errb.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	case err != nil:
		t.Fatalf("polyccm plan: %v\n%s", err, r.stderr)
	}
	if r.stdout != "" {
		if err := json.Unmarshal(out.Bytes(), &r.report); err != nil {
			t.Fatalf("polyccm plan -o json printed no JSON: %v\n%s", err, r.stdout)
		}
	}
	t.Logf("polyccm plan exited %d; stderr:\n%s", r.code, lastLines(r.stderr, 40))
	if e.secret != "" && strings.Contains(r.stdout+r.stderr, e.secret) {
		t.Error("polyccm plan printed a cloud credential")
	}
	return r
}

// clusterState is every object's resourceVersion, and how many Events
// exist: a plan must change none and add none.
func clusterState(t *testing.T) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	svcs, err := cp.Admin.CoreV1().Services("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range svcs.Items {
		out["service "+s.Namespace+"/"+s.Name] = s.ResourceVersion
	}
	nodes, err := cp.Admin.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		out["node "+n.Name] = n.ResourceVersion
	}
	cms, err := cp.Admin.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cms.Items {
		out["configmap "+c.Namespace+"/"+c.Name] = c.ResourceVersion
	}
	evs, err := cp.Admin.CoreV1().Events("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out["events"] = fmt.Sprint(len(evs.Items))
	return out
}

// checkPlanReadOnly compares the cluster and the cloud's call counts from
// before a plan with after it: no object changed, no event added, and no
// call but reads (isWrite says which endpoint keys are writes).
func checkPlanReadOnly(t *testing.T, stateBefore map[string]string, callsBefore, callsAfter map[string]int, isWrite func(string) bool) {
	t.Helper()
	stateAfter := clusterState(t)
	for k, v := range stateBefore {
		if stateAfter[k] != v {
			t.Errorf("polyccm plan changed the cluster: %s was %s, now %q", k, v, stateAfter[k])
		}
	}
	for k := range stateAfter {
		if _, ok := stateBefore[k]; !ok {
			t.Errorf("polyccm plan created %s", k)
		}
	}
	reads := 0
	for ep, n := range callsAfter {
		d := n - callsBefore[ep]
		if d == 0 {
			continue
		}
		if isWrite(ep) {
			t.Errorf("polyccm plan called %s %d times; it must make no change to the cloud", ep, d)
		} else {
			reads += d
		}
	}
	if reads == 0 {
		t.Error("polyccm plan made no cloud call at all: it cannot have read the cloud")
	}
}

// checkAdopted checks a plan of a switch from the upstream CCM: every
// Service's load balancer kept (adopted as it is, or updated in place:
// its status, or resources of the kinds named in allowed), nothing
// created or deleted, and exit 0.
func checkAdopted(t *testing.T, r planRun, svcs []*v1.Service, allowed ...string) {
	t.Helper()
	if r.code != 0 {
		t.Errorf("polyccm plan exited %d, want 0 (safe to switch); blocking %q, incomplete %q", r.code, r.report.Blocking, r.report.Incomplete)
	}
	if n := len(r.report.RefusedCloudCalls); n != 0 {
		t.Errorf("the plan tried %d cloud writes, which were refused: %q", n, r.report.RefusedCloudCalls)
	}
	for _, s := range svcs {
		i := slices.IndexFunc(r.report.Services, func(p planning.ServicePlan) bool { return p.Service == s.Namespace+"/"+s.Name })
		if i < 0 {
			t.Errorf("the plan says nothing of Service %s/%s: %+v", s.Namespace, s.Name, r.report.Services)
			continue
		}
		p := r.report.Services[i]
		// A Service that publishes an address keeps it: adopted. One
		// whose status is still empty may get its status (an update).
		if p.Action != planning.Adopt && (p.Action != planning.Update || len(p.Addresses) > 0) {
			t.Errorf("the plan for %s (addresses %v): %s (%s), want adopt", p.Service, p.Addresses, p.Action, p.Message)
		}
		for _, c := range p.Changes {
			if c.Action != "update" || !slices.Contains(allowed, c.Kind) {
				t.Errorf("the plan for %s: %s %s %s %+v, want no such change", p.Service, c.Action, c.Kind, c.Name, c.Fields)
			}
		}
		for _, ev := range p.Events {
			if ev.Type == v1.EventTypeWarning {
				t.Errorf("the plan for %s: a Warning %s: %s", p.Service, ev.Reason, ev.Message)
			}
		}
	}
	for _, u := range r.report.Unowned {
		t.Errorf("the plan reports %s %s as owned by no Service: %s", u.Kind, u.Name, u.Why)
	}
	for _, n := range r.report.Nodes {
		if n.Action != planning.Keep {
			t.Errorf("the plan for Node %s: %s (%s), want keep", n.Node, n.Action, n.Message)
		}
	}
}

// TestPlanBrokenSwitchAndUnreachable is `polyccm plan`'s bad news through
// the binary on DigitalOcean: a Service with an address whose load
// balancer polyccm cannot find (a broken switch: exit 2, nothing
// created), a load balancer no Service owns, and a cloud or cluster it
// cannot read (exit 1, nothing on stdout that could read as a plan).
func TestPlanBrokenSwitchAndUnreachable(t *testing.T) {
	e := newDOEnv(t, nil, nil)
	ctx := context.Background()
	d := e.fake.AddDroplet(fakedo.Droplet{Name: e.nodeName(0), Status: fakedo.StatusActive, SizeSlug: "s-2vcpu-4gb", Region: "fra1"})
	e.register(d.Name, "")
	e.waitInitialized([]string{d.Name}, 30*time.Second)
	// polyccm is stopped next: the plan is for a Service it never saw.
	if _, err := e.ccm.Stop(15 * time.Second); err != nil {
		t.Fatal(err)
	}
	svc := nsService(t, "default", "plan-lost", nil, nil, tcp(80))
	svc.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: "203.0.113.50"}}
	if _, err := cp.Admin.CoreV1().Services("default").UpdateStatus(ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Another cluster's (or a forgotten) load balancer, named as a CCM
	// names one from a Service UID no Service here has.
	stray := e.fake.AddLoadBalancer(fakedo.LoadBalancer{Name: "a0123456789abcdef0123456789abcde", Region: "fra1"})
	before := clusterState(t)
	callsBefore := e.fake.Faults().Calls()
	r := e.plan(t, "plan", e.opts.Config)
	checkPlanReadOnly(t, before, callsBefore, e.fake.Faults().Calls(), func(ep string) bool { return !strings.HasPrefix(ep, "GET ") })
	if r.code != 2 {
		t.Errorf("exit %d, want 2 for a Service with an address that would get a new load balancer", r.code)
	}
	i := slices.IndexFunc(r.report.Services, func(p planning.ServicePlan) bool { return p.Service == "default/plan-lost" })
	switch {
	case i < 0:
		t.Errorf("no plan for default/plan-lost: %+v", r.report.Services)
	case r.report.Services[i].Action != planning.Create:
		t.Errorf("default/plan-lost: %s (%s), want create", r.report.Services[i].Action, r.report.Services[i].Message)
	}
	if len(r.report.Blocking) != 1 || !strings.Contains(r.report.Blocking[0], "default/plan-lost") {
		t.Errorf("blocking: %q, want the one Service", r.report.Blocking)
	}
	if !slices.ContainsFunc(r.report.Unowned, func(u planning.UnownedResource) bool { return u.ID == stray.ID }) {
		t.Errorf("the stray load balancer %s is not reported as owned by no Service: %+v", stray.ID, r.report.Unowned)
	}
	if n := len(e.fake.LoadBalancers()); n != 1 {
		t.Errorf("%d load balancers after the plan, want only the stray one", n)
	}

	// The table for people says the same.
	path := filepath.Join(e.dir, "plan.yaml")
	out, err := exec.Command(polyccmBin, "plan", "--config", path).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "NOT SAFE TO SWITCH") || !strings.Contains(string(out), "default/plan-lost") {
		t.Errorf("the table (err %v):\n%s", err, out)
	}

	// The cloud unreachable: exit 1, stdout empty, stderr says "cloud".
	bad := strings.Replace(e.opts.Config, e.fake.URL(), "http://127.0.0.1:1", 1)
	if bad == e.opts.Config {
		t.Fatalf("no %s in the config to replace:\n%s", e.fake.URL(), e.opts.Config)
	}
	r = e.plan(t, "plan-nocloud", bad)
	if r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, "cannot read the cloud") {
		t.Errorf("unreachable cloud: exit %d, stdout %q, stderr %q; want 1, nothing, and the cloud named", r.code, r.stdout, lastLines(r.stderr, 5))
	}
	// The cluster unreachable.
	kc := e.writeFile("nowhere.kubeconfig", `apiVersion: v1
kind: Config
clusters: [{name: x, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: x, user: {token: t}}]
contexts: [{name: x, context: {cluster: x, user: x}}]
current-context: x
`)
	bad = regexp.MustCompile(`(?m)^kubeconfig: .*$`).ReplaceAllString(e.opts.Config, "kubeconfig: "+kc)
	if bad == e.opts.Config {
		t.Fatalf("no kubeconfig line in the config:\n%s", e.opts.Config)
	}
	r = e.plan(t, "plan-nocluster", bad)
	if r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, "cannot read the cluster") {
		t.Errorf("unreachable cluster: exit %d, stdout %q, stderr %q; want 1, nothing, and the cluster named", r.code, r.stdout, lastLines(r.stderr, 5))
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// awsWrite says whether an AWS fake endpoint key ("ec2 CreateTags") is a
// call that changes something.
func awsWrite(ep string) bool {
	_, action, _ := strings.Cut(ep, " ")
	for _, p := range []string{"Describe", "Get", "List"} {
		if strings.HasPrefix(action, p) {
			return false
		}
	}
	return true
}
