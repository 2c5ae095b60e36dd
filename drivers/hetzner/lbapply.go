package hetzner

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/loadbalancers"
)

// Every change to a load balancer is an action the API runs in the
// background, one at a time per load balancer (others meanwhile get 423
// locked). polyccm follows each for a bounded while, then lets the
// service controller come back rather than hold a worker. (Variables so
// tests against the fake need not wait them out.)
var (
	actionBudget     = 10 * time.Second
	actionRetryAfter = 5 * time.Second
)

// await follows an action for at most actionBudget: nil once it
// succeeded, its error if it failed, a Pending error if it still runs.
func (c *Cloud) await(ctx context.Context, what string, a *hcloud.Action) error {
	if a == nil {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, actionBudget)
	defer cancel()
	err := c.wait(wctx, a)
	switch {
	case err == nil:
		return nil
	case ctx.Err() == nil && wctx.Err() != nil:
		return loadbalancers.Pending(actionRetryAfter, "%s: action %d (%s) is still running; checking again in %s", what, a.ID, a.Command, actionRetryAfter)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// lbApplier makes a plan's changes. The load balancer is the one
// observed, or the one the plan's create made, so a change planned
// before the load balancer existed finds its ID when it runs.
type lbApplier struct {
	c   *Cloud
	svc *v1.Service
	lb  *hcloud.LoadBalancer
}

// action returns a change's Apply: call through the cloud API client,
// then await its action. ok says which errors mean the change is already
// made (a target already there, a service already gone).
func (ap *lbApplier) action(op, what string, call func(ctx context.Context, lb *hcloud.LoadBalancer) (*hcloud.Action, *hcloud.Response, error), ok ...cloudapi.Kind) func(context.Context) error {
	if ap == nil {
		return nil
	}
	return func(ctx context.Context) error {
		var act *hcloud.Action
		err := ap.c.api.Do(ctx, op, func(ctx context.Context) error {
			var err error
			act, _, err = call(ctx, ap.lb)
			return err
		})
		for _, k := range ok {
			if err != nil && cloudapi.KindOf(err) == k {
				klog.V(2).InfoS("Load balancer change already made", "service", klog.KObj(ap.svc), "change", what, "answer", err)
				return nil
			}
		}
		if err != nil {
			return err
		}
		return ap.c.await(ctx, what, act)
	}
}

func (ap *lbApplier) create(opts hcloud.LoadBalancerCreateOpts) func(context.Context) error {
	if ap == nil {
		return nil
	}
	return func(ctx context.Context) error {
		var res hcloud.LoadBalancerCreateResult
		// Not repeated when its outcome is unknown: the label makes the
		// next sync find what it made.
		err := ap.c.api.Do(ctx, "load_balancers.create", func(ctx context.Context) error {
			var err error
			res, _, err = ap.c.client.LoadBalancer.Create(ctx, opts)
			return err
		}, cloudapi.Creates(), cloudapi.NotIdempotent())
		if cloudapi.KindOf(err) == cloudapi.KindExists {
			return fmt.Errorf("the project has a load balancer named %s already, not labelled %s=%s: rename or delete it, or give the Service another name with %s: %w", opts.Name, LabelServiceUID, opts.Labels[LabelServiceUID], AnnName, err)
		}
		if err != nil {
			return err
		}
		if res.LoadBalancer == nil {
			return errors.New("the API answered the create without a load balancer")
		}
		ap.lb = res.LoadBalancer
		klog.InfoS("Created load balancer", "service", klog.KObj(ap.svc), "loadBalancer", ap.lb.ID, "name", ap.lb.Name)
		return ap.c.await(ctx, "creating load balancer "+opts.Name, res.Action)
	}
}

func (ap *lbApplier) update(opts hcloud.LoadBalancerUpdateOpts) func(context.Context) error {
	if ap == nil {
		return nil
	}
	return func(ctx context.Context) error {
		return ap.c.api.Do(ctx, "load_balancers.update", func(ctx context.Context) error {
			lb, _, err := ap.c.client.LoadBalancer.Update(ctx, ap.lb, opts)
			if err == nil && lb != nil {
				ap.lb.Name, ap.lb.Labels = lb.Name, lb.Labels
			}
			return err
		})
	}
}

func (ap *lbApplier) dnsPtr(v6 bool, ptr string) func(context.Context) error {
	return ap.action("load_balancers.change_dns_ptr", "setting reverse DNS", func(ctx context.Context, lb *hcloud.LoadBalancer) (*hcloud.Action, *hcloud.Response, error) {
		ip := lb.PublicNet.IPv4.IP
		if v6 {
			ip = lb.PublicNet.IPv6.IP
		}
		return ap.c.client.LoadBalancer.ChangeDNSPtr(ctx, lb, ip.String(), &ptr)
	})
}

func (ap *lbApplier) algorithm(alg string) func(context.Context) error {
	return ap.action("load_balancers.change_algorithm", "changing the algorithm", func(ctx context.Context, lb *hcloud.LoadBalancer) (*hcloud.Action, *hcloud.Response, error) {
		return ap.c.client.LoadBalancer.ChangeAlgorithm(ctx, lb, hcloud.LoadBalancerChangeAlgorithmOpts{Type: hcloud.LoadBalancerAlgorithmType(alg)})
	})
}

func (ap *lbApplier) changeType(name string) func(context.Context) error {
	return ap.action("load_balancers.change_type", "changing the type to "+name, func(ctx context.Context, lb *hcloud.LoadBalancer) (*hcloud.Action, *hcloud.Response, error) {
		return ap.c.client.LoadBalancer.ChangeType(ctx, lb, hcloud.LoadBalancerChangeTypeOpts{LoadBalancerType: &hcloud.LoadBalancerType{Name: name}})
	})
}

func (ap *lbApplier) detach(netID int64) func(context.Context) error {
	return ap.action("load_balancers.detach_from_network", fmt.Sprintf("detaching from network %d", netID), func(ctx context.Context, lb *hcloud.LoadBalancer) (*hcloud.Action, *hcloud.Response, error) {
		return ap.c.client.LoadBalancer.DetachFromNetwork(ctx, lb, hcloud.LoadBalancerDetachFromNetworkOpts{Network: &hcloud.Network{ID: netID}})
	})
}

func (ap *lbApplier) attach(netID int64, ip net.IP, ipRange *net.IPNet) func(context.Context) error {
	return ap.action("load_balancers.attach_to_network", fmt.Sprintf("attaching to network %d", netID), func(ctx context.Context, lb *hcloud.LoadBalancer) (*hcloud.Action, *hcloud.Response, error) {
		return ap.c.client.LoadBalancer.AttachToNetwork(ctx, lb, hcloud.LoadBalancerAttachToNetworkOpts{Network: &hcloud.Network{ID: netID}, IP: ip, IPRange: ipRange})
	}, cloudapi.KindExists)
}

func (ap *lbApplier) publicInterface(on bool) func(context.Context) error {
	if on {
		return ap.action("load_balancers.enable_public_interface", "enabling the public interface", func(ctx context.Context, lb *hcloud.LoadBalancer) (*hcloud.Action, *hcloud.Response, error) {
			return ap.c.client.LoadBalancer.EnablePublicInterface(ctx, lb)
		})
	}
	return ap.action("load_balancers.disable_public_interface", "disabling the public interface", func(ctx context.Context, lb *hcloud.LoadBalancer) (*hcloud.Action, *hcloud.Response, error) {
		return ap.c.client.LoadBalancer.DisablePublicInterface(ctx, lb)
	})
}

func (ap *lbApplier) addService(s svcSpec) func(context.Context) error {
	return ap.action("load_balancers.add_service", fmt.Sprintf("adding the service on port %d", s.listen), func(ctx context.Context, lb *hcloud.LoadBalancer) (*hcloud.Action, *hcloud.Response, error) {
		return ap.c.client.LoadBalancer.AddService(ctx, lb, s.addOpts())
	})
}

func (ap *lbApplier) updateService(s svcSpec) func(context.Context) error {
	return ap.action("load_balancers.update_service", fmt.Sprintf("updating the service on port %d", s.listen), func(ctx context.Context, lb *hcloud.LoadBalancer) (*hcloud.Action, *hcloud.Response, error) {
		return ap.c.client.LoadBalancer.UpdateService(ctx, lb, s.listen, s.updateOpts())
	})
}

func (ap *lbApplier) deleteService(port int) func(context.Context) error {
	return ap.action("load_balancers.delete_service", fmt.Sprintf("deleting the service on port %d", port), func(ctx context.Context, lb *hcloud.LoadBalancer) (*hcloud.Action, *hcloud.Response, error) {
		return ap.c.client.LoadBalancer.DeleteService(ctx, lb, port)
	}, cloudapi.KindNotFound)
}

func (ap *lbApplier) addServer(id int64, private bool) func(context.Context) error {
	return ap.action("load_balancers.add_target", fmt.Sprintf("adding server %d", id), func(ctx context.Context, lb *hcloud.LoadBalancer) (*hcloud.Action, *hcloud.Response, error) {
		return ap.c.client.LoadBalancer.AddServerTarget(ctx, lb, hcloud.LoadBalancerAddServerTargetOpts{Server: &hcloud.Server{ID: id}, UsePrivateIP: &private})
	}, cloudapi.KindExists)
}

func (ap *lbApplier) removeServer(id int64) func(context.Context) error {
	return ap.action("load_balancers.remove_target", fmt.Sprintf("removing server %d", id), func(ctx context.Context, lb *hcloud.LoadBalancer) (*hcloud.Action, *hcloud.Response, error) {
		return ap.c.client.LoadBalancer.RemoveServerTarget(ctx, lb, &hcloud.Server{ID: id})
	}, cloudapi.KindNotFound)
}

func (ap *lbApplier) removeIP(ip string) func(context.Context) error {
	return ap.action("load_balancers.remove_target", "removing IP target "+ip, func(ctx context.Context, lb *hcloud.LoadBalancer) (*hcloud.Action, *hcloud.Response, error) {
		return ap.c.client.LoadBalancer.RemoveIPTarget(ctx, lb, net.ParseIP(ip))
	}, cloudapi.KindNotFound)
}

// createCertificate makes the managed certificate, labelled with the
// Service UID as hcloud CCM labels it (the label is how it is found). Its
// issuance takes a while; the sync does not wait for it.
func (ap *lbApplier) createCertificate(spec *lbSpec, m *managedCert) func(context.Context) error {
	if ap == nil {
		return nil
	}
	labels := map[string]string{LabelServiceUID: spec.uid}
	if m.staging {
		labels["HC-Use-Staging-CA"] = "true" // hcloud CCM's switch for Let's Encrypt staging
	}
	opts := hcloud.CertificateCreateOpts{Name: m.name, Type: hcloud.CertificateTypeManaged, DomainNames: m.domains, Labels: labels}
	return func(ctx context.Context) error {
		var res hcloud.CertificateCreateResult
		err := ap.c.api.Do(ctx, "certificates.create", func(ctx context.Context) error {
			var err error
			res, _, err = ap.c.client.Certificate.CreateCertificate(ctx, opts)
			return err
		}, cloudapi.Creates(), cloudapi.NotIdempotent())
		if cloudapi.KindOf(err) == cloudapi.KindExists {
			return fmt.Errorf("the project has a certificate named %s already, not labelled %s=%s: delete it, or name another with %s: %w", m.name, LabelServiceUID, spec.uid, AnnManagedCertName, err)
		}
		if err != nil {
			return err
		}
		if res.Certificate != nil {
			klog.InfoS("Created managed certificate", "service", klog.KObj(ap.svc), "certificate", res.Certificate.ID, "name", m.name, "domains", m.domains)
		}
		return nil
	}
}
