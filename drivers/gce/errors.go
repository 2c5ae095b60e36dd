package gce

import (
	"errors"
	"net/http"

	"github.com/googleapis/gax-go/v2/apierror"
	"golang.org/x/oauth2"
	"google.golang.org/api/googleapi"

	"github.com/polyccm/polyccm/core/cloudapi"
)

// classify maps Compute errors onto core's kinds, by the error's reason
// first (Google answers a rate limit with 403 rateLimitExceeded as well as
// 429), then by status.
func classify(err error) cloudapi.Classification {
	var ce *credentialsError
	if errors.As(err, &ce) {
		return cloudapi.Classification{Kind: cloudapi.KindUnauthorized}
	}
	if oe, ok := errors.AsType[*operationError](err); ok {
		return cloudapi.Classification{Kind: oe.kind()}
	}
	if re, ok := errors.AsType[*oauth2.RetrieveError](err); ok && re.Response != nil {
		// The token endpoint answered: a 4xx (invalid_grant for a deleted
		// or disabled key) refuses the credentials, so the clients are
		// dropped and the key read again; 429 and 5xx are its trouble.
		status := re.Response.StatusCode
		cl := cloudapi.Classification{Kind: cloudapi.ClassifyHTTPStatus(status), Status: status}
		if status >= 400 && status < 500 && status != http.StatusRequestTimeout && status != http.StatusTooManyRequests {
			cl.Kind = cloudapi.KindUnauthorized
		}
		return cl
	}
	status, reason := 0, ""
	if ae, ok := errors.AsType[*apierror.APIError](err); ok {
		status, reason = ae.HTTPCode(), ae.Reason()
		if ge, ok := ae.Unwrap().(*googleapi.Error); ok && len(ge.Errors) > 0 && reason == "" {
			reason = ge.Errors[0].Reason
		}
	}
	if ge, ok := errors.AsType[*googleapi.Error](err); ok {
		status = ge.Code
		if len(ge.Errors) > 0 {
			reason = ge.Errors[0].Reason
		}
	}
	cl := cloudapi.Classification{Status: status}
	switch reason {
	case "rateLimitExceeded", "userRateLimitExceeded", "RATE_LIMIT_EXCEEDED":
		cl.Kind = cloudapi.KindThrottled
		return cl
	case "alreadyExists":
		cl.Kind = cloudapi.KindExists
		return cl
	case "resourceInUseByAnotherResource", "resourceNotReady", "conditionNotMet":
		cl.Kind = cloudapi.KindConflict
		return cl
	case "notFound":
		cl.Kind = cloudapi.KindNotFound
		return cl
	}
	if status != 0 {
		cl.Kind = cloudapi.ClassifyHTTPStatus(status)
		if status == http.StatusConflict {
			cl.Kind = cloudapi.KindExists
		}
	}
	return cl
}

// isInUse reports whether GCE refused a delete because another resource
// uses the one deleted, synchronously or in the operation.
func isInUse(err error) bool {
	if err == nil {
		return false
	}
	if oe, ok := errors.AsType[*operationError](err); ok {
		return oe.code == "RESOURCE_IN_USE_BY_ANOTHER_RESOURCE"
	}
	if ae, ok := errors.AsType[*apierror.APIError](err); ok {
		if ae.Reason() == "resourceInUseByAnotherResource" {
			return true
		}
		if ge, ok := ae.Unwrap().(*googleapi.Error); ok {
			return len(ge.Errors) > 0 && ge.Errors[0].Reason == "resourceInUseByAnotherResource"
		}
	}
	if ge, ok := errors.AsType[*googleapi.Error](err); ok {
		return len(ge.Errors) > 0 && ge.Errors[0].Reason == "resourceInUseByAnotherResource"
	}
	return false
}
