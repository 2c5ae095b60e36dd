package planning

import (
	"fmt"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
)

// recorder keeps the events the drivers record during a plan, per object,
// for the report (a Warning there is what the sync would say of a
// refused or ignored annotation); none is sent to the API server.
type recorder struct {
	mu     sync.Mutex
	events map[string][]Event
}

func newRecorder() *recorder { return &recorder{events: map[string][]Event{}} }

func (r *recorder) Event(obj runtime.Object, typ, reason, msg string) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	k := m.GetNamespace() + "/" + m.GetName()
	r.events[k] = append(r.events[k], Event{Type: typ, Reason: reason, Message: msg})
}

func (r *recorder) Eventf(obj runtime.Object, typ, reason, format string, args ...any) {
	r.Event(obj, typ, reason, fmt.Sprintf(format, args...))
}

func (r *recorder) AnnotatedEventf(obj runtime.Object, _ map[string]string, typ, reason, format string, args ...any) {
	r.Eventf(obj, typ, reason, format, args...)
}

// takeAll returns and forgets the events of every object, by object.
func (r *recorder) takeAll() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	keys := make([]string, 0, len(r.events))
	for k := range r.events {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var out []Event
	for _, k := range keys {
		for _, ev := range r.events[k] {
			ev.Object = k
			out = append(out, ev)
		}
	}
	r.events = map[string][]Event{}
	return out
}

// take returns and forgets the events of one object.
func (r *recorder) take(namespace, name string) []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := namespace + "/" + name
	ev := r.events[k]
	delete(r.events, k)
	return ev
}
