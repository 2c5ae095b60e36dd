package gce_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/polyccm/polyccm/config"
	"github.com/polyccm/polyccm/core/driver"
	"github.com/polyccm/polyccm/drivers/gce"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		cfg  gce.Config
		bad  []string // keys with problems
	}{
		{"empty: everything from the metadata server", gce.Config{}, nil},
		{"full", gce.Config{Project: "my-project-123", Region: "europe-west1", Network: "default", Subnetwork: "nodes",
			NodeTags: []string{"k8s-node", "web"}, Endpoint: "https://compute.example.com/"}, nil},
		{"network URLs", gce.Config{Network: "projects/p/global/networks/vpc-1", Subnetwork: "https://www.googleapis.com/compute/v1/projects/p/regions/r/subnetworks/s-1"}, nil},
		{"domain-scoped project", gce.Config{Project: "example.com:my-project"}, nil},
		{"bad project", gce.Config{Project: "My_Project"}, []string{"project"}},
		{"bad region", gce.Config{Region: "us-central1-a"}, []string{"region"}},
		{"bad network", gce.Config{Network: "Default"}, []string{"network"}},
		{"bad subnetwork", gce.Config{Subnetwork: "sub_net"}, []string{"subnetwork"}},
		{"bad tag", gce.Config{NodeTags: []string{"ok", "Not OK"}}, []string{"nodeTags[1]"}},
		{"long tag", gce.Config{NodeTags: []string{strings.Repeat("a", 64)}}, []string{"nodeTags[0]"}},
		{"bad stack type", gce.Config{StackType: "DUAL"}, []string{"stackType"}},
		{"bad network project", gce.Config{NetworkProject: "Host_Project"}, []string{"networkProject"}},
		{"bad health-check range", gce.Config{HealthCheckSourceRanges: []string{"35.191.0.0/16", "35.191.0.0"}}, []string{"healthCheckSourceRanges[1]"}},
		{"bad cluster ID", gce.Config{ClusterID: "Not_An_ID"}, []string{"clusterID"}},
		{"IPv6 stack", gce.Config{StackType: gce.StackIPv6}, nil},
		{"deny firewall enabled", gce.Config{L4DenyFirewall: gce.DenyFirewallEnabled}, nil},
		{"deny firewall cleanup", gce.Config{L4DenyFirewall: gce.DenyFirewallCleanup}, nil},
		{"bad deny firewall mode", gce.Config{L4DenyFirewall: "true"}, []string{"l4DenyFirewall"}},
		{"relative endpoint", gce.Config{Endpoint: "compute.googleapis.com"}, []string{"endpoint"}},
		{"other scheme", gce.Config{Endpoint: "ftp://compute.googleapis.com"}, []string{"endpoint"}},
		{"all wrong", gce.Config{Project: "X", Region: "x", Network: "N", Endpoint: "x"}, []string{"endpoint", "network", "project", "region"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.cfg.Validate()
			var got []string
			if err != nil {
				errs := []error{err}
				if j, ok := err.(interface{ Unwrap() []error }); ok {
					errs = j.Unwrap()
				}
				for _, e := range errs {
					var p config.Problem
					if !errors.As(e, &p) {
						t.Fatalf("Validate returned %T %v, want config.Problem", e, e)
					}
					got = append(got, p.Key)
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, c.bad) {
				t.Errorf("problems at %v (%v), want %v", got, err, c.bad)
			}
		})
	}
}

func TestRegistration(t *testing.T) {
	t.Parallel()
	d, ok := driver.Default().Lookup(gce.Name)
	if !ok {
		t.Fatal("gce is not registered")
	}
	if _, ok := d.NewConfig().(*gce.Config); !ok {
		t.Fatalf("NewConfig returns %T", d.NewConfig())
	}
	cloud, err := d.New(&gce.Config{}, driver.Deps{ClusterName: "c"})
	if err != nil {
		t.Fatalf("New without calling Google: %v", err)
	}
	if _, ok := cloud.(driver.LoadBalancerCloud); ok != d.Has(driver.LoadBalancers) {
		t.Errorf("LoadBalancerCloud = %v, declared %v", ok, d.Has(driver.LoadBalancers))
	}
	if _, ok := cloud.(driver.RouteCloud); ok != d.Has(driver.Routes) {
		t.Errorf("RouteCloud = %v, declared %v", ok, d.Has(driver.Routes))
	}
	if _, ok := cloud.(driver.VolumeCloud); ok != d.Has(driver.Volumes) {
		t.Errorf("VolumeCloud = %v, declared %v", ok, d.Has(driver.Volumes))
	}
	if _, err := d.New(struct{}{}, driver.Deps{}); err == nil {
		t.Error("New accepted a config of the wrong type")
	}
	if !strings.Contains(d.CredentialsHint, "drivers.gce.credentials") {
		t.Errorf("CredentialsHint %q does not name the key", d.CredentialsHint)
	}
}
