package simcloud

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/digitalocean/godo"
	v1 "k8s.io/api/core/v1"

	fakedo "github.com/polyccm/polyccm/test/fakecloud/digitalocean"
	"github.com/polyccm/polyccm/test/fakecloud/faults"
)

// DigitalOceanAccount is a started fake DigitalOcean API, the token it
// accepts, and a client acting as the account's user (powering droplets
// off, deleting them): the one setup the demo, the benchmark and the e2e
// tests share.
type DigitalOceanAccount struct {
	Fake  *fakedo.Server
	User  *godo.Client
	Token string
}

// StartDigitalOcean starts a fake DigitalOcean API accepting token, with
// o's latency and profile.
func StartDigitalOcean(o Options, token string) (*DigitalOceanAccount, error) {
	f := fakedo.New(token)
	f.Faults().SetLatency(o.Latency)
	o.profile().DigitalOcean(f)
	if err := f.Start(); err != nil {
		return nil, err
	}
	user, err := godo.New(&http.Client{Transport: bearer(token)}, godo.SetBaseURL(f.URL()))
	if err != nil {
		f.Close()
		return nil, err
	}
	return &DigitalOceanAccount{Fake: f, User: user, Token: token}, nil
}

// Config writes the token into dir and returns the drivers.digitalocean
// block.
func (a *DigitalOceanAccount) Config(dir string) (string, error) {
	p := filepath.Join(dir, "digitalocean-token")
	if err := os.WriteFile(p, []byte(a.Token+"\n"), 0o600); err != nil {
		return "", err
	}
	return fmt.Sprintf("token: {file: %s}\napiURL: %s", p, a.Fake.URL()), nil
}

// digitalOcean is the simulated DigitalOcean cloud (test/fakecloud/digitalocean).
type digitalOcean struct {
	*DigitalOceanAccount
	fake     *fakedo.Server
	user     *godo.Client
	droplets []fakedo.Droplet
}

func newDigitalOcean(o Options) (Cloud, error) {
	a, err := StartDigitalOcean(o, "dop_v1_sim_"+strconv.FormatInt(time.Now().UnixNano(), 36))
	if err != nil {
		return nil, err
	}
	return &digitalOcean{DigitalOceanAccount: a, fake: a.Fake, user: a.User}, nil
}

func (c *digitalOcean) Title() string { return "DigitalOcean" }

func (c *digitalOcean) ConfigBlock(dir string) (string, error) { return c.Config(dir) }

func (c *digitalOcean) Env(string) []string { return nil }

func (c *digitalOcean) AddInstances(n int) []Node {
	sizes := []string{"s-2vcpu-4gb", "s-4vcpu-8gb", "c-8"}
	// One region: a DigitalOcean cluster lives in one, like its VPC.
	regions := []string{"fra1"}
	nodes := make([]Node, n)
	base := len(c.droplets) // later calls add more, named after them
	for k := range n {
		i := base + k
		d := fakedo.Droplet{Name: fmt.Sprintf("node-%02d", i), Status: fakedo.StatusActive, SizeSlug: sizes[i%len(sizes)], Region: regions[i%len(regions)]}
		if i%3 == 0 {
			d.IPv6 = fmt.Sprintf("2a03:b0c0:2:d0::%x:1", i+1)
		}
		d = c.fake.AddDroplet(d)
		c.droplets = append(c.droplets, d)
		nodes[k].Name = d.Name
		if i%2 == 0 {
			nodes[k].ProviderID = "digitalocean://" + strconv.Itoa(d.ID)
		}
	}
	return nodes
}

// PowerOff goes through the API, as a user would.
func (c *digitalOcean) PowerOff(i int) error {
	_, _, err := c.user.DropletActions.PowerOff(context.Background(), c.droplets[i].ID)
	return err
}

func (c *digitalOcean) Remove(i int) error {
	_, err := c.user.Droplets.Delete(context.Background(), c.droplets[i].ID)
	return err
}

// Calls counts polyccm's calls, not the simulated user's power-off and
// delete.
func (c *digitalOcean) Calls() int {
	n := 0
	for ep, k := range c.fake.Faults().Calls() {
		if ep != "POST /v2/droplets/{id}/actions" && ep != "DELETE /v2/droplets/{id}" {
			n += k
		}
	}
	return n
}

func (c *digitalOcean) LBPorts() []v1.ServicePort { return TCPUDP() }

// LBID is the load balancer's ID, which the driver records on the Service.
func (c *digitalOcean) LBID(svc *v1.Service) string {
	return svc.Annotations["kubernetes.digitalocean.com/load-balancer-id"]
}

func (c *digitalOcean) DescribeLB(id string) (string, bool) {
	lb, ok := c.fake.LoadBalancer(id)
	if !ok {
		return "", false
	}
	var rules []string
	for _, r := range lb.ForwardingRules {
		rules = append(rules, fmt.Sprintf("%s:%d->%s:%d", r.EntryProtocol, r.EntryPort, r.TargetProtocol, r.TargetPort))
	}
	hc := ""
	if lb.HealthCheck != nil {
		hc = fmt.Sprintf("%s :%d%s", lb.HealthCheck.Protocol, lb.HealthCheck.Port, lb.HealthCheck.Path)
	}
	return fmt.Sprintf("DigitalOcean load balancer %s (%s) in %s, %s: rules %s, %d droplets, health check %s",
		lb.Name, lb.ID, lb.Region, lb.Status, strings.Join(rules, " "), len(lb.DropletIDs), hc), true
}

func (c *digitalOcean) LBTargets(id string) ([]string, bool) {
	lb, ok := c.fake.LoadBalancer(id)
	if !ok {
		return nil, false
	}
	names := map[int]string{}
	for _, d := range c.droplets {
		names[d.ID] = d.Name
	}
	var out []string
	for _, id := range lb.DropletIDs {
		out = append(out, names[id])
	}
	slices.Sort(out)
	return out, true
}

func (c *digitalOcean) LBLeftovers() []string {
	var out []string
	for _, lb := range c.fake.LoadBalancers() {
		out = append(out, "load balancer "+lb.Name+" ("+lb.ID+")")
	}
	return out
}

func (c *digitalOcean) Faults() *faults.Injector { return c.fake.Faults() }

// ThrottleError: DigitalOcean answers 429 with id too_many_requests.
func (c *digitalOcean) ThrottleError() string { return "429 too_many_requests" }

func (c *digitalOcean) Close() { c.fake.Close() }
