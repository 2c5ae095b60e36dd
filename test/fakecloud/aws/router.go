package aws

import (
	"cmp"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/polyccm/polyccm/test/fakecloud/fakehttp"

	"github.com/polyccm/polyccm/test/fakecloud/faults"
)

// service describes one query-protocol API the fake serves.
type service struct {
	name        string // in endpoint keys: "ec2", "elb", "elbv2", "sts"
	prefix      string // path prefix of its BaseEndpoint
	signingName string // SigV4 credential scope service
	iamPrefix   string // IAM action prefix, "ec2:", ...
	version     string
	namespace   string
	ec2Style    bool // the EC2 query protocol rather than the AWS query protocol
	actions     map[string]actionFunc
}

// actionFunc serves one action with s.mu held. For EC2 the output is an
// ec2Output; for the AWS query services it is the <ActionResult> content,
// nil for an empty one.
type actionFunc func(s *Server, c *call) (any, *apiError)

// call is one authenticated request to an action.
type call struct {
	action string
	p      params
	caller *credential
	now    time.Time
}

var (
	ec2Service = &service{
		name: "ec2", prefix: "/ec2/", signingName: "ec2", iamPrefix: "ec2:",
		version: "2016-11-15", namespace: ec2Namespace, ec2Style: true,
	}
	// classicService is the Classic Load Balancer API, ELB API version 1.
	classicService = &service{
		name: "elb", prefix: "/elb/", signingName: "elasticloadbalancing", iamPrefix: "elasticloadbalancing:",
		version: "2012-06-01", namespace: "http://elasticloadbalancing.amazonaws.com/doc/2012-06-01/",
	}
	elbService = &service{
		name: "elbv2", prefix: "/elbv2/", signingName: "elasticloadbalancing", iamPrefix: "elasticloadbalancing:",
		version: "2015-12-01", namespace: "http://elasticloadbalancing.amazonaws.com/doc/2015-12-01/",
	}
	stsService = &service{
		name: "sts", prefix: "/sts/", signingName: "sts", iamPrefix: "sts:",
		version: "2011-06-15", namespace: "https://sts.amazonaws.com/doc/2011-06-15/",
	}
	services = []*service{ec2Service, classicService, elbService, stsService}
)

func init() {
	ec2Service.actions = ec2Actions()
	classicService.actions = classicActions()
	elbService.actions = elbActions()
	stsService.actions = stsActions()
}

// serviceFor picks the service by path prefix, or at "/" by Version.
func serviceFor(path, version string) *service {
	for _, svc := range services {
		if path+"/" == svc.prefix || strings.HasPrefix(path, svc.prefix) {
			return svc
		}
	}
	if path == "/" || path == "" {
		for _, svc := range services {
			if svc.version == version {
				return svc
			}
		}
	}
	return nil
}

// maxBody bounds request bodies; the services refuse far smaller ones.
const maxBody = 1 << 20

// ServeHTTP serves IMDS under /latest/ and the query APIs elsewhere.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/latest" || strings.HasPrefix(r.URL.Path, "/latest/") {
		s.serveIMDS(w, r)
		return
	}
	s.serveQuery(w, r)
}

// serveQuery takes a query-protocol request through fault injection,
// authentication, authorization and the action, in that order: injected
// failures stand for trouble in front of the API, so they win over bad
// credentials, and bad credentials win over an unknown action.
func (s *Server) serveQuery(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, maxBody))
	form := url.Values{}
	if r.Method == http.MethodPost {
		form, _ = url.ParseQuery(string(body))
	}
	for k, vs := range r.URL.Query() {
		form[k] = append(form[k], vs...)
	}
	action := form.Get("Action")
	svc := serviceFor(r.URL.Path, form.Get("Version"))
	svcName := "unknown"
	if svc != nil {
		svcName = svc.name
	}
	endpoint := svcName + " " + cmp.Or(action, "-")
	requestID := fakehttp.RequestID()

	d, r, done := s.srv.Intercept(r, endpoint)
	defer done()
	var status int
	if svc == nil {
		status = writeUnknownService(w, action, form.Get("Version"), requestID)
	} else {
		status = s.answer(&settlingWriter{ResponseWriter: w, s: s}, r, svc, body, newParams(form), action, d, requestID)
	}
	s.srv.Record(endpoint, status)
}

func (s *Server) answer(w http.ResponseWriter, r *http.Request, svc *service, body []byte, p params, action string, d faults.Decision, requestID string) int {
	if d.Status != 0 {
		if d.AfterCommit {
			s.commit(r, svc, body, p, action)
		}
		return writeError(w, svc, svc.injectedError(d), requestID)
	}
	out, aerr := s.dispatch(r, svc, body, p, action)
	if aerr != nil {
		return writeError(w, svc, aerr, requestID)
	}
	return writeOutput(w, svc, action, out, requestID)
}

// dispatch authenticates, authorizes and runs the action.
func (s *Server) dispatch(r *http.Request, svc *service, body []byte, p params, action string) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cred, aerr := s.authenticateLocked(r, body, svc)
	if aerr != nil {
		return nil, aerr
	}
	if action == "" {
		return nil, badRequest("MissingAction", "The request must contain the parameter Action")
	}
	h := svc.actions[action]
	if h == nil {
		if svc.ec2Style {
			return nil, badRequest("InvalidAction", "The action %s is not valid for this web service.", action)
		}
		return nil, badRequest("InvalidAction", "Could not find operation %s for version %s", action, svc.version)
	}
	iamAction := svc.iamPrefix + action
	if iamAction != "sts:GetCallerIdentity" && s.auth.deniedAction(iamAction) {
		if svc.ec2Style {
			return nil, errorf(http.StatusForbidden, "UnauthorizedOperation",
				"You are not authorized to perform this operation. User: %s is not authorized to perform: %s because no identity-based policy allows the %s action", cred.who.arn, iamAction, iamAction)
		}
		return nil, errorf(http.StatusForbidden, "AccessDenied",
			"User: %s is not authorized to perform: %s because no identity-based policy allows the %s action", cred.who.arn, iamAction, iamAction)
	}
	if svc.ec2Style {
		if dry, _, _ := p.boolean("DryRun"); dry {
			return nil, errorf(http.StatusPreconditionFailed, "DryRunOperation", "Request would have succeeded, but DryRun flag is set.")
		}
	}
	return h(s, &call{action: action, p: p, caller: cred, now: s.now()})
}

// commit serves a request whose answer an AfterCommit rule replaces: the
// API does the work as usual (a create creates) and the answer is dropped,
// as when a 5xx or a broken connection hides the outcome from the client.
// A request the API would have refused changes nothing either way.
func (s *Server) commit(r *http.Request, svc *service, body []byte, p params, action string) {
	_, _ = s.dispatch(r, svc, body, p, action)
}

// injectedError is the service's error for an injected status.
func (svc *service) injectedError(d faults.Decision) *apiError {
	if d.Throttled || d.Status == http.StatusTooManyRequests {
		if svc.ec2Style {
			return errorf(http.StatusServiceUnavailable, "RequestLimitExceeded", "Request limit exceeded.")
		}
		return badRequest("Throttling", "Rate exceeded")
	}
	st := d.Status
	if svc.ec2Style {
		switch {
		case st == http.StatusServiceUnavailable:
			return errorf(st, "Unavailable", "The server is overloaded and can't handle the request.")
		case st >= 500:
			return errorf(st, "InternalError", "An internal error has occurred")
		case st == http.StatusUnauthorized:
			return errorf(st, "AuthFailure", "AWS was not able to validate the provided access credentials")
		case st == http.StatusForbidden:
			return errorf(st, "UnauthorizedOperation", "You are not authorized to perform this operation.")
		case st == http.StatusBadRequest:
			return errorf(st, "InvalidRequest", "The request received was invalid.")
		}
		return errorf(st, statusCode(st), "%s", http.StatusText(st))
	}
	switch {
	case st == http.StatusServiceUnavailable:
		return errorf(st, "ServiceUnavailable", "The request has failed due to a temporary failure of the server.")
	case st >= 500:
		return errorf(st, "InternalFailure", "The request processing has failed because of an unknown error, exception or failure.")
	case st == http.StatusForbidden:
		return errorf(st, "AccessDenied", "User is not authorized to perform this operation")
	case st == http.StatusBadRequest:
		return errorf(st, "ValidationError", "The input fails to satisfy the constraints specified by an AWS service.")
	}
	return errorf(st, statusCode(st), "%s", http.StatusText(st))
}

// statusCode turns a status text into an error code: "Not Found" ->
// "NotFound".
func statusCode(status int) string {
	code := strings.NewReplacer(" ", "", "-", "", "'", "").Replace(http.StatusText(status))
	return cmp.Or(code, "UnknownError")
}

// The SDK closes a request's body as soon as the response headers arrive
// (smithy-go's ClientHandler), while net/http may still be finishing the
// request write: it sends an SDK body straight to the socket, then checks
// the body for extra bytes, which fails once the body is closed, and
// closes the connection under the response being read. Against AWS the
// answer never comes that fast; against a fake on loopback it does, and a
// response too big for the client's first 4 KiB read then fails with "use
// of closed network connection" (aws/aws-sdk-go-v2#2737; the standard
// retryer retries it, which would show as an extra call). So responses
// that big wait a moment before going out. Smaller ones are read whole
// before the connection can close, and go out at once.
const (
	settleThreshold    = 3 << 10
	defaultSettleDelay = 5 * time.Millisecond
)

// SetLargeResponseDelay sets how long query-API responses over 3 KiB wait
// before being sent (default 5ms), to sidestep the SDK race described
// above; 0 sends them at once.
func (s *Server) SetLargeResponseDelay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleDelay = d
}

// settlingWriter delays a large body's first write by the settle delay.
type settlingWriter struct {
	http.ResponseWriter
	s *Server
}

func (w *settlingWriter) Write(b []byte) (int, error) {
	if len(b) > settleThreshold {
		w.s.mu.Lock()
		d := w.s.settleDelay
		w.s.mu.Unlock()
		time.Sleep(d)
	}
	return w.ResponseWriter.Write(b)
}

func setCommonHeaders(w http.ResponseWriter, svc *service, requestID string) {
	h := w.Header()
	if svc.ec2Style {
		h.Set("Content-Type", "text/xml;charset=UTF-8")
		h.Set("Server", "AmazonEC2")
	} else {
		h.Set("Content-Type", "text/xml")
	}
	h.Set("x-amzn-RequestId", requestID)
}

func writeError(w http.ResponseWriter, svc *service, e *apiError, requestID string) int {
	setCommonHeaders(w, svc, requestID)
	var b []byte
	if svc.ec2Style {
		b = encodeEC2Error(e, requestID)
	} else {
		b = encodeQueryError(svc.namespace, e, requestID)
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(e.status)
	_, _ = w.Write(b)
	return e.status
}

func writeOutput(w http.ResponseWriter, svc *service, action string, out any, requestID string) int {
	setCommonHeaders(w, svc, requestID)
	var b []byte
	if svc.ec2Style {
		o, ok := out.(ec2Output)
		if !ok {
			o = returnTrue()
		}
		b = encodeEC2(action, requestID, o)
	} else {
		b = encodeQuery(svc.namespace, action, requestID, out)
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
	return http.StatusOK
}

func writeUnknownService(w http.ResponseWriter, action, version, requestID string) int {
	e := badRequest("InvalidAction", "Could not find operation %s for version %s", action, version)
	w.Header().Set("Content-Type", "text/xml")
	w.Header().Set("x-amzn-RequestId", requestID)
	w.WriteHeader(e.status)
	_, _ = w.Write(encodeQueryError("", e, requestID))
	return e.status
}
