package loadbalancers_test

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/polyccm/polyccm/core/loadbalancers"
)

func TestSourceRanges(t *testing.T) {
	ann := map[string]string{v1.AnnotationLoadBalancerSourceRangesKey: " 10.0.0.0/8, 192.0.2.0/24 ,"}
	for _, c := range []struct {
		spec []string
		ann  map[string]string
		key  string
		want []string
	}{
		{nil, nil, "spec.loadBalancerSourceRanges", nil},
		{[]string{"203.0.113.0/24"}, ann, "spec.loadBalancerSourceRanges", []string{"203.0.113.0/24"}},
		{nil, ann, v1.AnnotationLoadBalancerSourceRangesKey, []string{"10.0.0.0/8", "192.0.2.0/24"}},
	} {
		svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Annotations: c.ann}, Spec: v1.ServiceSpec{LoadBalancerSourceRanges: c.spec}}
		key, got := loadbalancers.SourceRanges(svc)
		if key != c.key || !slices.Equal(got, c.want) {
			t.Errorf("spec %v annotation %v: %s %v, want %s %v", c.spec, c.ann, key, got, c.key, c.want)
		}
	}
}
