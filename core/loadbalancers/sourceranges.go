package loadbalancers

import (
	"strings"

	v1 "k8s.io/api/core/v1"
)

// SourceRanges are the client ranges a Service asks for, as the upstream
// CCMs of AWS and GCE read them (servicehelpers.GetLoadBalancerSourceRanges):
// spec.loadBalancerSourceRanges, else the comma-separated
// service.beta.kubernetes.io/load-balancer-source-ranges annotation. key
// names where they came from, for the messages about them; ranges is nil
// when the Service gives none (open to all). The ranges are as written:
// the driver parses them.
func SourceRanges(svc *v1.Service) (key string, ranges []string) {
	if len(svc.Spec.LoadBalancerSourceRanges) > 0 {
		return "spec.loadBalancerSourceRanges", svc.Spec.LoadBalancerSourceRanges
	}
	v := strings.TrimSpace(svc.Annotations[v1.AnnotationLoadBalancerSourceRangesKey])
	if v == "" {
		return "spec.loadBalancerSourceRanges", nil
	}
	for r := range strings.SplitSeq(v, ",") {
		if r = strings.TrimSpace(r); r != "" {
			ranges = append(ranges, r)
		}
	}
	return v1.AnnotationLoadBalancerSourceRangesKey, ranges
}
