package aws

import (
	"encoding/xml"
	"slices"
)

// maxListenerCertificates is ELBv2's quota of certificates on one
// listener, the default one included.
const maxListenerCertificates = 26

// A listener's certificates: the default one is in Listener.Certificates
// (the only one DescribeListeners shows, as on AWS); the others, added
// with AddListenerCertificates, in Listener.ExtraCertificates, listed by
// DescribeListenerCertificates with the default one.

type xmlListenerCertificates struct {
	XMLName      xml.Name         `xml:"DescribeListenerCertificatesResult"`
	Certificates []xmlCertificate `xml:"Certificates>member"`
	NextMarker   string           `xml:"NextMarker,omitempty"`
}

type xmlAddedCertificates struct {
	XMLName      xml.Name         `xml:"AddListenerCertificatesResult"`
	Certificates []xmlCertificate `xml:"Certificates>member"`
}

// securedListener looks up a listener that can hold certificates.
func (s *Server) securedListener(c *call) (*listenerRec, *apiError) {
	l, err := s.lookupListenerLocked(c.p.get("ListenerArn"))
	if err != nil {
		return nil, err
	}
	if l.Protocol != "TLS" && l.Protocol != "HTTPS" {
		return nil, badRequest("InvalidConfigurationRequest", "Certificates cannot be added to %s listeners", l.Protocol)
	}
	return l, nil
}

// certArns reads Certificates.member.N.CertificateArn, checking each.
func certArns(p params) ([]string, *apiError) {
	certs, _ := p.memberStructs("Certificates")
	if len(certs) == 0 {
		return nil, missing("certificates")
	}
	var out []string
	for _, c := range certs {
		arn := c.get("CertificateArn")
		if !certificateARN.MatchString(arn) {
			return nil, badRequest("CertificateNotFound", "Certificate '%s' not found", arn)
		}
		out = append(out, arn)
	}
	return out, nil
}

func (s *Server) addListenerCertificates(c *call) (any, *apiError) {
	l, err := s.securedListener(c)
	if err != nil {
		return nil, err
	}
	arns, err := certArns(c.p)
	if err != nil {
		return nil, err
	}
	next := slices.Clone(l.ExtraCertificates)
	for _, a := range arns {
		if !slices.Contains(next, a) && !slices.ContainsFunc(l.Certificates, func(d Certificate) bool { return d.ARN == a }) {
			next = append(next, a)
		}
	}
	if len(next)+len(l.Certificates) > maxListenerCertificates {
		return nil, badRequest("TooManyCertificates", "You've reached the limit on the number of certificates per load balancer")
	}
	l.ExtraCertificates = next
	out := &xmlAddedCertificates{Certificates: []xmlCertificate{}}
	for _, a := range arns {
		out.Certificates = append(out.Certificates, xmlCertificate{CertificateArn: a, IsDefault: new(bool)})
	}
	return out, nil
}

func (s *Server) removeListenerCertificates(c *call) (any, *apiError) {
	l, err := s.securedListener(c)
	if err != nil {
		return nil, err
	}
	arns, err := certArns(c.p)
	if err != nil {
		return nil, err
	}
	for _, a := range arns {
		if slices.ContainsFunc(l.Certificates, func(d Certificate) bool { return d.ARN == a }) {
			// AWS: the default certificate is replaced with ModifyListener.
			return nil, badRequest("OperationNotPermitted", "The default certificate cannot be removed from a listener")
		}
	}
	// Removing one the listener does not have is not an error.
	l.ExtraCertificates = slices.DeleteFunc(slices.Clone(l.ExtraCertificates), func(a string) bool { return slices.Contains(arns, a) })
	return nil, nil
}

func (s *Server) describeListenerCertificates(c *call) (any, *apiError) {
	l, err := s.lookupListenerLocked(c.p.get("ListenerArn"))
	if err != nil {
		return nil, err
	}
	pg, err := parseELBPaging(c.p)
	if err != nil {
		return nil, err
	}
	type cert struct {
		arn       string
		isDefault bool
		seq       int
	}
	var all []cert
	for _, d := range l.Certificates {
		all = append(all, cert{d.ARN, true, len(all) + 1})
	}
	for _, a := range l.ExtraCertificates {
		all = append(all, cert{a, false, len(all) + 1})
	}
	sel, next := page(pg, all, func(c cert) int { return c.seq }, one)
	out := &xmlListenerCertificates{Certificates: []xmlCertificate{}, NextMarker: next}
	for _, c := range sel {
		out.Certificates = append(out.Certificates, xmlCertificate{CertificateArn: c.arn, IsDefault: &c.isDefault})
	}
	return out, nil
}
