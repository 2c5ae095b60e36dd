package aws

import (
	"context"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"

	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/loadbalancers"
)

// A TLS listener takes every certificate of ssl-cert: the first is its
// default (CreateListener/ModifyListener), the others are added beside it
// (AddListenerCertificates), and the client's SNI picks among them. The
// AWS CCM passes one certificate; one stays the same here.

// extraCerts are the certificates a listener should have besides its
// default one, sorted.
func extraCerts(want listenerSpec) []string {
	if want.protocol != elbtypes.ProtocolEnumTls || len(want.certs) < 2 {
		return nil
	}
	out := slices.Clone(want.certs[1:])
	slices.Sort(out)
	return slices.Compact(out)
}

// listenerCertsOf reads a TLS listener's certificates besides its default
// one, sorted.
func (l *loadBalancers) listenerCertsOf(ctx context.Context, cl *clients, arn string) ([]string, error) {
	var out []string
	in := &elbv2.DescribeListenerCertificatesInput{ListenerArn: aws.String(arn)}
	for {
		page, err := cloudapi.Call(ctx, l.c.api, "elbv2.DescribeListenerCertificates", func(ctx context.Context) (*elbv2.DescribeListenerCertificatesOutput, error) {
			return cl.elb.DescribeListenerCertificates(ctx, in)
		})
		if err != nil {
			return nil, err
		}
		for _, c := range page.Certificates {
			if !aws.ToBool(c.IsDefault) {
				out = append(out, aws.ToString(c.CertificateArn))
			}
		}
		if aws.ToString(page.NextMarker) == "" {
			break
		}
		in.Marker = page.NextMarker
	}
	slices.Sort(out)
	return out, nil
}

// planListenerCerts adds the change of an existing TLS listener's other
// certificates, if they differ.
func planListenerCerts(p *loadbalancers.Plan, name string, cur elbtypes.Listener, want listenerSpec, have []string, ap *applier) {
	wantExtra := extraCerts(want)
	if slices.Equal(have, wantExtra) {
		return
	}
	arn := aws.ToString(cur.ListenerArn)
	set := func(l []string) map[string]bool {
		m := map[string]bool{}
		for _, x := range l {
			m[x] = true
		}
		return m
	}
	add, remove := loadbalancers.Delta(set(wantExtra), set(have), strings.Compare)
	// The new default may be among the old others: it stays, as the
	// default now (AWS refuses to remove a listener's default).
	remove = slices.DeleteFunc(remove, func(c string) bool { return len(want.certs) > 0 && c == want.certs[0] })
	p.Add(change{Action: loadbalancers.Update, Kind: kindListener, Name: name,
		Fields: []field{{Name: "ListenerCertificates", From: showList(have), To: showList(wantExtra)}},
		Apply:  ap.run(func(ctx context.Context, a *applier) error { return a.l.setListenerCerts(ctx, a.cl, arn, add, remove) })})
}

// setListenerCerts adds and removes a listener's other certificates.
func (l *loadBalancers) setListenerCerts(ctx context.Context, cl *clients, arn string, add, remove []string) error {
	certs := func(arns []string) []elbtypes.Certificate {
		out := make([]elbtypes.Certificate, len(arns))
		for i, a := range arns {
			out[i] = elbtypes.Certificate{CertificateArn: aws.String(a)}
		}
		return out
	}
	if len(add) > 0 {
		if _, err := cloudapi.Call(ctx, l.c.api, "elbv2.AddListenerCertificates", func(ctx context.Context) (*elbv2.AddListenerCertificatesOutput, error) {
			return cl.elb.AddListenerCertificates(ctx, &elbv2.AddListenerCertificatesInput{ListenerArn: aws.String(arn), Certificates: certs(add)})
		}); err != nil {
			return err
		}
	}
	if len(remove) > 0 {
		if _, err := cloudapi.Call(ctx, l.c.api, "elbv2.RemoveListenerCertificates", func(ctx context.Context) (*elbv2.RemoveListenerCertificatesOutput, error) {
			return cl.elb.RemoveListenerCertificates(ctx, &elbv2.RemoveListenerCertificatesInput{ListenerArn: aws.String(arn), Certificates: certs(remove)})
		}); err != nil {
			return err
		}
	}
	return nil
}
