package pathmatch_test

import (
	"slices"
	"testing"

	"github.com/polyccm/polyccm/test/fakecloud/pathmatch"
)

func TestMatch(t *testing.T) {
	var r pathmatch.Routes[string]
	r.Add("GET", "/v2/droplets/{id}", "get")
	r.Add("DELETE", "/v2/droplets/{id}", "delete")
	r.Add("GET", "/v2/droplets/kernels", "kernels")

	if v, p, _, pat := r.Match("GET", "/v2/droplets/42"); v == nil || *v != "get" || p["id"] != "42" || pat != "/v2/droplets/{id}" {
		t.Errorf("GET /v2/droplets/42: %v %v %q", v, p, pat)
	}
	if v, _, _, _ := r.Match("GET", "/v2/droplets/kernels"); v == nil || *v != "kernels" {
		t.Errorf("a literal segment should beat a parameter, got %v", v)
	}
	if v, _, allowed, pat := r.Match("PUT", "/v2/droplets/42"); v != nil || !slices.Equal(allowed, []string{"DELETE", "GET"}) || pat != "/v2/droplets/{id}" {
		t.Errorf("PUT: %v allowed %v pattern %q", v, allowed, pat)
	}
	if v, _, allowed, _ := r.Match("GET", "/v2/droplets/"); v != nil || allowed != nil {
		t.Errorf("an empty segment fits no parameter: %v %v", v, allowed)
	}
}
