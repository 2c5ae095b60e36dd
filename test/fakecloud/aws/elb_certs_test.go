package aws

import (
	"net/http"
	"slices"
	"testing"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
)

// A TLS listener's certificates beyond the default one, as ELBv2 keeps
// them: DescribeListeners shows the default only, DescribeListenerCertificates
// all (paginated, the default flagged), and the default cannot be removed.
func TestListenerCertificates(t *testing.T) {
	s, c := start(t)
	vpc, subs := network(t, s, "c1")
	lb := must[*elbv2.CreateLoadBalancerOutput](t)(createNLB(c, "certs", subs)).LoadBalancers[0]
	tg := createTG(t, c, "k8s-tls", "TCP", 30443, vpc.ID)
	cert := func(n string) string { return "arn:aws:acm:eu-west-1:123456789012:certificate/" + n }
	forward := []elbtypes.Action{{Type: elbtypes.ActionTypeEnumForward, TargetGroupArn: tg.TargetGroupArn}}
	ls := must[*elbv2.CreateListenerOutput](t)(c.elb.CreateListener(ctx, &elbv2.CreateListenerInput{
		LoadBalancerArn: lb.LoadBalancerArn, Protocol: elbtypes.ProtocolEnumTls, Port: awssdk.Int32(443),
		Certificates: []elbtypes.Certificate{{CertificateArn: awssdk.String(cert("a"))}}, DefaultActions: forward,
	})).Listeners[0]
	arn := ls.ListenerArn

	add := func(arns ...string) error {
		var cs []elbtypes.Certificate
		for _, a := range arns {
			cs = append(cs, elbtypes.Certificate{CertificateArn: awssdk.String(a)})
		}
		_, err := c.elb.AddListenerCertificates(ctx, &elbv2.AddListenerCertificatesInput{ListenerArn: arn, Certificates: cs})
		return err
	}
	if err := add(cert("b"), cert("c")); err != nil {
		t.Fatal(err)
	}
	list := func() []string {
		var out []string
		p := elbv2.NewDescribeListenerCertificatesPaginator(c.elb, &elbv2.DescribeListenerCertificatesInput{ListenerArn: arn, PageSize: awssdk.Int32(1)})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, x := range page.Certificates {
				s := *x.CertificateArn
				if awssdk.ToBool(x.IsDefault) {
					s += " (default)"
				}
				out = append(out, s)
			}
		}
		return out
	}
	if got, want := list(), []string{cert("a") + " (default)", cert("b"), cert("c")}; !slices.Equal(got, want) {
		t.Errorf("certificates %v, want %v", got, want)
	}
	d := must[*elbv2.DescribeListenersOutput](t)(c.elb.DescribeListeners(ctx, &elbv2.DescribeListenersInput{ListenerArns: []string{*arn}}))
	if cs := d.Listeners[0].Certificates; len(cs) != 1 || *cs[0].CertificateArn != cert("a") {
		t.Errorf("DescribeListeners certificates %+v, want the default only", cs)
	}

	_, err := c.elb.RemoveListenerCertificates(ctx, &elbv2.RemoveListenerCertificatesInput{ListenerArn: arn, Certificates: []elbtypes.Certificate{{CertificateArn: awssdk.String(cert("a"))}}})
	apiErr(t, err, "OperationNotPermitted", http.StatusBadRequest)
	if _, err := c.elb.RemoveListenerCertificates(ctx, &elbv2.RemoveListenerCertificatesInput{ListenerArn: arn, Certificates: []elbtypes.Certificate{{CertificateArn: awssdk.String(cert("b"))}}}); err != nil {
		t.Fatal(err)
	}
	if got, want := list(), []string{cert("a") + " (default)", cert("c")}; !slices.Equal(got, want) {
		t.Errorf("after removing b: %v, want %v", got, want)
	}
	apiErr(t, add("not-an-arn"), "CertificateNotFound", http.StatusBadRequest)

	tcp := must[*elbv2.CreateListenerOutput](t)(c.elb.CreateListener(ctx, &elbv2.CreateListenerInput{
		LoadBalancerArn: lb.LoadBalancerArn, Protocol: elbtypes.ProtocolEnumTcp, Port: awssdk.Int32(80), DefaultActions: forward,
	})).Listeners[0]
	_, err = c.elb.AddListenerCertificates(ctx, &elbv2.AddListenerCertificatesInput{ListenerArn: tcp.ListenerArn, Certificates: []elbtypes.Certificate{{CertificateArn: awssdk.String(cert("b"))}}})
	apiErr(t, err, "InvalidConfigurationRequest", http.StatusBadRequest)
}
