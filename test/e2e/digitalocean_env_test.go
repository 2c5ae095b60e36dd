//go:build e2e

package e2e

import (
	"strings"
	"testing"

	"github.com/polyccm/polyccm/test/simcloud"

	"github.com/digitalocean/godo"

	fakedo "github.com/polyccm/polyccm/test/fakecloud/digitalocean"
	"github.com/polyccm/polyccm/test/harness"
)

// doEnv is one polyccm with the DigitalOcean driver against a fresh fake.
type doEnv struct {
	*env
	fake  *fakedo.Server
	user  *godo.Client // acts as a DigitalOcean user would (power off, delete)
	token string
}

// newDOEnv starts a fake DigitalOcean holding droplets and a polyccm
// process for it. tweak may adjust the config settings.
func newDOEnv(t *testing.T, droplets []fakedo.Droplet, tweak func(*harness.Settings)) *doEnv {
	t.Helper()
	return newDOEnvWith(t, droplets, tweak, nil)
}

// newDOEnvWith is newDOEnv with extra environment variables for polyccm.
func newDOEnvWith(t *testing.T, droplets []fakedo.Droplet, tweak func(*harness.Settings), extraEnv []string) *doEnv {
	t.Helper()
	e := &doEnv{env: newEnv(t), token: "dop_v1_" + strings.Repeat("e2e0", 12)}
	e.secret = e.token
	acct, err := simcloud.StartDigitalOcean(simcloud.Options{ClusterName: "e2e"}, e.token)
	if err != nil {
		t.Fatal(err)
	}
	e.fake, e.user = acct.Fake, acct.User
	e.closer = append(e.closer, e.fake.Close)
	for i := range droplets {
		droplets[i] = e.fake.AddDroplet(droplets[i])
	}
	block, err := acct.Config(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	// These tests are about REGIONAL load balancers (HTTP rules, node
	// ports); the migration test runs on the product default.
	s := harness.Settings{Driver: "digitalocean", DriverBlock: block + "\nloadBalancer:\n  defaultType: REGIONAL"}
	if tweak != nil {
		tweak(&s)
	}
	e.run(s, extraEnv)
	return e
}

// dropletCalls is how many calls polyccm made to the droplet endpoints.
func (e *doEnv) dropletCalls() int {
	n := 0
	for ep, c := range e.fake.Faults().Calls() {
		if strings.Contains(ep, "/v2/droplets") {
			n += c
		}
	}
	return n
}
