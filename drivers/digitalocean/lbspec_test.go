package digitalocean

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/digitalocean/godo"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/polyccm/polyccm/core/annotations"
)

const specUID = "3f1b2c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d"

// specDefaultName is "a" + the UID without dashes, cut to 32 characters.
const specDefaultName = "a3f1b2c4d5e6f4a7b8c9d0e1f2a3b4c5"

func specPort(proto v1.Protocol, port, nodePort int32) v1.ServicePort {
	return v1.ServicePort{Name: fmt.Sprintf("%s-%d", strings.ToLower(string(proto)), port), Protocol: proto, Port: port, NodePort: nodePort}
}

// specService is a LoadBalancer Service with an 80/TCP port on node port
// 30080, unless ports are given.
func specService(ann map[string]string, ports ...v1.ServicePort) *v1.Service {
	if len(ports) == 0 {
		ports = []v1.ServicePort{specPort(v1.ProtocolTCP, 80, 30080)}
	}
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: types.UID(specUID), Annotations: ann},
		Spec: v1.ServiceSpec{
			Type:                  v1.ServiceTypeLoadBalancer,
			Ports:                 ports,
			ExternalTrafficPolicy: v1.ServiceExternalTrafficPolicyCluster,
		},
	}
}

func specInputs() lbInputs {
	return lbInputs{region: "fra1", vpcID: "vpc-1", dropletIDs: []int{30, 10, 20}, tags: []string{"k8s:test"}, typ: "REGIONAL",
		nodes: nodeStacks{ready: make([]*v1.Node, 3), v4Only: []string{"n1", "n2", "n3"}}}
}

// specProblem is a problem expected on key whose message contains msg.
type specProblem struct{ key, msg string }

func specRun(t *testing.T, svc *v1.Service, in lbInputs) (*godo.LoadBalancerRequest, []annotations.Problem) {
	t.Helper()
	a := LBAnnotations.Parse(svc)
	req := desiredLB(svc, a, in)
	err := a.Err()
	if err == nil {
		return req, nil
	}
	var inv *annotations.InvalidError
	if !errors.As(err, &inv) {
		t.Fatalf("Err() = %T %v, want *annotations.InvalidError", err, err)
	}
	return req, inv.Problems
}

func specCheckProblems(t *testing.T, got []annotations.Problem, want []specProblem) {
	t.Helper()
	for _, w := range want {
		ok := false
		for _, g := range got {
			if g.Key == w.key && strings.Contains(g.Msg, w.msg) {
				ok = true
			}
		}
		if !ok {
			t.Errorf("no problem %s: ...%s...; got %+v", w.key, w.msg, got)
		}
	}
	if len(want) == 0 && len(got) > 0 {
		t.Errorf("unexpected problems: %+v", got)
	}
}

func tcpRule(port, nodePort int) godo.ForwardingRule {
	return godo.ForwardingRule{EntryProtocol: "tcp", EntryPort: port, TargetProtocol: "tcp", TargetPort: nodePort}
}

func TestDesiredLBDefaults(t *testing.T) {
	svc := specService(nil, specPort(v1.ProtocolTCP, 80, 30080), specPort(v1.ProtocolUDP, 53, 30053), specPort("", 8080, 30081))
	in := specInputs()
	req, probs := specRun(t, svc, in)
	specCheckProblems(t, probs, nil)
	idle := uint64(60)
	want := &godo.LoadBalancerRequest{
		Name:         specDefaultName,
		Region:       "fra1",
		VPCUUID:      "vpc-1",
		Type:         "REGIONAL",
		Network:      "EXTERNAL",
		NetworkStack: "DUALSTACK",
		SizeUnit:     1,
		DropletIDs:   []int{10, 20, 30},
		Tags:         []string{"k8s:test"},
		ForwardingRules: []godo.ForwardingRule{
			{EntryProtocol: "udp", EntryPort: 53, TargetProtocol: "udp", TargetPort: 30053},
			tcpRule(80, 30080),
			tcpRule(8080, 30081),
		},
		HealthCheck: &godo.HealthCheck{
			Protocol: "http", Port: 10256, Path: "/healthz",
			CheckIntervalSeconds: 3, ResponseTimeoutSeconds: 5, UnhealthyThreshold: 3, HealthyThreshold: 5,
			ProxyProtocol: new(false), // as upstream sends kube-proxy's check
		},
		StickySessions:         &godo.StickySessions{Type: "none"},
		HTTPIdleTimeoutSeconds: &idle,
	}
	if !reflect.DeepEqual(req, want) {
		t.Errorf("desiredLB =\n%+v\nwant\n%+v", req, want)
	}
	if !reflect.DeepEqual(in.dropletIDs, []int{30, 10, 20}) {
		t.Errorf("desiredLB sorted the caller's droplet IDs in place: %v", in.dropletIDs)
	}
}

func TestLBName(t *testing.T) {
	svc := specService(nil)
	if got := lbName(svc); got != specDefaultName || len(got) != 32 {
		t.Errorf("lbName = %q, want %q", got, specDefaultName)
	}
	short := specService(nil)
	short.UID = "ab-cd"
	if got := lbName(short); got != "aabcd" {
		t.Errorf("lbName(short UID) = %q, want aabcd", got)
	}
	named := specService(map[string]string{AnnName: "shop-web.lb"})
	if got := lbName(named); got != "shop-web.lb" {
		t.Errorf("lbName(annotated) = %q", got)
	}
	for _, bad := range []string{"-lead", "has space", "under_score", "trailing-"} {
		svc := specService(map[string]string{AnnName: bad})
		if got := lbName(svc); got != specDefaultName {
			t.Errorf("lbName(%q) = %q, want the UID-based name", bad, got)
		}
		_, probs := specRun(t, svc, specInputs())
		specCheckProblems(t, probs, []specProblem{{AnnName, "is not valid: want 1-255 letters"}})
	}
	// The annotation is trimmed when validated; the name used must be the
	// same trimmed value.
	spaced := specService(map[string]string{AnnName: " shop-web "})
	req, probs := specRun(t, spaced, specInputs())
	specCheckProblems(t, probs, nil)
	if req.Name != "shop-web" || lbName(spaced) != "shop-web" {
		t.Errorf("name = %q / %q, want shop-web", req.Name, lbName(spaced))
	}
}

func TestDesiredLB(t *testing.T) {
	const cert = "cert-1"
	p80, p443, p8443 := specPort(v1.ProtocolTCP, 80, 30080), specPort(v1.ProtocolTCP, 443, 30443), specPort(v1.ProtocolTCP, 8443, 30843)
	https := func(port, nodePort int) godo.ForwardingRule {
		return godo.ForwardingRule{EntryProtocol: "https", EntryPort: port, TargetProtocol: "http", TargetPort: nodePort, CertificateID: cert}
	}
	certIDs := func(name string) (string, error) {
		if name == "my-cert" {
			return "id-of-my-cert", nil
		}
		return "", fmt.Errorf("no certificate named %q (doctl compute certificate list)", name)
	}

	cases := []struct {
		name  string
		svc   *v1.Service
		in    func(*lbInputs)
		check func(t *testing.T, req *godo.LoadBalancerRequest)
		want  []specProblem
		notes []string // annotations said not applied
	}{
		{
			name: "name annotation",
			svc:  specService(map[string]string{AnnName: "my-lb"}),
			check: func(t *testing.T, req *godo.LoadBalancerRequest) {
				if req.Name != "my-lb" {
					t.Errorf("Name = %q", req.Name)
				}
			},
		},
		{
			name: "ETP Local uses the health check node port",
			svc: func() *v1.Service {
				s := specService(nil)
				s.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
				s.Spec.HealthCheckNodePort = 32123
				return s
			}(),
			check: func(t *testing.T, req *godo.LoadBalancerRequest) {
				if hc := req.HealthCheck; hc.Protocol != "http" || hc.Port != 32123 || hc.Path != "/healthz" {
					t.Errorf("HealthCheck = %+v", hc)
				}
			},
		},
		{
			name: "protocol http",
			svc:  specService(map[string]string{AnnProtocol: "http"}),
			check: func(t *testing.T, req *godo.LoadBalancerRequest) {
				want := []godo.ForwardingRule{{EntryProtocol: "http", EntryPort: 80, TargetProtocol: "http", TargetPort: 30080}}
				if !reflect.DeepEqual(req.ForwardingRules, want) {
					t.Errorf("rules = %+v", req.ForwardingRules)
				}
			},
		},
		{
			name: "protocol https with certificate-id",
			svc:  specService(map[string]string{AnnProtocol: "https", AnnCertificateID: cert}, p443),
			check: func(t *testing.T, req *godo.LoadBalancerRequest) {
				if want := []godo.ForwardingRule{https(443, 30443)}; !reflect.DeepEqual(req.ForwardingRules, want) {
					t.Errorf("rules = %+v", req.ForwardingRules)
				}
			},
		},
		{
			name: "protocol http2 with certificate-id",
			svc:  specService(map[string]string{AnnProtocol: "http2", AnnCertificateID: cert}, p8443),
			check: func(t *testing.T, req *godo.LoadBalancerRequest) {
				want := []godo.ForwardingRule{{EntryProtocol: "http2", EntryPort: 8443, TargetProtocol: "http", TargetPort: 30843, CertificateID: cert}}
				if !reflect.DeepEqual(req.ForwardingRules, want) {
					t.Errorf("rules = %+v", req.ForwardingRules)
				}
			},
		},
		{
			name: "protocol https with tls-passthrough",
			svc:  specService(map[string]string{AnnProtocol: "https", AnnTLSPassthrough: "true"}, p443),
			check: func(t *testing.T, req *godo.LoadBalancerRequest) {
				want := []godo.ForwardingRule{{EntryProtocol: "https", EntryPort: 443, TargetProtocol: "https", TargetPort: 30443, TlsPassthrough: true}}
				if !reflect.DeepEqual(req.ForwardingRules, want) {
					t.Errorf("rules = %+v", req.ForwardingRules)
				}
			},
		},
		{
			name: "protocol http2 with tls-passthrough",
			svc:  specService(map[string]string{AnnProtocol: "http2", AnnTLSPassthrough: "true"}, p8443),
			check: func(t *testing.T, req *godo.LoadBalancerRequest) {
				want := []godo.ForwardingRule{{EntryProtocol: "http2", EntryPort: 8443, TargetProtocol: "http2", TargetPort: 30843, TlsPassthrough: true}}
				if !reflect.DeepEqual(req.ForwardingRules, want) {
					t.Errorf("rules = %+v", req.ForwardingRules)
				}
			},
		},
		{
			// As in the DigitalOcean CCM: with TLS and no tls-ports, 443 is
			// HTTPS even when protocol says http2, unless http2-ports has it.
			name: "implied 443 wins over protocol http2",
			svc:  specService(map[string]string{AnnProtocol: "http2", AnnTLSPassthrough: "true"}, p443, p8443),
			check: func(t *testing.T, req *godo.LoadBalancerRequest) {
				want := []godo.ForwardingRule{
					{EntryProtocol: "https", EntryPort: 443, TargetProtocol: "https", TargetPort: 30443, TlsPassthrough: true},
					{EntryProtocol: "http2", EntryPort: 8443, TargetProtocol: "http2", TargetPort: 30843, TlsPassthrough: true},
				}
				if !reflect.DeepEqual(req.ForwardingRules, want) {
					t.Errorf("rules = %+v", req.ForwardingRules)
				}
			},
		},
		{
			name: "443 in http2-ports is not implied HTTPS",
			svc:  specService(map[string]string{AnnHTTP2Ports: "443", AnnCertificateID: cert}, p443),
			check: func(t *testing.T, req *godo.LoadBalancerRequest) {
				want := []godo.ForwardingRule{{EntryProtocol: "http2", EntryPort: 443, TargetProtocol: "http", TargetPort: 30443, CertificateID: cert}}
				if !reflect.DeepEqual(req.ForwardingRules, want) {
					t.Errorf("rules = %+v", req.ForwardingRules)
				}
			},
		},
		{
			name: "tls-ports, http-ports and http2-ports",
			svc: specService(map[string]string{AnnTLSPorts: "8443", AnnHTTPPorts: "80", AnnHTTP2Ports: "443", AnnCertificateID: cert},
				p80, p443, p8443, specPort(v1.ProtocolTCP, 9000, 30900)),
			check: func(t *testing.T, req *godo.LoadBalancerRequest) {
				want := []godo.ForwardingRule{
					{EntryProtocol: "http", EntryPort: 80, TargetProtocol: "http", TargetPort: 30080},
					{EntryProtocol: "http2", EntryPort: 443, TargetProtocol: "http", TargetPort: 30443, CertificateID: cert},
					https(8443, 30843),
					tcpRule(9000, 30900),
				}
				if !reflect.DeepEqual(req.ForwardingRules, want) {
					t.Errorf("rules =\n%+v\nwant\n%+v", req.ForwardingRules, want)
				}
			},
		},
		{
			name: "443 is HTTPS with a certificate and no tls-ports",
			svc:  specService(map[string]string{AnnCertificateID: cert}, p80, p443),
			check: func(t *testing.T, req *godo.LoadBalancerRequest) {
				if want := []godo.ForwardingRule{tcpRule(80, 30080), https(443, 30443)}; !reflect.DeepEqual(req.ForwardingRules, want) {
					t.Errorf("rules = %+v", req.ForwardingRules)
				}
			},
		},
		{
			name: "443 is not implied when tls-ports are given",
			svc:  specService(map[string]string{AnnCertificateID: cert, AnnTLSPorts: "8443"}, p443, p8443),
			check: func(t *testing.T, req *godo.LoadBalancerRequest) {
				if want := []godo.ForwardingRule{tcpRule(443, 30443), https(8443, 30843)}; !reflect.DeepEqual(req.ForwardingRules, want) {
					t.Errorf("rules = %+v", req.ForwardingRules)
				}
			},
		},
		{
			name: "443 stays TCP without a certificate",
			svc:  specService(nil, p443),
			check: func(t *testing.T, req *godo.LoadBalancerRequest) {
				if want := []godo.ForwardingRule{tcpRule(443, 30443)}; !reflect.DeepEqual(req.ForwardingRules, want) {
					t.Errorf("rules = %+v", req.ForwardingRules)
				}
			},
		},
		{
			name: "conflicting port sets",
			svc:  specService(map[string]string{AnnTLSPorts: "443", AnnHTTPPorts: "443,80", AnnHTTP2Ports: "80", AnnCertificateID: cert}, p80, p443),
			want: []specProblem{
				{AnnTLSPorts, "port 443 is also in http-ports or http2-ports"},
				{AnnHTTP2Ports, "port 80 is also in http-ports"},
			},
		},
		{
			name: "a port set naming a port the Service lacks",
			svc:  specService(map[string]string{AnnHTTPPorts: "8080"}),
			want: []specProblem{{AnnHTTPPorts, "port 8080 is not a port of the Service"}},
		},
		{
			name: "https without a certificate",
			svc:  specService(map[string]string{AnnProtocol: "https"}),
			want: []specProblem{{AnnCertificateID, "port 80 uses https, which needs certificate-id, certificate-name or tls-passthrough"}},
		},
		{
			name: "http2-ports without a certificate",
			svc:  specService(map[string]string{AnnHTTP2Ports: "80"}),
			want: []specProblem{{AnnCertificateID, "port 80 uses http2"}},
		},
		{
			name: "certificate and passthrough",
			svc:  specService(map[string]string{AnnCertificateID: cert, AnnTLSPassthrough: "true"}, p443),
			want: []specProblem{{AnnTLSPassthrough, "not both"}},
		},
		{
			name: "certificate-name resolved",
			svc:  specService(map[string]string{AnnCertificateName: "my-cert"}, p443),
			in:   func(in *lbInputs) { in.certID = certIDs },
			check: func(t *testing.T, req *godo.LoadBalancerRequest) {
				want := []godo.ForwardingRule{{EntryProtocol: "https", EntryPort: 443, TargetProtocol: "http", TargetPort: 30443, CertificateID: "id-of-my-cert"}}
				if !reflect.DeepEqual(req.ForwardingRules, want) {
					t.Errorf("rules = %+v", req.ForwardingRules)
				}
			},
		},
		{
			name: "certificate-id wins over certificate-name",
			svc:  specService(map[string]string{AnnCertificateName: "my-cert", AnnCertificateID: cert}, p443),
			in: func(in *lbInputs) {
				in.certID = func(string) (string, error) {
					panic("certificate-name must not be resolved when certificate-id is given")
				}
			},
			check: func(t *testing.T, req *godo.LoadBalancerRequest) {
				if want := []godo.ForwardingRule{https(443, 30443)}; !reflect.DeepEqual(req.ForwardingRules, want) {
					t.Errorf("rules = %+v", req.ForwardingRules)
				}
			},
		},
		{
			name: "certificate-name unknown",
			svc:  specService(map[string]string{AnnCertificateName: "nope", AnnProtocol: "https"}, p443),
			in:   func(in *lbInputs) { in.certID = certIDs },
			want: []specProblem{{AnnCertificateName, `no certificate named "nope"`}},
		},
		{
			name: "redirect without an HTTPS rule",
			svc:  specService(map[string]string{AnnRedirectHTTPToHTTPS: "true", AnnProtocol: "http"}),
			want: []specProblem{{AnnRedirectHTTPToHTTPS, "needs an HTTPS or HTTP/2 rule"}},
		},
		{
			name: "redirect with an HTTPS rule",
			svc:  specService(map[string]string{AnnRedirectHTTPToHTTPS: "true", AnnHTTPPorts: "80", AnnCertificateID: cert}, p80, p443),
			check: func(t *testing.T, req *godo.LoadBalancerRequest) {
				if !req.RedirectHttpToHttps {
					t.Error("RedirectHttpToHttps = false")
				}
			},
		},
		{
			name: "override health check with a port",
			svc:  specService(map[string]string{AnnOverrideHealthCheck: "true", AnnHealthCheckPort: "443"}, p80, p443),
			check: func(t *testing.T, req *godo.LoadBalancerRequest) {
				if hc := req.HealthCheck; hc.Protocol != "tcp" || hc.Port != 30443 || hc.Path != "" {
					t.Errorf("HealthCheck = %+v, want tcp on node port 30443 without a path", hc)
				}
			},
		},
		{
			name: "override health check, path and protocol",
			svc: specService(map[string]string{AnnOverrideHealthCheck: "true", AnnHealthCheckPath: "/ready", AnnHealthCheckProtocol: "HTTP"},
				p8443, p80),
			check: func(t *testing.T, req *godo.LoadBalancerRequest) {
				// No port: the first Service port's node port.
				if hc := req.HealthCheck; hc.Protocol != "http" || hc.Port != 30843 || hc.Path != "/ready" {
					t.Errorf("HealthCheck = %+v", hc)
				}
			},
		},
		{
			name: "override health check, https defaults its path",
			svc:  specService(map[string]string{AnnOverrideHealthCheck: "true", AnnHealthCheckProtocol: "https"}),
			check: func(t *testing.T, req *godo.LoadBalancerRequest) {
				if hc := req.HealthCheck; hc.Protocol != "https" || hc.Port != 30080 || hc.Path != "/" {
					t.Errorf("HealthCheck = %+v", hc)
				}
			},
		},
		{
			name: "override health check with an unknown port",
			svc:  specService(map[string]string{AnnOverrideHealthCheck: "true", AnnHealthCheckPort: "30080"}),
			want: []specProblem{{AnnHealthCheckPort, "30080 is not a port of the Service (give the Service port, not the node port)"}},
		},
		{
			name: "override health check: a path alone makes it http",
			svc:  specService(map[string]string{AnnOverrideHealthCheck: "", AnnHealthCheckPath: "/x"}),
			check: func(t *testing.T, req *godo.LoadBalancerRequest) {
				if hc := req.HealthCheck; hc.Protocol != "http" || hc.Port != 30080 || hc.Path != "/x" {
					t.Errorf("HealthCheck = %+v, want http /x on node port 30080", hc)
				}
			},
		},
		{
			name: "override health check: the first TCP port, not a UDP one",
			svc:  specService(map[string]string{AnnOverrideHealthCheck: "true"}, specPort(v1.ProtocolUDP, 53, 30053), p443),
			check: func(t *testing.T, req *godo.LoadBalancerRequest) {
				if hc := req.HealthCheck; hc.Protocol != "tcp" || hc.Port != 30443 {
					t.Errorf("HealthCheck = %+v, want tcp on node port 30443", hc)
				}
			},
		},
		{
			name: "override health check on a UDP port",
			svc:  specService(map[string]string{AnnOverrideHealthCheck: "true", AnnHealthCheckPort: "53"}, specPort(v1.ProtocolUDP, 53, 30053), p443),
			want: []specProblem{{AnnHealthCheckPort, "53 is a UDP port"}},
		},
		{
			name: "override health check without a TCP port",
			svc:  specService(map[string]string{AnnOverrideHealthCheck: "true"}, specPort(v1.ProtocolUDP, 53, 30053)),
			want: []specProblem{{AnnOverrideHealthCheck, "no TCP port"}},
		},
		{
			// The DigitalOcean CCM looks at the key's presence only.
			name: "health check with override false is still overridden",
			svc:  specService(map[string]string{AnnOverrideHealthCheck: "false", AnnHealthCheckPath: "/x"}),
			check: func(t *testing.T, req *godo.LoadBalancerRequest) {
				if hc := req.HealthCheck; hc.Protocol != "http" || hc.Path != "/x" {
					t.Errorf("HealthCheck = %+v, want http /x", hc)
				}
			},
		},
		{
			name: "health check timing",
			svc: specService(map[string]string{
				AnnHealthCheckInterval: "10", AnnHealthCheckTimeout: "7", AnnHealthCheckUnhealthy: "4", AnnHealthCheckHealthy: "2",
			}),
			check: func(t *testing.T, req *godo.LoadBalancerRequest) {
				hc := req.HealthCheck
				if hc.CheckIntervalSeconds != 10 || hc.ResponseTimeoutSeconds != 7 || hc.UnhealthyThreshold != 4 || hc.HealthyThreshold != 2 {
					t.Errorf("HealthCheck = %+v", hc)
				}
				if hc.Protocol != "http" || hc.Port != 10256 {
					t.Errorf("timing must not change the probe: %+v", hc)
				}
			},
		},
		{
			name: "health check timing out of range",
			svc:  specService(map[string]string{AnnHealthCheckInterval: "2", AnnHealthCheckHealthy: "11"}),
			want: []specProblem{
				{AnnHealthCheckInterval, `"2" is not valid: want an integer from 3 to 300`},
				{AnnHealthCheckHealthy, `"11" is not valid: want an integer from 2 to 10`},
			},
		},
		{
			name: "sticky cookies",
			svc: specService(map[string]string{
				AnnStickyType: "cookies", AnnStickyCookieName: "SESSION_id", AnnStickyCookieTTL: "300", AnnProtocol: "http",
			}),
			check: func(t *testing.T, req *godo.LoadBalancerRequest) {
				want := &godo.StickySessions{Type: "cookies", CookieName: "SESSION_id", CookieTtlSeconds: 300}
				if !reflect.DeepEqual(req.StickySessions, want) {
					t.Errorf("StickySessions = %+v", req.StickySessions)
				}
			},
		},
		{
			name: "sticky cookies without name and ttl",
			svc:  specService(map[string]string{AnnStickyType: "cookies", AnnProtocol: "http"}),
			want: []specProblem{
				{AnnStickyCookieName, "required when sticky-sessions-type is cookies"},
				{AnnStickyCookieTTL, "required when sticky-sessions-type is cookies"},
			},
		},
		{
			name: "sticky cookies without an HTTP rule",
			svc:  specService(map[string]string{AnnStickyType: "cookies", AnnStickyCookieName: "s", AnnStickyCookieTTL: "60"}),
			want: []specProblem{{AnnStickyType, "need an HTTP, HTTPS or HTTP/2 rule"}},
		},
		{
			name: "sticky cookie settings without cookies",
			svc:  specService(map[string]string{AnnStickyCookieName: "s", AnnStickyCookieTTL: "60"}),
			want: []specProblem{
				{AnnStickyCookieName, "only applies with " + AnnStickyType + ": cookies"},
				{AnnStickyCookieTTL, "only applies with " + AnnStickyType + ": cookies"},
			},
		},
		{
			name: "invalid cookie name",
			svc:  specService(map[string]string{AnnStickyType: "cookies", AnnStickyCookieName: "bad name", AnnStickyCookieTTL: "60", AnnProtocol: "http"}),
			want: []specProblem{{AnnStickyCookieName, "is not valid"}},
		},
		{
			name: "size-slug",
			svc:  specService(map[string]string{AnnSizeSlug: "lb-medium"}),
			check: func(t *testing.T, req *godo.LoadBalancerRequest) {
				if req.SizeSlug != "lb-medium" || req.SizeUnit != 0 {
					t.Errorf("size = %q / %d", req.SizeSlug, req.SizeUnit)
				}
			},
		},
		{
			name: "size-unit",
			svc:  specService(map[string]string{AnnSizeUnit: "3"}),
			check: func(t *testing.T, req *godo.LoadBalancerRequest) {
				if req.SizeSlug != "" || req.SizeUnit != 3 {
					t.Errorf("size = %q / %d", req.SizeSlug, req.SizeUnit)
				}
			},
		},
		{
			name: "size-slug and size-unit",
			svc:  specService(map[string]string{AnnSizeSlug: "lb-small", AnnSizeUnit: "2"}),
			want: []specProblem{{AnnSizeSlug, "not both"}},
		},
		{
			name: "REGIONAL_NETWORK",
			svc:  specService(map[string]string{AnnType: "regional_network"}),
			check: func(t *testing.T, req *godo.LoadBalancerRequest) {
				if req.Type != "REGIONAL_NETWORK" || req.HTTPIdleTimeoutSeconds != nil {
					t.Errorf("Type = %q, idle timeout = %v", req.Type, req.HTTPIdleTimeoutSeconds)
				}
			},
		},
		{
			name: "REGIONAL_NETWORK ignores HTTP settings, as upstream",
			svc:  specService(map[string]string{AnnType: "REGIONAL_NETWORK", AnnProtocol: "http", AnnTLSPorts: "443"}, specPort(v1.ProtocolTCP, 80, 30080), specPort(v1.ProtocolTCP, 443, 30443), specPort(v1.ProtocolUDP, 53, 30053)),
			check: func(t *testing.T, req *godo.LoadBalancerRequest) {
				// Each Service port to the same port on the droplets.
				want := []godo.ForwardingRule{{EntryProtocol: "udp", EntryPort: 53, TargetProtocol: "udp", TargetPort: 53}, tcpRule(80, 80), tcpRule(443, 443)}
				if !reflect.DeepEqual(req.ForwardingRules, want) {
					t.Errorf("rules = %+v, want %+v", req.ForwardingRules, want)
				}
			},
			notes: []string{AnnProtocol, AnnTLSPorts},
		},
		{
			name: "the default type when the Service names none",
			svc:  specService(nil),
			in:   func(in *lbInputs) { in.typ = "REGIONAL_NETWORK" },
			check: func(t *testing.T, req *godo.LoadBalancerRequest) {
				if req.Type != "REGIONAL_NETWORK" || req.ForwardingRules[0].TargetPort != 80 {
					t.Errorf("type %s, rules %+v; want REGIONAL_NETWORK to port 80", req.Type, req.ForwardingRules)
				}
			},
		},
		{
			name: "HTTP/3 beside HTTPS",
			svc:  specService(map[string]string{AnnCertificateID: cert, AnnHTTP3Port: "443"}, p443),
			check: func(t *testing.T, req *godo.LoadBalancerRequest) {
				want := []godo.ForwardingRule{
					{EntryProtocol: "http3", EntryPort: 443, TargetProtocol: "http", TargetPort: 30443, CertificateID: cert},
					https(443, 30443),
				}
				if !reflect.DeepEqual(req.ForwardingRules, want) {
					t.Errorf("rules = %+v, want %+v", req.ForwardingRules, want)
				}
			},
		},
		{
			name: "HTTP/3 without a certificate",
			svc:  specService(map[string]string{AnnHTTP3Port: "443", AnnProtocol: "tcp"}, p443),
			want: []specProblem{{AnnHTTP3Port, "needs certificate-id or certificate-name"}},
		},
		{
			name: "HTTP/3 on a port without HTTPS",
			svc:  specService(map[string]string{AnnHTTP3Port: "443", AnnCertificateID: cert, AnnHTTPPorts: "443"}, p443),
			want: []specProblem{{AnnHTTP3Port, "needs an HTTPS or HTTP/2 rule"}},
		},
		{
			name: "HTTP/3 with passthrough",
			svc:  specService(map[string]string{AnnHTTP3Port: "443", AnnTLSPassthrough: "true"}, p443),
			want: []specProblem{{AnnHTTP3Port, "tls-passthrough"}},
		},
		{
			name: "HTTP/3 on a port the Service lacks",
			svc:  specService(map[string]string{AnnHTTP3Port: "8443", AnnCertificateID: cert}, p443),
			want: []specProblem{{AnnHTTP3Port, "not a TCP port of the Service"}},
		},
		{
			name: "ip",
			svc:  specService(map[string]string{AnnIP: " 198.51.100.7 "}),
			check: func(t *testing.T, req *godo.LoadBalancerRequest) {
				if req.IP != "198.51.100.7" {
					t.Errorf("IP = %q", req.IP)
				}
			},
		},
		{
			name: "ip not IPv4",
			svc:  specService(map[string]string{AnnIP: "2001:db8::1"}),
			want: []specProblem{{AnnIP, "want an IPv4 address"}},
		},
		{
			name: "subnet",
			svc:  specService(map[string]string{AnnSubnetUUID: "5a4981aa-9653-4bd1-bef5-d6bff52042e4"}),
			check: func(t *testing.T, req *godo.LoadBalancerRequest) {
				if req.VPCSubnetUUID != "5a4981aa-9653-4bd1-bef5-d6bff52042e4" {
					t.Errorf("subnet = %q", req.VPCSubnetUUID)
				}
			},
		},
		{
			name: "subnet not a UUID",
			svc:  specService(map[string]string{AnnSubnetUUID: "subnet-1"}),
			want: []specProblem{{AnnSubnetUUID, "want a VPC subnet UUID"}},
		},
		{
			name: "REGIONAL_NETWORK with an idle timeout",
			svc:  specService(map[string]string{AnnType: "REGIONAL_NETWORK", AnnHTTPIdleTimeout: "90"}),
			want: []specProblem{{AnnHTTPIdleTimeout, "does not apply to REGIONAL_NETWORK"}},
		},
		{
			name: "idle timeout",
			svc:  specService(map[string]string{AnnHTTPIdleTimeout: "120"}),
			check: func(t *testing.T, req *godo.LoadBalancerRequest) {
				if req.HTTPIdleTimeoutSeconds == nil || *req.HTTPIdleTimeoutSeconds != 120 {
					t.Errorf("idle timeout = %v", req.HTTPIdleTimeoutSeconds)
				}
			},
		},
		{
			name: "network INTERNAL, algorithm, flags",
			svc: specService(map[string]string{
				AnnNetwork: "internal", AnnAlgorithm: "least_connections", AnnProxyProtocol: "true",
				AnnBackendKeepalive: "true", AnnDisableLetsEncryptDNS: "true",
			}),
			check: func(t *testing.T, req *godo.LoadBalancerRequest) {
				if req.Network != "INTERNAL" || req.Algorithm != "least_connections" || !req.EnableProxyProtocol || !req.EnableBackendKeepalive {
					t.Errorf("req = %+v", req)
				}
				if req.DisableLetsEncryptDNSRecords == nil || !*req.DisableLetsEncryptDNSRecords {
					t.Errorf("DisableLetsEncryptDNSRecords = %v", req.DisableLetsEncryptDNSRecords)
				}
			},
		},
		{
			name: "source ranges win over allow-rules",
			svc: func() *v1.Service {
				s := specService(map[string]string{AnnAllowRules: "ip:1.2.3.4", AnnDenyRules: "ip:9.9.9.9,cidr:5.5.0.0/16"})
				s.Spec.LoadBalancerSourceRanges = []string{"192.168.0.0/16", " 10.0.0.0/8 "}
				return s
			}(),
			check: func(t *testing.T, req *godo.LoadBalancerRequest) {
				want := &godo.LBFirewall{Allow: []string{"cidr:10.0.0.0/8", "cidr:192.168.0.0/16"}, Deny: []string{"cidr:5.5.0.0/16", "ip:9.9.9.9"}}
				if !reflect.DeepEqual(req.Firewall, want) {
					t.Errorf("Firewall = %+v, want %+v", req.Firewall, want)
				}
			},
		},
		{
			name: "allow-rules alone",
			svc:  specService(map[string]string{AnnAllowRules: "ip:1.2.3.4,cidr:10.0.0.0/8"}),
			check: func(t *testing.T, req *godo.LoadBalancerRequest) {
				want := &godo.LBFirewall{Allow: []string{"cidr:10.0.0.0/8", "ip:1.2.3.4"}}
				if !reflect.DeepEqual(req.Firewall, want) {
					t.Errorf("Firewall = %+v, want %+v", req.Firewall, want)
				}
			},
		},
		{
			name: "deny-rules alone",
			svc:  specService(map[string]string{AnnDenyRules: "ip:9.9.9.9"}),
			check: func(t *testing.T, req *godo.LoadBalancerRequest) {
				if want := (&godo.LBFirewall{Deny: []string{"ip:9.9.9.9"}}); !reflect.DeepEqual(req.Firewall, want) {
					t.Errorf("Firewall = %+v", req.Firewall)
				}
			},
		},
		{
			name: "bad deny rule",
			svc:  specService(map[string]string{AnnDenyRules: "ip:9.9.9.9,9.9.9.8"}),
			want: []specProblem{{AnnDenyRules, "want comma-separated ip:ADDRESS or cidr:PREFIX"}},
		},
		{
			name: "bad source range",
			svc: func() *v1.Service {
				s := specService(nil)
				s.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/8", "10.1.2.3"}
				return s
			}(),
			want: []specProblem{{"spec.loadBalancerSourceRanges", `"10.1.2.3" is not a CIDR`}},
		},
		{
			name: "SCTP",
			svc:  specService(nil, specPort(v1.ProtocolSCTP, 9999, 30999), p80),
			want: []specProblem{{"spec.ports", "protocol SCTP (port 9999) is not supported"}},
		},
		{
			name: "no node port",
			svc:  specService(nil, p80, specPort(v1.ProtocolTCP, 81, 0)),
			want: []specProblem{{"spec.ports", "port 81 has no node port"}},
		},
		{
			name: "same port TCP and UDP",
			svc:  specService(nil, specPort(v1.ProtocolTCP, 53, 30053), specPort(v1.ProtocolUDP, 53, 30054)),
			want: []specProblem{{"spec.ports", "port 53 is used for both TCP and UDP"}},
		},
		{
			name:  "REGIONAL is DUALSTACK by default",
			svc:   specService(nil),
			check: stackIs("DUALSTACK"),
		},
		{
			name: "spec.ipFamilies do not decide, as upstream",
			svc: func() *v1.Service {
				s := specService(nil)
				s.Spec.IPFamilies = []v1.IPFamily{v1.IPv4Protocol}
				return s
			}(),
			check: stackIs("DUALSTACK"),
		},
		{
			name:  "network-stack IPV4",
			svc:   specService(map[string]string{AnnNetworkStack: "ipv4"}),
			check: stackIs("IPV4"),
		},
		{
			name:  "INTERNAL is IPV4",
			svc:   specService(map[string]string{AnnNetwork: "INTERNAL"}),
			check: stackIs("IPV4"),
		},
		{
			name: "DUALSTACK INTERNAL",
			svc:  specService(map[string]string{AnnNetwork: "INTERNAL", AnnNetworkStack: "DUALSTACK"}),
			want: []specProblem{{AnnNetworkStack, "not supported for INTERNAL"}},
		},
		{
			name:  "REGIONAL_NETWORK with IPv4-only nodes is IPV4",
			svc:   specService(map[string]string{AnnType: "REGIONAL_NETWORK"}),
			check: stackIs("IPV4"),
		},
		{
			name:  "REGIONAL_NETWORK with dual-stack nodes is DUALSTACK",
			svc:   specService(map[string]string{AnnType: "REGIONAL_NETWORK"}),
			in:    func(in *lbInputs) { in.nodes = nodeStacks{ready: make([]*v1.Node, 2), dual: 2} },
			check: stackIs("DUALSTACK"),
		},
		{
			name:  "REGIONAL_NETWORK with no target yet is IPV4",
			svc:   specService(map[string]string{AnnType: "REGIONAL_NETWORK"}),
			in:    func(in *lbInputs) { in.nodes = nodeStacks{} },
			check: stackIs("IPV4"),
		},
		{
			name: "REGIONAL_NETWORK DUALSTACK with an IPv4-only node",
			svc:  specService(map[string]string{AnnType: "REGIONAL_NETWORK", AnnNetworkStack: "DUALSTACK"}),
			in: func(in *lbInputs) {
				in.nodes = nodeStacks{ready: make([]*v1.Node, 2), dual: 1, v4Only: []string{"old-node"}}
			},
			want: []specProblem{{AnnNetworkStack, "old-node"}},
		},
		{
			name: "REGIONAL_NETWORK EXTERNAL with private-only nodes",
			svc:  specService(map[string]string{AnnType: "REGIONAL_NETWORK"}),
			in:   func(in *lbInputs) { in.nodes = nodeStacks{noPublic: []string{"p1", "p2"}} },
			want: []specProblem{{"nodes", "need a node with a public IPv4 address, and nodes p1, p2 have none"}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := specInputs()
			if c.in != nil {
				c.in(&in)
			}
			req, probs := specRun(t, c.svc, in)
			specCheckProblems(t, probs, c.want)
			if c.check != nil {
				c.check(t, req)
			}
			if c.notes != nil {
				a := LBAnnotations.Parse(c.svc)
				desiredLB(c.svc, a, in)
				var got []string
				for _, n := range a.Notes() {
					got = append(got, n.Key)
				}
				for _, k := range c.notes {
					if !slices.Contains(got, k) {
						t.Errorf("no note on %s; notes %+v", k, a.Notes())
					}
				}
			}
		})
	}
}

func TestDesiredLBReportsEveryProblem(t *testing.T) {
	svc := specService(map[string]string{
		AnnProtocol: "https", AnnSizeSlug: "lb-small", AnnSizeUnit: "2", AnnHealthCheckPort: "x", AnnStickyCookieTTL: "5",
	}, specPort(v1.ProtocolTCP, 80, 0))
	_, probs := specRun(t, svc, specInputs())
	specCheckProblems(t, probs, []specProblem{
		{AnnSizeSlug, "not both"},
		{AnnStickyCookieTTL, "only applies"},
		{"spec.ports", "no node port"},
	})
	if len(probs) != 3 {
		t.Errorf("%d problems, want 3 (an invalid health check port without the override is not one): %+v", len(probs), probs)
	}
}

func specNode(name, providerID string, labels map[string]string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: v1.NodeSpec{ProviderID: providerID}}
}

// dropletIDsOf maps providerIDs; which Nodes are targets at all (the
// exclusion label) is core/loadbalancers.Rules's, tested there.
func TestDropletIDsOf(t *testing.T) {
	nodes := []*v1.Node{
		specNode("n1", "digitalocean://3", nil),
		specNode("n2", "digitalocean://1", nil),
		specNode("n3", "digitalocean://3", nil), // duplicate
		specNode("n6", "digitalocean://2", nil),
		specNode("n7", "", nil),
		specNode("n8", "aws:///us-east-1a/i-0123", nil),
		specNode("n9", "digitalocean:///4", nil),
		specNode("n10", "digitalocean://x", nil),
	}
	ids, skipped := dropletIDsOf(nodes)
	if want := []int{1, 2, 3, 4}; !reflect.DeepEqual(ids, want) {
		t.Errorf("ids = %v, want %v", ids, want)
	}
	if want := []string{"n7", "n8", "n10"}; !reflect.DeepEqual(skipped, want) {
		t.Errorf("skipped = %v, want %v", skipped, want)
	}
	ids, skipped = dropletIDsOf(nil)
	if ids != nil || skipped != nil {
		t.Errorf("no nodes: %v %v", ids, skipped)
	}
}

// Unknown annotations are warnings, not problems: the DigitalOcean CCM
// ignores them, and so does polyccm, after saying so.
func TestDesiredLBWarnsOfUnknownAnnotations(t *testing.T) {
	a := LBAnnotations.Parse(specService(map[string]string{
		annPrefix + "protocl":                     "http",
		"service.kubernetes.io/do-loadbalancer-x": "1",
		AnnDisown:         "false",
		AnnLoadBalancerID: "whatever",
		"service.beta.kubernetes.io/aws-something": "ignored",
	}))
	desiredLB(specService(nil), a, specInputs())
	if err := a.Err(); err != nil {
		t.Errorf("Err() = %v, want nil", err)
	}
	var got []string
	for _, w := range a.Warnings() {
		got = append(got, w.Key+": "+w.Msg)
	}
	want := []string{
		annPrefix + "protocl: unknown annotation, ignored; did you mean " + AnnProtocol + "?",
		"service.kubernetes.io/do-loadbalancer-x: unknown annotation, ignored",
	}
	if len(got) != len(want) || got[0] != want[0] || !strings.HasPrefix(got[1], want[1]) {
		t.Errorf("warnings %q, want %q", got, want)
	}
}

// Without the override the DigitalOcean CCM ignores the health check's
// port, path and protocol, whatever their values; so do we, with a Normal
// event per key, and kube-proxy's check is used. A tcp override ignores a
// path the same way. The rest of the Service is applied.
func TestHealthCheckKeysNotApplied(t *testing.T) {
	for _, c := range []struct {
		name string
		ann  map[string]string
		want []string
	}{
		{"without override", map[string]string{AnnHealthCheckPort: "80", AnnHealthCheckPath: "no-slash", AnnHealthCheckProtocol: "gopher"},
			[]string{AnnHealthCheckPort, AnnHealthCheckPath, AnnHealthCheckProtocol}},
		{"tcp override with a path", map[string]string{AnnOverrideHealthCheck: "true", AnnHealthCheckProtocol: "tcp", AnnHealthCheckPath: "/x"},
			[]string{AnnHealthCheckPath}},
		{"override false", map[string]string{AnnOverrideHealthCheck: "False"}, []string{AnnOverrideHealthCheck}},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.ann[AnnSizeUnit] = "3"
			svc := specService(c.ann)
			a := LBAnnotations.Parse(svc)
			req := desiredLB(svc, a, specInputs())
			if err := a.Err(); err != nil {
				t.Fatalf("Err() = %v, want nil", err)
			}
			if req.SizeUnit != 3 {
				t.Errorf("SizeUnit = %d, want the rest of the Service applied", req.SizeUnit)
			}
			var got []string
			for _, n := range a.Notes() {
				got = append(got, n.Key)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("notes on %v, want %v: %+v", got, c.want, a.Notes())
			}
			if c.ann[AnnOverrideHealthCheck] == "" {
				if hc := req.HealthCheck; hc.Protocol != "http" || hc.Port != kubeProxyHealthPort || hc.Path != kubeProxyHealthPath {
					t.Errorf("HealthCheck = %+v, want kube-proxy's", hc)
				}
			} else if req.HealthCheck.Path != "" {
				t.Errorf("a tcp check got path %q", req.HealthCheck.Path)
			}
		})
	}
}

// stackIs checks the request's network stack.
func stackIs(want string) func(*testing.T, *godo.LoadBalancerRequest) {
	return func(t *testing.T, req *godo.LoadBalancerRequest) {
		t.Helper()
		if req.NetworkStack != want {
			t.Errorf("NetworkStack = %q, want %q", req.NetworkStack, want)
		}
	}
}

// The firewall reads a Service's type and network as the load balancer
// does: case-insensitively, the written-back type first, else the default.
func TestPassesToNodes(t *testing.T) {
	for _, c := range []struct {
		ann  map[string]string
		def  string
		want bool
	}{
		{nil, typeRegionalNetwork, true},
		{nil, typeRegional, false},
		{map[string]string{AnnType: "regional_network"}, typeRegional, true},
		{map[string]string{AnnType: "REGIONAL"}, typeRegionalNetwork, false},
		{map[string]string{AnnNetwork: "internal"}, typeRegionalNetwork, false},
		{map[string]string{AnnType: "sideways"}, typeRegionalNetwork, true},
	} {
		if got := passesToNodes(specService(c.ann), c.def); got != c.want {
			t.Errorf("passesToNodes(%v, default %s) = %v, want %v", c.ann, c.def, got, c.want)
		}
	}
}
