package loadbalancers

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// Observed is what a driver read of the cloud for one sync, before any
// plan. Core holds its Claims to the ownership rule, in order, and calls
// the driver's Plan only when none is refused: a refusal comes before any
// change, whichever driver it is, with one wording.
type Observed struct {
	// LoadBalancer names the load balancer in logs.
	LoadBalancer string
	// Claims are what the sync would change or publish, judged in order;
	// the first refusal ends the sync.
	Claims []Claim
	// State is the driver's reading, handed back to its Plan.
	State any
	// Halt, when set, is what stopped the observation after some claims
	// (a read that failed, invalid settings): core judges the claims
	// first, so that a refusal of what was read before still comes first,
	// then returns Halt's error instead of planning.
	Halt func() error
}

// Claim is one question for the ownership rule. Exactly one of Resource
// and Address is set.
type Claim struct {
	// Resource is a cloud resource the sync would change (Check).
	Resource *Resource
	// ReadOnly: the sync only reports what Resource publishes (a Service
	// that disowns its load balancer), so no record is written for it.
	ReadOnly bool
	// Address is addresses the Service asks for.
	Address *AddressClaim
}

// ResourceClaim claims r.
func ResourceClaim(r Resource) Claim { return Claim{Resource: &r} }

// AddressClaim is addresses a Service asks for (IPs, allocation IDs),
// which no load balancer of a Service in another namespace may hold
// (CheckAddresses), nor any cloud resource that is not this Service's or
// its namespace's (Users).
type AddressClaim struct {
	// Via is how the Service asks for them: "spec.loadBalancerIP".
	Via string
	// Want are the addresses.
	Want []string
	// Held returns what another Service's load balancer holds: its status
	// addresses (StatusAddresses), say.
	Held func(*v1.Service) []string
	// Users are the cloud resources already using the addresses, as the
	// cloud lists them (the users of a reserved GCE address).
	Users []AddressUser
}

// AddressUser is a cloud resource that already uses an address a Service
// asks for. It may share it only if its name was derived from the UID of a
// Service in the same namespace (one tenant: a TCP and a UDP Service on
// one address, as upstream CCMs allow).
type AddressUser struct {
	// Address names the address as the cloud does, for messages:
	// "GCE address 203.0.113.7".
	Address string
	// Holder names what holds it: "the reserved address web-ip".
	Holder string
	// Kind and Name name the user: "forwarding rule", "a3f...".
	Kind, Name string
}

// Judgement is the rule's answers to one sync's claims, and the rule for
// what turns up while the plan is applied.
type Judgement struct {
	own     *Ownership
	svc     *v1.Service
	adopted map[string]bool
}

func claimKey(r Resource) string { return r.Kind + "\x00" + r.ID }

// Adopted reports whether the claimed r was adopted (nobody's, and
// adopting is allowed): the driver marks it as the Service's where the
// cloud can carry marks.
func (j *Judgement) Adopted(r Resource) bool { return j != nil && j.adopted[claimKey(r)] }

// Found holds to the rule a resource that turned up while applying (made
// meanwhile, or a create whose answer was lost): the same rule as for a
// claim, with the same event on a refusal.
func (j *Judgement) Found(ctx context.Context, r Resource) (Verdict, error) {
	if j == nil || j.own == nil {
		return Refused, errors.New("no ownership rule to judge " + r.describe())
	}
	v, err := j.own.Check(ctx, j.svc, r)
	if err == nil && v == Adopted {
		j.adopted[claimKey(r)] = true
	}
	return v, err
}

// MayDelete holds to the rule, before the plan deletes it, a claimed
// resource the sync no longer needs (a group the load balancer let go
// of): only one marked as the Service's may go; one only adopted stays,
// with a Warning event saying why, as in a deletion.
func (j *Judgement) MayDelete(ctx context.Context, r Resource) (bool, error) {
	if j == nil || j.own == nil {
		return false, errors.New("no ownership rule to judge " + r.describe())
	}
	return j.own.CheckDelete(ctx, j.svc, r)
}

// Record keeps on the Service that r is its own, before r is made, for a
// cloud whose load balancers cannot carry marks (see Ownership.Record).
func (j *Judgement) Record(ctx context.Context, r Resource) error {
	if j == nil || j.own == nil {
		return errors.New("no ownership rule to record " + r.describe())
	}
	return j.own.Record(ctx, j.svc, r)
}

// judge holds obs's claims to the rule, in order; the first refusal is
// returned (after its Warning event) and nothing further is asked.
func (ow *Ownership) judge(ctx context.Context, svc *v1.Service, obs *Observed) (*Judgement, error) {
	j := &Judgement{own: ow, svc: svc, adopted: map[string]bool{}}
	for _, c := range obs.Claims {
		switch {
		case c.Resource != nil && c.ReadOnly:
			if _, err := ow.Verify(ctx, svc, *c.Resource); err != nil {
				return nil, err
			}
		case c.Resource != nil:
			v, err := ow.Check(ctx, svc, *c.Resource)
			if err != nil {
				return nil, err
			}
			if v == Adopted {
				j.adopted[claimKey(*c.Resource)] = true
			}
		case c.Address != nil:
			if err := ow.claimAddresses(ctx, svc, c.Address); err != nil {
				return nil, err
			}
		}
	}
	return j, nil
}

// claimAddresses applies CheckAddresses, then refuses a user of the
// addresses that is not the Service's or its namespace's.
func (ow *Ownership) claimAddresses(ctx context.Context, svc *v1.Service, a *AddressClaim) error {
	held := a.Held
	if held == nil {
		held = StatusAddresses
	}
	if err := ow.CheckAddresses(ctx, svc, a.Via, a.Want, held); err != nil {
		return err
	}
	for _, u := range a.Users {
		if mark := UIDMark(u.Name); mark != "" {
			o, err := ow.ServiceByUIDMark(ctx, mark)
			if err != nil {
				return err
			}
			if o != nil && o.Namespace == svc.Namespace {
				continue
			}
		}
		return ow.Refuse(svc, u.Address, fmt.Sprintf("%s is used by %s %s, which is not this Service's", u.Holder, u.Kind, u.Name),
			"change "+a.Via+" to an address no other load balancer uses")
	}
	return nil
}

// Deletion is what deleting a Service's load balancer would delete, read
// from the cloud: steps in order, each deleting one thing. Core holds each
// step's Guard to the rule first; a step whose guard is refused is skipped
// with a Warning event saying why, and the Service may still go.
type Deletion struct {
	Steps []DeleteStep
}

// DeleteStep is one step of a Deletion.
type DeleteStep struct {
	// Guard is the resource the step deletes; nil for a step that
	// deletes only what is the Service's by construction (rules named
	// after its load balancer, target groups confirmed by their tags).
	Guard *Resource
	// StopIfRefused: the steps after this one depend on it, so a refused
	// guard ends the deletion (successfully: what is not the Service's
	// stays, and so does what hangs on it).
	StopIfRefused bool
	// Run deletes. A definitive "not found" is success.
	Run func(ctx context.Context) error
}

// Add appends a step.
func (d *Deletion) Add(s DeleteStep) { d.Steps = append(d.Steps, s) }

// FailAfter ends a deletion whose reading failed after some steps: they
// run first, and the deletion then fails, as when each read came right
// before what depends on it was deleted. With no steps it fails at once.
func (d *Deletion) FailAfter(err error) (*Deletion, error) {
	if len(d.Steps) == 0 {
		return nil, err
	}
	d.Add(DeleteStep{Run: func(context.Context) error { return err }})
	return d, nil
}

// delete runs the steps whose guards allow it; the first error stops.
func (ow *Ownership) delete(ctx context.Context, svc *v1.Service, d *Deletion) error {
	for _, s := range d.Steps {
		if s.Guard != nil {
			ok, err := ow.CheckDelete(ctx, svc, *s.Guard)
			if err != nil {
				return err
			}
			if !ok {
				if s.StopIfRefused {
					klog.V(2).InfoS("Deletion stops at a resource that is not the Service's", "service", klog.KObj(svc), "resource", s.Guard.describe())
					return nil
				}
				continue
			}
		}
		if err := s.Run(ctx); err != nil {
			return err
		}
	}
	return nil
}
