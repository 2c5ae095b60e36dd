package planning

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/polyccm/polyccm/core/driver"
)

// Report is a plan: what polyccm would do, per Service and per Node, and
// what it found that no Service owns. Its JSON form (-o json) is for
// scripts; its field names are stable.
type Report struct {
	Driver   string            `json:"driver"`
	Cluster  string            `json:"cluster"`
	Services []ServicePlan     `json:"services"`
	Nodes    []NodePlan        `json:"nodes"`
	Unowned  []UnownedResource `json:"unowned"`
	// Tasks are what the driver's own loops (driver.Task: DigitalOcean's
	// public-access firewall) would change on their first pass.
	Tasks []TaskPlan `json:"tasks,omitempty"`
	Notes []string   `json:"notes,omitempty"`
	// Facts are what the driver resolved from the cloud (driver.FactsCloud).
	Facts []driver.Fact `json:"facts,omitempty"`
	// CloudReads counts the cloud API calls the plan made (all reads);
	// RefusedCloudCalls lists those it refused to make, and
	// KubernetesWrites the writes it recorded instead of sending: what the
	// syncs tried, for the record (each is also under its Service).
	CloudReads        int64    `json:"cloudReads"`
	RefusedCloudCalls []string `json:"refusedCloudCalls"`
	KubernetesWrites  []string `json:"kubernetesWrites"`
	// Blocking says why the switch would break a Service that works
	// now (exit status 2); Incomplete, what the plan could not decide
	// (exit status 1).
	Blocking   []string `json:"blocking"`
	Incomplete []string `json:"incomplete"`
}

// ServicePlan is what the first sync after the switch does to one Service.
type ServicePlan struct {
	Service string `json:"service"`
	// Action is adopt, update, create, delete, wait, refuse, skip, error
	// or nothing.
	Action    string       `json:"action"`
	Addresses []string     `json:"addresses"`
	Changes   []PlanChange `json:"changes,omitempty"`
	Writes    []string     `json:"kubernetesWrites,omitempty"`
	Events    []Event      `json:"events,omitempty"`
	Message   string       `json:"message,omitempty"`
}

// PlanChange is one cloud resource to create, update or delete.
type PlanChange struct {
	Action string      `json:"action"`
	Kind   string      `json:"kind"`
	Name   string      `json:"name"`
	Fields []PlanField `json:"fields,omitempty"`
}

// PlanField is one field an update changes.
type PlanField struct {
	Name string `json:"name"`
	From string `json:"from"`
	To   string `json:"to"`
}

// Event is one the sync would record on the Service (or, for a task, on
// Object).
type Event struct {
	Object  string `json:"object,omitempty"` // namespace/name
	Type    string `json:"type"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// TaskPlan is what one of the driver's own loops would do on its first
// pass after the switch.
type TaskPlan struct {
	Task string `json:"task"`
	// Action is change, nothing or error.
	Action  string       `json:"action"`
	Changes []PlanChange `json:"changes,omitempty"`
	Writes  []string     `json:"kubernetesWrites,omitempty"`
	Events  []Event      `json:"events,omitempty"`
	Message string       `json:"message,omitempty"`
}

// NodePlan is what the node controllers would do to one Node.
type NodePlan struct {
	Node       string `json:"node"`
	Action     string `json:"action"` // initialize, unresolved, taint, delete, keep
	ProviderID string `json:"providerID,omitempty"`
	Message    string `json:"message,omitempty"`
}

// UnownedResource is a cloud load balancer made for this cluster that no
// Service owns. polyccm never deletes it; the operator decides.
type UnownedResource struct {
	Kind      string   `json:"kind"`
	Name      string   `json:"name"`
	ID        string   `json:"id,omitempty"`
	Service   string   `json:"service,omitempty"`
	Addresses []string `json:"addresses,omitempty"`
	Why       string   `json:"why"`
}

// decide fills Blocking and Incomplete.
func (r *Report) decide() {
	for _, s := range r.Services {
		has := len(s.Addresses) > 0
		switch {
		case s.Action == Create && has:
			r.Blocking = append(r.Blocking, fmt.Sprintf("Service %s has the address %s, but polyccm would create a new load balancer for it: the one serving it now is not found under the name, tags or ID polyccm looks for. Check the driver config (cluster name, region, project) against the CCM it replaces", s.Service, strings.Join(s.Addresses, ",")))
		case s.Action == Refuse && has:
			r.Blocking = append(r.Blocking, fmt.Sprintf("Service %s has the address %s, but polyccm would refuse to sync it (%s): it would keep its load balancer but follow no change", s.Service, strings.Join(s.Addresses, ","), s.Message))
		case s.Action == Failed:
			r.Incomplete = append(r.Incomplete, "Service "+s.Service+": "+s.Message)
		}
	}
	for _, t := range r.Tasks {
		if t.Action == Failed {
			r.Incomplete = append(r.Incomplete, "task "+t.Task+": "+t.Message)
		}
	}
	for _, n := range r.Nodes {
		if n.Action == Unresolved && n.ProviderID != "" {
			r.Incomplete = append(r.Incomplete, "Node "+n.Node+": "+n.Message)
		}
	}
}

// ExitCode is 2 when the switch would break a Service, 1 when the plan is
// incomplete, 0 otherwise.
func (r *Report) ExitCode() int {
	switch {
	case len(r.Blocking) > 0:
		return 2
	case len(r.Incomplete) > 0:
		return 1
	}
	return 0
}

// WriteJSON writes the report for scripts.
func (r *Report) WriteJSON(w io.Writer) error {
	norm := *r
	for _, p := range []*[]string{&norm.RefusedCloudCalls, &norm.KubernetesWrites, &norm.Blocking, &norm.Incomplete} {
		if *p == nil {
			*p = []string{}
		}
	}
	if norm.Services == nil {
		norm.Services = []ServicePlan{}
	}
	if norm.Nodes == nil {
		norm.Nodes = []NodePlan{}
	}
	if norm.Unowned == nil {
		norm.Unowned = []UnownedResource{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(norm)
}

// WriteTable writes the report for people: Services, Nodes (all but the
// ones left as they are, counted), what no Service owns, and the verdict.
func (r *Report) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "polyccm plan: driver %s, cluster %s (read-only: %d cloud reads, no change made)\n\n", r.Driver, r.Cluster, r.CloudReads)
	if len(r.Facts) > 0 {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "RESOLVED\tVALUE\tFROM")
		for _, f := range r.Facts {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", f.Name, orDash(f.Value), orDash(f.Source))
		}
		tw.Flush()
		fmt.Fprintln(w)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVICE\tACTION\tADDRESSES\tDETAILS")
	for _, s := range r.Services {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.Service, s.Action, orDash(strings.Join(s.Addresses, ",")), orDash(s.details()))
	}
	if len(r.Services) == 0 {
		fmt.Fprintln(tw, "(no LoadBalancer Service)\t\t\t")
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tACTION\tPROVIDER ID\tDETAILS")
	kept := 0
	for _, n := range r.Nodes {
		if n.Action == Keep && n.Message == "" {
			kept++
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", n.Node, n.Action, orDash(n.ProviderID), orDash(n.Message))
	}
	fmt.Fprintf(tw, "(%d more Nodes: keep)\t\t\t\n", kept)
	tw.Flush()
	if len(r.Unowned) > 0 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "UNOWNED CLOUD RESOURCE\tNAME\tWHY")
		for _, u := range r.Unowned {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", u.Kind, u.Name, u.Why)
		}
		tw.Flush()
	}
	if len(r.Tasks) > 0 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TASK\tACTION\tDETAILS")
		for _, t := range r.Tasks {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", t.Task, t.Action, orDash(t.details()))
		}
		tw.Flush()
	}
	for _, n := range r.Notes {
		fmt.Fprintln(w, "note:", n)
	}
	fmt.Fprintln(w)
	switch {
	case len(r.Blocking) > 0:
		fmt.Fprintln(w, "NOT SAFE TO SWITCH:")
		for _, b := range r.Blocking {
			fmt.Fprintln(w, "  -", b)
		}
	case len(r.Incomplete) > 0:
		fmt.Fprintln(w, "INCOMPLETE: the plan could not decide:")
		for _, b := range r.Incomplete {
			fmt.Fprintln(w, "  -", b)
		}
		fmt.Fprintln(w, "Fix what is named above (or wait out the cloud's errors) and plan again.")
	default:
		fmt.Fprintf(w, "Safe to switch: no Service with an address gets a new load balancer (%s).\n", r.summary())
	}
	return nil
}

func (s ServicePlan) details() string {
	return details(s.Message, s.Changes, s.Events, s.Writes)
}

func (t TaskPlan) details() string {
	return details(t.Message, t.Changes, t.Events, t.Writes)
}

func details(msg string, changes []PlanChange, events []Event, writes []string) string {
	var parts []string
	if msg != "" {
		parts = append(parts, msg)
	}
	for _, c := range changes {
		d := c.Action + " " + c.Kind + " " + c.Name
		if len(c.Fields) > 0 {
			var fs []string
			for _, f := range c.Fields {
				fs = append(fs, f.Name+": "+f.From+" -> "+f.To)
			}
			d += " (" + strings.Join(fs, "; ") + ")"
		}
		parts = append(parts, d)
	}
	for _, e := range events {
		if e.Type != "Normal" {
			on := ""
			if e.Object != "" {
				on = " on " + e.Object
			}
			parts = append(parts, e.Type+" "+e.Reason+on+": "+e.Message)
		}
	}
	if len(writes) > 0 {
		parts = append(parts, "Kubernetes: "+strings.Join(writes, ", "))
	}
	return strings.Join(parts, "; ")
}

// summary counts Services per action: "3 adopt, 1 update".
func (r *Report) summary() string {
	count := map[string]int{}
	for _, s := range r.Services {
		count[s.Action]++
	}
	keys := make([]string, 0, len(count))
	for k := range count {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d %s", count[k], k))
	}
	if len(parts) == 0 {
		return "no LoadBalancer Service"
	}
	return strings.Join(parts, ", ")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
