package servingcsr

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net"
	"net/url"
	"slices"
	"testing"

	certv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var testKey = func() *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	return k
}()

// request builds spec.request as a kubelet would: CN=system:node:<name>,
// O=system:nodes and the node's addresses as SANs.
func request(t *testing.T, tmpl x509.CertificateRequest) []byte {
	t.Helper()
	der, err := x509.CreateCertificateRequest(rand.Reader, &tmpl, testKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func nodeSubject(name string) pkix.Name {
	return pkix.Name{CommonName: "system:node:" + name, Organization: []string{"system:nodes"}}
}

var servingUsageList = []certv1.KeyUsage{certv1.UsageDigitalSignature, certv1.UsageServerAuth}

// csrFrom is a request as the API server stores it after node (the
// requester) created it.
func csrFrom(t *testing.T, node string, tmpl x509.CertificateRequest, usages ...certv1.KeyUsage) *certv1.CertificateSigningRequest {
	t.Helper()
	if usages == nil {
		usages = servingUsageList
	}
	return &certv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "csr-" + node, CreationTimestamp: metav1.Now()},
		Spec: certv1.CertificateSigningRequestSpec{
			Request:    request(t, tmpl),
			SignerName: SignerName,
			Usages:     usages,
			Username:   "system:node:" + node,
			Groups:     []string{"system:nodes", "system:authenticated"},
		},
	}
}

func TestInspect(t *testing.T) {
	genuine := x509.CertificateRequest{
		Subject:     nodeSubject("web-1"),
		DNSNames:    []string{"web-1"},
		IPAddresses: []net.IP{net.ParseIP("10.0.0.5"), net.ParseIP("203.0.113.5")},
	}
	with := func(f func(*x509.CertificateRequest)) x509.CertificateRequest {
		r := genuine
		f(&r)
		return r
	}
	tests := []struct {
		name   string
		csr    func(t *testing.T) *certv1.CertificateSigningRequest
		want   Outcome // 0: passes to the cloud check
		reason string
	}{
		{"genuine", func(t *testing.T) *certv1.CertificateSigningRequest { return csrFrom(t, "web-1", genuine) }, 0, ""},
		{"RSA usages (key encipherment)", func(t *testing.T) *certv1.CertificateSigningRequest {
			return csrFrom(t, "web-1", genuine, certv1.UsageKeyEncipherment, certv1.UsageDigitalSignature, certv1.UsageServerAuth)
		}, 0, ""},
		{"usages repeated", func(t *testing.T) *certv1.CertificateSigningRequest {
			return csrFrom(t, "web-1", genuine, certv1.UsageServerAuth, certv1.UsageDigitalSignature, certv1.UsageServerAuth)
		}, 0, ""},
		{"DNS names only", func(t *testing.T) *certv1.CertificateSigningRequest {
			return csrFrom(t, "web-1", with(func(r *x509.CertificateRequest) { r.IPAddresses = nil }))
		}, 0, ""},

		{"requester is a user", func(t *testing.T) *certv1.CertificateSigningRequest {
			c := csrFrom(t, "web-1", genuine)
			c.Spec.Username, c.Spec.Groups = "alice", []string{"system:authenticated"}
			return c
		}, Deny, ReasonNotANode},
		{"node name without system:nodes", func(t *testing.T) *certv1.CertificateSigningRequest {
			c := csrFrom(t, "web-1", genuine)
			c.Spec.Groups = []string{"system:authenticated"}
			return c
		}, Deny, ReasonNotANode},
		{"empty node name", func(t *testing.T) *certv1.CertificateSigningRequest {
			c := csrFrom(t, "web-1", genuine)
			c.Spec.Username = "system:node:"
			return c
		}, Deny, ReasonNotANode},
		{"another node's name", func(t *testing.T) *certv1.CertificateSigningRequest {
			return csrFrom(t, "web-2", genuine)
		}, Deny, ReasonNodeNameMismatch},

		{"not PEM", func(t *testing.T) *certv1.CertificateSigningRequest {
			c := csrFrom(t, "web-1", genuine)
			c.Spec.Request = []byte("garbage")
			return c
		}, Leave, ReasonInvalidRequest},
		{"CN not a node", func(t *testing.T) *certv1.CertificateSigningRequest {
			return csrFrom(t, "web-1", with(func(r *x509.CertificateRequest) { r.Subject.CommonName = "web-1" }))
		}, Leave, ReasonInvalidSubject},
		{"O missing", func(t *testing.T) *certv1.CertificateSigningRequest {
			return csrFrom(t, "web-1", with(func(r *x509.CertificateRequest) { r.Subject.Organization = nil }))
		}, Leave, ReasonInvalidSubject},
		{"O with system:masters too", func(t *testing.T) *certv1.CertificateSigningRequest {
			return csrFrom(t, "web-1", with(func(r *x509.CertificateRequest) {
				r.Subject.Organization = []string{"system:nodes", "system:masters"}
			}))
		}, Leave, ReasonInvalidSubject},
		{"email SAN", func(t *testing.T) *certv1.CertificateSigningRequest {
			return csrFrom(t, "web-1", with(func(r *x509.CertificateRequest) { r.EmailAddresses = []string{"root@web-1"} }))
		}, Leave, ReasonForbiddenSANs},
		{"URI SAN", func(t *testing.T) *certv1.CertificateSigningRequest {
			return csrFrom(t, "web-1", with(func(r *x509.CertificateRequest) {
				r.URIs = []*url.URL{{Scheme: "spiffe", Host: "cluster.local", Path: "/ns/x"}}
			}))
		}, Leave, ReasonForbiddenSANs},
		{"no SANs", func(t *testing.T) *certv1.CertificateSigningRequest {
			return csrFrom(t, "web-1", with(func(r *x509.CertificateRequest) { r.DNSNames, r.IPAddresses = nil, nil }))
		}, Leave, ReasonNoSANs},
		{"client auth added", func(t *testing.T) *certv1.CertificateSigningRequest {
			return csrFrom(t, "web-1", genuine, certv1.UsageDigitalSignature, certv1.UsageServerAuth, certv1.UsageClientAuth)
		}, Leave, ReasonInvalidUsages},
		{"client auth instead", func(t *testing.T) *certv1.CertificateSigningRequest {
			return csrFrom(t, "web-1", genuine, certv1.UsageDigitalSignature, certv1.UsageClientAuth)
		}, Leave, ReasonInvalidUsages},
		{"no digital signature", func(t *testing.T) *certv1.CertificateSigningRequest {
			return csrFrom(t, "web-1", genuine, certv1.UsageKeyEncipherment, certv1.UsageServerAuth)
		}, Leave, ReasonInvalidUsages},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, v := Inspect(tt.csr(t))
			if tt.want == 0 {
				if v != nil {
					t.Fatalf("verdict %v %s: %s, want none", v.Outcome, v.Reason, v.Message)
				}
				if req.NodeName != "web-1" {
					t.Errorf("node %q, want web-1", req.NodeName)
				}
				return
			}
			if v == nil {
				t.Fatalf("no verdict, want %v %s", tt.want, tt.reason)
			}
			if v.Outcome != tt.want || v.Reason != tt.reason {
				t.Errorf("verdict %v %s (%s), want %v %s", v.Outcome, v.Reason, v.Message, tt.want, tt.reason)
			}
			if v.Retry {
				t.Errorf("a verdict on the request alone cannot change on a retry")
			}
		})
	}
}

func TestUnverified(t *testing.T) {
	addrs := []v1.NodeAddress{
		{Type: v1.NodeInternalIP, Address: "10.0.0.5"},
		{Type: v1.NodeExternalIP, Address: "203.0.113.5"},
		{Type: v1.NodeExternalIP, Address: "2001:db8::5"},
		{Type: v1.NodeHostName, Address: "web-1"},
		{Type: v1.NodeInternalDNS, Address: "ip-10-0-0-5.ec2.internal"},
	}
	ips := func(s ...string) []net.IP {
		var out []net.IP
		for _, a := range s {
			out = append(out, net.ParseIP(a))
		}
		return out
	}
	tests := []struct {
		name string
		req  Request
		want []string
	}{
		{"all reported", Request{DNSNames: []string{"web-1", "ip-10-0-0-5.ec2.internal"}, IPs: ips("10.0.0.5", "203.0.113.5")}, nil},
		{"IPv6 spelled differently", Request{IPs: ips("2001:0db8:0:0::0005")}, nil},
		{"IPv4 in IPv6 form", Request{IPs: []net.IP{net.ParseIP("10.0.0.5").To16()}}, nil},
		{"DNS case", Request{DNSNames: []string{"WEB-1"}}, nil},
		{"extra IP", Request{IPs: ips("10.0.0.5", "10.0.0.6")}, []string{"10.0.0.6"}},
		{"extra name", Request{DNSNames: []string{"web-1", "api.example.com"}}, []string{"api.example.com"}},
		// An IP written as a DNS name is not an IP address of the node's.
		{"IP as DNS name", Request{DNSNames: []string{"10.0.0.5"}}, []string{"10.0.0.5"}},
		// A hostname is not an IP, even if it parses as one.
		{"hostname as IP", Request{IPs: ips("10.9.9.9")}, []string{"10.9.9.9"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.req.Unverified(append(addrs, v1.NodeAddress{Type: v1.NodeHostName, Address: "10.9.9.9"}))
			if !slices.Equal(got, tt.want) {
				t.Errorf("unverified %q, want %q", got, tt.want)
			}
		})
	}
	if got := (&Request{IPs: ips("10.0.0.5")}).Unverified(nil); !slices.Equal(got, []string{"10.0.0.5"}) {
		t.Errorf("with no addresses: unverified %q", got)
	}
}

func TestUndecided(t *testing.T) {
	for _, tt := range []struct {
		name   string
		status certv1.CertificateSigningRequestStatus
		want   bool
	}{
		{"new", certv1.CertificateSigningRequestStatus{}, true},
		{"approved", certv1.CertificateSigningRequestStatus{Conditions: []certv1.CertificateSigningRequestCondition{{Type: certv1.CertificateApproved}}}, false},
		{"denied", certv1.CertificateSigningRequestStatus{Conditions: []certv1.CertificateSigningRequestCondition{{Type: certv1.CertificateDenied}}}, false},
		{"failed", certv1.CertificateSigningRequestStatus{Conditions: []certv1.CertificateSigningRequestCondition{{Type: certv1.CertificateFailed}}}, false},
		{"signed", certv1.CertificateSigningRequestStatus{Certificate: []byte("x")}, false},
	} {
		if got := Undecided(&certv1.CertificateSigningRequest{Status: tt.status}); got != tt.want {
			t.Errorf("%s: Undecided = %v, want %v", tt.name, got, tt.want)
		}
	}
}
