package hetzner

import (
	"maps"
	"slices"
)

// The JSON shapes of load balancers, from the API reference.

type wireLB struct {
	ID               int64             `json:"id"`
	Name             string            `json:"name"`
	PublicNet        wireLBPublicNet   `json:"public_net"`
	PrivateNet       []wireLBPrivate   `json:"private_net"`
	Location         location          `json:"location"`
	LoadBalancerType lbType            `json:"load_balancer_type"`
	Protection       wireProtection    `json:"protection"`
	Labels           map[string]string `json:"labels"`
	Targets          []wireTarget      `json:"targets"`
	Services         []wireService     `json:"services"`
	Algorithm        wireAlgorithm     `json:"algorithm"`
	OutgoingTraffic  *uint64           `json:"outgoing_traffic"`
	IngoingTraffic   *uint64           `json:"ingoing_traffic"`
	IncludedTraffic  uint64            `json:"included_traffic"`
	Created          string            `json:"created"`
}

type wireLBPublicNet struct {
	Enabled bool     `json:"enabled"`
	IPv4    wireLBIP `json:"ipv4"`
	IPv6    wireLBIP `json:"ipv6"`
}

type wireLBIP struct {
	ID      int64  `json:"id"`
	IP      string `json:"ip"`
	Blocked bool   `json:"blocked"`
	DNSPtr  string `json:"dns_ptr"`
}

type wireLBPrivate struct {
	Network int64  `json:"network"`
	IP      string `json:"ip"`
}

type wireAlgorithm struct {
	Type string `json:"type"`
}

type wireService struct {
	Protocol        string          `json:"protocol"`
	ListenPort      int             `json:"listen_port"`
	DestinationPort int             `json:"destination_port"`
	Proxyprotocol   bool            `json:"proxyprotocol"`
	HealthCheck     wireHealthCheck `json:"health_check"`
	HTTP            *wireHTTP       `json:"http"`
}

type wireHealthCheck struct {
	Protocol string      `json:"protocol"`
	Port     int         `json:"port"`
	Interval int         `json:"interval"`
	Timeout  int         `json:"timeout"`
	Retries  int         `json:"retries"`
	HTTP     *wireHCHTTP `json:"http"`
}

type wireHCHTTP struct {
	Domain      string   `json:"domain"`
	Path        string   `json:"path"`
	Response    string   `json:"response"`
	StatusCodes []string `json:"status_codes"`
	TLS         bool     `json:"tls"`
}

type wireHTTP struct {
	CookieName     string  `json:"cookie_name"`
	CookieLifetime int     `json:"cookie_lifetime"`
	Certificates   []int64 `json:"certificates"`
	RedirectHTTP   bool    `json:"redirect_http"`
	StickySessions bool    `json:"sticky_sessions"`
	TimeoutIdle    int     `json:"timeout_idle"`
}

// wireTarget: only the object of its type is sent; label selector
// targets list the servers they match.
type wireTarget struct {
	Type          string             `json:"type"`
	Server        *wireID            `json:"server,omitempty"`
	LabelSelector *wireSelector      `json:"label_selector,omitempty"`
	IP            *wireIP            `json:"ip,omitempty"`
	HealthStatus  []wireHealthStatus `json:"health_status"`
	UsePrivateIP  bool               `json:"use_private_ip"`
	Targets       []wireTarget       `json:"targets,omitempty"`
}

type wireID struct {
	ID int64 `json:"id"`
}

type wireSelector struct {
	Selector string `json:"selector"`
}

type wireIP struct {
	IP string `json:"ip"`
}

type wireHealthStatus struct {
	ListenPort int    `json:"listen_port"`
	Status     string `json:"status"`
}

func (s *Server) wireLBLocked(lb *lbState) wireLB {
	loc, _ := findLocation(lb.Location)
	typ, _ := findLBType(lb.Type)
	zero := uint64(0)
	w := wireLB{ID: lb.ID, Name: lb.Name, Location: loc, LoadBalancerType: typ,
		PublicNet: wireLBPublicNet{Enabled: lb.PublicInterface,
			IPv4: wireLBIP{ID: lb.ipv4ID, IP: lb.IPv4, DNSPtr: lb.IPv4DNSPtr},
			IPv6: wireLBIP{ID: lb.ipv6ID, IP: lb.IPv6, DNSPtr: lb.IPv6DNSPtr}},
		PrivateNet: []wireLBPrivate{}, Protection: wireProtection{Delete: lb.DeleteProtection},
		Labels: maps.Clone(lb.Labels), Targets: []wireTarget{}, Services: []wireService{},
		Algorithm: wireAlgorithm{Type: lb.Algorithm}, OutgoingTraffic: &zero, IngoingTraffic: &zero,
		IncludedTraffic: typ.Prices[0].IncludedTraffic, Created: stamp(lb.Created)}
	if lb.Network != 0 {
		w.PrivateNet = append(w.PrivateNet, wireLBPrivate{Network: lb.Network, IP: lb.PrivateIP})
	}
	for _, sv := range lb.Services {
		ws := wireService{Protocol: sv.Protocol, ListenPort: sv.ListenPort, DestinationPort: sv.DestinationPort,
			Proxyprotocol: sv.ProxyProtocol, HealthCheck: wireHealthCheck{Protocol: sv.HealthCheck.Protocol,
				Port: sv.HealthCheck.Port, Interval: sv.HealthCheck.Interval, Timeout: sv.HealthCheck.Timeout,
				Retries: sv.HealthCheck.Retries}}
		if h := sv.HealthCheck.HTTP; h != nil {
			ws.HealthCheck.HTTP = &wireHCHTTP{Domain: h.Domain, Path: h.Path, Response: h.Response,
				StatusCodes: append([]string{}, h.StatusCodes...), TLS: h.TLS}
		}
		if h := sv.HTTP; h != nil {
			ws.HTTP = &wireHTTP{CookieName: h.CookieName, CookieLifetime: h.CookieLifetime,
				Certificates: append([]int64{}, h.Certificates...), RedirectHTTP: h.RedirectHTTP,
				StickySessions: h.StickySessions, TimeoutIdle: h.TimeoutIdle}
		}
		w.Services = append(w.Services, ws)
	}
	for _, t := range lb.Targets {
		wt := wireTarget{Type: t.Type, UsePrivateIP: t.UsePrivateIP, HealthStatus: []wireHealthStatus{}}
		switch t.Type {
		case TargetServer:
			wt.Server = &wireID{ID: t.ServerID}
			wt.HealthStatus = s.healthLocked(lb, t, t.ServerID)
		case TargetIP:
			wt.IP = &wireIP{IP: t.IP}
			wt.HealthStatus = s.healthLocked(lb, t, 0)
		case TargetLabelSelector:
			wt.LabelSelector = &wireSelector{Selector: t.LabelSelector}
			wt.Targets = []wireTarget{}
			for _, sv := range s.selectedLocked(lb, t) {
				wt.Targets = append(wt.Targets, wireTarget{Type: TargetServer, Server: &wireID{ID: sv.ID},
					UsePrivateIP: t.UsePrivateIP, HealthStatus: s.healthLocked(lb, t, sv.ID)})
			}
		}
		w.Targets = append(w.Targets, wt)
	}
	return w
}

// certUsersLocked lists the load balancers whose services use a
// certificate, by ID.
func (s *Server) certUsersLocked(id int64) []int64 {
	var out []int64
	for _, lb := range s.sortedLBsLocked() {
		if slices.ContainsFunc(lb.Services, func(sv Service) bool {
			return sv.HTTP != nil && slices.Contains(sv.HTTP.Certificates, id)
		}) {
			out = append(out, lb.ID)
		}
	}
	return out
}
