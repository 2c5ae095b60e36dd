package loadbalancers

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ConditionType is the Service status condition in which polyccm records
// which cloud load balancer is the Service's own, for clouds whose load
// balancers cannot carry a mark polyccm can read back. A status is written
// only by controllers, never by whoever may edit the Service, so the
// record cannot be forged the way an annotation can.
const ConditionType = "polyccm.io/LoadBalancer"

// conditionReason is the record's reason.
const conditionReason = "Owned"

// Record writes on svc's status that r is its own. r may lack an ID: that
// records the name of a load balancer about to be created, so that if the
// create's outcome is unknown, the next pass recognizes what it made.
func (ow *Ownership) Record(ctx context.Context, svc *v1.Service, r Resource) error {
	kube, err := ow.client()
	if err != nil {
		return err
	}
	cond := metav1.Condition{
		Type:               ConditionType,
		Status:             metav1.ConditionTrue,
		Reason:             conditionReason,
		Message:            recordMessage(ow.o.Cloud, r),
		LastTransitionTime: metav1.Now(),
		ObservedGeneration: svc.Generation,
	}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []metav1.Condition{cond}}})
	if err != nil {
		return err
	}
	if _, err := kube.CoreV1().Services(svc.Namespace).Patch(ctx, svc.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{FieldManager: "polyccm"}, "status"); err != nil {
		return fmt.Errorf("recording %s as Service %s/%s's own: %w", r.describe(), svc.Namespace, svc.Name, err)
	}
	return nil
}

// recordMessage says what the record holds, readable by people and by
// recordOf: "polyccm manages this Service's DigitalOcean load balancer
// id=<id> name=<name>".
func recordMessage(cloud string, r Resource) string {
	return fmt.Sprintf("polyccm manages this Service's %s %s id=%s name=%s", cloud, r.Kind, r.ID, r.Name)
}

// recordOf reads polyccm's record on svc: the ID and name of its own load
// balancer (the ID empty while it is being created).
func recordOf(svc *v1.Service) (id, name string, ok bool) {
	for _, c := range svc.Status.Conditions {
		if c.Type != ConditionType || c.Status != metav1.ConditionTrue || c.Reason != conditionReason {
			continue
		}
		for _, f := range strings.Fields(c.Message) {
			if v, found := strings.CutPrefix(f, "id="); found {
				id = v
			}
			if v, found := strings.CutPrefix(f, "name="); found {
				name = v
			}
		}
		return id, name, id != "" || name != ""
	}
	return "", "", false
}

// recordMatches reports whether svc's record names r: by ID, or, for a
// record made before the create, by name.
func recordMatches(svc *v1.Service, r Resource) bool {
	id, name, ok := recordOf(svc)
	switch {
	case !ok:
		return false
	case id != "":
		return id == r.ID
	}
	return name != "" && name == r.Name
}

// recordHolds reports whether svc's record names r by its ID, so nothing
// needs writing.
func recordHolds(svc *v1.Service, r Resource) bool {
	id, _, ok := recordOf(svc)
	return ok && id == r.ID
}
