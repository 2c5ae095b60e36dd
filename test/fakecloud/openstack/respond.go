package openstack

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/polyccm/polyccm/test/fakecloud/fakehttp"
)

// Each service writes errors its own way, and the fake writes them alike:
//
//   - Keystone, and keystonemiddleware in front of every other service
//     (so every 401): {"error": {"code", "message", "title"}}.
//   - Nova (and Cinder): {"<fault name>": {"code", "message"}}, the name
//     by status ("itemNotFound", "badRequest", "overLimit", ...); Cinder's
//     rate limiter answers {"overLimitFault": {...}}.
//   - Neutron: {"NeutronError": {"type", "message", "detail"}}, and
//     webob's own document for paths no controller serves.
//   - Octavia (WSME): {"faultcode", "faultstring", "debuginfo"}.

type keystoneError struct {
	Error keystoneErrorBody `json:"error"`
}

type keystoneErrorBody struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Title   string `json:"title"`
}

type novaFault struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	// Details and RetryAfter come with overLimit only.
	Details    string `json:"details,omitempty"`
	RetryAfter string `json:"retryAfter,omitempty"`
}

type neutronError struct {
	NeutronError neutronErrorBody `json:"NeutronError"`
}

type neutronErrorBody struct {
	Type    string `json:"type"`
	Message string `json:"message"`
	Detail  string `json:"detail"`
}

// webobError is what webob answers for requests no controller takes
// (Neutron's unknown paths): code and title are the status line's parts.
type webobError struct {
	Message string `json:"message"`
	Code    string `json:"code"`
	Title   string `json:"title"`
}

type wsmeError struct {
	FaultCode   string  `json:"faultcode"`
	FaultString string  `json:"faultstring"`
	DebugInfo   *string `json:"debuginfo"`
}

// msgAuthRequired is Keystone's answer to every failed authentication,
// whatever failed, so callers cannot probe which users exist.
const msgAuthRequired = "The request you have made requires authentication."

func errKeystone(status int, message string) (int, any) {
	return status, &keystoneError{Error: keystoneErrorBody{Code: status, Message: message, Title: http.StatusText(status)}}
}

// errUnauthorized is keystonemiddleware's and Keystone's 401.
func errUnauthorized() (int, any) { return errKeystone(http.StatusUnauthorized, msgAuthRequired) }

// novaFaultName is Nova's name for an error status (wsgi.Fault).
func novaFaultName(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "badRequest"
	case http.StatusUnauthorized:
		return "unauthorized"
	case http.StatusForbidden:
		return "forbidden"
	case http.StatusNotFound:
		return "itemNotFound"
	case http.StatusMethodNotAllowed:
		return "badMethod"
	case http.StatusConflict:
		return "conflictingRequest"
	case http.StatusRequestEntityTooLarge, http.StatusTooManyRequests:
		return "overLimit"
	case http.StatusUnsupportedMediaType:
		return "badMediaType"
	case http.StatusNotImplemented:
		return "notImplemented"
	case http.StatusServiceUnavailable:
		return "serviceUnavailable"
	}
	return "computeFault"
}

func errNova(status int, message string) (int, any) {
	return status, map[string]novaFault{novaFaultName(status): {Code: status, Message: message}}
}

func errNeutron(status int, typ, message string) (int, any) {
	return status, &neutronError{NeutronError: neutronErrorBody{Type: typ, Message: message}}
}

// webobType is the class name of webob's exception for a status, the
// "type" Neutron reports HTTP errors under ("HTTPServiceUnavailable").
func webobType(status int) string {
	return "HTTP" + strings.ReplaceAll(http.StatusText(status), " ", "")
}

func errWebob(status int, message string) (int, any) {
	return status, &webobError{Message: message + "<br /><br />\n\n\n",
		Code: strconv.Itoa(status) + " " + http.StatusText(status), Title: http.StatusText(status)}
}

func errWSME(status int, message string) (int, any) {
	code := "Client"
	if status >= 500 {
		code = "Server"
	}
	return status, &wsmeError{FaultCode: code, FaultString: message}
}

// errService is an error in service's format, with message; Neutron's
// type is webob's class name for the status.
func errService(service string, status int, message string) (int, any) {
	switch service {
	case svcIdentity:
		return errKeystone(status, message)
	case svcCompute, svcVolume:
		return errNova(status, message)
	case svcNetwork:
		return errNeutron(status, webobType(status), message)
	case svcLoadBalancer:
		return errWSME(status, message)
	}
	return errWebob(status, message)
}

// errStatus is the error for an injected status, in the service's format
// and words.
func errStatus(service string, status int) (int, any) {
	message := http.StatusText(status)
	switch {
	case service == svcCompute && status == http.StatusInternalServerError:
		message = "Unexpected API Error. Please report this at http://bugs.launchpad.net/nova/ and attach the Nova API log if possible.\n<class 'nova.exception.NovaException'>"
	case service == svcNetwork && status == http.StatusInternalServerError:
		message = "Request Failed: internal server error while processing your request."
	case service == svcIdentity && status == http.StatusInternalServerError:
		message = "An unexpected error prevented the server from fulfilling your request."
	case status == http.StatusServiceUnavailable:
		message = "The server is currently unavailable. Please try again at a later time."
	case status == http.StatusNotFound:
		message = "The resource could not be found."
	}
	return errService(service, status, message)
}

// minRetryAfter is the least Retry-After an over-limit answer gives, as
// the limiters count in whole seconds.
const minRetryAfter = time.Second

// errOverLimit is the answer to a throttled request, 429 or (as Nova's
// rate limiter answered) 413, saying when to retry in the service's way;
// Retry-After is set by the caller.
func errOverLimit(service string, status int, retry time.Duration) (int, any) {
	const message = "This request was rate-limited."
	secs := strconv.Itoa(int((retry + time.Second - 1) / time.Second))
	const details = "Only a limited number of requests can be made every second."
	switch service {
	case svcCompute:
		return status, map[string]novaFault{"overLimit": {Code: status, Message: message, Details: details, RetryAfter: secs}}
	case svcVolume:
		// Cinder's limiter (OverLimitFault) names its fault
		// "overLimitFault" and gives the delay in Retry-After only.
		return status, map[string]novaFault{"overLimitFault": {Code: status, Message: message, Details: details}}
	}
	return errService(service, status, message)
}

// errNoRoute answers a path the service does not serve (404) or a method
// it does not take there (405).
func errNoRoute(service string, allowed []string) (int, any) {
	if len(allowed) > 0 {
		switch service {
		case svcCompute:
			return errNova(http.StatusMethodNotAllowed, "The method specified is not allowed for this resource.")
		case svcIdentity:
			return errKeystone(http.StatusMethodNotAllowed, "The method is not allowed for the requested URL.")
		}
		return errWebob(http.StatusMethodNotAllowed, "The method is not allowed for this resource.")
	}
	if service == svcNetwork || service == "" {
		return errWebob(http.StatusNotFound, "The resource could not be found.")
	}
	return errService(service, http.StatusNotFound, "The resource could not be found.")
}

func setRetryAfter(h http.Header, d time.Duration) { fakehttp.SetRetryAfter(h, d) }

// headed is a response document with headers of its own (Keystone's
// X-Subject-Token).
type headed struct {
	body   any
	header http.Header
}

// replyWriter writes responses with the headers every real response has.
type replyWriter struct {
	w         http.ResponseWriter
	service   string
	requestID string
	keystone  string        // Keystone's root, for WWW-Authenticate
	mv        *microversion // the Nova or Cinder microversion the answer is in
}

// reply writes a handler's result and returns the status written.
func (rw *replyWriter) reply(status int, body any) int {
	h := rw.w.Header()
	if hb, ok := body.(*headed); ok {
		for k, v := range hb.header {
			h[k] = v
		}
		body = hb.body
	}
	h.Set("X-Openstack-Request-Id", rw.requestID)
	switch rw.service {
	case svcCompute:
		h.Set("X-Compute-Request-Id", rw.requestID)
		if rw.mv != nil {
			h.Set("OpenStack-API-Version", "compute "+rw.mv.String())
			h.Set("X-OpenStack-Nova-API-Version", rw.mv.String())
			h.Set("Vary", "OpenStack-API-Version, X-OpenStack-Nova-API-Version")
		}
	case svcVolume:
		if rw.mv != nil {
			h.Set("OpenStack-API-Version", "volume "+rw.mv.String())
			h.Set("Vary", "OpenStack-API-Version")
		}
	case svcIdentity:
		h.Set("Vary", "X-Auth-Token")
	}
	if status == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", `Keystone uri="`+rw.keystone+`"`)
	}
	if body != nil {
		h.Set("Content-Type", "application/json")
	}
	fakehttp.WriteJSON(rw.w, status, body)
	return status
}
