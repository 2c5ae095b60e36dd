package loadbalancers

import (
	"strconv"

	v1 "k8s.io/api/core/v1"
)

// Excluded reports whether n asks to be left out of external load
// balancers. Any value but a false one excludes, as in the upstream
// service controller: a typo should not put a node back in.
func Excluded(n *v1.Node) bool {
	v, ok := n.Labels[v1.LabelNodeExcludeBalancers]
	if !ok {
		return false
	}
	b, err := strconv.ParseBool(v)
	return err != nil || b
}

// Included returns the nodes that are not Excluded, in their order. Rules
// gives drivers only these.
func Included(nodes []*v1.Node) []*v1.Node {
	out := make([]*v1.Node, 0, len(nodes))
	for _, n := range nodes {
		if !Excluded(n) {
			out = append(out, n)
		}
	}
	return out
}

// Collect maps nodes to what parse finds in their providerIDs, each
// reference once, in node order. Nodes whose providerID parse refuses (not initialized yet, another cloud or
// project) are named in skipped.
func Collect[R comparable](nodes []*v1.Node, parse func(providerID string) (R, error)) (refs []R, skipped []string) {
	seen := map[R]bool{}
	for _, n := range nodes {
		ref, err := parse(n.Spec.ProviderID)
		if err != nil {
			skipped = append(skipped, n.Name)
			continue
		}
		if !seen[ref] {
			seen[ref] = true
			refs = append(refs, ref)
		}
	}
	return refs, skipped
}
