package runner

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/polyccm/polyccm/core/redact"
)

// safeEvents wraps the recorder polyccm's own code records events with:
// the drivers (driver.Deps.Recorder) and polyccm's controllers. Every
// message goes through redact.Event, wherever it was made: a driver's
// message can quote a Service's huge annotation value or a cloud's error
// with its request ID, new on every retry, which would keep equal events
// from folding into one. What redact.Event leaves out is logged.
func safeEvents(rec record.EventRecorder) record.EventRecorder { return safeRecorder{rec} }

type safeRecorder struct{ rec record.EventRecorder }

func (r safeRecorder) Event(obj runtime.Object, typ, reason, msg string) {
	r.rec.Event(obj, typ, reason, shown(obj, reason, msg))
}

func (r safeRecorder) Eventf(obj runtime.Object, typ, reason, format string, args ...any) {
	r.Event(obj, typ, reason, fmt.Sprintf(format, args...))
}

func (r safeRecorder) AnnotatedEventf(obj runtime.Object, annotations map[string]string, typ, reason, format string, args ...any) {
	r.rec.AnnotatedEventf(obj, annotations, typ, reason, "%s", shown(obj, reason, fmt.Sprintf(format, args...)))
}

// shown is msg as the event carries it; msg is logged whole when that
// differs.
func shown(obj runtime.Object, reason, msg string) string {
	out := redact.Event(msg)
	if out != msg {
		var ref klog.ObjectRef
		if m, err := meta.Accessor(obj); err == nil {
			ref = klog.KObj(m)
		}
		klog.InfoS("Event message shortened; the whole message", "object", ref, "reason", reason, "message", msg)
	}
	return out
}
