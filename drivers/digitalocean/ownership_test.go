package digitalocean_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/polyccm/polyccm/core/loadbalancers"
	"github.com/polyccm/polyccm/drivers/digitalocean"
	fake "github.com/polyccm/polyccm/test/fakecloud/digitalocean"
)

const thiefUID = "7e57a11e-0000-4000-8000-0000000000b2"

// thief stores a second LoadBalancer Service, in another namespace, with
// the annotations given.
func (e *lbEnv) thief(ann map[string]string) *v1.Service {
	e.t.Helper()
	svc := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-b", Name: "grab", UID: types.UID(thiefUID), Annotations: ann},
		Spec: v1.ServiceSpec{
			Type:  v1.ServiceTypeLoadBalancer,
			Ports: []v1.ServicePort{{Name: "evil", Protocol: v1.ProtocolTCP, Port: 8443, NodePort: 31443}},
		},
	}
	got, err := e.kube.CoreV1().Services(svc.Namespace).Create(context.Background(), svc, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return got
}

// publish writes the ingress into the Service's status, as the service
// controller does after EnsureLoadBalancer.
func (e *lbEnv) publish(svc *v1.Service, st *v1.LoadBalancerStatus) *v1.Service {
	e.t.Helper()
	svc = e.reload(svc)
	svc.Status.LoadBalancer = *st
	got, err := e.kube.CoreV1().Services(svc.Namespace).UpdateStatus(context.Background(), svc, metav1.UpdateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return got
}

// victim makes the first Service's load balancer, active and published,
// and returns the LB and the Service.
func (e *lbEnv) victim(ann map[string]string) (fake.LoadBalancer, *v1.Service) {
	e.t.Helper()
	lb, svc := e.created(e.service(ann))
	st := e.active(svc)
	svc = e.publish(svc, st)
	lb, _ = e.fake.LoadBalancer(lb.ID)
	return lb, svc
}

// untouched fails unless the victim's LB is as it was and nothing was
// changed or deleted since the calls counted in before.
func (e *lbEnv) untouched(want fake.LoadBalancer, puts, deletes int) {
	e.t.Helper()
	got, ok := e.fake.LoadBalancer(want.ID)
	if !ok {
		e.t.Fatalf("the victim's load balancer %s was deleted", want.ID)
	}
	if !reflect.DeepEqual(got, want) {
		e.t.Errorf("the victim's load balancer changed:\n got %+v\nwant %+v", got, want)
	}
	if e.calls(lbPut) != puts || e.calls(lbDelete) != deletes {
		e.t.Errorf("updates %d, deletes %d; want %d and %d", e.calls(lbPut), e.calls(lbDelete), puts, deletes)
	}
}

// Every way a Service in another namespace can point at a load balancer
// that is not its own: each is refused with a Warning event naming the
// owner, the load balancer is neither changed nor deleted, and the thief's
// own deletion goes through.
func TestTakeoverIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name   string
		victim map[string]string // the victim's annotations
		thief  func(lb fake.LoadBalancer) map[string]string
		owner  string // what the refusal must name
	}{
		{
			name: "load-balancer-id of a UID-named LB",
			thief: func(lb fake.LoadBalancer) map[string]string {
				return map[string]string{digitalocean.AnnLoadBalancerID: lb.ID}
			},
			owner: "shop/web",
		},
		{
			name:  "do-loadbalancer-name of a UID-named LB",
			thief: func(lb fake.LoadBalancer) map[string]string { return map[string]string{digitalocean.AnnName: lb.Name} },
			owner: "shop/web",
		},
		{
			name:   "load-balancer-id of a custom-named LB",
			victim: map[string]string{digitalocean.AnnName: "shop-frontend"},
			thief: func(lb fake.LoadBalancer) map[string]string {
				return map[string]string{digitalocean.AnnLoadBalancerID: lb.ID}
			},
			owner: "shop/web",
		},
		{
			name:   "do-loadbalancer-name of a custom-named LB",
			victim: map[string]string{digitalocean.AnnName: "shop-frontend"},
			thief:  func(lb fake.LoadBalancer) map[string]string { return map[string]string{digitalocean.AnnName: lb.Name} },
			owner:  "shop/web",
		},
		{
			name:   "both annotations, and disown to publish the victim's address",
			victim: map[string]string{digitalocean.AnnName: "shop-frontend"},
			thief: func(lb fake.LoadBalancer) map[string]string {
				return map[string]string{digitalocean.AnnLoadBalancerID: lb.ID, digitalocean.AnnName: lb.Name, digitalocean.AnnDisown: "true"}
			},
			owner: "shop/web",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Adopting unmarked load balancers is allowed: it must not
			// open a way to another Service's.
			e := newLBEnvAdopting(t, true)
			lb, victim := e.victim(tc.victim)
			victimStatus := victim.Status
			lbEvents(e.rec)
			puts, deletes := e.calls(lbPut), e.calls(lbDelete)

			thief := e.thief(tc.thief(lb))
			st, err := e.lbs.EnsureLoadBalancer(lbCtx(t), "kubernetes", thief, e.nodes)
			if !loadbalancers.IsNotOwned(err) || !strings.Contains(err.Error(), tc.owner) {
				t.Fatalf("Ensure for the thief = %+v, %v; want a refusal naming %s", st, err, tc.owner)
			}
			if err := e.lbs.UpdateLoadBalancer(lbCtx(t), "kubernetes", thief, e.nodes[:1]); !loadbalancers.IsNotOwned(err) && thief.Annotations[digitalocean.AnnDisown] == "" {
				t.Errorf("Update for the thief = %v, want a refusal", err)
			}
			if st, exists, err := e.lbs.GetLoadBalancer(lbCtx(t), "kubernetes", thief); exists || err != nil {
				t.Errorf("GetLoadBalancer for the thief = %+v, %v, %v; want not found", st, exists, err)
			}
			if err := e.lbs.EnsureLoadBalancerDeleted(lbCtx(t), "kubernetes", thief); err != nil {
				t.Errorf("deleting the thief's Service: %v, want it to go without touching the LB", err)
			}
			e.untouched(lb, puts, deletes)
			if got := e.reload(victim).Status; !reflect.DeepEqual(got.LoadBalancer, victimStatus.LoadBalancer) {
				t.Errorf("the victim's status changed: %+v", got)
			}
			if got := e.reload(thief).Status.LoadBalancer.Ingress; len(got) != 0 {
				t.Errorf("the thief's status shows %+v", got)
			}
			var warned bool
			for _, ev := range lbEvents(e.rec) {
				if strings.HasPrefix(ev, "Warning "+loadbalancers.ReasonNotOwned) && strings.Contains(ev, tc.owner) {
					warned = true
				}
			}
			if !warned {
				t.Errorf("no %s warning naming %s", loadbalancers.ReasonNotOwned, tc.owner)
			}
			// The victim goes on as before.
			if _, err := e.ensure(e.reload(victim)); err != nil {
				t.Errorf("the victim's next sync: %v", err)
			}
		})
	}
}

// A load balancer nothing marks (made by hand, or by another cluster) is
// not adopted by annotation unless the operator allows it.
func TestUnmarkedLoadBalancerIsNotAdopted(t *testing.T) {
	for _, ann := range []func(fake.LoadBalancer) map[string]string{
		func(lb fake.LoadBalancer) map[string]string { return map[string]string{digitalocean.AnnName: lb.Name} },
		func(lb fake.LoadBalancer) map[string]string {
			return map[string]string{digitalocean.AnnLoadBalancerID: lb.ID}
		},
	} {
		e := newLBEnv(t)
		lb := e.fake.AddLoadBalancer(fake.LoadBalancer{Name: "billing-prod", Region: lbRegion})
		lb, _ = e.fake.LoadBalancer(lb.ID)
		svc := e.service(ann(lb))
		_, err := e.ensure(svc)
		if !loadbalancers.IsNotOwned(err) || !strings.Contains(err.Error(), loadbalancers.AdoptKey) {
			t.Fatalf("Ensure = %v, want a refusal that names %s", err, loadbalancers.AdoptKey)
		}
		if err := e.lbs.EnsureLoadBalancerDeleted(lbCtx(t), "kubernetes", svc); err != nil {
			t.Fatalf("EnsureLoadBalancerDeleted: %v", err)
		}
		e.untouched(lb, 0, 0)
		if n := e.calls(lbPost); n != 0 {
			t.Errorf("%d creates", n)
		}
	}
}

// A custom-named load balancer is the Service's own from the moment it is
// created, before its status shows it, and after a restart.
func TestCustomNamedLoadBalancerIsRecorded(t *testing.T) {
	e := newLBEnv(t)
	lb, svc := e.created(e.service(map[string]string{digitalocean.AnnName: "shop-frontend"}))
	cond := svc.Status.Conditions
	if len(cond) != 1 || cond[0].Type != loadbalancers.ConditionType || !strings.Contains(cond[0].Message, "id="+lb.ID) {
		t.Fatalf("conditions %+v, want polyccm's record of %s", cond, lb.ID)
	}
	// The Service as the controller's cache had it before the create (no
	// record, no ID annotation): the LB is still found and owned.
	stale := svc.DeepCopy()
	delete(stale.Annotations, digitalocean.AnnLoadBalancerID)
	stale.Status.Conditions = nil
	if st := e.active(stale); len(st.Ingress) != 2 {
		t.Fatalf("ingress %+v", st.Ingress)
	}
	if n := e.calls(lbPost); n != 1 {
		t.Errorf("%d creates, want 1", n)
	}
}
