//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/polyccm/polyccm/drivers/hetzner"
	fakehz "github.com/polyccm/polyccm/test/fakecloud/hetzner"
	"github.com/polyccm/polyccm/test/harness"
	"github.com/polyccm/polyccm/test/simcloud"
)

// The certificate tests: a tenant in a second namespace names another
// tenant's TLS certificate in load-balancer.hetzner.cloud/http-certificates.
// hcloud CCM serves it, with no check and no event, and so does polyccm by
// default; with drivers.hetzner.loadBalancer.certificateNamespaceLabel
// set, the certificate must be labelled for the Service's namespace.
// Either way every certificate a load balancer serves is named in a Normal
// event, once.

const hzNamespacesLabel = "polyccm.io/namespaces"

// uploadCert uploads a certificate as the project's user would, with
// labels, and returns its ID.
func (e *hzEnv) uploadCert(name string, labels map[string]string) int64 {
	e.t.Helper()
	certPEM, keyPEM := fakehz.SelfSigned(name + ".example.com")
	cert, _, err := e.user.Certificate.Create(context.Background(), hcloud.CertificateCreateOpts{
		Name: name, Certificate: certPEM, PrivateKey: keyPEM, Labels: labels})
	if err != nil {
		e.t.Fatalf("uploading certificate %s: %v", name, err)
	}
	return cert.ID
}

// eventCounts are a Service's events of one type and reason: message to
// count (the recorder folds repeats of one message into one event).
func eventCounts(t *testing.T, ns, name, typ, reason string) map[string]int32 {
	t.Helper()
	list, err := cp.Admin.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int32{}
	for _, ev := range list.Items {
		if ev.Type == typ && ev.Reason == reason {
			out[ev.Message] += max(ev.Count, 1)
		}
	}
	return out
}

// waitEvent waits for an event of the type and reason whose message
// contains every fragment, and returns its message.
func waitEvent(t *testing.T, ns, name, typ, reason string, fragments ...string) string {
	t.Helper()
	var found string
	eventually(t, 60*time.Second, fmt.Sprintf("a %s %s event on %s/%s naming %q", typ, reason, ns, name, fragments), func() (bool, string) {
		evs := eventCounts(t, ns, name, typ, reason)
		for msg := range evs {
			if !slices.ContainsFunc(fragments, func(f string) bool { return !strings.Contains(msg, f) }) {
				found = msg
				return true, ""
			}
		}
		return false, fmt.Sprintf("%s %s events %q; all events %q", typ, reason, evs, serviceEvents(t, ns, name))
	})
	return found
}

// lbCertificates are the certificates a load balancer's services serve.
func lbCertificates(lb fakehz.LoadBalancer) []int64 {
	var out []int64
	for _, s := range lb.Services {
		if s.HTTP != nil {
			for _, c := range s.HTTP.Certificates {
				if !slices.Contains(out, c) {
					out = append(out, c)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

func httpsWith(certs string) map[string]string {
	return map[string]string{hetzner.AnnProtocol: "https", hetzner.AnnHTTPCertificates: certs}
}

// With certificateNamespaceLabel set, a tenant cannot serve another
// tenant's certificate, by name or by ID, on a new load balancer or its
// own existing one: a Warning names the certificate, the annotation and
// the label to set, and nothing changes in the cloud, not even for a Node
// that joins meanwhile. A certificate labelled for both namespaces is
// served, and each use is named once in a Normal event.
func TestHetznerCertificatesLimitedToTheNamespace(t *testing.T) {
	e, svs := hzLBNodes(t, 2, &simcloud.Fast, func(s *harness.Settings) {
		hzLBSetting(s, "certificateNamespaceLabel: "+hzNamespacesLabel)
	})
	aCert := e.uploadCert("shop-tls", map[string]string{hzNamespacesLabel: victimNS})
	shared := e.uploadCert("shared-tls", map[string]string{hzNamespacesLabel: victimNS + "." + thiefNS})
	named := func(name string, id int64) string { return fmt.Sprintf("%s (%d)", name, id) }

	// The victim serves its own certificate.
	nsService(t, victimNS, "hzcert-shop", httpsWith("shop-tls"), nil, tcp(443))
	shop := waitNSIngress(t, victimNS, "hzcert-shop", 60*time.Second)
	shopLB, ok := e.lbOf(shop)
	if !ok || !slices.Equal(lbCertificates(shopLB), []int64{aCert}) {
		t.Fatalf("the victim's load balancer %+v, want it serving certificate %d", shopLB, aCert)
	}
	inUse := waitEvent(t, victimNS, "hzcert-shop", v1.EventTypeNormal, hetzner.ReasonCertificatesInUse,
		fmt.Sprintf("load balancer %s (%d) serves certificate %s on port 443", shopLB.Name, shopLB.ID, named("shop-tls", aCert)))

	// The thief: a new Service naming the victim's certificate by name,
	// and its own tcp Service, which then names it by ID.
	nsService(t, thiefNS, "hzcert-steal", httpsWith("shop-tls"), nil, tcp(443))
	nsService(t, thiefNS, "hzcert-own", nil, nil, tcp(8443))
	own := waitNSIngress(t, thiefNS, "hzcert-own", 60*time.Second)
	ownLB, _ := e.lbOf(own)
	ownBefore := hzLBState(ownLB)
	patchNS(t, thiefNS, "hzcert-own", map[string]any{"metadata": map[string]any{"annotations": httpsWith(strconv.FormatInt(aCert, 10))}})
	for _, name := range []string{"hzcert-steal", "hzcert-own"} {
		msg := waitEvent(t, thiefNS, name, v1.EventTypeWarning, hetzner.ReasonCertificateNotAllowed,
			hetzner.AnnHTTPCertificates+": certificate "+named("shop-tls", aCert)+" is not allowed in namespace "+thiefNS,
			"certificateNamespaceLabel", "add "+thiefNS+" to that label", hzNamespacesLabel+"="+thiefNS, "the load balancer was not changed")
		if strings.Contains(msg, victimNS) {
			t.Errorf("the refusal tells the thief who may use the certificate: %q", msg)
		}
	}
	// A Node joins: the victim's load balancer takes it, the refused
	// Service's does not.
	joined := e.joinNode(2, "fsn1")
	e.waitInitialized([]string{joined.Name}, 30*time.Second)
	eventually(t, 60*time.Second, "the victim's load balancer takes the new Node", func() (bool, string) {
		lb, _ := e.fake.LoadBalancer(shopLB.ID)
		got, want := serverTargets(lb), wantTargets(false, append(svs, joined)...)
		return slices.Equal(got, want), fmt.Sprintf("targets %v, want %v", got, want)
	})
	time.Sleep(3 * time.Second) // time to do damage
	steal := nsSvc(t, thiefNS, "hzcert-steal")
	if lb, ok := e.lbOf(steal); ok {
		t.Errorf("a load balancer was made for the refused Service: %s", hzLBState(lb))
	}
	noIngress(t, thiefNS, "hzcert-steal")
	if lb, _ := e.fake.LoadBalancer(ownLB.ID); hzLBState(lb) != ownBefore {
		t.Errorf("the thief's load balancer changed on a refusal:\n %s\nwas\n %s", hzLBState(lb), ownBefore)
	}
	sameStatus(t, shop)

	// A certificate labelled for both namespaces is served, with the Node
	// that joined meanwhile.
	patchNS(t, thiefNS, "hzcert-own", map[string]any{"metadata": map[string]any{"annotations": httpsWith("shared-tls")}})
	eventually(t, 60*time.Second, "the thief's load balancer serves the shared certificate", func() (bool, string) {
		lb, _ := e.fake.LoadBalancer(ownLB.ID)
		certs, targets, want := lbCertificates(lb), serverTargets(lb), wantTargets(false, append(svs, joined)...)
		return slices.Equal(certs, []int64{shared}) && slices.Equal(targets, want), fmt.Sprintf("certificates %v, targets %v (want %v)", certs, targets, want)
	})
	waitEvent(t, thiefNS, "hzcert-own", v1.EventTypeNormal, hetzner.ReasonCertificatesInUse,
		fmt.Sprintf("load balancer %s (%d) serves certificate %s on port 8443", ownLB.Name, ownLB.ID, named("shared-tls", shared)))

	// The victim's certificate use was said once, though its load
	// balancer was synced again for the Node.
	if got := eventCounts(t, victimNS, "hzcert-shop", v1.EventTypeNormal, hetzner.ReasonCertificatesInUse); len(got) != 1 || got[inUse] != 1 {
		t.Errorf("the victim's %s events: %v, want %q once", hetzner.ReasonCertificatesInUse, got, inUse)
	}

	for _, s := range []struct{ ns, name string }{{thiefNS, "hzcert-steal"}, {thiefNS, "hzcert-own"}, {victimNS, "hzcert-shop"}} {
		deleteNSServiceAndWait(t, s.ns, s.name, 60*time.Second)
	}
	if lbs := e.fake.LoadBalancers(); len(lbs) != 0 {
		t.Errorf("load balancers left: %+v", lbs)
	}
}

// By default any Service may serve any certificate of the project, as
// with hcloud CCM, whatever its labels; the use is named in a Normal
// event, the certificate's name read even when the Service gives its ID.
func TestHetznerCertificatesAnyNamespaceByDefault(t *testing.T) {
	e, _ := hzLBNodes(t, 2, &simcloud.Fast, nil)
	aCert := e.uploadCert("shop-tls", map[string]string{hzNamespacesLabel: victimNS})

	nsService(t, thiefNS, "hzcert-any", httpsWith(strconv.FormatInt(aCert, 10)), nil, tcp(443))
	svc := waitNSIngress(t, thiefNS, "hzcert-any", 60*time.Second)
	lb, ok := e.lbOf(svc)
	if !ok || !slices.Equal(lbCertificates(lb), []int64{aCert}) {
		t.Fatalf("load balancer %+v, want it serving certificate %d, as hcloud CCM would", lb, aCert)
	}
	waitEvent(t, thiefNS, "hzcert-any", v1.EventTypeNormal, hetzner.ReasonCertificatesInUse,
		fmt.Sprintf("load balancer %s (%d) serves certificate shop-tls (%d) on port 443", lb.Name, lb.ID, aCert))
	for _, ev := range serviceEvents(t, thiefNS, "hzcert-any") {
		if strings.HasPrefix(ev, "Warning") {
			t.Errorf("a warning by default: %s", ev)
		}
	}
	deleteNSServiceAndWait(t, thiefNS, "hzcert-any", 60*time.Second)
}
