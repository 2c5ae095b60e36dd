package loadbalancers_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/polyccm/polyccm/core/loadbalancers"
)

func node(name, providerID string, labels map[string]string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: v1.NodeSpec{ProviderID: providerID}}
}

// Included drops the Nodes labelled out; Collect maps the rest.
func TestIncludedAndCollect(t *testing.T) {
	exclude := func(v string) map[string]string { return map[string]string{v1.LabelNodeExcludeBalancers: v} }
	nodes := []*v1.Node{
		node("a", "fake://2", nil),
		node("b", "fake://1", exclude("false")), // explicitly included
		node("c", "fake://3", exclude("true")),
		node("d", "fake://4", exclude("yes please")), // unparsable: excluded
		node("e", "", nil),                           // not initialized
		node("f", "fake://2", nil),                   // same instance again
		node("g", "other://9", nil),
	}
	refs, skipped := loadbalancers.Collect(loadbalancers.Included(nodes), func(pid string) (string, error) {
		id, ok := strings.CutPrefix(pid, "fake://")
		if !ok {
			return "", errors.New("not ours")
		}
		return id, nil
	})
	if !slices.Equal(refs, []string{"2", "1"}) {
		t.Errorf("refs %v, want [2 1]", refs)
	}
	if !slices.Equal(skipped, []string{"e", "g"}) {
		t.Errorf("skipped %v, want [e g]", skipped)
	}
}
