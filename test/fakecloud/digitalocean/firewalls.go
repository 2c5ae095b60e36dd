package digitalocean

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"
)

// Cloud Firewalls (specification/resources/firewalls): list with paging,
// get, create, update (a whole replacement), delete, add and remove rules,
// tags and droplets, and the firewalls of a droplet. The fake's state is
// CloudFirewall; the load balancer's own firewall (allow and deny rules) is
// Firewall, in loadbalancers.go.

// Firewall statuses, as the API spells them.
const (
	FirewallWaiting   = "waiting"
	FirewallSucceeded = "succeeded"
	FirewallFailed    = "failed"
)

// CloudFirewall is the fake's state for one Cloud Firewall.
type CloudFirewall struct {
	ID     string // a UUID
	Name   string
	Status string // FirewallWaiting after a change, then FirewallSucceeded
	// InboundRules' Targets are sources, OutboundRules' destinations.
	InboundRules  []FirewallRule
	OutboundRules []FirewallRule
	DropletIDs    []int
	Tags          []string
	CreatedAt     time.Time
}

// FirewallRule is one inbound or outbound rule, as the API reports it.
type FirewallRule struct {
	Protocol string // tcp, udp or icmp
	// Ports is one port ("80"), a range ("8000-9000") or "0" for all;
	// always "0" for icmp. "all" in a request is stored as "0".
	Ports   string
	Action  string // "allow" (the default) or "deny"
	Targets FirewallTargets
}

// FirewallTargets are a rule's sources or destinations.
type FirewallTargets struct {
	Addresses        []string // IPs or CIDRs
	Tags             []string
	DropletIDs       []int
	LoadBalancerUIDs []string
	KubernetesIDs    []string
}

func (t FirewallTargets) clone() FirewallTargets {
	t.Addresses = slices.Clone(t.Addresses)
	t.Tags = slices.Clone(t.Tags)
	t.DropletIDs = slices.Clone(t.DropletIDs)
	t.LoadBalancerUIDs = slices.Clone(t.LoadBalancerUIDs)
	t.KubernetesIDs = slices.Clone(t.KubernetesIDs)
	return t
}

func (t FirewallTargets) size() int {
	return len(t.Addresses) + len(t.Tags) + len(t.DropletIDs) + len(t.LoadBalancerUIDs) + len(t.KubernetesIDs)
}

func cloneRules(rs []FirewallRule) []FirewallRule {
	out := make([]FirewallRule, len(rs))
	for i, r := range rs {
		r.Targets = r.Targets.clone()
		out[i] = r
	}
	return out
}

func (fw CloudFirewall) clone() CloudFirewall {
	fw.InboundRules = cloneRules(fw.InboundRules)
	fw.OutboundRules = cloneRules(fw.OutboundRules)
	fw.DropletIDs = emptyIfNil(slices.Clone(fw.DropletIDs))
	fw.Tags = emptyIfNil(slices.Clone(fw.Tags))
	return fw
}

// firewallStore is the Server's firewall state, guarded by its mutex.
type firewallStore struct {
	all map[string]*fwState
	seq int
	// delay is how long a firewall stays "waiting" after a change.
	delay time.Duration
}

type fwState struct {
	CloudFirewall
	seq      int       // creation order, the order the API lists them in
	settleAt time.Time // when a waiting firewall has applied its change
}

// SetFirewallSettleDelay sets how long a firewall stays "waiting" (with
// pending changes for its droplets) after a change before turning
// "succeeded". The default, 0, settles it from the next read on.
func (s *Server) SetFirewallSettleDelay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fw.delay = d
}

// AddFirewall stores a firewall as it is and returns it as stored, without
// the API's checks. Unset fields get defaults: a fresh ID, the name
// "firewall-<n>", status "succeeded" and the current time; ports "all"
// become "0" and rules without an action allow. It panics if the ID is
// taken or the status invalid: both are mistakes in the calling test.
func (s *Server) AddFirewall(fw CloudFirewall) CloudFirewall {
	s.mu.Lock()
	defer s.mu.Unlock()
	if fw.ID != "" && s.fw.all[fw.ID] != nil {
		panic(fmt.Sprintf("digitalocean fake: firewall id %s already exists", fw.ID))
	}
	fw.Status = cmp.Or(fw.Status, FirewallSucceeded)
	if !validFirewallStatus(fw.Status) {
		panic(fmt.Sprintf("digitalocean fake: invalid firewall status %q", fw.Status))
	}
	fw.ID = cmp.Or(fw.ID, newUUID())
	fw.Name = cmp.Or(fw.Name, fmt.Sprintf("firewall-%d", s.fw.seq+1))
	if fw.CreatedAt.IsZero() {
		fw.CreatedAt = s.now()
	}
	st := s.storeFirewallLocked(fw)
	// A firewall added "waiting" settles after the delay, as after a change.
	st.settleAt = s.now().Add(s.fw.delay)
	return s.viewFirewallLocked(st)
}

func validFirewallStatus(st string) bool {
	return st == FirewallWaiting || st == FirewallSucceeded || st == FirewallFailed
}

func (s *Server) storeFirewallLocked(fw CloudFirewall) *fwState {
	fw = fw.clone()
	fw.CreatedAt = fw.CreatedAt.UTC().Truncate(time.Second)
	normalizeRules(fw.InboundRules)
	normalizeRules(fw.OutboundRules)
	s.fw.seq++
	st := &fwState{CloudFirewall: fw, seq: s.fw.seq}
	s.fw.all[fw.ID] = st
	return st
}

// normalizeRules spells ports and actions as the API reports them.
func normalizeRules(rs []FirewallRule) {
	for i := range rs {
		if rs[i].Ports == "all" || rs[i].Protocol == "icmp" {
			rs[i].Ports = "0"
		}
		rs[i].Action = cmp.Or(rs[i].Action, "allow")
	}
}

// changedLocked marks a firewall as applying a change.
func (s *Server) changedLocked(st *fwState) {
	st.Status = FirewallWaiting
	st.settleAt = s.now().Add(s.fw.delay)
}

// settleFirewallsLocked finishes the changes whose time has come. As for
// load balancers, state moves lazily on reads.
func (s *Server) settleFirewallsLocked() {
	now := s.now()
	for _, st := range s.fw.all {
		if st.Status == FirewallWaiting && !now.Before(st.settleAt) {
			st.Status = FirewallSucceeded
		}
	}
}

// viewFirewallLocked is a firewall as clients see it: droplets deleted
// since are gone from it, as the API forgets them.
func (s *Server) viewFirewallLocked(st *fwState) CloudFirewall {
	fw := st.CloudFirewall.clone()
	fw.DropletIDs = slices.DeleteFunc(fw.DropletIDs, func(id int) bool { return s.droplets[id] == nil })
	return fw
}

func (s *Server) sortedFirewallsLocked() []*fwState {
	out := make([]*fwState, 0, len(s.fw.all))
	for _, st := range s.fw.all {
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b *fwState) int { return a.seq - b.seq })
	return out
}

// Firewalls returns every firewall, oldest first.
func (s *Server) Firewalls() []CloudFirewall {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleFirewallsLocked()
	out := make([]CloudFirewall, 0, len(s.fw.all))
	for _, st := range s.sortedFirewallsLocked() {
		out = append(out, s.viewFirewallLocked(st))
	}
	return out
}

// Firewall returns the firewall with the given ID.
func (s *Server) Firewall(id string) (CloudFirewall, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleFirewallsLocked()
	st, ok := s.fw.all[id]
	if !ok {
		return CloudFirewall{}, false
	}
	return s.viewFirewallLocked(st), true
}

// EditFirewall changes a firewall as an operator would in the control
// panel, without the API's checks: it goes "waiting" like any change. The
// ID cannot change.
func (s *Server) EditFirewall(id string, edit func(*CloudFirewall)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.fw.all[id]
	if !ok {
		return fmt.Errorf("digitalocean fake: no firewall %s", id)
	}
	c := st.CloudFirewall.clone()
	edit(&c)
	if c.ID != id {
		return fmt.Errorf("digitalocean fake: EditFirewall cannot change the ID")
	}
	c = c.clone()
	normalizeRules(c.InboundRules)
	normalizeRules(c.OutboundRules)
	st.CloudFirewall = c
	s.changedLocked(st)
	return nil
}

// RemoveFirewall deletes a firewall, reporting whether it existed.
func (s *Server) RemoveFirewall(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.fw.all[id]
	delete(s.fw.all, id)
	return ok
}

func (s *Server) registerFirewalls() {
	s.fw.all = map[string]*fwState{}
	s.handle(http.MethodGet, "/v2/firewalls", s.listFirewalls)
	s.handle(http.MethodPost, "/v2/firewalls", s.createFirewall)
	s.handle(http.MethodGet, "/v2/firewalls/{id}", s.getFirewall)
	s.handle(http.MethodPut, "/v2/firewalls/{id}", s.updateFirewall)
	s.handle(http.MethodDelete, "/v2/firewalls/{id}", s.deleteFirewall)
	s.handle(http.MethodPost, "/v2/firewalls/{id}/rules", s.changeFirewallRules(true))
	s.handle(http.MethodDelete, "/v2/firewalls/{id}/rules", s.changeFirewallRules(false))
	s.handle(http.MethodPost, "/v2/firewalls/{id}/tags", changeFirewallList(s, firewallTagList, true))
	s.handle(http.MethodDelete, "/v2/firewalls/{id}/tags", changeFirewallList(s, firewallTagList, false))
	s.handle(http.MethodPost, "/v2/firewalls/{id}/droplets", changeFirewallList(s, firewallDropletList, true))
	s.handle(http.MethodDelete, "/v2/firewalls/{id}/droplets", changeFirewallList(s, firewallDropletList, false))
	s.handle(http.MethodGet, "/v2/droplets/{id}/firewalls", s.listDropletFirewalls)
}

// listFirewalls: GET /v2/firewalls[?page&per_page], oldest first.
func (s *Server) listFirewalls(r *http.Request, _ params) (int, any) {
	return s.firewallPage(r, func(*fwState) bool { return true })
}

// listDropletFirewalls: GET /v2/droplets/{id}/firewalls, the firewalls
// that apply to the droplet, by ID or by one of its tags.
func (s *Server) listDropletFirewalls(r *http.Request, p params) (int, any) {
	id, err := strconv.Atoi(p["id"])
	s.mu.Lock()
	d := s.droplets[id]
	var tags []string
	if d != nil {
		tags = slices.Clone(d.Tags)
	}
	s.mu.Unlock()
	if err != nil || d == nil {
		return errNotFound()
	}
	return s.firewallPage(r, func(st *fwState) bool {
		return slices.Contains(st.DropletIDs, id) || slices.ContainsFunc(st.Tags, func(t string) bool { return slices.Contains(tags, t) })
	})
}

func (s *Server) firewallPage(r *http.Request, keep func(*fwState) bool) (int, any) {
	pg := parsePaging(r.URL.Query())
	s.mu.Lock()
	s.settleFirewallsLocked()
	var all []wireFirewall
	for _, st := range s.sortedFirewallsLocked() {
		if keep(st) {
			all = append(all, s.wireFirewallLocked(st))
		}
	}
	s.mu.Unlock()
	lo, hi := pg.window(len(all))
	page := all[lo:hi]
	if page == nil {
		page = []wireFirewall{}
	}
	return http.StatusOK, &firewallsRoot{Firewalls: page, Links: pg.links(r, len(all)), Meta: wireMeta{Total: len(all)}}
}

// getFirewall: GET /v2/firewalls/{id}.
func (s *Server) getFirewall(_ *http.Request, p params) (int, any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleFirewallsLocked()
	st, ok := s.fw.all[p["id"]]
	if !ok {
		return errNotFound()
	}
	return http.StatusOK, &firewallRoot{Firewall: s.wireFirewallLocked(st)}
}

// createFirewall: POST /v2/firewalls. Answers 202 with the firewall
// "waiting" while its rules reach the droplets.
func (s *Server) createFirewall(r *http.Request, _ params) (int, any) {
	var req firewallRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		return errNotJSON(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	fw, msg := s.firewallFromRequestLocked(&req)
	if msg != "" {
		return errUnprocessable(msg)
	}
	fw.ID, fw.CreatedAt = newUUID(), s.now()
	st := s.storeFirewallLocked(fw)
	s.changedLocked(st)
	return http.StatusAccepted, &firewallRoot{Firewall: s.wireFirewallLocked(st)}
}

// updateFirewall: PUT /v2/firewalls/{id}, a whole replacement: rules,
// droplets and tags left out are removed, as the reference warns.
func (s *Server) updateFirewall(r *http.Request, p params) (int, any) {
	var req firewallRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		return errNotJSON(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.fw.all[p["id"]]
	if !ok {
		return errNotFound()
	}
	fw, msg := s.firewallFromRequestLocked(&req)
	if msg != "" {
		return errUnprocessable(msg)
	}
	fw.ID, fw.CreatedAt = st.ID, st.CreatedAt
	st.CloudFirewall = fw
	s.changedLocked(st)
	return http.StatusOK, &firewallRoot{Firewall: s.wireFirewallLocked(st)}
}

// deleteFirewall: DELETE /v2/firewalls/{id}, 204 without a body.
func (s *Server) deleteFirewall(_ *http.Request, p params) (int, any) {
	if !s.RemoveFirewall(p["id"]) {
		return errNotFound()
	}
	return http.StatusNoContent, nil
}

// changeFirewallRules: POST and DELETE /v2/firewalls/{id}/rules, 204.
// Removing matches rules on protocol, ports, action and targets; rules
// the firewall lacks are ignored.
func (s *Server) changeFirewallRules(add bool) handlerFunc {
	return func(r *http.Request, p params) (int, any) {
		var req firewallRulesRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			return errNotJSON(err)
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		st, ok := s.fw.all[p["id"]]
		if !ok {
			return errNotFound()
		}
		in, out, msg := s.fwRulesFromRequestLocked(req.InboundRules, req.OutboundRules)
		if msg != "" {
			return errUnprocessable(msg)
		}
		if len(in)+len(out) == 0 {
			return errUnprocessable("at least one inbound or outbound rule is required")
		}
		if add {
			if n := len(st.InboundRules) + len(st.OutboundRules) + len(in) + len(out); n > maxFirewallRules {
				return errUnprocessable(fmt.Sprintf("a firewall can have at most %d rules; this would make %d", maxFirewallRules, n))
			}
			st.InboundRules = append(st.InboundRules, in...)
			st.OutboundRules = append(st.OutboundRules, out...)
		} else {
			st.InboundRules = slices.DeleteFunc(st.InboundRules, func(have FirewallRule) bool {
				return slices.ContainsFunc(in, func(gone FirewallRule) bool { return sameFirewallRule(have, gone) })
			})
			st.OutboundRules = slices.DeleteFunc(st.OutboundRules, func(have FirewallRule) bool {
				return slices.ContainsFunc(out, func(gone FirewallRule) bool { return sameFirewallRule(have, gone) })
			})
		}
		s.changedLocked(st)
		return http.StatusNoContent, nil
	}
}

// firewallList is one of a firewall's lists that the API changes by
// adding or removing members: its tags or its droplets.
type firewallList[T comparable] struct {
	key   string // the request's JSON key
	what  string // for the error message
	field func(*fwState) *[]T
	check func(s *Server, v []T) ([]T, string)
}

var (
	firewallTagList = firewallList[string]{key: "tags", what: "tag",
		field: func(st *fwState) *[]string { return &st.Tags },
		check: func(_ *Server, v []string) ([]string, string) { return checkFirewallTags(v) }}
	firewallDropletList = firewallList[int]{key: "droplet_ids", what: "droplet",
		field: func(st *fwState) *[]int { return &st.DropletIDs },
		check: (*Server).checkFirewallDropletsLocked}
)

// changeFirewallList serves POST (add) and DELETE (remove) of
// /v2/firewalls/{id}/tags and /droplets: 204.
func changeFirewallList[T comparable](s *Server, l firewallList[T], add bool) handlerFunc {
	return func(r *http.Request, p params) (int, any) {
		var req map[string][]T
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			return errNotJSON(err)
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		st, ok := s.fw.all[p["id"]]
		if !ok {
			return errNotFound()
		}
		given := req[l.key]
		if len(given) == 0 {
			return errUnprocessable("at least one " + l.what + " is required")
		}
		list := slices.Clone(*l.field(st))
		if add {
			list = append(list, given...)
		} else {
			list = slices.DeleteFunc(list, func(v T) bool { return slices.Contains(given, v) })
		}
		list, msg := l.check(s, list)
		if msg != "" {
			return errUnprocessable(msg)
		}
		*l.field(st) = list
		s.changedLocked(st)
		return http.StatusNoContent, nil
	}
}

// Firewall documents (models/firewall.yml, firewall_rule.yml). Targets
// carry only the lists that are set, as the reference's examples show.

type wireFirewallTarget struct {
	Addresses        []string `json:"addresses,omitempty"`
	DropletIDs       []int    `json:"droplet_ids,omitempty"`
	LoadBalancerUIDs []string `json:"load_balancer_uids,omitempty"`
	KubernetesIDs    []string `json:"kubernetes_ids,omitempty"`
	Tags             []string `json:"tags,omitempty"`
}

type wireInboundRule struct {
	Protocol string              `json:"protocol"`
	Ports    string              `json:"ports"`
	Action   string              `json:"action,omitempty"`
	Sources  *wireFirewallTarget `json:"sources"`
}

type wireOutboundRule struct {
	Protocol     string              `json:"protocol"`
	Ports        string              `json:"ports"`
	Action       string              `json:"action,omitempty"`
	Destinations *wireFirewallTarget `json:"destinations"`
}

type wirePendingChange struct {
	DropletID int    `json:"droplet_id"`
	Removing  bool   `json:"removing"`
	Status    string `json:"status"`
}

type wireFirewall struct {
	ID             string              `json:"id"`
	Name           string              `json:"name"`
	Status         string              `json:"status"`
	InboundRules   []wireInboundRule   `json:"inbound_rules"`
	OutboundRules  []wireOutboundRule  `json:"outbound_rules"`
	CreatedAt      string              `json:"created_at"`
	DropletIDs     []int               `json:"droplet_ids"`
	Tags           []string            `json:"tags"`
	PendingChanges []wirePendingChange `json:"pending_changes"`
}

type firewallsRoot struct {
	Firewalls []wireFirewall `json:"firewalls"`
	Links     wireLinks      `json:"links"`
	Meta      wireMeta       `json:"meta"`
}

type firewallRoot struct {
	Firewall wireFirewall `json:"firewall"`
}

func wireTargetOf(t FirewallTargets) *wireFirewallTarget {
	t = t.clone()
	return &wireFirewallTarget{Addresses: t.Addresses, DropletIDs: t.DropletIDs, LoadBalancerUIDs: t.LoadBalancerUIDs, KubernetesIDs: t.KubernetesIDs, Tags: t.Tags}
}

// wireFirewallLocked renders a firewall as the API does. While it is
// waiting, pending_changes names each droplet it applies to (by ID or
// tag); once it has succeeded, the list is empty.
func (s *Server) wireFirewallLocked(st *fwState) wireFirewall {
	fw := s.viewFirewallLocked(st)
	w := wireFirewall{
		ID: fw.ID, Name: fw.Name, Status: fw.Status,
		InboundRules: []wireInboundRule{}, OutboundRules: []wireOutboundRule{},
		CreatedAt:  fw.CreatedAt.UTC().Format(time.RFC3339),
		DropletIDs: fw.DropletIDs, Tags: fw.Tags, PendingChanges: []wirePendingChange{},
	}
	for _, r := range fw.InboundRules {
		w.InboundRules = append(w.InboundRules, wireInboundRule{Protocol: r.Protocol, Ports: r.Ports, Action: r.Action, Sources: wireTargetOf(r.Targets)})
	}
	for _, r := range fw.OutboundRules {
		w.OutboundRules = append(w.OutboundRules, wireOutboundRule{Protocol: r.Protocol, Ports: r.Ports, Action: r.Action, Destinations: wireTargetOf(r.Targets)})
	}
	if fw.Status == FirewallWaiting {
		for _, d := range s.sortedLocked() {
			if slices.Contains(fw.DropletIDs, d.ID) || slices.ContainsFunc(fw.Tags, func(t string) bool { return slices.Contains(d.Tags, t) }) {
				w.PendingChanges = append(w.PendingChanges, wirePendingChange{DropletID: d.ID, Status: FirewallWaiting})
			}
		}
	}
	return w
}
