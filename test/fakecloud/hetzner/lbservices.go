package hetzner

import (
	"fmt"
	"net/http"
	"slices"
)

// Service protocols, as the API spells them.
const (
	ProtocolTCP   = "tcp"
	ProtocolHTTP  = "http"
	ProtocolHTTPS = "https"
)

// Service is one listen port of a load balancer.
type Service struct {
	Protocol        string
	ListenPort      int
	DestinationPort int
	ProxyProtocol   bool
	HealthCheck     HealthCheck
	HTTP            *ServiceHTTP // nil for tcp
}

// HealthCheck is how a service probes its targets.
type HealthCheck struct {
	Protocol string
	Port     int
	Interval int // seconds
	Timeout  int // seconds
	Retries  int
	HTTP     *HealthCheckHTTP // nil for tcp checks
}

// HealthCheckHTTP is an http or https health check's request.
type HealthCheckHTTP struct {
	Domain      string
	Path        string
	Response    string
	StatusCodes []string
	TLS         bool
}

// ServiceHTTP is the HTTP side of http and https services.
type ServiceHTTP struct {
	CookieName     string
	CookieLifetime int
	Certificates   []int64
	RedirectHTTP   bool
	StickySessions bool
	TimeoutIdle    int
}

func (sv Service) clone() Service {
	if sv.HTTP != nil {
		h := *sv.HTTP
		h.Certificates = slices.Clone(h.Certificates)
		sv.HTTP = &h
	}
	if sv.HealthCheck.HTTP != nil {
		h := *sv.HealthCheck.HTTP
		h.StatusCodes = slices.Clone(h.StatusCodes)
		sv.HealthCheck.HTTP = &h
	}
	return sv
}

// serviceReq is a service in create, add_service and update_service
// bodies: every field optional, so an update changes only what it names.
type serviceReq struct {
	Protocol        *string         `json:"protocol"`
	ListenPort      *int            `json:"listen_port"`
	DestinationPort *int            `json:"destination_port"`
	Proxyprotocol   *bool           `json:"proxyprotocol"`
	HTTP            *httpReq        `json:"http"`
	HealthCheck     *healthCheckReq `json:"health_check"`
}

type httpReq struct {
	CookieName     *string  `json:"cookie_name"`
	CookieLifetime *int     `json:"cookie_lifetime"`
	Certificates   *[]int64 `json:"certificates"`
	RedirectHTTP   *bool    `json:"redirect_http"`
	StickySessions *bool    `json:"sticky_sessions"`
	TimeoutIdle    *int     `json:"timeout_idle"`
}

type healthCheckReq struct {
	Protocol *string    `json:"protocol"`
	Port     *int       `json:"port"`
	Interval *int       `json:"interval"`
	Timeout  *int       `json:"timeout"`
	Retries  *int       `json:"retries"`
	HTTP     *hcHTTPReq `json:"http"`
}

type hcHTTPReq struct {
	Domain      *string   `json:"domain"`
	Path        *string   `json:"path"`
	Response    *string   `json:"response"`
	StatusCodes *[]string `json:"status_codes"`
	TLS         *bool     `json:"tls"`
}

func set[T any](dst *T, src *T) {
	if src != nil {
		*dst = *src
	}
}

// buildService applies req over base (the zero Service for a new one),
// filling what the API defaults: ports 80/443 for http and https, the
// health check on the destination port every 15 s with a 10 s timeout
// and 3 retries, "/" answering 2?? or 3?? for HTTP checks, and the
// HCLBSTICKY cookie for five minutes.
func buildService(base Service, req serviceReq, isNew bool) Service {
	sv := base.clone()
	set(&sv.Protocol, req.Protocol)
	if isNew {
		switch sv.Protocol {
		case ProtocolHTTP:
			sv.ListenPort, sv.DestinationPort = 80, 80
		case ProtocolHTTPS:
			sv.ListenPort, sv.DestinationPort = 443, 80
		}
	}
	set(&sv.ListenPort, req.ListenPort)
	set(&sv.DestinationPort, req.DestinationPort)
	set(&sv.ProxyProtocol, req.Proxyprotocol)
	if sv.Protocol == ProtocolTCP {
		sv.HTTP = nil
	} else {
		if sv.HTTP == nil {
			sv.HTTP = &ServiceHTTP{CookieName: "HCLBSTICKY", CookieLifetime: 300, Certificates: []int64{}, TimeoutIdle: 60}
		}
		if h := req.HTTP; h != nil {
			set(&sv.HTTP.CookieName, h.CookieName)
			set(&sv.HTTP.CookieLifetime, h.CookieLifetime)
			set(&sv.HTTP.Certificates, h.Certificates)
			set(&sv.HTTP.RedirectHTTP, h.RedirectHTTP)
			set(&sv.HTTP.StickySessions, h.StickySessions)
			set(&sv.HTTP.TimeoutIdle, h.TimeoutIdle)
		}
	}
	hc := &sv.HealthCheck
	if isNew {
		*hc = HealthCheck{Protocol: ProtocolTCP, Port: sv.DestinationPort, Interval: 15, Timeout: 10, Retries: 3}
	}
	if r := req.HealthCheck; r != nil {
		set(&hc.Protocol, r.Protocol)
		set(&hc.Port, r.Port)
		set(&hc.Interval, r.Interval)
		set(&hc.Timeout, r.Timeout)
		set(&hc.Retries, r.Retries)
	}
	if hc.Protocol == ProtocolTCP {
		hc.HTTP = nil
	} else {
		if hc.HTTP == nil {
			hc.HTTP = &HealthCheckHTTP{Path: "/", StatusCodes: []string{"2??", "3??"}}
		}
		if r := req.HealthCheck; r != nil && r.HTTP != nil {
			set(&hc.HTTP.Domain, r.HTTP.Domain)
			set(&hc.HTTP.Path, r.HTTP.Path)
			set(&hc.HTTP.Response, r.HTTP.Response)
			set(&hc.HTTP.StatusCodes, r.HTTP.StatusCodes)
			set(&hc.HTTP.TLS, r.HTTP.TLS)
		}
	}
	return sv
}

// checkServiceLocked validates a service on its own and against the
// load balancer's type; the caller checks the listen port's uniqueness.
func (s *Server) checkServiceLocked(sv Service, typ lbType) (int, any) {
	validProto := func(p string) bool { return p == ProtocolTCP || p == ProtocolHTTP || p == ProtocolHTTPS }
	port := func(p int) bool { return p >= 1 && p <= 65535 }
	switch {
	case !validProto(sv.Protocol):
		return errInvalid("protocol", "must be one of tcp, http, https")
	case sv.ListenPort == 0 && sv.Protocol == ProtocolTCP:
		return errInvalid("listen_port", "is required")
	case !port(sv.ListenPort):
		return errInvalid("listen_port", "must be between 1 and 65535")
	case sv.DestinationPort == 0 && sv.Protocol == ProtocolTCP:
		return errInvalid("destination_port", "is required")
	case !port(sv.DestinationPort):
		return errInvalid("destination_port", "must be between 1 and 65535")
	case !validProto(sv.HealthCheck.Protocol):
		return errInvalid("health_check.protocol", "must be one of tcp, http, https")
	case !port(sv.HealthCheck.Port):
		return errInvalid("health_check.port", "must be between 1 and 65535")
	case sv.HealthCheck.Interval < 3 || sv.HealthCheck.Interval > 60:
		return errInvalid("health_check.interval", "must be between 3 and 60")
	case sv.HealthCheck.Timeout < 1 || sv.HealthCheck.Timeout > 60:
		return errInvalid("health_check.timeout", "must be between 1 and 60")
	case sv.HealthCheck.Retries < 0 || sv.HealthCheck.Retries > 5:
		return errInvalid("health_check.retries", "must be between 0 and 5")
	}
	if sv.HTTP == nil {
		return 0, nil
	}
	certs := sv.HTTP.Certificates
	switch {
	case sv.Protocol == ProtocolHTTPS && len(certs) == 0:
		return errInvalid("http.certificates", "is required for https services")
	case sv.Protocol != ProtocolHTTPS && len(certs) > 0:
		return errInvalid("http.certificates", "is only allowed for https services")
	case sv.Protocol != ProtocolHTTPS && sv.HTTP.RedirectHTTP:
		return errInvalid("http.redirect_http", "is only allowed for https services")
	case len(certs) > typ.MaxAssignedCertificates:
		return errResourceLimit("max_assigned_certificates", "maximum number of certificates reached")
	}
	for _, id := range certs {
		if _, ok := s.certs[id]; !ok {
			return errNotFound(fmt.Sprintf("certificate with ID '%d' not found", id))
		}
	}
	return 0, nil
}

// addServiceLocked checks a new service against the load balancer: its
// listen port is free and the type has room.
func (s *Server) addServiceLocked(lb *LoadBalancer, sv Service) (int, any) {
	typ, _ := findLBType(lb.Type)
	if st, body := s.checkServiceLocked(sv, typ); st != 0 {
		return st, body
	}
	if slices.ContainsFunc(lb.Services, func(o Service) bool { return o.ListenPort == sv.ListenPort }) {
		return errCode(http.StatusConflict, "source_port_already_used",
			fmt.Sprintf("source port %d is already used by another service", sv.ListenPort))
	}
	if len(lb.Services) >= typ.MaxServices {
		return errResourceLimit("max_services", "maximum number of services reached")
	}
	return 0, nil
}

// serviceAction: POST .../add_service, update_service and delete_service.
func (s *Server) serviceAction(command string) handlerFunc {
	return func(r *http.Request, p params) (int, any) {
		var req serviceReq
		if st, body := decode(r, &req); st != 0 {
			return st, body
		}
		if command == "add_service" && req.Protocol == nil {
			return errInvalid("protocol", "is required")
		}
		if command != "add_service" && req.ListenPort == nil {
			return errInvalid("listen_port", "is required")
		}
		return s.lbAction(p, command, func(lb *lbState) (int, any, change) {
			var port int
			if req.ListenPort != nil {
				port = *req.ListenPort
			}
			k := slices.IndexFunc(lb.Services, func(o Service) bool { return o.ListenPort == port })
			switch command {
			case "add_service":
				sv := buildService(Service{}, req, true)
				if st, body := s.addServiceLocked(&lb.LoadBalancer, sv); st != 0 {
					return no(st, body)
				}
				return done(func() { lb.Services = append(lb.Services, sv) })
			case "update_service":
				if k < 0 {
					return no(errNotFound(fmt.Sprintf("service with listen port %d not found", port)))
				}
				sv := buildService(lb.Services[k], req, false)
				typ, _ := findLBType(lb.Type)
				if st, body := s.checkServiceLocked(sv, typ); st != 0 {
					return no(st, body)
				}
				return done(func() {
					if k := slices.IndexFunc(lb.Services, func(o Service) bool { return o.ListenPort == port }); k >= 0 {
						lb.Services[k] = sv
					}
				})
			default:
				if k < 0 {
					return no(errNotFound(fmt.Sprintf("service with listen port %d not found", port)))
				}
				return done(func() {
					lb.Services = slices.DeleteFunc(lb.Services, func(o Service) bool { return o.ListenPort == port })
				})
			}
		})
	}
}
