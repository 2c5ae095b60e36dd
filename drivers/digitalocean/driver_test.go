package digitalocean_test

import (
	"errors"
	"sort"
	"strings"
	"testing"

	"github.com/polyccm/polyccm/config"
	"github.com/polyccm/polyccm/config/secret"
	"github.com/polyccm/polyccm/core/driver"
	"github.com/polyccm/polyccm/drivers/digitalocean"
)

// problems flattens Validate's joined error into Problems keyed by path.
func problems(t *testing.T, err error) map[string]string {
	t.Helper()
	out := map[string]string{}
	if err == nil {
		return out
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	for _, e := range errs {
		var p config.Problem
		if !errors.As(e, &p) {
			t.Fatalf("Validate returned %T (%v), want config.Problem", e, e)
		}
		out[p.Key] = p.Msg
	}
	return out
}

func TestConfigValidate(t *testing.T) {
	tok := secret.Secret{File: "/run/secrets/do"}
	cases := []struct {
		name string
		cfg  digitalocean.Config
		bad  map[string]string // key -> message fragment
	}{
		{"minimal", digitalocean.Config{Token: tok, APIURL: digitalocean.DefaultAPIURL}, nil},
		{"http proxy with path", digitalocean.Config{Token: tok, APIURL: "http://127.0.0.1:8080/do"}, nil},
		{"vpc", digitalocean.Config{Token: tok, APIURL: digitalocean.DefaultAPIURL, VPCID: "5a4981aa-9653-4bd1-bef5-d6bff52042e4"}, nil},
		{"no token", digitalocean.Config{APIURL: digitalocean.DefaultAPIURL}, map[string]string{"token": "required"}},
		{"empty URL", digitalocean.Config{Token: tok}, map[string]string{"apiURL": "absolute http(s) URL"}},
		{"relative URL", digitalocean.Config{Token: tok, APIURL: "api.digitalocean.com/v2"}, map[string]string{"apiURL": "absolute http(s) URL"}},
		{"other scheme", digitalocean.Config{Token: tok, APIURL: "ftp://api.digitalocean.com/"}, map[string]string{"apiURL": "absolute http(s) URL"}},
		{"no host", digitalocean.Config{Token: tok, APIURL: "https:///v2"}, map[string]string{"apiURL": "absolute http(s) URL"}},
		{"unparseable URL", digitalocean.Config{Token: tok, APIURL: "http://[::1"}, map[string]string{"apiURL": "not a URL"}},
		{"vpc not a UUID", digitalocean.Config{Token: tok, APIURL: digitalocean.DefaultAPIURL, VPCID: "default"}, map[string]string{"vpcID": "not a VPC UUID"}},
		{"vpc upper case", digitalocean.Config{Token: tok, APIURL: digitalocean.DefaultAPIURL, VPCID: "5A4981AA-9653-4BD1-BEF5-D6BFF52042E4"}, map[string]string{"vpcID": "not a VPC UUID"}},
		{"firewall without tags", digitalocean.Config{Token: tok, APIURL: digitalocean.DefaultAPIURL, Firewall: digitalocean.FirewallConfig{Name: "fw"}}, map[string]string{"firewall.tags": "required with firewall.name"}},
		{"firewall tags without a name", digitalocean.Config{Token: tok, APIURL: digitalocean.DefaultAPIURL, Firewall: digitalocean.FirewallConfig{Tags: []string{"k8s:worker"}}}, map[string]string{"firewall.name": "required with firewall.tags"}},
		{"too many firewall tags", digitalocean.Config{Token: tok, APIURL: digitalocean.DefaultAPIURL, Firewall: digitalocean.FirewallConfig{Name: "fw", Tags: []string{"a", "b", "c", "d", "e", "f"}}}, map[string]string{"firewall.tags": "at most 5"}},
		{"bad firewall tag", digitalocean.Config{Token: tok, APIURL: digitalocean.DefaultAPIURL, Firewall: digitalocean.FirewallConfig{Name: "fw", Tags: []string{"no spaces"}}}, map[string]string{"firewall.tags[0]": "not a DigitalOcean tag"}},
		{"bad default type", digitalocean.Config{Token: tok, APIURL: digitalocean.DefaultAPIURL, LoadBalancer: digitalocean.LoadBalancerConfig{DefaultType: "GLOBAL"}}, map[string]string{"loadBalancer.defaultType": "REGIONAL_NETWORK"}},
		{"bad cluster ID", digitalocean.Config{Token: tok, APIURL: digitalocean.DefaultAPIURL, ClusterID: "my cluster"}, map[string]string{"clusterID": "cannot be part of a tag"}},
		{"everything wrong at once", digitalocean.Config{APIURL: "x", VPCID: "y"}, map[string]string{"token": "required", "apiURL": "absolute", "vpcID": "UUID"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := problems(t, c.cfg.Validate())
			var gotKeys, wantKeys []string
			for k := range got {
				gotKeys = append(gotKeys, k)
			}
			for k := range c.bad {
				wantKeys = append(wantKeys, k)
			}
			sort.Strings(gotKeys)
			sort.Strings(wantKeys)
			if strings.Join(gotKeys, ",") != strings.Join(wantKeys, ",") {
				t.Fatalf("problems at %q, want %q: %v", gotKeys, wantKeys, got)
			}
			for k, frag := range c.bad {
				if !strings.Contains(got[k], frag) {
					t.Errorf("%s: %q does not contain %q", k, got[k], frag)
				}
			}
		})
	}
}

func TestRegistration(t *testing.T) {
	d, ok := driver.Default().Lookup(digitalocean.Name)
	if !ok {
		t.Fatal("digitalocean is not registered")
	}
	// Defaults come from NewConfig, fresh each time.
	c1, ok := d.NewConfig().(*digitalocean.Config)
	if !ok {
		t.Fatalf("NewConfig returns %T", d.NewConfig())
	}
	if c1.APIURL != digitalocean.DefaultAPIURL || !c1.Token.IsZero() || c1.VPCID != "" {
		t.Errorf("NewConfig = %+v", c1)
	}
	c1.APIURL = "changed"
	if d.NewConfig().(*digitalocean.Config).APIURL != digitalocean.DefaultAPIURL {
		t.Error("NewConfig shares state between calls")
	}
	// Declared capabilities must match the cloud New returns.
	if !d.Has(driver.Instances) || !d.Has(driver.LoadBalancers) || d.Has(driver.Routes) || !d.Has(driver.Volumes) {
		t.Errorf("capabilities = %v, want instances, load balancers and volumes", d.Capabilities)
	}
	cloud, err := d.New(&digitalocean.Config{APIURL: digitalocean.DefaultAPIURL}, driver.Deps{})
	if err != nil {
		t.Fatalf("New: %v", err)
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
	if !strings.Contains(d.CredentialsHint, "drivers.digitalocean.token") {
		t.Errorf("CredentialsHint %q does not name the key", d.CredentialsHint)
	}
}
