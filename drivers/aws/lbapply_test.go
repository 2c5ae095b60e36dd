package aws_test

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/polyccm/polyccm/core/loadbalancers"
	awsccm "github.com/polyccm/polyccm/drivers/aws"
)

// logBuffer collects klog's output while a test runs.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	klog.Flush()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func captureKlog(t *testing.T) *logBuffer {
	buf := &logBuffer{}
	klog.LogToStderr(false)
	klog.SetOutput(buf)
	t.Cleanup(func() { klog.LogToStderr(true) })
	return buf
}

// mutatingCalls are the calls that changed something, by endpoint.
func (w *world) mutatingCalls() map[string]int {
	out := map[string]int{}
	for ep, c := range w.fake.Faults().Calls() {
		_, action, _ := strings.Cut(ep, " ")
		if !strings.HasPrefix(action, "Describe") && !strings.HasPrefix(action, "GET") && !strings.HasPrefix(action, "PUT") && ep != "sts AssumeRole" {
			out[ep] = c
		}
	}
	return out
}

// The plan of a port change, read before the sync, is what the sync logs
// and exactly what changes in AWS: planning alone changes nothing, and
// applying makes no call the plan does not list.
func TestPortChangePlanIsWhatChanges(t *testing.T) {
	e := newEnv(t)
	nodes, ins := e.nodes(2)
	ports := func(http int32) []v1.ServicePort {
		return []v1.ServicePort{tcp("http", http, 30080), tcp("https", 443, 30443)}
	}
	e.ensure(service(nil, ports(80)...), nodes)
	lb := e.nlb()
	before := e.listeners(lb.ARN)
	old80, tg443 := e.targetGroup(before[80]), e.targetGroup(before[443])
	sg := e.securityGroup(lb)
	raw := e.cloud

	svc := service(nil, ports(8080)...)
	f := e.fake.Faults()
	f.Reset()
	plan, err := awsccm.PlanOf(ctx(t), raw, svc, nodes)
	if err != nil {
		t.Fatal(err)
	}
	if n := e.mutatingCalls(); len(n) != 0 {
		t.Errorf("planning changed something: %v", n)
	}

	logs := captureKlog(t)
	f.Reset()
	e.ensure(svc, nodes)

	after := e.listeners(lb.ARN)
	if got := slices.Sorted(maps.Keys(after)); !slices.Equal(got, []int32{443, 8080}) {
		t.Fatalf("listeners on %v, want 443 and 8080", got)
	}
	tg8080 := e.targetGroup(after[8080])
	want := []string{
		"update security group " + sg.ID,
		"create target group " + tg8080.Name,
		"create listener " + nlbName + ":8080",
		"delete listener " + nlbName + ":80",
		"delete target group " + old80.Name,
	}
	var got []string
	for _, c := range plan.Changes {
		got = append(got, fmt.Sprintf("%s %s %s", c.Action, c.Kind, c.Name))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("plan\n got %v\nwant %v (what changed in AWS)", got, want)
	}

	// The fields are what AWS has now.
	fields := func(i int) map[string]loadbalancers.Field {
		m := map[string]loadbalancers.Field{}
		for _, fl := range plan.Changes[i].Fields {
			m[fl.Name] = fl
		}
		return m
	}
	if in, want := ingress(e.securityGroup(e.nlb())), []string{"icmp/3-4/0.0.0.0/0", "tcp/443/0.0.0.0/0", "tcp/8080/0.0.0.0/0"}; !slices.Equal(in, want) {
		t.Errorf("ingress %v, want %v", in, want)
	} else if fl := fields(0)["Ingress"]; fl.From != "icmp/3-4/0.0.0.0/0,tcp/80/0.0.0.0/0,tcp/443/0.0.0.0/0" || fl.To != strings.Join(want, ",") {
		t.Errorf("planned ingress %+v, AWS has %v", fl, in)
	}
	tgf := fields(1)
	if ids := targetIDs(tg8080); tgf["Targets"].To != strings.Join(ids, ",") || !slices.Equal(ids, sorted(ins[0].ID, ins[1].ID)) {
		t.Errorf("planned targets %+v, the new target group has %v", tgf["Targets"], ids)
	}
	if tgf["Port"].To != strconv.Itoa(int(tg8080.Port)) || tgf["Protocol"].To != tg8080.Protocol {
		t.Errorf("planned %+v, made port %d protocol %s", tgf, tg8080.Port, tg8080.Protocol)
	}
	if _, ok := e.fake.TargetGroup(old80.ARN); ok {
		t.Error("the target group of port 80 is left")
	}
	if after[443].ARN != before[443].ARN || e.targetGroup(after[443]).ARN != tg443.ARN {
		t.Error("port 443 was touched; the plan leaves it")
	}
	e.wantLive(map[string]int{"loadBalancers": 1, "targetGroups": 2, "listeners": 2, "securityGroups": 1})

	// Exactly the plan's changes were made, each with the calls it needs.
	wantCalls := map[string]int{
		"ec2 AuthorizeSecurityGroupIngress": 1, "ec2 RevokeSecurityGroupIngress": 1, // update security group
		"elbv2 CreateTargetGroup": 1, "elbv2 RegisterTargets": 1, // create target group
		"elbv2 CreateListener": 1, "elbv2 DeleteListener": 1, "elbv2 DeleteTargetGroup": 1,
	}
	if calls := e.mutatingCalls(); !reflect.DeepEqual(calls, wantCalls) {
		t.Errorf("changing calls\n got %v\nwant %v", calls, wantCalls)
	}

	// The sync logged this very plan, before applying it.
	if l := logs.String(); !strings.Contains(l, "Updating load balancer") || !strings.Contains(l, "changes="+strconv.Quote(plan.String())) {
		t.Errorf("the sync did not log the plan %q; log:\n%s", plan.String(), l)
	}

	if again, err := awsccm.PlanOf(ctx(t), raw, svc, nodes); err != nil || !again.Empty() {
		t.Errorf("after the sync: plan %v, %v; want no changes", again, err)
	}
}
