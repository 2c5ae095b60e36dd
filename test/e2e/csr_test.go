//go:build e2e

package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	certv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/polyccm/polyccm/core/controllers/servingcsr"
	fakedo "github.com/polyccm/polyccm/test/fakecloud/digitalocean"
	"github.com/polyccm/polyccm/test/harness"
)

// nodeClient authenticates as a kubelet does after TLS bootstrapping: a
// client certificate for system:node:<name> in group system:nodes, so the
// API server itself fills in a request's spec.username and spec.groups.
func nodeClient(t *testing.T, name string) kubernetes.Interface {
	t.Helper()
	cfg, err := cp.RESTConfigFor("system:node:"+name, "system:nodes")
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// submitCSR creates a certificate request as the client's identity.
func submitCSR(t *testing.T, cs kubernetes.Interface, name, signer string, tmpl x509.CertificateRequest, usages ...certv1.KeyUsage) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &tmpl, key)
	if err != nil {
		t.Fatal(err)
	}
	csr := &certv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: certv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: signer,
			Usages:     usages,
		},
	}
	if _, err := cs.CertificatesV1().CertificateSigningRequests().Create(context.Background(), csr, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating CSR %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = cp.Admin.CertificatesV1().CertificateSigningRequests().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

func getCSR(t *testing.T, name string) *certv1.CertificateSigningRequest {
	t.Helper()
	csr, err := cp.Admin.CertificatesV1().CertificateSigningRequests().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return csr
}

// csrEvents returns the events on a CSR (cluster-scoped, so in "default").
func csrEvents(t *testing.T, name string) []v1.Event {
	t.Helper()
	evs, err := cp.Admin.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{
		FieldSelector: "involvedObject.kind=CertificateSigningRequest,involvedObject.name=" + name,
	})
	if err != nil {
		t.Fatal(err)
	}
	return evs.Items
}

// waitDecision waits until the request is approved or denied and returns
// that condition.
func waitDecision(t *testing.T, name string) certv1.CertificateSigningRequestCondition {
	t.Helper()
	var got certv1.CertificateSigningRequestCondition
	eventually(t, 30*time.Second, "a decision on "+name, func() (bool, string) {
		for _, c := range getCSR(t, name).Status.Conditions {
			if c.Type == certv1.CertificateApproved || c.Type == certv1.CertificateDenied {
				got = c
				return true, ""
			}
		}
		return false, "pending"
	})
	return got
}

// waitWarning waits for polyccm's Warning event with reason on a request.
func waitWarning(t *testing.T, name, reason string) v1.Event {
	t.Helper()
	var got v1.Event
	eventually(t, 30*time.Second, "a "+reason+" event on "+name, func() (bool, string) {
		evs := csrEvents(t, name)
		for _, ev := range evs {
			if ev.Type == v1.EventTypeWarning && ev.Reason == reason {
				got = ev
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d other events", len(evs))
	})
	return got
}

// A kubelet's serving-certificate request naming exactly its droplet's
// addresses is approved; one naming an address the cloud does not report,
// one for another node's name and one with a client usage are not; a
// request for another signer is never touched, and polyccm's identity
// (rbac.yaml) could not approve it if it tried.
func TestCSRKubeletServing(t *testing.T) {
	droplets := []fakedo.Droplet{
		{Name: "testcsrkubeletserving-000", IPv6: "2a03:b0c0:3:d0::1:1"},
		{Name: "testcsrkubeletserving-001"},
	}
	e := newDOEnv(t, droplets, func(s *harness.Settings) {
		s.Controllers = "nodes: true\nnodeLifecycle: true\nkubeletServingCSR: true"
	})
	n0, n1 := e.nodeName(0), e.nodeName(1)
	if droplets[0].Name != n0 {
		t.Fatalf("test bug: droplet name %q, node name %q", droplets[0].Name, n0)
	}
	e.register(n0, "")
	e.register(n1, "")
	// A kubelet asks for its serving certificate once the cloud has set
	// its Node's addresses.
	e.waitInitialized([]string{n0, n1}, 30*time.Second)

	d0 := droplets[0]
	addrs := x509.CertificateRequest{
		Subject:  pkix.Name{CommonName: "system:node:" + n0, Organization: []string{"system:nodes"}},
		DNSNames: []string{n0},
		IPAddresses: []net.IP{
			net.ParseIP(d0.PrivateIPv4), net.ParseIP(d0.PublicIPv4),
			// Spelled out in full: the same address as the cloud's.
			net.ParseIP("2a03:b0c0:0003:00d0:0000:0000:0001:0001"),
		},
	}
	serving := []certv1.KeyUsage{certv1.UsageDigitalSignature, certv1.UsageServerAuth}
	node0, node1 := nodeClient(t, n0), nodeClient(t, n1)

	genuine, extraIP, foreign, clientUsage, otherSigner := e.prefix+"-genuine", e.prefix+"-extra-ip", e.prefix+"-foreign", e.prefix+"-client-usage", e.prefix+"-other-signer"

	submitCSR(t, node0, otherSigner, certv1.KubeAPIServerClientKubeletSignerName,
		x509.CertificateRequest{Subject: addrs.Subject}, certv1.UsageDigitalSignature, certv1.UsageClientAuth)
	withExtra := addrs
	withExtra.IPAddresses = append(append([]net.IP(nil), addrs.IPAddresses...), net.ParseIP("198.51.100.77"))
	submitCSR(t, node0, extraIP, certv1.KubeletServingSignerName, withExtra, serving...)
	// Node 1 asks for node 0's name and addresses.
	submitCSR(t, node1, foreign, certv1.KubeletServingSignerName, addrs, serving...)
	submitCSR(t, node0, clientUsage, certv1.KubeletServingSignerName, addrs,
		certv1.UsageDigitalSignature, certv1.UsageServerAuth, certv1.UsageClientAuth)
	submitCSR(t, node0, genuine, certv1.KubeletServingSignerName, addrs, serving...)

	c := waitDecision(t, genuine)
	if c.Type != certv1.CertificateApproved || c.Status != v1.ConditionTrue || c.Reason != servingcsr.ReasonApproved {
		t.Errorf("genuine request: condition %s=%s reason %s (%s), want Approved=True reason %s", c.Type, c.Status, c.Reason, c.Message, servingcsr.ReasonApproved)
	}
	if !strings.Contains(c.Message, "polyccm verified with digitalocean") {
		t.Errorf("approval message %q does not say polyccm verified the addresses with the cloud", c.Message)
	}
	t.Logf("approved: %s", c.Message)

	c = waitDecision(t, foreign)
	if c.Type != certv1.CertificateDenied || c.Reason != servingcsr.ReasonNodeNameMismatch {
		t.Errorf("another node's name: condition %s reason %s (%s), want Denied reason %s", c.Type, c.Reason, c.Message, servingcsr.ReasonNodeNameMismatch)
	}
	ev := waitWarning(t, extraIP, servingcsr.ReasonAddressUnverified)
	if !strings.Contains(ev.Message, "198.51.100.77") {
		t.Errorf("the event does not name the unverified address: %q", ev.Message)
	}
	waitWarning(t, clientUsage, servingcsr.ReasonInvalidUsages)

	// polyccm has judged everything; nothing else changes.
	never(t, 3*time.Second, "a request decided that should stay pending", func() (bool, string) {
		for _, name := range []string{extraIP, clientUsage, otherSigner} {
			if csr := getCSR(t, name); len(csr.Status.Conditions) > 0 {
				return true, fmt.Sprintf("%s: %+v", name, csr.Status.Conditions)
			}
		}
		return false, ""
	})
	if evs := csrEvents(t, otherSigner); len(evs) > 0 {
		t.Errorf("events on another signer's request: %+v", evs)
	}
	for _, name := range []string{genuine, extraIP, foreign, clientUsage} {
		if csr := getCSR(t, name); len(csr.Status.Certificate) > 0 {
			t.Errorf("%s has a certificate: polyccm must never sign", name)
		}
	}

	// rbac.yaml lets polyccm approve the kubelet-serving signer only.
	pc, err := clientcmd.BuildConfigFromFlags("", cp.PolyccmKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	polyccm, err := kubernetes.NewForConfig(pc)
	if err != nil {
		t.Fatal(err)
	}
	other := getCSR(t, otherSigner)
	other.Status.Conditions = append(other.Status.Conditions, certv1.CertificateSigningRequestCondition{
		Type: certv1.CertificateApproved, Status: v1.ConditionTrue, Reason: "Test", Message: "as polyccm",
	})
	_, err = polyccm.CertificatesV1().CertificateSigningRequests().UpdateApproval(context.Background(), otherSigner, other, metav1.UpdateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("polyccm approving a %s request: err = %v, want Forbidden", certv1.KubeAPIServerClientKubeletSignerName, err)
	}
}

// A request that comes before its Node does is approved once the Node
// registers: polyccm looks again, it does not give up at the first look.
func TestCSRBeforeNodeRegisters(t *testing.T) {
	droplets := []fakedo.Droplet{{Name: "testcsrbeforenoderegisters-000"}}
	e := newDOEnv(t, droplets, func(s *harness.Settings) {
		s.Controllers = "nodes: true\nkubeletServingCSR: true"
	})
	n0 := e.nodeName(0)
	name := e.prefix + "-early"
	submitCSR(t, nodeClient(t, n0), name, certv1.KubeletServingSignerName, x509.CertificateRequest{
		Subject:     pkix.Name{CommonName: "system:node:" + n0, Organization: []string{"system:nodes"}},
		IPAddresses: []net.IP{net.ParseIP(droplets[0].PrivateIPv4)},
	}, certv1.UsageDigitalSignature, certv1.UsageKeyEncipherment, certv1.UsageServerAuth)
	waitWarning(t, name, servingcsr.ReasonNodeNotFound)
	e.register(n0, "")
	if c := waitDecision(t, name); c.Type != certv1.CertificateApproved {
		t.Errorf("condition %s (%s), want Approved", c.Type, c.Message)
	}
}
