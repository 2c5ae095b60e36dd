package hetzner

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"
	v1 "k8s.io/api/core/v1"
)

const lbN = "a8c0cd0b45f434bd89b3b1b7e3c7c2b1" // testService's load balancer name

// steady is the load balancer that is exactly what spec asks for, in
// Network 7.
func steady(spec *lbSpec) *hcloud.LoadBalancer {
	lb := &hcloud.LoadBalancer{
		ID:               42,
		Name:             spec.name,
		Labels:           map[string]string{LabelServiceUID: spec.uid, "team": "shop"},
		LoadBalancerType: &hcloud.LoadBalancerType{Name: "lb11", MaxTargets: 25},
		Location:         &hcloud.Location{Name: "fsn1", NetworkZone: "eu-central"},
		Algorithm:        hcloud.LoadBalancerAlgorithm{Type: "round_robin"},
		PublicNet: hcloud.LoadBalancerPublicNet{
			Enabled: true,
			IPv4:    hcloud.LoadBalancerPublicNetIPv4{IP: net.ParseIP("203.0.113.7")},
			IPv6:    hcloud.LoadBalancerPublicNetIPv6{IP: net.ParseIP("2001:db8::1")},
		},
		PrivateNet: []hcloud.LoadBalancerPrivateNet{{Network: &hcloud.Network{ID: 7}, IP: net.ParseIP("10.0.0.2")}},
	}
	for _, s := range spec.services() {
		lb.Services = append(lb.Services, s.asService())
	}
	for _, id := range spec.servers {
		lb.Targets = append(lb.Targets, serverTarget(id, spec.usePrivateIP))
	}
	return lb
}

func specFor(t *testing.T, ann map[string]string, cfg LoadBalancerConfig, ports ...v1.ServicePort) *lbSpec {
	t.Helper()
	s, a := parse(t, testService(ann, ports...), cfg, 7)
	if err := a.Err(); err != nil {
		t.Fatal(err)
	}
	return s
}

func planStrings(p *lbPlan) []string {
	out := make([]string, len(p.Changes))
	for i, c := range p.Changes {
		out[i] = c.String()
	}
	return out
}

func checkPlan(t *testing.T, p *lbPlan, want ...string) {
	t.Helper()
	got := planStrings(p)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("plan:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

func TestPlanSteadyStateIsEmpty(t *testing.T) {
	for name, ann := range map[string]map[string]string{
		"defaults": nil,
		"http":     {AnnProtocol: "http", AnnHCPort: "10256", AnnHCPath: "/healthz", AnnHCStatusCodes: "2??", AnnRedirectHTTP: "false", AnnCookieLifetime: "300"},
		"private":  {AnnUsePrivateIP: "true", AnnAlgorithm: "round_robin", AnnType: "lb11", AnnDisablePublicNetwork: "false"},
	} {
		t.Run(name, func(t *testing.T) {
			spec := specFor(t, ann, defaultLoadBalancerConfig())
			p := planLB(spec, observed{lb: steady(spec), mayCreate: true}, nil)
			if !p.Empty() || p.String() != "no changes" {
				t.Errorf("plan %s, want none", p.String())
			}
		})
	}
}

// Settings the Service leaves unset stay as the load balancer has them.
func TestPlanKeepsWhatIsUnset(t *testing.T) {
	spec := specFor(t, nil, defaultLoadBalancerConfig())
	lb := steady(spec)
	lb.Algorithm.Type = "least_connections"
	lb.LoadBalancerType = &hcloud.LoadBalancerType{Name: "lb21", MaxTargets: 75}
	lb.PublicNet.IPv4.DNSPtr = "lb.example.com"
	lb.Services[0].Proxyprotocol = true
	lb.Services[0].HealthCheck.Interval = 30 * time.Second
	lb.Services[0].HTTP.StickySessions = true
	lb.Targets = append(lb.Targets, hcloud.LoadBalancerTarget{Type: hcloud.LoadBalancerTargetTypeLabelSelector, LabelSelector: &hcloud.LoadBalancerTargetLabelSelector{Selector: "role=web"}})
	if p := planLB(spec, observed{lb: lb, mayCreate: true}, nil); !p.Empty() {
		t.Errorf("plan %s, want none", p.String())
	}
}

func TestPlanCreate(t *testing.T) {
	cfg := LoadBalancerConfig{Location: "fsn1"}
	lb11 := &hcloud.LoadBalancerType{Name: "lb11", MaxTargets: 25}
	t.Run("all in one request", func(t *testing.T) {
		spec := specFor(t, map[string]string{AnnAlgorithm: "least_connections"}, cfg, tcpPort(80, 30080), tcpPort(443, 30443))
		p := planLB(spec, observed{lbType: lb11, mayCreate: true}, nil)
		checkPlan(t, p, "create load balancer "+lbN+" (load_balancer_type none -> lb11; location none -> fsn1; algorithm.type none -> least_connections; network none -> 7; services none -> tcp 80 -> 30080,tcp 443 -> 30443; targets none -> [11 12]; labels none -> hcloud-ccm/service-uid="+testUID+")")
	})
	t.Run("a private IP: attached after, then targets using it", func(t *testing.T) {
		spec := specFor(t, map[string]string{AnnNetworkZone: "eu-central", AnnLocation: "", AnnPrivateIPv4: "10.0.0.9", AnnUsePrivateIP: "true", AnnIPv4RDNS: "web.example.com"}, cfg)
		p := planLB(spec, observed{lbType: lb11, mayCreate: true}, nil)
		checkPlan(t, p,
			"create load balancer "+lbN+" (load_balancer_type none -> lb11; network_zone none -> eu-central; services none -> tcp 80 -> 30080; labels none -> hcloud-ccm/service-uid="+testUID+")",
			"update load balancer "+lbN+" (public_net.ipv4.dns_ptr none -> web.example.com)",
			"create network attachment "+lbN+" in network 7 (ip none -> 10.0.0.9)",
			"create target server 11 of "+lbN+" (use_private_ip none -> true)",
			"create target server 12 of "+lbN+" (use_private_ip none -> true)",
		)
	})
	t.Run("the type's target limit", func(t *testing.T) {
		spec := specFor(t, nil, cfg)
		p := planLB(spec, observed{lbType: &hcloud.LoadBalancerType{Name: "lb11", MaxTargets: 1}, mayCreate: true}, nil)
		if len(p.Changes) != 1 || !strings.Contains(p.Changes[0].String(), "targets none -> [11];") {
			t.Errorf("plan %s, want one create with server 11 only", p.String())
		}
		if len(p.overLimit) != 1 || p.overLimit[0] != 12 {
			t.Errorf("over the limit: %v, want [12]", p.overLimit)
		}
	})
}

func TestPlanChanges(t *testing.T) {
	cases := []struct {
		name  string
		ann   map[string]string
		cfg   LoadBalancerConfig
		ports []v1.ServicePort
		edit  func(lb *hcloud.LoadBalancer) // the cloud's side, from steady
		want  []string
	}{
		{name: "node port changed", ports: []v1.ServicePort{tcpPort(80, 31000)}, edit: func(lb *hcloud.LoadBalancer) {
			lb.Services[0].DestinationPort, lb.Services[0].HealthCheck.Port = 30080, 30080
		}, want: []string{"update service " + lbN + " port 80 (destination_port 30080 -> 31000; health_check.port 30080 -> 31000)"}},
		{name: "port moved: the old one goes first", ports: []v1.ServicePort{tcpPort(8080, 30080)}, edit: func(lb *hcloud.LoadBalancer) {
			lb.Services[0].ListenPort = 80
		}, want: []string{"delete service " + lbN + " port 80", "create service " + lbN + " port 8080 (service none -> tcp 8080 -> 30080)"}},
		{name: "nodes joined and left", edit: func(lb *hcloud.LoadBalancer) {
			lb.Targets = []hcloud.LoadBalancerTarget{serverTarget(11, false), serverTarget(99, false)}
		}, want: []string{"delete target server 99 of " + lbN + " (use_private_ip false -> none)", "create target server 12 of " + lbN + " (use_private_ip none -> false)"}},
		{name: "targets turn to private IPs", ann: map[string]string{AnnUsePrivateIP: "true"}, edit: func(lb *hcloud.LoadBalancer) {
			lb.Targets = []hcloud.LoadBalancerTarget{serverTarget(11, false), serverTarget(12, true)}
		}, want: []string{"delete target server 11 of " + lbN + " (use_private_ip false -> none)", "create target server 11 of " + lbN + " (use_private_ip none -> true)"}},
		{name: "IP targets go, label selectors stay", edit: func(lb *hcloud.LoadBalancer) {
			lb.Targets = append(lb.Targets,
				hcloud.LoadBalancerTarget{Type: hcloud.LoadBalancerTargetTypeIP, IP: &hcloud.LoadBalancerTargetIP{IP: "198.51.100.4"}},
				hcloud.LoadBalancerTarget{Type: hcloud.LoadBalancerTargetTypeLabelSelector, LabelSelector: &hcloud.LoadBalancerTargetLabelSelector{Selector: "x"}})
		}, want: []string{"delete target ip 198.51.100.4 of " + lbN}},
		{name: "found by name: labelled and renamed", ann: map[string]string{AnnName: "web"}, edit: func(lb *hcloud.LoadBalancer) {
			lb.Name, lb.Labels = "old", map[string]string{"team": "shop"}
		}, want: []string{"update load balancer old (labels.hcloud-ccm/service-uid none -> " + testUID + "; name old -> web)"}},
		{name: "another UID's label is replaced", edit: func(lb *hcloud.LoadBalancer) {
			lb.Labels[LabelServiceUID] = "0000"
		}, want: []string{"update load balancer " + lbN + " (labels.hcloud-ccm/service-uid 0000 -> " + testUID + ")"}},
		{name: "settings", ann: map[string]string{AnnAlgorithm: "least_connections", AnnType: "lb21", AnnIPv6RDNS: "web.example.com", AnnDisablePublicNetwork: "true"},
			want: []string{
				"update load balancer " + lbN + " (public_net.ipv6.dns_ptr none -> web.example.com)",
				"update load balancer " + lbN + " (algorithm.type round_robin -> least_connections)",
				"update load balancer " + lbN + " (load_balancer_type lb11 -> lb21)",
				"update load balancer " + lbN + " (public_net.enabled true -> false)",
			}},
		{name: "configured defaults apply", cfg: LoadBalancerConfig{Algorithm: "least_connections", Type: "lb21", UsesProxyProtocol: true},
			want: []string{
				"update load balancer " + lbN + " (algorithm.type round_robin -> least_connections)",
				"update load balancer " + lbN + " (load_balancer_type lb11 -> lb21)",
				"update service " + lbN + " port 80 (proxyprotocol false -> true)",
			}},
		{name: "another network: detached, then attached", edit: func(lb *hcloud.LoadBalancer) {
			lb.PrivateNet = []hcloud.LoadBalancerPrivateNet{{Network: &hcloud.Network{ID: 9}, IP: net.ParseIP("10.9.0.2")}}
		}, want: []string{"delete network attachment " + lbN + " in network 9 (ip 10.9.0.2 -> none)", "create network attachment " + lbN + " in network 7 (ip none -> any)"}},
		{name: "another private IP: the private targets come back", ann: map[string]string{AnnPrivateIPv4: "10.0.0.9", AnnUsePrivateIP: "true", AnnPrivateSubnet: "10.0.0.0/24"},
			want: []string{
				"delete network attachment " + lbN + " in network 7 (ip 10.0.0.2 -> none)",
				"create network attachment " + lbN + " in network 7 (ip none -> 10.0.0.9; ip_range none -> 10.0.0.0/24)",
				"create target server 11 of " + lbN + " (use_private_ip none -> true)",
				"create target server 12 of " + lbN + " (use_private_ip none -> true)",
			}},
		{name: "health check customized", ann: map[string]string{AnnProtocol: "http", AnnHCProtocol: "http", AnnHCPath: "/healthz", AnnHCInterval: "5", AnnHCRetries: "2"}, edit: func(lb *hcloud.LoadBalancer) {
			hc := &lb.Services[0].HealthCheck
			hc.Protocol, hc.Interval, hc.Retries, hc.HTTP = "tcp", 15*time.Second, 3, nil
		}, want: []string{"update service " + lbN + " port 80 (protocol tcp -> http; health_check.protocol tcp -> http; health_check.interval 15s -> 5s; health_check.retries 3 -> 2; health_check.http.path none -> /healthz)"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := specFor(t, tc.ann, tc.cfg, tc.ports...)
			lb := steady(specFor(t, nil, defaultLoadBalancerConfig(), tc.ports...))
			if tc.ann[AnnUsePrivateIP] == "true" {
				lb = steady(spec)
			}
			if tc.edit != nil {
				tc.edit(lb)
			}
			checkPlan(t, planLB(spec, observed{lb: lb, mayCreate: true}, nil), tc.want...)
		})
	}
}

func TestPlanWithoutANetworkDetaches(t *testing.T) {
	s, _ := parse(t, testService(nil), defaultLoadBalancerConfig(), 0)
	lb := steady(s)
	checkPlan(t, planLB(s, observed{lb: lb, mayCreate: true}, nil), "delete network attachment "+lbN+" in network 7 (ip 10.0.0.2 -> none)")
}

func TestPlanCertificates(t *testing.T) {
	ann := map[string]string{AnnProtocol: "https", AnnCertificateType: "managed", AnnManagedCertDomains: "example.com"}
	https := []v1.ServicePort{tcpPort(443, 30443)}
	base := func(t *testing.T) (*lbSpec, *hcloud.LoadBalancer) {
		spec := specFor(t, ann, defaultLoadBalancerConfig(), https...)
		lb := steady(specFor(t, map[string]string{AnnProtocol: "https", AnnHTTPCertificates: "5"}, defaultLoadBalancerConfig(), https...))
		lb.Services[0].HTTP.Certificates = []*hcloud.Certificate{{ID: 5}}
		return spec, lb
	}
	t.Run("made first; services wait", func(t *testing.T) {
		spec, lb := base(t)
		p := planLB(spec, observed{lb: lb, mayCreate: true}, nil)
		checkPlan(t, p, "create certificate ccm-managed-certificate-"+testUID+" (domain_names none -> example.com)")
		if p.waitCert == "" {
			t.Error("no wait for the certificate")
		}
	})
	t.Run("the node sync makes none", func(t *testing.T) {
		spec, lb := base(t)
		if p := planLB(spec, observed{lb: lb}, nil); !p.Empty() || p.waitCert == "" {
			t.Errorf("plan %s wait %q", p.String(), p.waitCert)
		}
	})
	t.Run("being issued", func(t *testing.T) {
		spec, lb := base(t)
		spec.managed.have = &hcloud.Certificate{ID: 6, Name: "c", Status: &hcloud.CertificateStatus{Issuance: hcloud.CertificateStatusTypePending}}
		if p := planLB(spec, observed{lb: lb, mayCreate: true}, nil); !p.Empty() || !strings.Contains(p.waitCert, "being issued") {
			t.Errorf("plan %s wait %q", p.String(), p.waitCert)
		}
	})
	t.Run("issued: the services use it", func(t *testing.T) {
		spec, lb := base(t)
		spec.managed.have = &hcloud.Certificate{ID: 6, Status: &hcloud.CertificateStatus{Issuance: hcloud.CertificateStatusTypeCompleted}}
		spec.svc.http.certs = []int64{6}
		checkPlan(t, planLB(spec, observed{lb: lb, mayCreate: true}, nil), "update service "+lbN+" port 443 (http.certificates [5] -> [6])")
	})
}

func TestStatus(t *testing.T) {
	spec := specFor(t, nil, defaultLoadBalancerConfig())
	lb := steady(spec)
	ips := func(st *v1.LoadBalancerStatus) string {
		var out []string
		for _, in := range st.Ingress {
			out = append(out, in.IP+in.Hostname+":"+string(*ptrOr(in.IPMode)))
		}
		return strings.Join(out, " ")
	}
	cases := []struct {
		name string
		ann  map[string]string
		edit func(*hcloud.LoadBalancer)
		want string
	}{
		{"all", nil, nil, "203.0.113.7:VIP 2001:db8::1:VIP 10.0.0.2:VIP"},
		{"no IPv6, no private ingress", map[string]string{AnnIPv6Disabled: "true", AnnDisablePrivateIngress: "true"}, nil, "203.0.113.7:VIP"},
		{"proxy protocol", map[string]string{AnnProxyProtocol: "true", AnnIPv6Disabled: "true"}, nil, "203.0.113.7:Proxy 10.0.0.2:Proxy"},
		{"public interface off", nil, func(lb *hcloud.LoadBalancer) { lb.PublicNet.Enabled = false }, "10.0.0.2:VIP"},
		{"hostname", map[string]string{AnnHostname: "Web.example.com"}, nil, "Web.example.com:"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := specFor(t, tc.ann, defaultLoadBalancerConfig())
			l := *lb
			if tc.edit != nil {
				tc.edit(&l)
			}
			if got := ips(lbStatus(&l, s)); got != tc.want {
				t.Errorf("status %q, want %q", got, tc.want)
			}
		})
	}
}

func ptrOr(m *v1.LoadBalancerIPMode) *v1.LoadBalancerIPMode {
	if m == nil {
		return new(v1.LoadBalancerIPMode)
	}
	return m
}

func TestResourceMarks(t *testing.T) {
	cases := []struct {
		name            string
		lbName          string
		labels          map[string]string
		uidMark, marked string
	}{
		{"label", "web", map[string]string{LabelServiceUID: testUID}, strings.ReplaceAll(testUID, "-", ""), ""},
		{"label wins over the name", lbN, map[string]string{LabelServiceUID: "11111111-2222-3333-4444-555555555555"}, "11111111222233334444555555555555", ""},
		{"unlabelled: the name", lbN, nil, lbN[1:], ""},
		{"neither", "web", nil, "", ""},
		{"a label that is no UID", "web", map[string]string{LabelServiceUID: "x"}, "", "with UID x"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := lbResource(&hcloud.LoadBalancer{ID: 1, Name: tc.lbName, Labels: tc.labels}, "")
			if r.UIDMark != tc.uidMark || r.Service != tc.marked {
				t.Errorf("UIDMark %q Service %q, want %q %q", r.UIDMark, r.Service, tc.uidMark, tc.marked)
			}
		})
	}
}
