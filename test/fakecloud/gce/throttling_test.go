package gce

import "testing"

func TestThrottlingGroups(t *testing.T) {
	for endpoint, want := range map[string]string{
		"GET /compute/v1/projects/{project}/zones/{zone}/instances/{instance}":         "reads",
		"GET /compute/v1/projects/{project}/zones/{zone}/instances":                    "lists",
		"GET /compute/v1/projects/{project}/aggregated/instances":                      "lists",
		"POST /compute/v1/projects/{project}/regions/{region}/forwardingRules":         "mutations",
		"DELETE /compute/v1/projects/{project}/global/firewalls/{firewall}":            "mutations",
		"GET /compute/v1/projects/{project}/regions/{region}/operations/{operation}":   "operation reads",
		"POST /compute/v1/projects/{project}/zones/{zone}/operations/{operation}/wait": "operation reads",
		"GET /computeMetadata/v1/instance/name":                                        "",
		"POST /token":                                                                  "",
	} {
		got, l := Throttling(endpoint)
		if got != want {
			t.Errorf("Throttling(%q) = %q, want %q", endpoint, got, want)
		}
		if want != "" && (l.RPS != 25 || l.Burst != 1500) {
			t.Errorf("Throttling(%q) limit %+v, want 1500 a minute", endpoint, l)
		}
	}
}
