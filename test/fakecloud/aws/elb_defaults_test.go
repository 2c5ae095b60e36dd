package aws

import (
	"testing"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
)

// The defaults a request that leaves a setting out gets, from the Elastic
// Load Balancing guides: an NLB target group's health check times out
// after 6s over HTTP and 10s over TCP and HTTPS ("Health check settings");
// a TLS listener created through the API (not the console) gets
// ELBSecurityPolicy-2016-08 ("Security policies for your Network Load
// Balancer").
func TestELBv2Defaults(t *testing.T) {
	s, c := start(t)
	vpc, subs := network(t, s, "c1")
	for _, tc := range []struct {
		name, protocol, hcProtocol string
		timeout                    *int32
		want                       int32
	}{
		{"tcp-tcp", "TCP", "", nil, 10},
		{"tcp-http", "TCP", "HTTP", nil, 6},
		{"tcp-https", "TCP", "HTTPS", nil, 10},
		{"udp-http", "UDP", "HTTP", nil, 6},
		{"tls-tcp", "TLS", "TCP", nil, 10},
		{"tcp-http-7s", "TCP", "HTTP", awssdk.Int32(7), 7},
		{"alb-http", "HTTP", "", nil, 5}, // an ALB target group's own default
	} {
		in := &elbv2.CreateTargetGroupInput{
			Name: awssdk.String(tc.name), Protocol: elbtypes.ProtocolEnum(tc.protocol), Port: awssdk.Int32(30080), VpcId: &vpc.ID,
			HealthCheckProtocol: elbtypes.ProtocolEnum(tc.hcProtocol), HealthCheckTimeoutSeconds: tc.timeout,
		}
		tg, err := c.elb.CreateTargetGroup(ctx, in)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got := *tg.TargetGroups[0].HealthCheckTimeoutSeconds; got != tc.want {
			t.Errorf("%s: health check timeout %ds, want %ds", tc.name, got, tc.want)
		}
	}

	lb := must[*elbv2CreateLB](t)(createNLB(c, "tls", subs))
	tg := createTG(t, c, "tls-backend", "TCP", 30443, vpc.ID)
	cert := "arn:aws:acm:eu-west-1:123456789012:certificate/9c2b5d8e-1f3a-4b6c-8d7e-0a1b2c3d4e5f"
	ls := must[*elbv2.CreateListenerOutput](t)(c.elb.CreateListener(ctx, &elbv2.CreateListenerInput{
		LoadBalancerArn: lb.LoadBalancers[0].LoadBalancerArn, Protocol: elbtypes.ProtocolEnumTls, Port: awssdk.Int32(443),
		Certificates:   []elbtypes.Certificate{{CertificateArn: &cert}},
		DefaultActions: []elbtypes.Action{{Type: elbtypes.ActionTypeEnumForward, TargetGroupArn: tg.TargetGroupArn}},
	}))
	if got := awssdk.ToString(ls.Listeners[0].SslPolicy); got != "ELBSecurityPolicy-2016-08" {
		t.Errorf("TLS listener without a policy got %s, want the API default ELBSecurityPolicy-2016-08", got)
	}
}

func TestAWSCLIELBv2Defaults(t *testing.T) {
	needCLI(t)
	t.Parallel()
	s, _ := start(t)
	vpc, _ := network(t, s, "c1")
	out, se, code := cli(t, s, "elbv2", "create-target-group", "--name", "hc-http", "--protocol", "TCP", "--port", "30080",
		"--vpc-id", vpc.ID, "--health-check-protocol", "HTTP")
	if code != 0 {
		t.Fatal(se)
	}
	tg := out["TargetGroups"].([]any)[0].(map[string]any)
	if tg["HealthCheckTimeoutSeconds"] != 6.0 || tg["HealthCheckPath"] != "/" || tg["Matcher"].(map[string]any)["HttpCode"] != "200-399" {
		t.Errorf("target group = %v", tg)
	}
}
