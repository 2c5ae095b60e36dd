package annotations_test

import (
	"strings"
	"testing"

	"k8s.io/client-go/tools/record"

	"github.com/polyccm/polyccm/core/annotations"
)

// FuzzParse feeds annotations of any keys and values to a set with every
// kind of annotation: Parse never panics, every problem is at a key the
// Service has, and no event it records is longer than the message cap,
// however long the values.
func FuzzParse(f *testing.F) {
	for _, seed := range [][2]string{
		{pfx + "count", "7"},
		{pfx + "count", "99999999999999999999"},
		{pfx + "ports", "80,https,,-1"},
		{pfx + "rules", "cidr:10.0.0.0/8,ip:1.2.3.4,cidr:bogus"},
		{pfx + "protocl", "tcp"},
		{pfx + "enabled", "maybe"},
		{"other.example.com/lb-flag", strings.Repeat("x", 5000)},
		{pfx + "path", "relative"},
		{"unrelated.example.com/key", "\x00\xff"},
	} {
		f.Add(seed[0], seed[1], pfx+"name", "ok")
	}
	set := testSet()
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string) {
		svc := service(map[string]string{k1: v1, k2: v2})
		vals := set.Parse(svc)
		vals.Fail(pfx+"name", "a cross-annotation problem about %s", annotations.Quote(v2))
		err := vals.Err()
		inv, ok := err.(*annotations.InvalidError)
		if !ok {
			t.Fatalf("Err() = %T %v", err, err)
		}
		for _, p := range inv.Problems {
			if p.Key != k1 && p.Key != k2 && p.Key != pfx+"name" {
				t.Errorf("problem at %q, which the Service does not have", p.Key)
			}
		}
		rec := record.NewFakeRecorder(len(inv.Problems) + 1)
		inv.Record(rec, svc)
		close(rec.Events)
		for ev := range rec.Events {
			// "Warning InvalidLoadBalancerConfig " plus the clipped message.
			if len(ev) > 1100 {
				t.Errorf("an event of %d bytes", len(ev))
			}
		}
	})
}
