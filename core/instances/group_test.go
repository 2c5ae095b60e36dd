package instances_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/polyccm/polyccm/core/instances"
)

func TestGroup(t *testing.T) {
	keys := []instances.Key{
		{NodeName: "a", ProviderID: "fake://1"},
		{NodeName: "b"},
		{NodeName: "c", ProviderID: "bogus"},
		{NodeName: "d", ProviderID: "fake://1"},
		{NodeName: "b"},
	}
	g := instances.Group(keys, func(pid string) (string, error) {
		id, ok := strings.CutPrefix(pid, "fake://")
		if !ok {
			return "", errors.New("not fake")
		}
		return id, nil
	})
	if !slices.Equal(g.ByRef["1"], []int{0, 3}) || len(g.ByRef) != 1 {
		t.Errorf("ByRef %v", g.ByRef)
	}
	if !slices.Equal(g.ByName["b"], []int{1, 4}) || len(g.ByName) != 1 {
		t.Errorf("ByName %v", g.ByName)
	}
	if len(g.Results) != len(keys) || g.Results[2].Err == nil || g.Results[0].Err != nil {
		t.Errorf("Results %+v", g.Results)
	}
}
