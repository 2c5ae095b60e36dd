//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	"golang.org/x/oauth2"
	"google.golang.org/api/option"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/polyccm/polyccm/core/loadbalancers"
	"github.com/polyccm/polyccm/drivers/aws"
	"github.com/polyccm/polyccm/drivers/digitalocean"
	fakedo "github.com/polyccm/polyccm/test/fakecloud/digitalocean"
	"github.com/polyccm/polyccm/test/harness"
)

// The takeover tests: a tenant in a second namespace tries every way to
// point a Service at a load balancer that is not its own. Each attempt is
// refused with a LoadBalancerNotOwned Warning on the tenant's Service; the
// victim's load balancer, its rules and its Service's status are exactly
// as they were; deleting the tenant's Services deletes nothing of theirs.

const (
	victimNS = "tenant-a"
	thiefNS  = "tenant-b"
)

// ensureNamespace creates ns if it does not exist yet.
func ensureNamespace(t *testing.T, ns string) {
	t.Helper()
	_, err := cp.Admin.CoreV1().Namespaces().Create(context.Background(), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// nsService creates a Service of type LoadBalancer in ns; the test's
// cleanup deletes it if the test did not.
func nsService(t *testing.T, ns, name string, ann map[string]string, edit func(*v1.Service), ports ...v1.ServicePort) *v1.Service {
	t.Helper()
	ensureNamespace(t, ns)
	svc := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: ann},
		Spec:       v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": name}, Ports: ports},
	}
	if edit != nil {
		edit(svc)
	}
	got, err := cp.Admin.CoreV1().Services(ns).Create(context.Background(), svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating Service %s/%s: %v", ns, name, err)
	}
	t.Cleanup(func() { _ = cp.Admin.CoreV1().Services(ns).Delete(context.Background(), name, metav1.DeleteOptions{}) })
	return got
}

func nsSvc(t *testing.T, ns, name string) *v1.Service {
	t.Helper()
	svc, err := cp.Admin.CoreV1().Services(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// waitNSIngress waits until the Service's status shows an address.
func waitNSIngress(t *testing.T, ns, name string, timeout time.Duration) *v1.Service {
	t.Helper()
	var svc *v1.Service
	eventually(t, timeout, "Service "+ns+"/"+name+" ingress", func() (bool, string) {
		svc = nsSvc(t, ns, name)
		ing := svc.Status.LoadBalancer.Ingress
		return len(ing) > 0 && (ing[0].IP != "" || ing[0].Hostname != ""), fmt.Sprintf("ingress %v", ing)
	})
	return svc
}

// serviceEvents lists the events on a Service as "Type Reason: message".
func serviceEvents(t *testing.T, ns, name string) []string {
	t.Helper()
	list, err := cp.Admin.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ev := range list.Items {
		out = append(out, ev.Type+" "+ev.Reason+": "+ev.Message)
	}
	return out
}

// waitRefused waits for the refusal event on a tenant's Service, naming
// what it must name.
func waitRefused(t *testing.T, ns, name, names string) {
	t.Helper()
	eventually(t, 60*time.Second, "a "+loadbalancers.ReasonNotOwned+" warning on "+ns+"/"+name+" naming "+names, func() (bool, string) {
		evs := serviceEvents(t, ns, name)
		for _, ev := range evs {
			if strings.HasPrefix(ev, "Warning "+loadbalancers.ReasonNotOwned) && strings.Contains(ev, names) {
				return true, ""
			}
		}
		return false, fmt.Sprintf("events %q", evs)
	})
}

// deleteNSServiceAndWait deletes a Service and waits until it is gone.
func deleteNSServiceAndWait(t *testing.T, ns, name string, timeout time.Duration) {
	t.Helper()
	if err := cp.Admin.CoreV1().Services(ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	eventually(t, timeout, "Service "+ns+"/"+name+" gone", func() (bool, string) {
		svc, err := cp.Admin.CoreV1().Services(ns).Get(context.Background(), name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		return false, fmt.Sprintf("finalizers %v", svc.Finalizers)
	})
}

// sameStatus fails if a victim's published status changed.
func sameStatus(t *testing.T, before *v1.Service) {
	t.Helper()
	now := nsSvc(t, before.Namespace, before.Name)
	if !reflect.DeepEqual(now.Status.LoadBalancer, before.Status.LoadBalancer) {
		t.Errorf("Service %s/%s's status changed: was %+v, now %+v", before.Namespace, before.Name, before.Status.LoadBalancer, now.Status.LoadBalancer)
	}
}

// noIngress fails if a tenant's Service (if it still exists) got an
// address.
func noIngress(t *testing.T, ns, name string) {
	t.Helper()
	svc, err := cp.Admin.CoreV1().Services(ns).Get(context.Background(), name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		t.Fatal(err)
	case len(svc.Status.LoadBalancer.Ingress) != 0:
		t.Errorf("Service %s/%s publishes %+v, an address that is not its own", ns, name, svc.Status.LoadBalancer.Ingress)
	}
}

func TestDigitalOceanTakeoverIsRefused(t *testing.T) {
	e, _ := lbNodes(t, 2, nil)
	// The victims: one with the name derived from its UID, one with its
	// own name; and a load balancer someone made by hand.
	nsService(t, victimNS, "web", nil, nil, tcp(80))
	nsService(t, victimNS, "shop", map[string]string{digitalocean.AnnName: "shop-frontend"}, nil, tcp(443))
	web := waitNSIngress(t, victimNS, "web", 60*time.Second)
	shop := waitNSIngress(t, victimNS, "shop", 60*time.Second)
	foreign := e.fake.AddLoadBalancer(fakedo.LoadBalancer{Name: "billing-prod", Region: "fra1"})
	foreign2 := e.fake.AddLoadBalancer(fakedo.LoadBalancer{Name: "billing-staging", Region: "fra1"})
	webLB, _ := e.fake.LoadBalancer(web.Annotations[digitalocean.AnnLoadBalancerID])
	shopLB, _ := e.fake.LoadBalancer(shop.Annotations[digitalocean.AnnLoadBalancerID])

	// A load balancer still being built is progress, not a failure.
	for _, ev := range serviceEvents(t, victimNS, "web") {
		if strings.HasPrefix(ev, "Warning") {
			t.Errorf("a new load balancer got a warning: %s", ev)
		}
	}
	if evs := serviceEvents(t, victimNS, "web"); !slices.ContainsFunc(evs, func(ev string) bool {
		return strings.HasPrefix(ev, "Normal "+loadbalancers.ReasonPending+": load balancer") && strings.Contains(ev, "is being created")
	}) {
		t.Errorf("no Normal %s event saying the load balancer is being created: %q", loadbalancers.ReasonPending, evs)
	}

	before := e.fake.LoadBalancers()
	created := e.fake.LoadBalancerStats().Created
	thieves := map[string]map[string]string{
		"by-id":           {digitalocean.AnnLoadBalancerID: webLB.ID},
		"by-derived-name": {digitalocean.AnnName: webLB.Name},
		"by-id-custom":    {digitalocean.AnnLoadBalancerID: shopLB.ID},
		"by-name-custom":  {digitalocean.AnnName: "shop-frontend"},
		"disown-publish":  {digitalocean.AnnLoadBalancerID: shopLB.ID, digitalocean.AnnDisown: "true"},
		"by-name-foreign": {digitalocean.AnnName: foreign.Name},
		"by-id-foreign":   {digitalocean.AnnLoadBalancerID: foreign2.ID},
	}
	owners := map[string]string{
		"by-id": victimNS + "/web", "by-derived-name": victimNS + "/web",
		"by-id-custom": victimNS + "/shop", "by-name-custom": victimNS + "/shop", "disown-publish": victimNS + "/shop",
		"by-name-foreign": loadbalancers.AdoptKey, "by-id-foreign": loadbalancers.AdoptKey,
	}
	for name, ann := range thieves {
		nsService(t, thiefNS, name, ann, nil, tcp(8443))
	}
	for name := range thieves {
		waitRefused(t, thiefNS, name, owners[name])
	}
	// Give the node sync a chance to go wrong too.
	e.fake.AddDroplet(fakedo.Droplet{Name: e.nodeName(9), Status: fakedo.StatusActive, SizeSlug: "s-2vcpu-4gb", Region: "fra1"})

	check := func(when string) {
		t.Helper()
		for _, lb := range before {
			got, ok := e.fake.LoadBalancer(lb.ID)
			if !ok {
				t.Fatalf("%s: load balancer %s (%s) was deleted", when, lb.Name, lb.ID)
			}
			if !reflect.DeepEqual(got.ForwardingRules, lb.ForwardingRules) || !reflect.DeepEqual(got.DropletIDs, lb.DropletIDs) || got.Name != lb.Name {
				t.Errorf("%s: load balancer %s changed:\n was %+v\n now %+v", when, lb.Name, lb, got)
			}
		}
		if n := e.fake.LoadBalancerStats().Created; n != created {
			t.Errorf("%s: %d load balancers created for the tenant", when, n-created)
		}
		sameStatus(t, web)
		sameStatus(t, shop)
		for name := range thieves {
			noIngress(t, thiefNS, name)
		}
	}
	check("after the attempts")

	for name := range thieves {
		deleteNSServiceAndWait(t, thiefNS, name, 60*time.Second)
	}
	check("after the tenant's Services were deleted")

	// The victims are still served: deleting them deletes their own load
	// balancers, and only those.
	deleteNSServiceAndWait(t, victimNS, "web", 60*time.Second)
	deleteNSServiceAndWait(t, victimNS, "shop", 60*time.Second)
	var left []string
	for _, lb := range e.fake.LoadBalancers() {
		left = append(left, lb.Name)
	}
	slices.Sort(left)
	if want := []string{foreign.Name, foreign2.Name}; !slices.Equal(left, want) {
		t.Errorf("load balancers left: %v, want only %v", left, want)
	}
}

// awsUser is an SDK client acting as another tool in the account.
func (e *awsEnv) awsUser() *elbv2.Client {
	return elbv2.New(elbv2.Options{
		Region:       "eu-west-1",
		BaseEndpoint: awssdk.String(e.fake.ELBv2URL()),
		Credentials:  credentials.NewStaticCredentialsProvider(awsAccessKey, awsSecretKey, ""),
	})
}

func TestAWSTakeoverIsRefused(t *testing.T) {
	e, _ := awsLB(t, 2)
	eips := "eipalloc-0aaa000000000000a,eipalloc-0bbb000000000000b"
	nsService(t, victimNS, "web", map[string]string{aws.AnnEIPAllocations: eips}, nil, tcp(80))
	web := waitNSIngress(t, victimNS, "web", 90*time.Second)
	webLB, ok := e.nlb(web)
	if !ok {
		t.Fatal("no NLB for the victim")
	}
	listeners := e.lbListeners(webLB.ARN)
	owned := e.owned()

	// The tenant asks for the victim's Elastic IPs.
	nsService(t, thiefNS, "eips", map[string]string{aws.AnnEIPAllocations: eips}, nil, tcp(8443))
	waitRefused(t, thiefNS, "eips", victimNS+"/web")

	// An NLB named for the tenant's Service already exists, but another
	// cluster made it: the tenant cannot take it over, or delete it.
	ensureNamespace(t, thiefNS)
	late, err := cp.Admin.CoreV1().Services(thiefNS).Create(context.Background(), &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "late", Namespace: thiefNS},
		Spec:       v1.ServiceSpec{Type: v1.ServiceTypeClusterIP, Selector: map[string]string{"app": "late"}, Ports: []v1.ServicePort{tcp(9000)}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cp.Admin.CoreV1().Services(thiefNS).Delete(context.Background(), "late", metav1.DeleteOptions{})
	})
	// What the AWS CCM of cluster "other" makes for the Service: the NLB
	// named by cloudprovider.DefaultLoadBalancerName (its
	// GetLoadBalancerName), tagged by its buildTags with the Service's name.
	name := cloudprovider.DefaultLoadBalancerName(late)
	var subnets []string
	for _, s := range e.subnets {
		subnets = append(subnets, s.ID)
	}
	slices.Sort(subnets)
	out, err := e.awsUser().CreateLoadBalancer(context.Background(), &elbv2.CreateLoadBalancerInput{
		Name: awssdk.String(name), Type: elbtypes.LoadBalancerTypeEnumNetwork, Subnets: subnets,
		Tags: []elbtypes.Tag{
			{Key: awssdk.String(aws.TagClusterPrefix + "other"), Value: awssdk.String(aws.TagOwned)},
			{Key: awssdk.String(aws.TagServiceName), Value: awssdk.String(thiefNS + "/late")},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	foreign := out.LoadBalancers[0]
	owned["loadBalancers"]++
	late.Spec.Type = v1.ServiceTypeLoadBalancer
	if _, err := cp.Admin.CoreV1().Services(thiefNS).Update(context.Background(), late, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRefused(t, thiefNS, "late", `cluster "other"`)

	check := func(when string) {
		t.Helper()
		if got := e.owned(); !mapsEqual(got, owned) {
			t.Errorf("%s: live resources %v, want %v", when, got, owned)
		}
		if got := e.lbListeners(webLB.ARN); !mapsEqual(got, listeners) {
			t.Errorf("%s: the victim's listeners %v, want %v", when, got, listeners)
		}
		if _, ok := e.fake.LoadBalancer(awssdk.ToString(foreign.LoadBalancerArn)); !ok {
			t.Errorf("%s: the other cluster's NLB was deleted", when)
		}
		sameStatus(t, web)
		noIngress(t, thiefNS, "eips")
		noIngress(t, thiefNS, "late")
	}
	check("after the attempts")
	deleteNSServiceAndWait(t, thiefNS, "eips", 60*time.Second)
	deleteNSServiceAndWait(t, thiefNS, "late", 60*time.Second)
	check("after the tenant's Services were deleted")
}

// gceUser is a Compute client acting as another tool in the project.
func (e *gceEnv) gceUser(t *testing.T) (*compute.AddressesClient, *compute.ForwardingRulesClient, *compute.TargetPoolsClient) {
	t.Helper()
	opts := []option.ClientOption{
		option.WithEndpoint(e.fake.URL()),
		option.WithTokenSource(oauth2.StaticTokenSource(&oauth2.Token{AccessToken: e.secret, TokenType: "Bearer"})),
	}
	ctx := context.Background()
	a, err := compute.NewAddressesRESTClient(ctx, opts...)
	if err != nil {
		t.Fatal(err)
	}
	f, err := compute.NewForwardingRulesRESTClient(ctx, opts...)
	if err != nil {
		t.Fatal(err)
	}
	p, err := compute.NewTargetPoolsRESTClient(ctx, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _, _ = a.Close(), f.Close(), p.Close() })
	return a, f, p
}

func TestGCETakeoverIsRefused(t *testing.T) {
	e, _ := gceLB(t, 2, nil)
	addrs, rules, pools := e.gceUser(t)
	ctx := context.Background()
	wait := func(op *compute.Operation, err error) {
		t.Helper()
		if err == nil {
			err = op.Wait(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	reserve := func(name string) string {
		t.Helper()
		wait(addrs.Insert(ctx, &computepb.InsertAddressRequest{Project: gceProject, Region: gceRegion, AddressResource: &computepb.Address{Name: &name}}))
		a, err := addrs.Get(ctx, &computepb.GetAddressRequest{Project: gceProject, Region: gceRegion, Address: name})
		if err != nil {
			t.Fatal(err)
		}
		return a.GetAddress()
	}
	// The victim serves on a static address; another tool's forwarding
	// rule uses a second one.
	victimIP := reserve("shop-static")
	foreignIP := reserve("billing-static")
	wait(pools.Insert(ctx, &computepb.InsertTargetPoolRequest{Project: gceProject, Region: gceRegion, TargetPoolResource: &computepb.TargetPool{Name: ptrTo("billing-pool")}}))
	wait(rules.Insert(ctx, &computepb.InsertForwardingRuleRequest{Project: gceProject, Region: gceRegion, ForwardingRuleResource: &computepb.ForwardingRule{
		Name: ptrTo("billing-rule"), IPAddress: &foreignIP, PortRange: ptrTo("443"), Target: ptrTo("regions/" + gceRegion + "/targetPools/billing-pool")}}))

	withIP := func(ip string) func(*v1.Service) { return func(s *v1.Service) { s.Spec.LoadBalancerIP = ip } }
	nsService(t, victimNS, "web", nil, withIP(victimIP), tcp(80))
	web := waitNSIngress(t, victimNS, "web", 90*time.Second)
	if web.Status.LoadBalancer.Ingress[0].IP != victimIP {
		t.Fatalf("the victim serves on %v, want %s", web.Status.LoadBalancer.Ingress, victimIP)
	}
	liveBefore := e.live()
	rulesBefore := e.fake.ForwardingRules()

	// Other ports on the victim's address: GCE would let the rules share
	// it, and the tenant would serve on the victim's address.
	nsService(t, thiefNS, "same-ip", nil, withIP(victimIP), tcp(8443))
	waitRefused(t, thiefNS, "same-ip", victimNS+"/web")
	// Another tool's address.
	nsService(t, thiefNS, "foreign-ip", nil, withIP(foreignIP), tcp(8443))
	waitRefused(t, thiefNS, "foreign-ip", "billing-rule")

	check := func(when string) {
		t.Helper()
		if got := e.fake.ForwardingRules(); !reflect.DeepEqual(got, rulesBefore) {
			t.Errorf("%s: forwarding rules changed:\n was %+v\n now %+v", when, rulesBefore, got)
		}
		// The tenant's Services may have made health checks, pools and
		// firewalls of their own, never a rule on someone's address.
		if got := e.live()["forwardingRules"]; got != liveBefore["forwardingRules"] {
			t.Errorf("%s: %d forwarding rules, want %d", when, got, liveBefore["forwardingRules"])
		}
		sameStatus(t, web)
		noIngress(t, thiefNS, "same-ip")
		noIngress(t, thiefNS, "foreign-ip")
	}
	check("after the attempts")
	deleteNSServiceAndWait(t, thiefNS, "same-ip", 60*time.Second)
	deleteNSServiceAndWait(t, thiefNS, "foreign-ip", 60*time.Second)
	check("after the tenant's Services were deleted")
	if got := e.live(); !mapsEqual(got, liveBefore) {
		t.Errorf("live resources %v after the tenant left, want %v", got, liveBefore)
	}

	// Within one namespace, Services may share a static address on other
	// ports, as upstream allows (a UDP Service beside a TCP one).
	nsService(t, victimNS, "dns", nil, withIP(victimIP), udp(53))
	if got := waitNSIngress(t, victimNS, "dns", 90*time.Second).Status.LoadBalancer.Ingress[0].IP; got != victimIP {
		t.Errorf("the UDP Service beside the victim serves on %s, want the shared %s", got, victimIP)
	}
	sameStatus(t, web)
	deleteNSServiceAndWait(t, victimNS, "dns", 60*time.Second)
}

func ptrTo[T any](v T) *T { return &v }

// With services.adoptUnmarkedLoadBalancers, a Service takes over a load
// balancer nothing marks (one made by hand) and polyccm records it as the
// Service's, so it stays the Service's once the setting is off again, and
// goes with the Service. A load balancer another Service owns is still
// refused.
func TestDigitalOceanAdoptsUnmarkedOnlyWhenAllowed(t *testing.T) {
	e, _ := lbNodes(t, 2, func(s *harness.Settings) {
		s.Extra = "services:\n  adoptUnmarkedLoadBalancers: true"
	})
	handMade := e.fake.AddLoadBalancer(fakedo.LoadBalancer{Name: "legacy-web", Region: "fra1"})
	nsService(t, victimNS, "owner", nil, nil, tcp(80))
	owner := waitNSIngress(t, victimNS, "owner", 60*time.Second)
	ownerLB := owner.Annotations[digitalocean.AnnLoadBalancerID]

	nsService(t, thiefNS, "mover", map[string]string{digitalocean.AnnLoadBalancerID: handMade.ID}, nil, tcp(8080))
	mover := waitNSIngress(t, thiefNS, "mover", 60*time.Second)
	if ip := mover.Status.LoadBalancer.Ingress[0].IP; ip != handMade.IP {
		t.Fatalf("the adopting Service publishes %s, want the load balancer's %s", ip, handMade.IP)
	}
	if lb, _ := e.fake.LoadBalancer(handMade.ID); len(lb.ForwardingRules) != 1 || lb.ForwardingRules[0].EntryPort != 8080 {
		t.Errorf("the adopted load balancer was not converged: %+v", lb.ForwardingRules)
	}
	if !slices.ContainsFunc(mover.Status.Conditions, func(c metav1.Condition) bool {
		return c.Type == loadbalancers.ConditionType && strings.Contains(c.Message, "id="+handMade.ID)
	}) {
		t.Errorf("no record of the adopted load balancer: %+v", mover.Status.Conditions)
	}
	waitRefusedOrAdopted := func(ns, name, reason string) {
		t.Helper()
		eventually(t, 30*time.Second, reason+" event on "+ns+"/"+name, func() (bool, string) {
			evs := serviceEvents(t, ns, name)
			return slices.ContainsFunc(evs, func(ev string) bool { return strings.Contains(ev, " "+reason+": ") }), fmt.Sprintf("%q", evs)
		})
	}
	waitRefusedOrAdopted(thiefNS, "mover", loadbalancers.ReasonAdopted)
	// Adopting never reaches another Service's load balancer.
	nsService(t, thiefNS, "grabber", map[string]string{digitalocean.AnnLoadBalancerID: ownerLB}, nil, tcp(9090))
	waitRefused(t, thiefNS, "grabber", victimNS+"/owner")

	// Off again: the adopted load balancer stays the Service's.
	if _, err := e.ccm.Stop(15 * time.Second); err != nil {
		t.Fatal(err)
	}
	_ = cp.Admin.CoordinationV1().Leases("kube-system").Delete(context.Background(), "cloud-controller-manager", metav1.DeleteOptions{})
	e.opts.Config = strings.Replace(e.opts.Config, "adoptUnmarkedLoadBalancers: true", "adoptUnmarkedLoadBalancers: false", 1)
	e.restart()
	patchNS(t, thiefNS, "mover", map[string]any{"spec": map[string]any{"ports": []v1.ServicePort{tcp(8080), tcp(8081)}}})
	eventually(t, 60*time.Second, "the adopted load balancer follows the Service", func() (bool, string) {
		lb, _ := e.fake.LoadBalancer(handMade.ID)
		return len(lb.ForwardingRules) == 2, fmt.Sprintf("rules %+v", lb.ForwardingRules)
	})
	deleteNSServiceAndWait(t, thiefNS, "grabber", 60*time.Second)
	deleteNSServiceAndWait(t, thiefNS, "mover", 60*time.Second)
	if _, ok := e.fake.LoadBalancer(handMade.ID); ok {
		t.Error("the adopted load balancer outlived its Service")
	}
	if _, ok := e.fake.LoadBalancer(ownerLB); !ok {
		t.Error("the owner's load balancer was deleted")
	}
}

func patchNS(t *testing.T, ns, name string, patch any) {
	t.Helper()
	b, _ := json.Marshal(patch)
	if _, err := cp.Admin.CoreV1().Services(ns).Patch(context.Background(), name, types.MergePatchType, b, metav1.PatchOptions{}); err != nil {
		t.Fatalf("patching Service %s/%s: %v", ns, name, err)
	}
}
