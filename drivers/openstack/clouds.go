package openstack

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/polyccm/polyccm/config"
	"github.com/polyccm/polyccm/config/secret"
)

// cloudsKey names the clouds.yaml setting in messages.
const cloudsKey = "drivers.openstack.clouds"

// cloudsYAML is the part of an openstack client's clouds.yaml polyccm
// reads (the format of openstacksdk and gophercloud's clientconfig, which
// openstack-cloud-controller-manager reads with use-clouds).
type cloudsYAML struct {
	Clouds map[string]cloudEntry `json:"clouds"`
}

type cloudEntry struct {
	AuthType   string    `json:"auth_type"`
	Auth       cloudAuth `json:"auth"`
	RegionName string    `json:"region_name"`
	Interface  string    `json:"interface"`
	// EndpointType is the older name of Interface.
	EndpointType string `json:"endpoint_type"`
	CACert       string `json:"cacert"`
	Verify       *bool  `json:"verify"`
	Cert         string `json:"cert"`
}

type cloudAuth struct {
	AuthURL                     string `json:"auth_url"`
	Username                    string `json:"username"`
	UserID                      string `json:"user_id"`
	Password                    string `json:"password"`
	ProjectName                 string `json:"project_name"`
	ProjectID                   string `json:"project_id"`
	TenantName                  string `json:"tenant_name"`
	TenantID                    string `json:"tenant_id"`
	UserDomainName              string `json:"user_domain_name"`
	UserDomainID                string `json:"user_domain_id"`
	ProjectDomainName           string `json:"project_domain_name"`
	ProjectDomainID             string `json:"project_domain_id"`
	DomainName                  string `json:"domain_name"`
	DomainID                    string `json:"domain_id"`
	ApplicationCredentialID     string `json:"application_credential_id"`
	ApplicationCredentialName   string `json:"application_credential_name"`
	ApplicationCredentialSecret string `json:"application_credential_secret"`
	Token                       string `json:"token"`
}

// readCloud reads the named entry of the clouds.yaml secret s, now: its
// secrets are read on each authentication, so a rotated file needs no
// restart. Errors name the setting and the entries, never the content.
func readCloud(s secret.Secret, name string) (*cloudEntry, error) {
	raw, err := s.Reveal()
	if err != nil {
		return nil, config.Problem{Key: cloudsKey, Msg: err.Error()}
	}
	var f cloudsYAML
	if err := yaml.Unmarshal([]byte(raw), &f); err != nil {
		// The parser's message may quote a line, which may hold a secret.
		return nil, config.Problem{Key: cloudsKey, Msg: s.Source() + " is not a clouds.yaml document (a YAML mapping with a clouds: key); check it with `openstack --os-cloud " + name + " token issue`"}
	}
	e, ok := f.Clouds[name]
	if !ok {
		names := slices.Sorted(maps.Keys(f.Clouds))
		return nil, config.Problem{Key: "drivers.openstack.cloud", Msg: fmt.Sprintf("%s has no cloud %q; it has %s", s.Source(), name, cmp.Or(strings.Join(names, ", "), "none"))}
	}
	where := fmt.Sprintf("cloud %q of %s", name, s.Source())
	switch {
	case e.AuthType != "" && e.AuthType != "password" && e.AuthType != "v3password" && e.AuthType != "v3applicationcredential":
		return nil, config.Problem{Key: cloudsKey, Msg: fmt.Sprintf("%s has auth_type %s: polyccm authenticates with a password or an application credential (v3password, v3applicationcredential)", where, e.AuthType)}
	case e.Auth.Token != "":
		return nil, config.Problem{Key: cloudsKey, Msg: where + " authenticates with a token, which expires: give an application credential instead"}
	case e.Verify != nil && !*e.Verify:
		return nil, config.Problem{Key: cloudsKey, Msg: where + " sets verify: false: polyccm verifies the API's certificates; give its CA with cacert (or drivers.openstack.caFile)"}
	case e.Cert != "":
		return nil, config.Problem{Key: cloudsKey, Msg: where + " sets a client certificate (cert), which polyccm does not send yet: authenticate with an application credential or a password"}
	}
	return &e, nil
}

// withCloud fills what the config leaves unset from the clouds.yaml entry
// e: keys set under drivers.openstack win, as command-line options win
// over clouds.yaml in the openstack client. Secrets are taken as inline
// values, held only in memory.
func (c Config) withCloud(e *cloudEntry) Config {
	a := e.Auth
	fill := func(dst *string, vals ...string) {
		if *dst == "" {
			*dst = cmp.Or(vals...)
		}
	}
	fill(&c.AuthURL, a.AuthURL)
	fill(&c.Region, e.RegionName)
	fill(&c.EndpointType, e.Interface, e.EndpointType)
	fill(&c.CAFile, e.CACert)
	fill(&c.DomainName, a.DomainName)
	fill(&c.DomainID, a.DomainID)
	explicitCredentials := !c.Password.IsZero() || !c.ApplicationCredentialSecret.IsZero()
	if explicitCredentials {
		return c // who authenticates is the config's alone: no mix of both
	}
	fill(&c.Username, a.Username)
	fill(&c.UserID, a.UserID)
	fill(&c.UserDomainName, a.UserDomainName)
	fill(&c.UserDomainID, a.UserDomainID)
	fill(&c.ProjectName, a.ProjectName, a.TenantName)
	fill(&c.ProjectID, a.ProjectID, a.TenantID)
	fill(&c.ProjectDomainName, a.ProjectDomainName)
	fill(&c.ProjectDomainID, a.ProjectDomainID)
	if a.ApplicationCredentialSecret != "" {
		fill(&c.ApplicationCredentialID, a.ApplicationCredentialID)
		fill(&c.ApplicationCredentialName, a.ApplicationCredentialName)
		c.ApplicationCredentialSecret = secret.Secret{Value: a.ApplicationCredentialSecret}
	} else if a.Password != "" {
		c.Password = secret.Secret{Value: a.Password}
	}
	return c
}

// resolved is the config with the clouds.yaml entry filled in, read now;
// the config itself when there is no clouds.yaml. The result is checked
// as the config is, its problems said against drivers.openstack.clouds.
func (c Config) resolved() (Config, error) {
	if c.Clouds.IsZero() {
		return c, nil
	}
	e, err := readCloud(c.Clouds, c.Cloud)
	if err != nil {
		return c, err
	}
	r := c.withCloud(e)
	r.Clouds, r.Cloud = secret.Secret{}, ""
	if err := r.Validate(); err != nil {
		return c, fmt.Errorf("drivers.openstack with cloud %q of %s: %w", c.Cloud, c.Clouds.Source(), err)
	}
	return r, nil
}
