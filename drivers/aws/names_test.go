package aws

import (
	"maps"
	"testing"

	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The names, tags and health checks polyccm gives an NLB's resources must
// be the AWS cloud-controller-manager's, so that taking over from it makes
// nothing new. The expected values below were printed by upstream's own
// functions: kubernetes/cloud-provider-aws at commit
// 63ec440c3275321b55afa45480e2fdfd2b0e93c4 (the module proxy does not serve
// that commit, so a copy of the tree was used through a go.mod replace,
// with a file added to the package that only calls, unchanged):
//   - (*Cloud).buildTargetGroupName, pkg/providers/v1/aws_loadbalancer.go,
//     with the mapping's health check from
//     (*Cloud).buildNLBHealthCheckConfiguration, pkg/providers/v1/aws.go;
//   - (*Cloud).GetSecurityGroupNameForNLB, pkg/providers/v1/aws.go;
//   - (*Cloud).GetLoadBalancerName (cloudprovider.DefaultLoadBalancerName);
//   - awsTagging.buildTags, hasClusterTag and hasClusterTagOwned,
//     pkg/providers/v1/tags.go, and getKeyValuePropertiesFromAnnotation.

const (
	vecUID1 = "5e1b6a3c-7d2f-4c8e-9a0b-1c2d3e4f5a6b"
	vecUID2 = "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9"
	vecUID3 = "ffffffff-eeee-4ddd-8ccc-bbbbbbbbbbbb"
	// 63 characters each, the most Kubernetes allows.
	vecLongNS   = "kube-system-monitoring-and-observability-with-a-long-namespace"
	vecLongName = "a-very-long-service-name-that-goes-on-and-on-to-sixty-three-ch"
)

func vecService(ns, name, uid string, ann map[string]string, ports ...v1.ServicePort) *v1.Service {
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid), Annotations: ann},
		Spec:       v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Ports: ports, ExternalTrafficPolicy: v1.ServiceExternalTrafficPolicyCluster},
	}
}

func vecSpec(t *testing.T, svc *v1.Service, cluster string) *nlbSpec {
	t.Helper()
	a := LBAnnotations.Parse(svc)
	spec := desiredNLB(svc, a, cluster, cluster)
	if err := a.Err(); err != nil {
		t.Fatal(err)
	}
	return spec
}

func vecLocal(s *v1.Service) {
	s.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
	s.Spec.HealthCheckNodePort = 31999
}

// Target group names, through the whole of desiredNLB: the health check
// that goes into the hash is polyccm's own for the same Service.
func TestTargetGroupNamesAreUpstreams(t *testing.T) {
	tcpPort := func(port, node int32) v1.ServicePort {
		return v1.ServicePort{Name: "p", Protocol: v1.ProtocolTCP, Port: port, NodePort: node}
	}
	tls := map[string]string{AnnSSLCert: "arn:aws:acm:eu-west-1:123456789012:certificate/abc", AnnBackendProtocol: "ssl"}
	cases := []struct {
		name, cluster, ns, svc, uid string
		ann                         map[string]string
		tweak                       func(*v1.Service)
		ports                       []v1.ServicePort
		want                        string
	}{
		{"default TCP 80", "unit", "shop", "web", vecUID1, nil, nil, []v1.ServicePort{tcpPort(80, 30080)}, "k8s-shop-web-27ea9f0fdb"},
		{"default TCP 443", "unit", "shop", "web", vecUID1, nil, nil, []v1.ServicePort{tcpPort(443, 30443)}, "k8s-shop-web-0bcd7ce71c"},
		{"other cluster", "prod-eu.example.com", "shop", "web", vecUID1, nil, nil, []v1.ServicePort{tcpPort(80, 30080)}, "k8s-shop-web-72759a6d5e"},
		{"node port changed", "unit", "shop", "web", vecUID1, nil, nil, []v1.ServicePort{tcpPort(80, 30081)}, "k8s-shop-web-131382fa69"},
		{"UDP", "unit", "shop", "web", vecUID1, nil, nil, []v1.ServicePort{{Name: "d", Protocol: v1.ProtocolUDP, Port: 53, NodePort: 30053}}, "k8s-shop-web-d71cf48bed"},
		{"TCP_UDP", "unit", "shop", "web", vecUID1, nil, nil, []v1.ServicePort{tcpPort(53, 30053), {Name: "u", Protocol: v1.ProtocolUDP, Port: 53, NodePort: 30053}}, "k8s-shop-web-123b599983"},
		{"TLS target", "unit", "shop", "web", vecUID1, tls, nil, []v1.ServicePort{tcpPort(443, 30443)}, "k8s-shop-web-e5d06ac95c"},
		{"externalTrafficPolicy Local", "unit", "shop", "web", vecUID1, nil, vecLocal, []v1.ServicePort{tcpPort(80, 30080)}, "k8s-shop-web-7cd334b6c5"},
		{"HTTP every 20s", "unit", "shop", "web", vecUID1, map[string]string{AnnHealthCheckProtocol: "http", AnnHealthCheckInterval: "20"}, nil, []v1.ServicePort{tcpPort(80, 30080)}, "k8s-shop-web-84c4984235"},
		{"dashes dropped", "unit", "tenant-a", "my-web-frontend", vecUID2, nil, nil, []v1.ServicePort{tcpPort(8080, 31080)}, "k8s-tenanta-mywebfro-e5c8e3dc2b"},
		{"long names cut", "unit", vecLongNS, vecLongName, vecUID3, nil, nil, []v1.ServicePort{tcpPort(80, 30080)}, "k8s-kubesyst-averylon-267b941e9d"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			svc := vecService(c.ns, c.svc, c.uid, c.ann, c.ports...)
			if c.tweak != nil {
				c.tweak(svc)
			}
			spec := vecSpec(t, svc, c.cluster)
			if len(spec.listeners) != 1 {
				t.Fatalf("listeners %+v, want one", spec.listeners)
			}
			if got := spec.listeners[0].tg.name; got != c.want {
				t.Errorf("target group name %s, upstream's %s", got, c.want)
			}
			if n := len(spec.listeners[0].tg.name); n > 32 {
				t.Errorf("name of %d characters; AWS allows 32", n)
			}
		})
	}
}

// The health check upstream configures for the same Service (its
// healthCheckConfig). Upstream sends no timeout, so AWS's default applies
// there; polyccm sets that default (6s HTTP, 10s otherwise) explicitly.
func TestHealthCheckDefaultsAreUpstreams(t *testing.T) {
	cases := []struct {
		name  string
		ann   map[string]string
		tweak func(*v1.Service)
		want  healthCheckSpec // timeout: AWS's default, as above
	}{
		{"externalTrafficPolicy Cluster", nil, nil,
			healthCheckSpec{protocol: "TCP", port: "traffic-port", path: "", interval: 30, timeout: 10, healthy: 3, unhealthy: 3}},
		{"externalTrafficPolicy Local", nil, vecLocal,
			healthCheckSpec{protocol: "HTTP", port: "31999", path: "/healthz", interval: 10, timeout: 6, healthy: 2, unhealthy: 2}},
		{"HTTP every 20s", map[string]string{AnnHealthCheckProtocol: "http", AnnHealthCheckInterval: "20"}, nil,
			healthCheckSpec{protocol: "HTTP", port: "traffic-port", path: "/", interval: 20, timeout: 6, healthy: 3, unhealthy: 3}},
		{"HTTPS", map[string]string{AnnHealthCheckProtocol: "HTTPS"}, nil,
			healthCheckSpec{protocol: "HTTPS", port: "traffic-port", path: "/", interval: 30, timeout: 10, healthy: 3, unhealthy: 3}},
		{"every setting", map[string]string{AnnHealthCheckProtocol: "http", AnnHealthCheckPath: "/ready", AnnHealthCheckPort: "8081",
			AnnHealthCheckTimeout: "7", AnnHealthyThreshold: "4", AnnUnhealthyThreshold: "5"}, nil,
			healthCheckSpec{protocol: "HTTP", port: "8081", path: "/ready", interval: 30, timeout: 7, healthy: 4, unhealthy: 5}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			svc := vecService("shop", "web", vecUID1, c.ann, v1.ServicePort{Protocol: v1.ProtocolTCP, Port: 80, NodePort: 30080})
			if c.tweak != nil {
				c.tweak(svc)
			}
			if got := vecSpec(t, svc, "unit").healthCheck; got != c.want {
				t.Errorf("health check\n got %+v\nwant %+v", got, c.want)
			}
		})
	}
}

func TestSecurityGroupAndLoadBalancerNamesAreUpstreams(t *testing.T) {
	cases := []struct{ cluster, ns, name, uid, sg, lb string }{
		{"unit", "shop", "web", vecUID1, "k8s-shop-web-7f6fe36072", "a5e1b6a3c7d2f4c8e9a0b1c2d3e4f5a6"},
		{"kubernetes", "shop", "web", vecUID1, "k8s-shop-web-c2504e9ded", "a5e1b6a3c7d2f4c8e9a0b1c2d3e4f5a6"},
		{"unit", "tenant-a", "my-web-frontend", vecUID2, "k8s-tenanta-mywebfro-b2b3cc1465", "a0f1e2d3c4b5a49788695a4b3c2d1e0f"},
		{"unit", vecLongNS, vecLongName, vecUID3, "k8s-kubesyst-averylon-2e0dc05440", "affffffffeeee4ddd8cccbbbbbbbbbbb"},
	}
	for _, c := range cases {
		svc := vecService(c.ns, c.name, c.uid, nil, v1.ServicePort{Protocol: v1.ProtocolTCP, Port: 80, NodePort: 30080})
		spec := vecSpec(t, svc, c.cluster)
		if spec.sgName != c.sg {
			t.Errorf("%s/%s in %s: security group %s, upstream's %s", c.ns, c.name, c.cluster, spec.sgName, c.sg)
		}
		if spec.name != c.lb {
			t.Errorf("%s/%s: load balancer %s, upstream's %s", c.ns, c.name, spec.name, c.lb)
		}
	}
	if sgDescription != "[k8s] Managed SecurityGroup for LoadBalancer" { // ensureNLBSecurityGroup's
		t.Errorf("security group description %q", sgDescription)
	}
}

// Upstream's NLB and target groups carry buildTags(owned, additional +
// service-name); its NLB security group buildTags(owned, additional).
func TestTagsAreUpstreams(t *testing.T) {
	svc := vecService("shop", "web", vecUID1, map[string]string{AnnAdditionalResourceTags: "team=shop, cost-center=42,env="},
		v1.ServicePort{Protocol: v1.ProtocolTCP, Port: 80, NodePort: 30080})
	spec := vecSpec(t, svc, "unit")
	nlb := map[string]string{"cost-center": "42", "env": "", "kubernetes.io/cluster/unit": "owned", "kubernetes.io/service-name": "shop/web", "team": "shop"}
	sg := map[string]string{"cost-center": "42", "env": "", "kubernetes.io/cluster/unit": "owned", "team": "shop"}
	if !maps.Equal(spec.tags, nlb) {
		t.Errorf("NLB and target group tags %v, upstream's %v", spec.tags, nlb)
	}
	if !maps.Equal(spec.sgTags, sg) {
		t.Errorf("security group tags %v, upstream's %v", spec.sgTags, sg)
	}
}

// What counts as this cluster's: upstream's hasClusterTag (subnets) and
// hasClusterTagOwned (resources it may change) for cluster "unit".
func TestClusterTagsAsUpstreamReadsThem(t *testing.T) {
	c := &Cloud{}
	id := "unit"
	c.cluster.Store(&id)
	l := &loadBalancers{c: c}
	cases := []struct {
		tags       map[string]string
		has, owned bool
	}{
		{map[string]string{"kubernetes.io/cluster/unit": "owned"}, true, true},
		{map[string]string{"kubernetes.io/cluster/unit": "shared"}, true, false},
		{map[string]string{"KubernetesCluster": "unit"}, true, true},
		{map[string]string{"KubernetesCluster": "other"}, false, false},
		{map[string]string{"kubernetes.io/cluster/other": "owned"}, false, false},
		{map[string]string{"KubernetesCluster": "other", "kubernetes.io/cluster/unit": "owned"}, true, true},
		{map[string]string{}, false, false},
	}
	for _, c := range cases {
		if got := l.c.ec2Tagged(ec2Tags(c.tags)); got != c.has {
			t.Errorf("%v: cluster's = %v, upstream's hasClusterTag %v", c.tags, got, c.has)
		}
		r := l.resource(kindTG, "arn", "name", c.tags)
		if r.OurCluster != c.owned {
			t.Errorf("%v: OurCluster = %v, upstream's hasClusterTagOwned %v", c.tags, r.OurCluster, c.owned)
		}
		if !c.has && len(c.tags) > 0 && r.OtherCluster == "" {
			t.Errorf("%v: not marked as another cluster's", c.tags)
		}
	}
}

// polyccm's earlier names, kept for groups already in use (lbobserve.go):
// pinned as the previous release computed them.
func TestLegacyNames(t *testing.T) {
	svc := vecService("shop", "web", vecUID1, nil)
	if got := legacySGName(svc); got != "k8s-elb-a5e1b6a3c7d2f4c8e9a0b1c2d3e4f5a6" {
		t.Errorf("legacy security group name %s", got)
	}
	if got := legacyTGName(svc, 80, elbtypes.ProtocolEnumTcp, 30080); got != "k8s-shop-web-525c01124f" {
		t.Errorf("legacy target group name %s", got)
	}
}
