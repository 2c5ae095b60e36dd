package openstack_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/polyccm/polyccm/config/secret"
	"github.com/polyccm/polyccm/core/driver"
	"github.com/polyccm/polyccm/core/instances"
	"github.com/polyccm/polyccm/drivers/openstack"
	fake "github.com/polyccm/polyccm/test/fakecloud/openstack"
)

// cloudsFile writes a clouds.yaml and returns it as the secret polyccm
// is given.
func cloudsFile(t *testing.T, doc string) secret.Secret {
	t.Helper()
	p := filepath.Join(t.TempDir(), "clouds.yaml")
	if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return secret.Secret{File: p}
}

// A clouds.yaml entry is all the config needs: the driver authenticates
// with its application credential and finds servers.
func TestCloudsYAML(t *testing.T) {
	f := fake.New(fake.Account{})
	f.AddNetwork(fake.NetworkSpec{Name: "k8s", Subnets: []fake.SubnetSpec{{CIDR: "10.0.0.0/16"}}})
	acID := f.AddApplicationCredential("ccm", "s3cret-token")
	if err := f.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	a := f.Account()
	id := f.AddServer(fake.ServerSpec{Name: "node-1", Ports: []fake.PortSpec{{Network: "k8s"}}})

	doc := fmt.Sprintf(`clouds:
  other:
    auth: {auth_url: https://elsewhere.example/v3}
  prod:
    auth_type: v3applicationcredential
    auth:
      auth_url: %s
      application_credential_id: %s
      application_credential_secret: "s3cret-token"
    region_name: %s
    interface: public
`, f.AuthURL(), acID, a.Region)
	cfg := &openstack.Config{Clouds: cloudsFile(t, doc), Cloud: "prod"}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("a clouds.yaml config: %v", err)
	}
	in := lookups(t, f, cfg)
	got, err := in.Lookup(context.Background(), instances.Key{ProviderID: "openstack:///" + id, NodeName: "node-1"})
	if err != nil || got == nil || got.Region != a.Region {
		t.Fatalf("lookup through the clouds.yaml entry: %+v, %v", got, err)
	}
}

// Keys set under drivers.openstack win over the entry's; what the entry
// lacks is still required, and each mistake names its key without
// quoting the file.
func TestCloudsYAMLProblems(t *testing.T) {
	d, _ := driver.Default().Lookup(openstack.Name)
	newCloud := func(cfg *openstack.Config) error {
		_, err := d.New(cfg, driver.Deps{})
		return err
	}
	good := `clouds:
  prod:
    auth: {auth_url: "https://keystone.example:5000/v3", username: ccm, password: "hunter2 two", user_domain_name: Default, project_id: p1}
    region_name: RegionOne
`
	if err := newCloud(&openstack.Config{Clouds: cloudsFile(t, good), Cloud: "prod"}); err != nil {
		t.Fatalf("a password entry: %v", err)
	}
	for name, tc := range map[string]struct {
		doc, cloud, want string
	}{
		"no such cloud":     {good, "staging", `has no cloud "staging"; it has prod`},
		"not yaml":          {"clouds: [\n  password: hunter2 two", "prod", "is not a clouds.yaml document"},
		"token":             {"clouds:\n  prod:\n    auth: {auth_url: https://k.example/v3, token: hunter2 two}\n    region_name: R\n", "prod", "token, which expires"},
		"verify off":        {"clouds:\n  prod:\n    verify: false\n    auth: {auth_url: https://k.example/v3, password: hunter2 two, username: u, user_domain_name: D, project_id: p}\n    region_name: R\n", "prod", "verify: false"},
		"no region":         {"clouds:\n  prod:\n    auth: {auth_url: https://k.example/v3, password: hunter2 two, username: u, user_domain_name: D, project_id: p}\n", "prod", "region"},
		"no credentials":    {"clouds:\n  prod:\n    auth: {auth_url: https://k.example/v3}\n    region_name: R\n", "prod", "applicationCredentialSecret"},
		"other auth plugin": {"clouds:\n  prod:\n    auth_type: v3oidcpassword\n    auth: {auth_url: https://k.example/v3}\n", "prod", "auth_type v3oidcpassword"},
	} {
		t.Run(name, func(t *testing.T) {
			err := newCloud(&openstack.Config{Clouds: cloudsFile(t, tc.doc), Cloud: tc.cloud})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New = %v, want an error saying %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("the error quotes a secret: %v", err)
			}
		})
	}
	// The config's own region wins over the entry's.
	cfg := &openstack.Config{Clouds: cloudsFile(t, good), Cloud: "prod", Region: "RegionTwo"}
	c, err := d.New(cfg, driver.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if r := c.(interface{ RegionName() string }).RegionName(); r != "RegionTwo" {
		t.Errorf("region = %s, want the config's RegionTwo", r)
	}
	// cloud without clouds, and clouds without cloud, are config problems.
	for _, c := range []openstack.Config{{Cloud: "prod", AuthURL: "https://k.example/v3", Region: "R"}, {Clouds: cloudsFile(t, good)}} {
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "cloud") {
			t.Errorf("Validate(%+v) = %v", c, err)
		}
	}
}
