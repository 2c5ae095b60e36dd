package gce

import (
	"fmt"
	"net/http"
	"strings"
)

// apiError is the Google JSON error document: googleapi.CheckResponse reads
// code, message and errors[].reason/message from it; status and details
// follow the newer google.rpc.Status convention that Google front ends add.
type apiError struct {
	Error errorBody `json:"error"`
}

type errorBody struct {
	Code    int         `json:"code"`
	Message string      `json:"message"`
	Errors  []errorItem `json:"errors"`
	Status  string      `json:"status,omitempty"`
	Details []any       `json:"details,omitempty"`
}

type errorItem struct {
	Message      string `json:"message"`
	Domain       string `json:"domain"`
	Reason       string `json:"reason"`
	Location     string `json:"location,omitempty"`
	LocationType string `json:"locationType,omitempty"`
}

// errorInfo is a google.rpc.ErrorInfo detail.
type errorInfo struct {
	Type     string            `json:"@type"`
	Reason   string            `json:"reason"`
	Domain   string            `json:"domain"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

// rpcStatus maps HTTP statuses to the google.rpc.Code names Google puts in
// error.status.
func rpcStatus(code int) string {
	switch code {
	case 400:
		return "INVALID_ARGUMENT"
	case 401:
		return "UNAUTHENTICATED"
	case 403:
		return "PERMISSION_DENIED"
	case 404:
		return "NOT_FOUND"
	case 409:
		return "ALREADY_EXISTS"
	case 412:
		return "FAILED_PRECONDITION"
	case 429:
		return "RESOURCE_EXHAUSTED"
	case 499:
		return "CANCELLED"
	case 501:
		return "UNIMPLEMENTED"
	case 503:
		return "UNAVAILABLE"
	case 504:
		return "DEADLINE_EXCEEDED"
	}
	if code >= 500 {
		return "INTERNAL"
	}
	return "UNKNOWN"
}

// newError builds the (status, body) pair handlers return.
func newError(code int, reason, message string) (int, any) {
	return code, &apiError{Error: errorBody{
		Code:    code,
		Message: message,
		Errors:  []errorItem{{Message: message, Domain: "global", Reason: reason}},
		Status:  rpcStatus(code),
	}}
}

// The API's errors, in its words where known.

func errNotFound(path string) (int, any) {
	return newError(http.StatusNotFound, "notFound", fmt.Sprintf("The resource '%s' was not found", path))
}

func errAlreadyExists(path string) (int, any) {
	return newError(http.StatusConflict, "alreadyExists", fmt.Sprintf("The resource '%s' already exists", path))
}

func errInvalid(message string) (int, any) {
	return newError(http.StatusBadRequest, "invalid", message)
}

// errInvalidField is the API's message for a bad field value.
func errInvalidField(field, value, why string) (int, any) {
	return errInvalid(fmt.Sprintf("Invalid value for field '%s': '%s'. %s", field, value, why))
}

func errRequired(field string) (int, any) {
	return newError(http.StatusBadRequest, "required", fmt.Sprintf("Required field '%s' not specified", field))
}

func errNotReady(path string) (int, any) {
	return newError(http.StatusBadRequest, "resourceNotReady", fmt.Sprintf("The resource '%s' is not ready", path))
}

// errInUse refuses deleting what another resource references; kind is the
// API's snake-case type name ("target_pool").
func errInUse(kind, path, user string) (int, any) {
	return newError(http.StatusBadRequest, "resourceInUseByAnotherResource",
		fmt.Sprintf("The %s resource '%s' is already being used by '%s'", kind, path, user))
}

func errConditionNotMet(message string) (int, any) {
	return newError(http.StatusPreconditionFailed, "conditionNotMet", message)
}

// The two 401s Google front ends send: no credentials, and credentials
// they do not accept. Each carries a WWW-Authenticate challenge (set by
// the router) and an ErrorInfo detail.
const (
	msgMissingCredentials = "Request is missing required authentication credential. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project."
	msgInvalidCredentials = "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project."
)

func errUnauthenticated(missing bool) (int, any) {
	msg, item, reason := msgInvalidCredentials, errorItem{Message: "Invalid Credentials", Domain: "global", Reason: "authError", Location: "Authorization", LocationType: "header"}, "ACCESS_TOKEN_TYPE_UNSUPPORTED"
	if missing {
		msg, item, reason = msgMissingCredentials, errorItem{Message: "Login Required.", Domain: "global", Reason: "required", Location: "Authorization", LocationType: "header"}, "CREDENTIALS_MISSING"
	}
	return http.StatusUnauthorized, &apiError{Error: errorBody{
		Code:    http.StatusUnauthorized,
		Message: msg,
		Errors:  []errorItem{item},
		Status:  "UNAUTHENTICATED",
		Details: []any{errorInfo{
			Type:     "type.googleapis.com/google.rpc.ErrorInfo",
			Reason:   reason,
			Domain:   "googleapis.com",
			Metadata: map[string]string{"service": "compute.googleapis.com"},
		}},
	}}
}

// errRateLimited is the quota error for too many requests. Compute reports
// it with 429 (older deployments used 403, which SetThrottleStatus can
// reproduce); the reason is rateLimitExceeded in domain usageLimits either
// way.
func errRateLimited(code int, projectNumber uint64) (int, any) {
	msg := fmt.Sprintf("Quota exceeded for quota metric 'Queries' and limit 'Queries per minute' of service 'compute.googleapis.com' for consumer 'project_number:%d'.", projectNumber)
	return code, &apiError{Error: errorBody{
		Code:    code,
		Message: msg,
		Errors:  []errorItem{{Message: msg, Domain: "usageLimits", Reason: "rateLimitExceeded"}},
		Status:  rpcStatus(http.StatusTooManyRequests),
		Details: []any{errorInfo{
			Type:   "type.googleapis.com/google.rpc.ErrorInfo",
			Reason: "RATE_LIMIT_EXCEEDED",
			Domain: "googleapis.com",
			Metadata: map[string]string{
				"service":      "compute.googleapis.com",
				"quota_metric": "compute.googleapis.com/default",
				"consumer":     fmt.Sprintf("projects/%d", projectNumber),
			},
		}},
	}}
}

// errInjected builds the body for an injected failure of any status.
func errInjected(code int, projectNumber uint64) (int, any) {
	switch code {
	case http.StatusUnauthorized:
		return errUnauthenticated(false)
	case http.StatusTooManyRequests:
		return errRateLimited(code, projectNumber)
	case http.StatusBadRequest:
		return newError(code, "badRequest", "Bad Request")
	case http.StatusForbidden:
		return newError(code, "forbidden", "The caller does not have permission")
	case http.StatusNotFound:
		return newError(code, "notFound", "The requested resource was not found")
	case http.StatusConflict:
		return newError(code, "conflict", "The resource was changed concurrently; retry the request")
	case http.StatusPreconditionFailed:
		return errConditionNotMet("Precondition failed")
	case http.StatusInternalServerError:
		return newError(code, "backendError", "Internal error. Please try again or contact Google Support. (Code: '0123456789ABCDEF')")
	case http.StatusServiceUnavailable:
		return newError(code, "backendError", "The service is currently unavailable.")
	case http.StatusGatewayTimeout:
		return newError(code, "backendError", "The request timed out. Please try again.")
	}
	text := http.StatusText(code)
	if text == "" {
		text = "Error"
	}
	reason := strings.ToLower(text[:1]) + strings.ReplaceAll(text[1:], " ", "")
	return newError(code, reason, text)
}
