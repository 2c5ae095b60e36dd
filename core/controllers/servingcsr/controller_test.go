package servingcsr

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	certv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	cloudprovider "k8s.io/cloud-provider"
)

// fakeCloud is an InstancesV2 with a fixed answer per Node name.
type fakeCloud struct {
	mu      sync.Mutex
	addrs   map[string][]v1.NodeAddress // by node name; absent: no instance
	err     error                       // ambiguous failure for every lookup
	lookups int
}

func (f *fakeCloud) InstanceExists(context.Context, *v1.Node) (bool, error) { return true, nil }
func (f *fakeCloud) InstanceShutdown(context.Context, *v1.Node) (bool, error) {
	return false, nil
}

func (f *fakeCloud) InstanceMetadata(_ context.Context, n *v1.Node) (*cloudprovider.InstanceMetadata, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lookups++
	if f.err != nil {
		return nil, f.err
	}
	a, ok := f.addrs[n.Name]
	if !ok {
		return nil, fmt.Errorf("node %q: %w", n.Name, cloudprovider.InstanceNotFound)
	}
	return &cloudprovider.InstanceMetadata{ProviderID: "fake://" + n.Name, NodeAddresses: a}, nil
}

var web1Addrs = []v1.NodeAddress{
	{Type: v1.NodeInternalIP, Address: "10.0.0.5"},
	{Type: v1.NodeExternalIP, Address: "203.0.113.5"},
	{Type: v1.NodeHostName, Address: "web-1"},
}

var web1Request = x509.CertificateRequest{
	Subject:     nodeSubject("web-1"),
	DNSNames:    []string{"web-1"},
	IPAddresses: []net.IP{net.ParseIP("10.0.0.5"), net.ParseIP("203.0.113.5")},
}

type testEnv struct {
	c        *Controller
	client   *fake.Clientset
	cloud    *fakeCloud
	recorder *record.FakeRecorder
	factory  informers.SharedInformerFactory
}

// newTestEnv builds a controller whose caches hold nodes and csrs, as
// the informers would after their first list.
func newTestEnv(t *testing.T, nodes []*v1.Node, csrs ...*certv1.CertificateSigningRequest) *testEnv {
	t.Helper()
	var objs []runtime.Object
	for _, n := range nodes {
		objs = append(objs, n)
	}
	for _, c := range csrs {
		objs = append(objs, c)
	}
	e := &testEnv{
		client:   fake.NewClientset(),
		cloud:    &fakeCloud{addrs: map[string][]v1.NodeAddress{"web-1": web1Addrs}},
		recorder: record.NewFakeRecorder(100),
	}
	for _, o := range objs {
		if err := e.client.Tracker().Add(o); err != nil {
			t.Fatal(err)
		}
	}
	e.factory = informers.NewSharedInformerFactory(e.client, 0)
	var err error
	e.c, err = New(Options{
		Client:    e.client,
		Nodes:     e.factory.Core().V1().Nodes(),
		Instances: e.cloud,
		Recorder:  e.recorder,
		Cloud:     "fake",
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		_ = e.factory.Core().V1().Nodes().Informer().GetIndexer().Add(n)
	}
	for _, c := range csrs {
		_ = e.c.csrInformer.GetIndexer().Add(c)
	}
	return e
}

func node(name, providerID string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodeSpec{ProviderID: providerID}}
}

// approvals returns the conditions written through the approval
// subresource.
func (e *testEnv) approvals() []certv1.CertificateSigningRequestCondition {
	var out []certv1.CertificateSigningRequestCondition
	for _, a := range e.client.Actions() {
		if a.GetVerb() == "update" && a.GetSubresource() == "approval" {
			csr := a.(k8stesting.UpdateAction).GetObject().(*certv1.CertificateSigningRequest)
			out = append(out, csr.Status.Conditions...)
		}
	}
	return out
}

func (e *testEnv) events() []string {
	var out []string
	for {
		select {
		case ev := <-e.recorder.Events:
			out = append(out, ev)
		default:
			return out
		}
	}
}

func TestSync(t *testing.T) {
	tests := []struct {
		name     string
		nodes    []*v1.Node
		csr      func(*testing.T) *certv1.CertificateSigningRequest
		cloud    func(*fakeCloud)
		want     certv1.RequestConditionType // "" = no approval update
		reason   string                      // of the condition, or of the event
		again    bool
		noLookup bool // the cloud must not be asked
	}{
		{name: "genuine", nodes: []*v1.Node{node("web-1", "fake://web-1")},
			csr:  func(t *testing.T) *certv1.CertificateSigningRequest { return csrFrom(t, "web-1", web1Request) },
			want: certv1.CertificateApproved, reason: ReasonApproved},
		{name: "genuine, Node without providerID", nodes: []*v1.Node{node("web-1", "")},
			csr:  func(t *testing.T) *certv1.CertificateSigningRequest { return csrFrom(t, "web-1", web1Request) },
			want: certv1.CertificateApproved, reason: ReasonApproved},
		{name: "extra IP", nodes: []*v1.Node{node("web-1", "fake://web-1")},
			csr: func(t *testing.T) *certv1.CertificateSigningRequest {
				r := web1Request
				r.IPAddresses = append(r.IPAddresses, net.ParseIP("198.51.100.7"))
				return csrFrom(t, "web-1", r)
			},
			reason: ReasonAddressUnverified, again: true},
		{name: "another node's name", nodes: []*v1.Node{node("web-1", "fake://web-1"), node("web-2", "fake://web-2")},
			csr:  func(t *testing.T) *certv1.CertificateSigningRequest { return csrFrom(t, "web-2", web1Request) },
			want: certv1.CertificateDenied, reason: ReasonNodeNameMismatch, noLookup: true},
		{name: "client auth usage", nodes: []*v1.Node{node("web-1", "fake://web-1")},
			csr: func(t *testing.T) *certv1.CertificateSigningRequest {
				return csrFrom(t, "web-1", web1Request, certv1.UsageDigitalSignature, certv1.UsageClientAuth)
			},
			reason: ReasonInvalidUsages, noLookup: true},
		{name: "no such Node", nodes: nil,
			csr:    func(t *testing.T) *certv1.CertificateSigningRequest { return csrFrom(t, "web-1", web1Request) },
			reason: ReasonNodeNotFound, again: true, noLookup: true},
		{name: "no instance", nodes: []*v1.Node{node("web-1", "fake://web-1")},
			csr:    func(t *testing.T) *certv1.CertificateSigningRequest { return csrFrom(t, "web-1", web1Request) },
			cloud:  func(f *fakeCloud) { delete(f.addrs, "web-1") },
			reason: ReasonInstanceNotFound, again: true},
		{name: "cloud unreachable", nodes: []*v1.Node{node("web-1", "fake://web-1")},
			csr:    func(t *testing.T) *certv1.CertificateSigningRequest { return csrFrom(t, "web-1", web1Request) },
			cloud:  func(f *fakeCloud) { f.err = errors.New("503 Service Unavailable") },
			reason: ReasonLookupFailed, again: true},
		{name: "cloud unreachable, request abandoned", nodes: []*v1.Node{node("web-1", "fake://web-1")},
			csr: func(t *testing.T) *certv1.CertificateSigningRequest {
				c := csrFrom(t, "web-1", web1Request)
				c.CreationTimestamp = metav1.NewTime(time.Now().Add(-time.Hour))
				return c
			},
			cloud:  func(f *fakeCloud) { f.err = errors.New("503 Service Unavailable") },
			reason: ReasonLookupFailed, again: false},
		{name: "providerID shared with another Node", nodes: []*v1.Node{node("web-1", "fake://web-9"), node("web-9", "fake://web-9")},
			csr:    func(t *testing.T) *certv1.CertificateSigningRequest { return csrFrom(t, "web-1", web1Request) },
			reason: ReasonProviderIDShared, again: true, noLookup: true},
		{name: "another signer", nodes: []*v1.Node{node("web-1", "fake://web-1")},
			csr: func(t *testing.T) *certv1.CertificateSigningRequest {
				c := csrFrom(t, "web-1", web1Request)
				c.Spec.SignerName = certv1.KubeAPIServerClientKubeletSignerName
				return c
			},
			noLookup: true},
		{name: "already approved", nodes: []*v1.Node{node("web-1", "fake://web-1")},
			csr: func(t *testing.T) *certv1.CertificateSigningRequest {
				c := csrFrom(t, "web-1", web1Request)
				c.Status.Conditions = []certv1.CertificateSigningRequestCondition{{Type: certv1.CertificateApproved, Status: v1.ConditionTrue}}
				return c
			},
			noLookup: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			csr := tt.csr(t)
			e := newTestEnv(t, tt.nodes, csr)
			if tt.cloud != nil {
				tt.cloud(e.cloud)
			}
			again := e.c.sync(context.Background(), csr.Name)
			if again != tt.again {
				t.Errorf("again = %v, want %v", again, tt.again)
			}
			conds := e.approvals()
			events := e.events()
			switch {
			case tt.want == "" && len(conds) > 0:
				t.Errorf("approval updated with %+v, want the request left alone", conds)
			case tt.want != "":
				if len(conds) != 1 || conds[0].Type != tt.want || conds[0].Status != v1.ConditionTrue || conds[0].Reason != tt.reason {
					t.Fatalf("conditions %+v, want one %s=True with reason %s", conds, tt.want, tt.reason)
				}
				if tt.want == certv1.CertificateApproved && !strings.Contains(conds[0].Message, "polyccm verified with fake") {
					t.Errorf("approval message %q does not say polyccm verified with the cloud", conds[0].Message)
				}
			}
			if tt.want != certv1.CertificateApproved && tt.reason != "" {
				if len(events) != 1 || !strings.HasPrefix(events[0], "Warning "+tt.reason+" ") {
					t.Errorf("events %q, want one Warning %s", events, tt.reason)
				}
			}
			if tt.reason == "" && len(events) > 0 {
				t.Errorf("events %q, want none", events)
			}
			if tt.noLookup && e.cloud.lookups > 0 {
				t.Errorf("the cloud was asked %d times, want never", e.cloud.lookups)
			}
			for _, a := range e.client.Actions() {
				if a.GetSubresource() == "status" {
					t.Errorf("wrote %s/status: the controller never signs", a.GetResource().Resource)
				}
			}
		})
	}
}

// A Node registered a moment ago may not be in the informer's cache yet.
func TestSyncFindsNodeMissingFromCache(t *testing.T) {
	csr := csrFrom(t, "web-1", web1Request)
	e := newTestEnv(t, nil, csr)
	if _, err := e.client.CoreV1().Nodes().Create(context.Background(), node("web-1", ""), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if again := e.c.sync(context.Background(), csr.Name); again {
		t.Errorf("again = true")
	}
	if conds := e.approvals(); len(conds) != 1 || conds[0].Type != certv1.CertificateApproved {
		t.Errorf("conditions %+v, want Approved", conds)
	}
}

// Run approves through the informers, and ignores other signers' requests.
func TestRun(t *testing.T) {
	e := newTestEnv(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := e.client.CoreV1().Nodes().Create(ctx, node("web-1", "fake://web-1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.factory.Start(ctx.Done())
	go e.c.Run(ctx, 2)

	other := csrFrom(t, "web-1", web1Request)
	other.Name, other.Spec.SignerName = "client", certv1.KubeAPIServerClientKubeletSignerName
	genuine := csrFrom(t, "web-1", web1Request)
	for _, c := range []*certv1.CertificateSigningRequest{other, genuine} {
		if _, err := e.client.CertificatesV1().CertificateSigningRequests().Create(ctx, c, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := e.client.CertificatesV1().CertificateSigningRequests().Get(ctx, genuine.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !Undecided(got) {
			if c := got.Status.Conditions; len(c) != 1 || c[0].Type != certv1.CertificateApproved {
				t.Fatalf("conditions %+v, want Approved", c)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the genuine request was not approved")
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, a := range e.client.Actions() {
		if a.GetSubresource() == "approval" && a.(k8stesting.UpdateAction).GetObject().(*certv1.CertificateSigningRequest).Name == other.Name {
			t.Errorf("the other signer's request was decided")
		}
	}
}
