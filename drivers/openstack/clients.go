package openstack

import (
	"cmp"
	"context"

	"github.com/gophercloud/gophercloud/v2"
	gcopenstack "github.com/gophercloud/gophercloud/v2/openstack"

	"github.com/polyccm/polyccm/core/version"
)

// clients are the service clients of one Keystone session.
type clients struct {
	provider *gophercloud.ProviderClient
	eo       gophercloud.EndpointOpts
	region   string
	compute  *gophercloud.ServiceClient
	network  *gophercloud.ServiceClient
}

// blockStorage is Cinder's v3 client, found in the catalog on use: a
// cloud without Cinder fails volume lookups only.
func (cl *clients) blockStorage() (*gophercloud.ServiceClient, error) {
	bs, err := gcopenstack.NewBlockStorageV3(cl.provider, cl.eo)
	if err != nil {
		return nil, catalogError("volumev3", cl.region, err)
	}
	return bs, nil
}

// session authenticates once (Keystone v3, password or application
// credential), finds the region's endpoints in the catalog and keeps
// them; gophercloud re-authenticates on a 401 itself, through
// reauthenticate. Secrets are read on each authentication, so rotating
// their files needs no restart.
func (c *Cloud) session(ctx context.Context) (*clients, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.clients != nil {
		return c.clients, nil
	}
	provider, err := c.newProvider()
	if err != nil {
		return nil, err
	}
	opts, err := c.authOptions()
	if err != nil {
		return nil, err
	}
	if err := c.api.Do(ctx, "identity.tokens.create", func(ctx context.Context) error {
		// Empty endpoint options: Keystone is the auth URL itself, not
		// an endpoint to find in a catalog it has not given yet.
		return gcopenstack.AuthenticateV3(ctx, provider, &opts, gophercloud.EndpointOpts{})
	}); err != nil {
		return nil, err
	}
	// gophercloud's own re-authentication sends the secrets read above
	// for ever: a password rotated in its file would never be read.
	provider.ReauthFunc = func(ctx context.Context) error { return c.reauthenticate(ctx, provider) }
	cl := &clients{provider: provider, eo: c.endpoint(), region: c.cfg.Region}
	if cl.compute, err = gcopenstack.NewComputeV2(provider, c.endpoint()); err != nil {
		return nil, catalogError("compute", c.cfg.Region, err)
	}
	// No microversion, as upstream: a server embeds its flavor's ID, whose
	// name (what the instance-type label holds) is read once per flavor.
	if cl.network, err = gcopenstack.NewNetworkV2(provider, c.endpoint()); err != nil {
		return nil, catalogError("network", c.cfg.Region, err)
	}
	c.clients = cl
	return cl, nil
}

// newProvider is a client of Keystone at authURL, not yet authenticated.
func (c *Cloud) newProvider() (*gophercloud.ProviderClient, error) {
	provider, err := gcopenstack.NewClient(c.cfg.AuthURL)
	if err != nil {
		return nil, err
	}
	provider.HTTPClient = *c.http
	provider.UserAgent.Prepend("polyccm/" + version.Version)
	return provider, nil
}

// reauthenticate gives provider a new token, for the credentials as their
// files hold them now, when a service refused its token (expired, or
// revoked by a password change); gophercloud serializes the calls.
func (c *Cloud) reauthenticate(ctx context.Context, provider *gophercloud.ProviderClient) error {
	opts, err := c.authOptions()
	if err != nil {
		return err
	}
	opts.AllowReauth = false
	fresh, err := c.newProvider()
	if err != nil {
		return err
	}
	if err := gcopenstack.AuthenticateV3(ctx, fresh, &opts, gophercloud.EndpointOpts{}); err != nil {
		return err
	}
	provider.CopyTokenFrom(fresh)
	return nil
}

// authOptions are the Keystone v3 options from the config, secrets read
// now, with the domain defaults gophercloud's clientconfig applies
// upstream: domainID/domainName stand for the user's and the project's
// domain where those are unset.
func (c *Cloud) authOptions() (gophercloud.AuthOptions, error) {
	cfg := c.cfg
	if !c.given.Clouds.IsZero() {
		// The clouds.yaml again, for its secrets as they are now.
		r, err := c.given.resolved()
		if err != nil {
			return gophercloud.AuthOptions{}, err
		}
		cfg.Password, cfg.ApplicationCredentialSecret = r.Password, r.ApplicationCredentialSecret
	}
	userDomainID, userDomainName := cmp.Or(cfg.UserDomainID, cfg.DomainID), cmp.Or(cfg.UserDomainName, cfg.DomainName)
	opts := gophercloud.AuthOptions{
		IdentityEndpoint: cfg.AuthURL,
		Username:         cfg.Username,
		UserID:           cfg.UserID,
		DomainID:         userDomainID,
		DomainName:       userDomainName,
		AllowReauth:      true,
	}
	if !cfg.ApplicationCredentialSecret.IsZero() {
		s, err := cfg.ApplicationCredentialSecret.RevealToken()
		if err != nil {
			return opts, credentialError("applicationCredentialSecret", err)
		}
		opts.ApplicationCredentialID = cfg.ApplicationCredentialID
		opts.ApplicationCredentialName = cfg.ApplicationCredentialName
		opts.ApplicationCredentialSecret = s
		return opts, nil
	}
	p, err := cfg.Password.RevealLine()
	if err != nil {
		return opts, credentialError("password", err)
	}
	opts.Password = p
	switch {
	case cfg.ProjectID != "":
		// A project ID names it alone; Keystone refuses a domain with it.
		opts.Scope = &gophercloud.AuthScope{ProjectID: cfg.ProjectID}
	case cfg.ProjectName != "":
		opts.Scope = &gophercloud.AuthScope{
			ProjectName: cfg.ProjectName,
			DomainID:    cmp.Or(cfg.ProjectDomainID, cfg.DomainID),
			DomainName:  cmp.Or(cfg.ProjectDomainName, cfg.DomainName),
		}
	default:
		opts.Scope = &gophercloud.AuthScope{DomainID: cfg.DomainID, DomainName: cfg.DomainName}
	}
	return opts, nil
}
