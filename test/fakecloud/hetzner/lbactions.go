package hetzner

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
)

// changeAlgorithm: POST .../change_algorithm {"type": ...}.
func (s *Server) changeAlgorithm(r *http.Request, p params) (int, any) {
	var req struct {
		Type string `json:"type"`
	}
	if st, body := decode(r, &req); st != 0 {
		return st, body
	}
	if req.Type != AlgorithmRoundRobin && req.Type != AlgorithmLeastConnections {
		return errInvalid("type", "must be one of round_robin, least_connections")
	}
	return s.lbAction(p, "change_algorithm", func(lb *lbState) (int, any, change) {
		return done(func() { lb.Algorithm = req.Type })
	})
}

// changeType: POST .../change_type. A smaller type must still hold the
// load balancer's services, targets and certificates.
func (s *Server) changeType(r *http.Request, p params) (int, any) {
	var req struct {
		LoadBalancerType *idOrName `json:"load_balancer_type"`
	}
	if st, body := decode(r, &req); st != 0 {
		return st, body
	}
	if req.LoadBalancerType == nil {
		return errInvalid("load_balancer_type", "is required")
	}
	typ, ok := findLBType(string(*req.LoadBalancerType))
	if !ok {
		return errInvalid("load_balancer_type", "load balancer type not found")
	}
	return s.lbAction(p, "change_load_balancer_type", func(lb *lbState) (int, any, change) {
		certs := 0
		for _, sv := range lb.Services {
			if sv.HTTP != nil {
				certs += len(sv.HTTP.Certificates)
			}
		}
		if len(lb.Services) > typ.MaxServices || s.countTargetsLocked(lb) > typ.MaxTargets || certs > typ.MaxAssignedCertificates {
			return no(errCode(http.StatusUnprocessableEntity, "invalid_load_balancer_type",
				"the load balancer type does not fit the load balancer's services, targets or certificates"))
		}
		return done(func() { lb.Type = typ.Name })
	})
}

// attachLB: POST .../attach_to_network {network, ip?, ip_range?}. The
// address is reserved at once and the network is busy until the action
// ends; a load balancer joins one network at most.
func (s *Server) attachLB(r *http.Request, p params) (int, any) {
	var req struct {
		Network *int64  `json:"network"`
		IP      *string `json:"ip"`
		IPRange *string `json:"ip_range"`
	}
	if st, body := decode(r, &req); st != 0 {
		return st, body
	}
	if req.Network == nil {
		return errInvalid("network", "is required")
	}
	return s.lbAction(p, "attach_to_network", func(lb *lbState) (int, any, change) {
		n, ok := s.networks[*req.Network]
		if !ok {
			return no(errNotFound(fmt.Sprintf("network with ID '%d' not found", *req.Network)))
		}
		if lb.Network != 0 {
			return no(errCode(http.StatusConflict, "load_balancer_already_attached", "the load balancer is already attached to a network"))
		}
		ref := resourceRef{ID: n.ID, Type: "network"}
		if st, body := s.lockedLocked(ref); st != 0 {
			return no(st, body)
		}
		loc, _ := findLocation(lb.Location)
		net := n
		if req.IPRange != nil {
			// Only the subnet with that range is offered.
			k := slices.IndexFunc(n.Subnets, func(sn subnetState) bool { return sn.IPRange == *req.IPRange })
			if k < 0 {
				return no(errInvalid("ip_range", "no subnet with this ip range"))
			}
			net = &networkState{ID: n.ID, IPRange: n.IPRange, Subnets: n.Subnets[k : k+1], used: n.used, hint: map[int]netip.Addr{}}
		}
		var want string
		if req.IP != nil {
			want = *req.IP
		}
		a, err := net.allocLocked(loc.NetworkZone, want, ownerLB(lb.ID))
		switch {
		case errors.Is(err, errIPTaken):
			return no(errCode(http.StatusConflict, "ip_not_available", "the IP is not available"))
		case err != nil:
			return no(errCode(http.StatusUnprocessableEntity, "no_subnet_available", "no subnet or IP available in network zone "+loc.NetworkZone))
		}
		return 0, nil, change{
			more:   []resourceRef{ref},
			effect: func() { lb.Network, lb.PrivateIP = n.ID, a.String() },
			undo:   func() { delete(n.used, a) },
		}
	})
}

// detachLB: POST .../detach_from_network {network}. Targets reached by
// private IP stay, and turn unhealthy.
func (s *Server) detachLB(r *http.Request, p params) (int, any) {
	var req struct {
		Network *int64 `json:"network"`
	}
	if st, body := decode(r, &req); st != 0 {
		return st, body
	}
	if req.Network == nil {
		return errInvalid("network", "is required")
	}
	return s.lbAction(p, "detach_from_network", func(lb *lbState) (int, any, change) {
		if _, ok := s.networks[*req.Network]; !ok {
			return no(errNotFound(fmt.Sprintf("network with ID '%d' not found", *req.Network)))
		}
		if lb.Network != *req.Network {
			return no(errCode(http.StatusUnprocessableEntity, "load_balancer_not_attached_to_network",
				"the load balancer is not attached to this network"))
		}
		ref := resourceRef{ID: *req.Network, Type: "network"}
		return 0, nil, change{more: []resourceRef{ref}, effect: func() { s.releaseLBLocked(lb) }}
	})
}

// publicInterface: POST .../enable_public_interface and
// disable_public_interface. Disabling needs a private network and no
// target reached by a public address.
func (s *Server) publicInterface(enable bool) handlerFunc {
	command := "disable_public_interface"
	if enable {
		command = "enable_public_interface"
	}
	return func(_ *http.Request, p params) (int, any) {
		return s.lbAction(p, command, func(lb *lbState) (int, any, change) {
			if !enable {
				if lb.Network == 0 {
					return no(errCode(http.StatusUnprocessableEntity, "load_balancer_not_attached_to_network",
						"the load balancer is not attached to a network"))
				}
				if slices.ContainsFunc(lb.Targets, func(t Target) bool { return t.Type == TargetIP || !t.UsePrivateIP }) {
					return no(errCode(http.StatusUnprocessableEntity, "targets_without_use_private_ip",
						"the load balancer has targets that use a public IP"))
				}
			}
			return done(func() { lb.PublicInterface = enable })
		})
	}
}

// changeDNSPtr: POST .../change_dns_ptr {ip, dns_ptr}; a null dns_ptr
// restores the default.
func (s *Server) changeDNSPtr(r *http.Request, p params) (int, any) {
	var req struct {
		IP     string  `json:"ip"`
		DNSPtr *string `json:"dns_ptr"`
	}
	if st, body := decode(r, &req); st != 0 {
		return st, body
	}
	return s.lbAction(p, "change_dns_ptr", func(lb *lbState) (int, any, change) {
		switch req.IP {
		case lb.IPv4:
			return done(func() {
				lb.IPv4DNSPtr = reverseDNS(lb.IPv4)
				if req.DNSPtr != nil {
					lb.IPv4DNSPtr = *req.DNSPtr
				}
			})
		case lb.IPv6:
			return done(func() {
				lb.IPv6DNSPtr = "static." + lb.IPv6 + ".clients.your-server.de"
				if req.DNSPtr != nil {
					lb.IPv6DNSPtr = *req.DNSPtr
				}
			})
		}
		return no(errInvalid("ip", "is not an IP of this load balancer"))
	})
}

// changeProtection: POST .../change_protection {delete}.
func (s *Server) changeProtection(r *http.Request, p params) (int, any) {
	var req struct {
		Delete *bool `json:"delete"`
	}
	if st, body := decode(r, &req); st != 0 {
		return st, body
	}
	return s.lbAction(p, "change_protection", func(lb *lbState) (int, any, change) {
		return done(func() {
			if req.Delete != nil {
				lb.DeleteProtection = *req.Delete
			}
		})
	})
}
