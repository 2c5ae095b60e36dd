package hetzner

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"

	"github.com/polyccm/polyccm/core/loadbalancers"
)

// fields collects what a change sets, named as the API names it.
type fields []loadbalancers.Field

func (f *fields) set(name string, from, to any) {
	a, b := show(from), show(to)
	if a != b {
		*f = append(*f, loadbalancers.Field{Name: name, From: a, To: b})
	}
}

// show formats a value for a plan; an unset one as "none".
func show(v any) string {
	switch x := v.(type) {
	case nil:
		return "none"
	case string:
		if x == "" {
			return "none"
		}
		return x
	case time.Duration:
		return x.String()
	case []int64:
		if len(x) == 0 {
			return "none"
		}
		return fmt.Sprint(x)
	case []string:
		if len(x) == 0 {
			return "none"
		}
		return strings.Join(x, ",")
	}
	return fmt.Sprint(v)
}

// diffService lists the fields of have that differ from what want sets.
// Settings want leaves unset are the load balancer's to keep (hcloud CCM
// does not send them either), so they never differ.
func diffService(want svcSpec, have *hcloud.LoadBalancerService) []loadbalancers.Field {
	var f fields
	f.set("protocol", string(have.Protocol), want.protocol)
	f.set("destination_port", have.DestinationPort, want.dest)
	if want.proxyProtocol != nil {
		f.set("proxyprotocol", have.Proxyprotocol, *want.proxyProtocol)
	}
	if h := want.http; h != nil {
		hh := have.HTTP
		if h.cookieName != nil {
			f.set("http.cookie_name", hh.CookieName, *h.cookieName)
		}
		if h.cookieLifetime != nil {
			f.set("http.cookie_lifetime", hh.CookieLifetime, *h.cookieLifetime)
		}
		if h.certsSet {
			f.set("http.certificates", certIDs(hh.Certificates), sorted(h.certs))
		}
		if h.redirect != nil {
			f.set("http.redirect_http", hh.RedirectHTTP, *h.redirect)
		}
		if h.sticky != nil {
			f.set("http.sticky_sessions", hh.StickySessions, *h.sticky)
		}
		if h.timeoutIdle != nil {
			f.set("http.timeout_idle", hh.TimeoutIdle, *h.timeoutIdle)
		}
	}
	hc, wc := have.HealthCheck, want.hc
	f.set("health_check.protocol", string(hc.Protocol), wc.protocol)
	f.set("health_check.port", hc.Port, want.hcPort())
	if wc.interval != nil {
		f.set("health_check.interval", hc.Interval, *wc.interval)
	}
	if wc.timeout != nil {
		f.set("health_check.timeout", hc.Timeout, *wc.timeout)
	}
	if wc.retries != nil {
		f.set("health_check.retries", hc.Retries, *wc.retries)
	}
	if w := wc.http; w != nil {
		var hh hcloud.LoadBalancerServiceHealthCheckHTTP
		if hc.HTTP != nil {
			hh = *hc.HTTP
		}
		if w.domain != nil {
			f.set("health_check.http.domain", hh.Domain, *w.domain)
		}
		if w.path != nil {
			f.set("health_check.http.path", hh.Path, *w.path)
		}
		if w.statusCodes != nil {
			f.set("health_check.http.status_codes", sortedStrings(hh.StatusCodes), sortedStrings(w.statusCodes))
		}
		if w.tls != nil {
			f.set("health_check.http.tls", hh.TLS, *w.tls)
		}
	}
	return f
}

func certIDs(cs []*hcloud.Certificate) []int64 {
	ids := make([]int64, 0, len(cs))
	for _, c := range cs {
		if c != nil {
			ids = append(ids, c.ID)
		}
	}
	return sorted(ids)
}

func sorted(ids []int64) []int64 {
	out := slices.Clone(ids)
	slices.Sort(out)
	return out
}

func sortedStrings(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

func certObjects(h *httpOpts) []*hcloud.Certificate {
	if !h.certsSet {
		return nil
	}
	out := make([]*hcloud.Certificate, len(h.certs))
	for i, id := range h.certs {
		out[i] = &hcloud.Certificate{ID: id}
	}
	return out
}

// addOpts is the add_service request for s; the update and create
// requests are built from it, since hcloud-go has a type for each.
func (s svcSpec) addOpts() hcloud.LoadBalancerAddServiceOpts {
	o := hcloud.LoadBalancerAddServiceOpts{
		Protocol:        hcloud.LoadBalancerServiceProtocol(s.protocol),
		ListenPort:      hcloud.Ptr(s.listen),
		DestinationPort: hcloud.Ptr(s.dest),
		Proxyprotocol:   s.proxyProtocol,
	}
	if h := s.http; h != nil {
		o.HTTP = &hcloud.LoadBalancerAddServiceOptsHTTP{
			CookieName: h.cookieName, CookieLifetime: h.cookieLifetime, Certificates: certObjects(h),
			RedirectHTTP: h.redirect, StickySessions: h.sticky, TimeoutIdle: h.timeoutIdle,
		}
	}
	o.HealthCheck = &hcloud.LoadBalancerAddServiceOptsHealthCheck{
		Protocol: hcloud.LoadBalancerServiceProtocol(s.hc.protocol),
		Port:     hcloud.Ptr(s.hcPort()),
		Interval: s.hc.interval, Timeout: s.hc.timeout, Retries: s.hc.retries,
	}
	if w := s.hc.http; w != nil {
		o.HealthCheck.HTTP = &hcloud.LoadBalancerAddServiceOptsHealthCheckHTTP{
			Domain: w.domain, Path: w.path, StatusCodes: w.statusCodes, TLS: w.tls,
		}
	}
	return o
}

func (s svcSpec) updateOpts() hcloud.LoadBalancerUpdateServiceOpts {
	a := s.addOpts()
	o := hcloud.LoadBalancerUpdateServiceOpts{Protocol: a.Protocol, DestinationPort: a.DestinationPort, Proxyprotocol: a.Proxyprotocol}
	if h := a.HTTP; h != nil {
		u := hcloud.LoadBalancerUpdateServiceOptsHTTP(*h)
		o.HTTP = &u
	}
	hc := a.HealthCheck
	o.HealthCheck = &hcloud.LoadBalancerUpdateServiceOptsHealthCheck{Protocol: hc.Protocol, Port: hc.Port, Interval: hc.Interval, Timeout: hc.Timeout, Retries: hc.Retries}
	if h := hc.HTTP; h != nil {
		u := hcloud.LoadBalancerUpdateServiceOptsHealthCheckHTTP(*h)
		o.HealthCheck.HTTP = &u
	}
	return o
}

func (s svcSpec) createOpts() hcloud.LoadBalancerCreateOptsService {
	a := s.addOpts()
	o := hcloud.LoadBalancerCreateOptsService{Protocol: a.Protocol, ListenPort: a.ListenPort, DestinationPort: a.DestinationPort, Proxyprotocol: a.Proxyprotocol}
	if h := a.HTTP; h != nil {
		c := hcloud.LoadBalancerCreateOptsServiceHTTP(*h)
		o.HTTP = &c
	}
	hc := a.HealthCheck
	o.HealthCheck = &hcloud.LoadBalancerCreateOptsServiceHealthCheck{Protocol: hc.Protocol, Port: hc.Port, Interval: hc.Interval, Timeout: hc.Timeout, Retries: hc.Retries}
	if h := hc.HTTP; h != nil {
		c := hcloud.LoadBalancerCreateOptsServiceHealthCheckHTTP(*h)
		o.HealthCheck.HTTP = &c
	}
	return o
}

// asService is the service a create makes from s, as far as s sets it:
// what the plan after a create compares with.
func (s svcSpec) asService() hcloud.LoadBalancerService {
	deref := func(b *bool) bool { return b != nil && *b }
	out := hcloud.LoadBalancerService{
		Protocol:        hcloud.LoadBalancerServiceProtocol(s.protocol),
		ListenPort:      s.listen,
		DestinationPort: s.dest,
		Proxyprotocol:   deref(s.proxyProtocol),
		HealthCheck: hcloud.LoadBalancerServiceHealthCheck{
			Protocol: hcloud.LoadBalancerServiceProtocol(s.hc.protocol),
			Port:     s.hcPort(),
		},
	}
	if h := s.http; h != nil {
		out.HTTP = hcloud.LoadBalancerServiceHTTP{Certificates: certObjects(h), RedirectHTTP: deref(h.redirect), StickySessions: deref(h.sticky)}
		if h.cookieName != nil {
			out.HTTP.CookieName = *h.cookieName
		}
		if h.cookieLifetime != nil {
			out.HTTP.CookieLifetime = *h.cookieLifetime
		}
		if h.timeoutIdle != nil {
			out.HTTP.TimeoutIdle = *h.timeoutIdle
		}
	}
	hc := &out.HealthCheck
	if s.hc.interval != nil {
		hc.Interval = *s.hc.interval
	}
	if s.hc.timeout != nil {
		hc.Timeout = *s.hc.timeout
	}
	if s.hc.retries != nil {
		hc.Retries = *s.hc.retries
	}
	if w := s.hc.http; w != nil {
		hc.HTTP = &hcloud.LoadBalancerServiceHealthCheckHTTP{StatusCodes: w.statusCodes, TLS: deref(w.tls)}
		if w.domain != nil {
			hc.HTTP.Domain = *w.domain
		}
		if w.path != nil {
			hc.HTTP.Path = *w.path
		}
	}
	return out
}

// describe is a service's settings for a plan's create line.
func (s svcSpec) describe() string {
	d := fmt.Sprintf("%s %d -> %d", s.protocol, s.listen, s.dest)
	if s.hc.protocol != s.protocol || s.hc.port != nil {
		d += fmt.Sprintf(", health check %s %d", s.hc.protocol, s.hcPort())
	}
	return d
}
