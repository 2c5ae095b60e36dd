package servingcsr

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"slices"
	"strings"

	certv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
)

const (
	// SignerName is the only signer whose requests this controller judges.
	SignerName = certv1.KubeletServingSignerName

	nodeUserPrefix = "system:node:"
	nodesGroup     = "system:nodes"
)

// Outcome is what the controller does with one request.
type Outcome int

const (
	// Approve: every check passed.
	Approve Outcome = iota + 1
	// Leave the request pending and say why in an event.
	Leave
	// Deny: the request is certainly forged.
	Deny
)

func (o Outcome) String() string {
	switch o {
	case Approve:
		return "approved"
	case Leave:
		return "pending"
	case Deny:
		return "denied"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// Reasons, used for events, conditions and the decisions metric.
const (
	ReasonApproved          = "AutoApproved"
	ReasonNotANode          = "RequesterNotANode"
	ReasonNodeNameMismatch  = "NodeNameMismatch"
	ReasonInvalidRequest    = "InvalidRequest"
	ReasonInvalidSubject    = "InvalidSubject"
	ReasonForbiddenSANs     = "ForbiddenSubjectAltNames"
	ReasonNoSANs            = "NoSubjectAltNames"
	ReasonInvalidUsages     = "InvalidUsages"
	ReasonNodeNotFound      = "NodeNotFound"
	ReasonProviderIDShared  = "ProviderIDNotUnique"
	ReasonInstanceNotFound  = "InstanceNotFound"
	ReasonAddressUnverified = "AddressesNotVerified"
	ReasonLookupFailed      = "InstanceLookupFailed"
)

// Verdict is the decision on one request.
type Verdict struct {
	Outcome Outcome
	Reason  string
	Message string
	// Retry, for Leave, means a later look may decide differently: the
	// Node may register, or the cloud report the address, a moment later.
	Retry bool
}

func leave(reason string, retry bool, format string, args ...any) *Verdict {
	return &Verdict{Outcome: Leave, Reason: reason, Message: fmt.Sprintf(format, args...), Retry: retry}
}

func deny(reason, format string, args ...any) *Verdict {
	return &Verdict{Outcome: Deny, Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// Request is a kubelet serving request that passed every check that needs
// nothing but the request itself.
type Request struct {
	// NodeName is the requesting node, which is also the subject's.
	NodeName string
	DNSNames []string
	IPs      []net.IP
}

// Undecided reports whether a request still waits for approval: not yet
// approved, denied or failed, and not signed.
func Undecided(csr *certv1.CertificateSigningRequest) bool {
	if len(csr.Status.Certificate) > 0 {
		return false
	}
	for _, c := range csr.Status.Conditions {
		switch c.Type {
		case certv1.CertificateApproved, certv1.CertificateDenied, certv1.CertificateFailed:
			return false
		}
	}
	return true
}

// Inspect checks what can be checked from the request alone, in the order
// that gives the most useful answer: who asked (a non-node or a node asking
// for another node's name is a forgery, denied), then the request's shape
// against what kube-controller-manager's signer accepts for this signer
// (ValidateKubeletServingCSR in k8s.io/kubernetes/pkg/apis/certificates),
// which is left pending because the signer would refuse it anyway and a
// person may want to look. A nil Verdict means the addresses are still to
// be verified with the cloud.
func Inspect(csr *certv1.CertificateSigningRequest) (*Request, *Verdict) {
	node, ok := strings.CutPrefix(csr.Spec.Username, nodeUserPrefix)
	if !ok || node == "" || !slices.Contains(csr.Spec.Groups, nodesGroup) {
		return nil, deny(ReasonNotANode, "requested by %q (groups %q), not by a node: only a node (user system:node:<name> in group system:nodes) may ask for its own serving certificate",
			csr.Spec.Username, csr.Spec.Groups)
	}

	x, err := parse(csr.Spec.Request)
	if err != nil {
		return nil, leave(ReasonInvalidRequest, false, "spec.request is not a PEM certificate request: %v", err)
	}
	subject, hasPrefix := strings.CutPrefix(x.Subject.CommonName, nodeUserPrefix)
	if hasPrefix && subject != node {
		return nil, deny(ReasonNodeNameMismatch, "node %q asked for a certificate for node %q (subject %q)", node, subject, x.Subject.CommonName)
	}
	if !hasPrefix || !slices.Equal(x.Subject.Organization, []string{nodesGroup}) {
		return nil, leave(ReasonInvalidSubject, false, "the subject must be CN=system:node:%s, O=system:nodes, not CN=%q, O=%q", node, x.Subject.CommonName, x.Subject.Organization)
	}

	if len(x.EmailAddresses) > 0 || len(x.URIs) > 0 {
		return nil, leave(ReasonForbiddenSANs, false, "a kubelet serving certificate may name only DNS names and IP addresses, not e-mail addresses %q or URIs %q", x.EmailAddresses, x.URIs)
	}
	if len(x.DNSNames) == 0 && len(x.IPAddresses) == 0 {
		return nil, leave(ReasonNoSANs, false, "the request names no DNS name or IP address")
	}
	if !servingUsages(csr.Spec.Usages) {
		return nil, leave(ReasonInvalidUsages, false, "usages %q are not those of a kubelet serving certificate: %q, optionally with %q",
			csr.Spec.Usages, []certv1.KeyUsage{certv1.UsageDigitalSignature, certv1.UsageServerAuth}, certv1.UsageKeyEncipherment)
	}
	return &Request{NodeName: node, DNSNames: x.DNSNames, IPs: x.IPAddresses}, nil
}

func parse(pemBytes []byte) (*x509.CertificateRequest, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, fmt.Errorf("no CERTIFICATE REQUEST block")
	}
	return x509.ParseCertificateRequest(block.Bytes)
}

// servingUsages is the upstream rule: digital signature and server auth,
// plus key encipherment, which RSA keys need and other keys do not; as a
// set, so order and repeats do not matter.
func servingUsages(usages []certv1.KeyUsage) bool {
	set := map[certv1.KeyUsage]bool{}
	for _, u := range usages {
		set[u] = true
	}
	if !set[certv1.UsageDigitalSignature] || !set[certv1.UsageServerAuth] {
		return false
	}
	n := 2
	if set[certv1.UsageKeyEncipherment] {
		n++
	}
	return len(set) == n
}

// Unverified lists the request's DNS names and IP addresses that are not
// among the instance's addresses. DNS names match the hostname and DNS
// addresses (case-insensitively, as DNS does); IPs match the IP addresses
// by value, so 2001:db8::1 and 2001:0db8::0001 are the same.
func (r *Request) Unverified(addrs []v1.NodeAddress) []string {
	var names []string
	var ips []net.IP
	for _, a := range addrs {
		switch a.Type {
		case v1.NodeHostName, v1.NodeInternalDNS, v1.NodeExternalDNS:
			names = append(names, a.Address)
		case v1.NodeInternalIP, v1.NodeExternalIP:
			if ip := net.ParseIP(a.Address); ip != nil {
				ips = append(ips, ip)
			}
		}
	}
	var missing []string
	for _, n := range r.DNSNames {
		if !slices.ContainsFunc(names, func(a string) bool { return strings.EqualFold(a, n) }) {
			missing = append(missing, n)
		}
	}
	for _, ip := range r.IPs {
		if !slices.ContainsFunc(ips, ip.Equal) {
			missing = append(missing, ip.String())
		}
	}
	return missing
}
