package openstack

import (
	"strings"
	"testing"

	"github.com/polyccm/polyccm/config/secret"
)

// Every bad config names its key, as the config loader reports it
// (drivers.openstack.<key>), and says what to do.
func TestConfigValidate(t *testing.T) {
	pw := secret.Secret{Value: "pw"}
	base := func() Config {
		return Config{AuthURL: "https://keystone.example:5000/v3", Region: "RegionOne",
			Username: "ccm", UserDomainName: "Default", Password: pw, ProjectID: "p1"}
	}
	if err := func() *Config { c := base(); return &c }().Validate(); err != nil {
		t.Fatalf("a good password config: %v", err)
	}
	appCred := Config{AuthURL: "https://keystone.example:5000/v3", Region: "RegionOne",
		ApplicationCredentialID: "ac1", ApplicationCredentialSecret: pw}
	if err := appCred.Validate(); err != nil {
		t.Fatalf("a good application credential config: %v", err)
	}
	for name, tc := range map[string]struct {
		mutate func(*Config)
		key    string
	}{
		"no auth URL":       {func(c *Config) { c.AuthURL = "" }, "authURL"},
		"no region":         {func(c *Config) { c.Region = "" }, "region"},
		"no credentials":    {func(c *Config) { c.Password = secret.Secret{} }, "applicationCredentialSecret"},
		"both credentials":  {func(c *Config) { c.ApplicationCredentialID = "x"; c.ApplicationCredentialSecret = pw }, "applicationCredentialSecret"},
		"no project":        {func(c *Config) { c.ProjectID = "" }, "projectID"},
		"name, no domain":   {func(c *Config) { c.ProjectID = ""; c.ProjectName = "demo" }, "projectDomainName"},
		"user, no domain":   {func(c *Config) { c.UserDomainName = "" }, "userDomainName"},
		"bad endpoint type": {func(c *Config) { c.EndpointType = "private" }, "endpointType"},
		"bad sort order":    {func(c *Config) { c.Networking.AddressSortOrder = "10.0.0.0/8, nope" }, "networking.addressSortOrder"},
		"missing CA file":   {func(c *Config) { c.CAFile = "/nonexistent/ca.pem" }, "caFile"},
	} {
		t.Run(name, func(t *testing.T) {
			c := base()
			tc.mutate(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.key) {
				t.Fatalf("Validate() = %v, want a problem at %s", err, tc.key)
			}
		})
	}
}

// A domain given once stands for the user's and the project's, as
// gophercloud's clientconfig reads cloud.conf upstream; a project ID
// goes alone.
func TestAuthOptionsDomains(t *testing.T) {
	c := &Cloud{cfg: Config{AuthURL: "https://k/v3", Username: "u", Password: secret.Secret{Value: "pw"},
		DomainName: "corp", ProjectName: "demo"}}
	o, err := c.authOptions()
	if err != nil {
		t.Fatal(err)
	}
	if o.DomainName != "corp" || o.Scope == nil || o.Scope.ProjectName != "demo" || o.Scope.DomainName != "corp" {
		t.Errorf("auth options %+v scope %+v, want the user and project in domain corp", o, o.Scope)
	}
	c.cfg.ProjectID = "p1"
	if o, _ = c.authOptions(); o.Scope.ProjectID != "p1" || o.Scope.DomainName != "" || o.Scope.ProjectName != "" {
		t.Errorf("scope %+v, want the project ID alone", o.Scope)
	}
	if o.Password != "pw" || !o.AllowReauth {
		t.Errorf("password or reauth not set: %v", o.AllowReauth)
	}
}
