package digitalocean

import (
	"encoding/json"
	"net/http"
	"slices"
)

// Sub-resources of a load balancer: its droplets and its forwarding rules.

// lbForChangeLocked finds a load balancer for a sub-resource change, refusing
// while it is still new, as updates are.
func (s *Server) lbForChangeLocked(id string) (*lbState, int, any) {
	st, ok := s.lbs[id]
	if !ok {
		status, body := errLBNotFound()
		return nil, status, body
	}
	if st.Status == StatusNew {
		status, body := errLBBusy()
		return nil, status, body
	}
	return st, 0, nil
}

type dropletIDsRequest struct {
	DropletIDs []int `json:"droplet_ids"`
}

// addLBDroplets: POST /v2/load_balancers/{id}/droplets, 204. The reference
// says a tag-based load balancer answers 422.
func (s *Server) addLBDroplets(r *http.Request, p params) (int, any) {
	return s.changeLBDroplets(r, p, true)
}

// removeLBDroplets: DELETE /v2/load_balancers/{id}/droplets, 204. Droplets
// not behind the load balancer are ignored.
func (s *Server) removeLBDroplets(r *http.Request, p params) (int, any) {
	return s.changeLBDroplets(r, p, false)
}

func (s *Server) changeLBDroplets(r *http.Request, p params, add bool) (int, any) {
	var req dropletIDsRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		return errNotJSON(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleLBsLocked()
	st, status, body := s.lbForChangeLocked(p["id"])
	if st == nil {
		return status, body
	}
	if len(req.DropletIDs) == 0 {
		// The real API's words for an empty list here (digitalocean/
		// droplet_kit#153).
		return errUnprocessable("need to provide either a tag or a list of droplets")
	}
	if st.Tag != "" {
		return errUnprocessable("droplets cannot be assigned individually to a load balancer that uses a tag")
	}
	if !add {
		st.DropletIDs = slices.DeleteFunc(st.DropletIDs, func(id int) bool {
			return slices.Contains(req.DropletIDs, id)
		})
		return http.StatusNoContent, nil
	}
	if msg := s.checkDropletsLocked(req.DropletIDs); msg != "" {
		return errUnprocessable(msg)
	}
	for _, id := range req.DropletIDs {
		if !slices.Contains(st.DropletIDs, id) {
			st.DropletIDs = append(st.DropletIDs, id)
		}
	}
	return http.StatusNoContent, nil
}

type forwardingRulesRequest struct {
	ForwardingRules []wireForwardingRule `json:"forwarding_rules"`
}

// addLBRules: POST /v2/load_balancers/{id}/forwarding_rules, 204.
func (s *Server) addLBRules(r *http.Request, p params) (int, any) {
	return s.changeLBRules(r, p, true)
}

// removeLBRules: DELETE /v2/load_balancers/{id}/forwarding_rules, 204.
// Rules match on their protocols and ports; unknown ones are ignored, but
// the last rule cannot go.
func (s *Server) removeLBRules(r *http.Request, p params) (int, any) {
	return s.changeLBRules(r, p, false)
}

func (s *Server) changeLBRules(r *http.Request, p params, add bool) (int, any) {
	var req forwardingRulesRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		return errNotJSON(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleLBsLocked()
	st, status, body := s.lbForChangeLocked(p["id"])
	if st == nil {
		return status, body
	}
	if len(req.ForwardingRules) == 0 {
		return errUnprocessable(msgNoRules)
	}
	rules, msg := s.rulesFromRequestLocked(req.ForwardingRules)
	if msg != "" {
		return errUnprocessable(msg)
	}
	if add {
		all := append(slices.Clone(st.ForwardingRules), rules...)
		if msg := checkRuleSet(all); msg != "" {
			return errUnprocessable(msg)
		}
		st.ForwardingRules = all
		return http.StatusNoContent, nil
	}
	kept := slices.DeleteFunc(slices.Clone(st.ForwardingRules), func(have ForwardingRule) bool {
		return slices.ContainsFunc(rules, func(gone ForwardingRule) bool { return sameRoute(have, gone) })
	})
	if len(kept) == 0 {
		return errUnprocessable(msgNoRules)
	}
	// Removing the https rule an http3 one relies on is refused too.
	if msg := checkRuleSet(kept); msg != "" {
		return errUnprocessable(msg)
	}
	st.ForwardingRules = kept
	return http.StatusNoContent, nil
}

func sameRoute(a, b ForwardingRule) bool {
	return a.EntryProtocol == b.EntryProtocol && a.EntryPort == b.EntryPort &&
		a.TargetProtocol == b.TargetProtocol && a.TargetPort == b.TargetPort
}
