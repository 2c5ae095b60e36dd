package loadbalancers_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	"github.com/polyccm/polyccm/core/loadbalancers"
)

const (
	uidA  = "0c6b1f0e-1d2c-4e5f-8a9b-7c6d5e4f3a2b"
	uidB  = "9f8e7d6c-5b4a-4321-8fed-cba987654321"
	annID = "example.com/load-balancer-id"
)

type clients struct{ kube kubernetes.Interface }

func (c clients) Config(string) (*restclient.Config, error)   { return &restclient.Config{}, nil }
func (c clients) ConfigOrDie(string) *restclient.Config       { return &restclient.Config{} }
func (c clients) Client(string) (kubernetes.Interface, error) { return c.kube, nil }
func (c clients) ClientOrDie(string) kubernetes.Interface     { return c.kube }

func service(ns, name, uid string, ann map[string]string, ingressIP string) *v1.Service {
	s := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid), Annotations: ann},
		Spec:       v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer},
	}
	if ingressIP != "" {
		s.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: ingressIP}}
	}
	return s
}

// asksByID is how a driver like DigitalOcean's says a Service asks for a
// load balancer: an annotation naming its ID.
func asksByID(svc *v1.Service, r loadbalancers.Resource) string {
	if id := svc.Annotations[annID]; id != "" && id == r.ID {
		return "the annotation " + annID
	}
	return ""
}

type env struct {
	t    *testing.T
	kube *k8sfake.Clientset
	rec  *record.FakeRecorder
	own  *loadbalancers.Ownership
}

func newEnv(t *testing.T, adopt, records bool, svcs ...*v1.Service) *env {
	t.Helper()
	e := &env{t: t, kube: k8sfake.NewClientset(), rec: record.NewFakeRecorder(100)}
	for _, s := range svcs {
		if _, err := e.kube.CoreV1().Services(s.Namespace).Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	e.own = loadbalancers.NewOwnership(loadbalancers.Options{
		Cloud: "Example", Clients: clients{e.kube}, Recorder: e.rec,
		AdoptUnmarked: adopt, Records: records, Asks: asksByID,
	})
	return e
}

func (e *env) events() []string {
	var out []string
	for {
		select {
		case ev := <-e.rec.Events:
			out = append(out, ev)
		default:
			return out
		}
	}
}

func TestOwnershipRule(t *testing.T) {
	victim := service("team-a", "web", uidA, map[string]string{annID: "lb-1"}, "203.0.113.10")
	victimName := loadbalancers.DefaultName(victim)
	for _, tc := range []struct {
		name    string
		adopt   bool
		others  []*v1.Service
		svc     *v1.Service
		res     loadbalancers.Resource
		want    loadbalancers.Verdict
		wantWhy string // in the refusal
	}{
		{
			name: "named from its own UID",
			svc:  victim,
			res:  loadbalancers.Resource{Kind: "load balancer", ID: "lb-1", Name: victimName, UIDMark: loadbalancers.UIDMark(victimName)},
			want: loadbalancers.Owned,
		},
		{
			name:    "named from another Service's UID, asked for by ID",
			others:  []*v1.Service{victim},
			svc:     service("team-b", "thief", uidB, map[string]string{annID: "lb-1"}, ""),
			res:     loadbalancers.Resource{Kind: "load balancer", ID: "lb-1", Name: victimName, UIDMark: loadbalancers.UIDMark(victimName), Via: "the annotation " + annID},
			want:    loadbalancers.Refused,
			wantWhy: "Service team-a/web",
		},
		{
			name:    "named from a UID not in this cluster",
			adopt:   true,
			svc:     service("team-b", "thief", uidB, nil, ""),
			res:     loadbalancers.Resource{Kind: "load balancer", ID: "lb-9", Name: "a11112222333344445555666677778888"[:32], UIDMark: loadbalancers.UIDMark("a11112222333344445555666677778888"[:32])},
			want:    loadbalancers.Refused,
			wantWhy: "not in this cluster",
		},
		{
			name:    "custom name, victim's status shows it",
			others:  []*v1.Service{victim},
			svc:     service("team-b", "thief", uidB, map[string]string{annID: "lb-1"}, ""),
			res:     loadbalancers.Resource{Kind: "load balancer", ID: "lb-1", Name: "shop", Addresses: []string{"203.0.113.10"}},
			want:    loadbalancers.Refused,
			wantWhy: "status shows its address 203.0.113.10",
		},
		{
			name: "custom name, own status shows it",
			svc:  victim,
			res:  loadbalancers.Resource{Kind: "load balancer", ID: "lb-1", Name: "shop", Addresses: []string{"203.0.113.10"}},
			want: loadbalancers.Owned,
		},
		{
			name:    "another cluster's",
			adopt:   true,
			svc:     victim,
			res:     loadbalancers.Resource{Kind: "load balancer", ID: "lb-1", Name: victimName, UIDMark: loadbalancers.UIDMark(victimName), OtherCluster: "prod-2"},
			want:    loadbalancers.Refused,
			wantWhy: `cluster "prod-2"`,
		},
		{
			name:    "tag names another Service",
			others:  []*v1.Service{victim},
			svc:     service("team-b", "thief", uidB, nil, ""),
			res:     loadbalancers.Resource{Kind: "load balancer", ID: "arn:1", OurCluster: true, Service: "team-a/web"},
			want:    loadbalancers.Refused,
			wantWhy: "marks name Service team-a/web",
		},
		{
			name: "tag names this Service",
			svc:  victim,
			res:  loadbalancers.Resource{Kind: "load balancer", ID: "arn:1", OurCluster: true, Service: "team-a/web"},
			want: loadbalancers.Owned,
		},
		{
			name:    "unmarked, adopting not allowed",
			svc:     service("team-b", "thief", uidB, map[string]string{annID: "lb-7"}, ""),
			res:     loadbalancers.Resource{Kind: "load balancer", ID: "lb-7", Name: "someone-elses", Via: "the annotation " + annID},
			want:    loadbalancers.Refused,
			wantWhy: loadbalancers.AdoptKey,
		},
		{
			name:  "unmarked, adopting allowed",
			adopt: true,
			svc:   service("team-b", "new-owner", uidB, map[string]string{annID: "lb-7"}, ""),
			res:   loadbalancers.Resource{Kind: "load balancer", ID: "lb-7", Name: "someone-elses", Via: "the annotation " + annID},
			want:  loadbalancers.Adopted,
		},
		{
			name:    "unmarked and asked for by two Services",
			adopt:   true,
			others:  []*v1.Service{service("team-a", "first", uidA, map[string]string{annID: "lb-7"}, "")},
			svc:     service("team-b", "second", uidB, map[string]string{annID: "lb-7"}, ""),
			res:     loadbalancers.Resource{Kind: "load balancer", ID: "lb-7", Name: "shared", Via: "the annotation " + annID},
			want:    loadbalancers.Refused,
			wantWhy: "asks for it too",
		},
		{
			name:    "named for it, but the cloud shows no cluster mark",
			svc:     victim,
			res:     loadbalancers.Resource{Kind: "load balancer", ID: "arn:2", Name: victimName, UIDMark: loadbalancers.UIDMark(victimName), Marks: true},
			want:    loadbalancers.Refused,
			wantWhy: loadbalancers.AdoptKey,
		},
		{
			name:  "named for it, no cluster mark, adopting allowed",
			adopt: true,
			svc:   victim,
			res:   loadbalancers.Resource{Kind: "load balancer", ID: "arn:2", Name: victimName, UIDMark: loadbalancers.UIDMark(victimName), Marks: true},
			want:  loadbalancers.Adopted,
		},
		{
			name:    "shared with this cluster, not owned",
			adopt:   true,
			svc:     victim,
			res:     loadbalancers.Resource{Kind: "load balancer", ID: "arn:3", Name: victimName, UIDMark: loadbalancers.UIDMark(victimName), Marks: true, Shared: true, Service: "team-a/web"},
			want:    loadbalancers.Refused,
			wantWhy: "shared, not owned",
		},
		{
			name: "this cluster's, nobody else asks",
			svc:  service("team-b", "svc", uidB, nil, ""),
			res:  loadbalancers.Resource{Kind: "load balancer", ID: "lb-7", OurCluster: true},
			want: loadbalancers.Owned,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.adopt, false, append(tc.others, tc.svc)...)
			got, err := e.own.Check(context.Background(), tc.svc, tc.res)
			if got != tc.want {
				t.Fatalf("verdict %v (err %v), want %v", got, err, tc.want)
			}
			evs := e.events()
			if tc.want != loadbalancers.Refused {
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				return
			}
			if !loadbalancers.IsNotOwned(err) {
				t.Fatalf("err = %T %v, want a NotOwnedError", err, err)
			}
			if !strings.Contains(err.Error(), tc.wantWhy) {
				t.Errorf("err = %q, want it to say %q", err, tc.wantWhy)
			}
			if len(evs) != 1 || !strings.HasPrefix(evs[0], "Warning "+loadbalancers.ReasonNotOwned) {
				t.Errorf("events %q, want one %s warning", evs, loadbalancers.ReasonNotOwned)
			}
			// Owns agrees, without an event.
			if owns, err := e.own.Owns(context.Background(), tc.svc, tc.res); owns || err != nil {
				t.Errorf("Owns = %v, %v after a refusal", owns, err)
			}
			if evs := e.events(); len(evs) != 0 {
				t.Errorf("Owns recorded events %q", evs)
			}
		})
	}
}

// The record makes a custom-named load balancer the Service's from its
// creation on, before any status shows it, and only polyccm can write it.
func TestRecordProvesOwnership(t *testing.T) {
	owner := service("team-a", "web", uidA, nil, "")
	thief := service("team-b", "thief", uidB, map[string]string{annID: "lb-1"}, "")
	e := newEnv(t, false, true, owner, thief)
	ctx := context.Background()
	lb := loadbalancers.Resource{Kind: "load balancer", ID: "lb-1", Name: "shop"}

	// Before the create: the name is recorded.
	if err := e.own.Record(ctx, owner, loadbalancers.Resource{Kind: "load balancer", Name: "shop"}); err != nil {
		t.Fatal(err)
	}
	fresh := func(s *v1.Service) *v1.Service {
		got, err := e.kube.CoreV1().Services(s.Namespace).Get(ctx, s.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	// The owner passes even with the stale copy the controller may hold:
	// the rule reads the Service afresh before refusing.
	if v, err := e.own.Check(ctx, owner, lb); v != loadbalancers.Owned || err != nil {
		t.Fatalf("owner: %v, %v", v, err)
	}
	// Check wrote the ID into the record.
	cond := fresh(owner).Status.Conditions
	if len(cond) != 1 || cond[0].Type != loadbalancers.ConditionType || !strings.Contains(cond[0].Message, "id=lb-1") {
		t.Fatalf("conditions %+v, want the record of lb-1", cond)
	}
	// Another Service asking by annotation is refused, with the owner named.
	_, err := e.own.Check(ctx, thief, loadbalancers.Resource{Kind: "load balancer", ID: "lb-1", Name: "shop", Via: "the annotation " + annID})
	var no *loadbalancers.NotOwnedError
	if !errors.As(err, &no) || !strings.Contains(no.Why, "team-a/web") {
		t.Fatalf("thief: %v, want a refusal naming team-a/web", err)
	}
	// ...and may not delete it either, though its own deletion goes on.
	if ok, err := e.own.CheckDelete(ctx, fresh(thief), lb); ok || err != nil {
		t.Fatalf("CheckDelete for the thief = %v, %v", ok, err)
	}
	if ok, err := e.own.CheckDelete(ctx, fresh(owner), lb); !ok || err != nil {
		t.Fatalf("CheckDelete for the owner = %v, %v", ok, err)
	}
}

func TestCheckAddresses(t *testing.T) {
	holder := service("team-a", "web", uidA, nil, "198.51.100.7")
	asker := service("team-b", "copy", uidB, nil, "")
	e := newEnv(t, false, false, holder, asker)
	err := e.own.CheckAddresses(context.Background(), asker, "spec.loadBalancerIP", []string{"198.51.100.7"}, loadbalancers.StatusAddresses)
	if !loadbalancers.IsNotOwned(err) || !strings.Contains(err.Error(), "team-a/web") || !strings.Contains(err.Error(), "spec.loadBalancerIP") {
		t.Fatalf("err = %v, want a refusal naming team-a/web and spec.loadBalancerIP", err)
	}
	if evs := e.events(); len(evs) != 1 {
		t.Errorf("events %q, want one", evs)
	}
	// The holder itself may keep asking for its address, and a Service of
	// its own namespace may share it (a UDP Service beside a TCP one).
	for _, s := range []*v1.Service{holder, service("team-a", "web-udp", "5a5a5a5a-0000-4000-8000-000000000003", nil, "")} {
		if err := e.own.CheckAddresses(context.Background(), s, "spec.loadBalancerIP", []string{"198.51.100.7"}, loadbalancers.StatusAddresses); err != nil {
			t.Errorf("%s: %v", s.Name, err)
		}
	}
}
