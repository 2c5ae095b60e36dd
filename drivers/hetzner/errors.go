package hetzner

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"

	"github.com/polyccm/polyccm/config/secret"
	"github.com/polyccm/polyccm/core/cloudapi"
)

// classify maps hcloud-go errors onto core's kinds. The API names each
// error with a code in its JSON envelope; the code, not the status, says
// what happened (a 409 "uniqueness_error" is a name already taken, a 423
// "locked" a resource busy with another action).
func classify(err error) cloudapi.Classification {
	var te *secret.TokenError
	if errors.As(err, &te) {
		return cloudapi.Classification{Kind: cloudapi.KindUnauthorized}
	}
	var ae hcloud.ActionError
	if errors.As(err, &ae) {
		// An action that ended in error: the change was tried and failed.
		return cloudapi.Classification{Kind: actionErrorKind(ae.Code)}
	}
	var he hcloud.Error
	if !errors.As(err, &he) {
		if errors.Is(err, hcloud.ErrStatusCode) {
			return cloudapi.Classification{Kind: cloudapi.KindUnavailable}
		}
		return cloudapi.Classification{Kind: cloudapi.KindUnknown}
	}
	cl := cloudapi.Classification{Kind: codeKind(he.Code)}
	if resp := he.Response(); resp != nil && resp.Response != nil {
		cl.Status = resp.StatusCode
		if cl.Kind == cloudapi.KindUnknown {
			cl.Kind = cloudapi.ClassifyHTTPStatus(resp.StatusCode)
		}
		if cl.Kind == cloudapi.KindThrottled {
			cl.RetryAfter = retryAfter(resp.Header)
		}
	}
	return cl
}

func codeKind(code hcloud.ErrorCode) cloudapi.Kind {
	switch code {
	case hcloud.ErrorCodeNotFound:
		return cloudapi.KindNotFound
	case hcloud.ErrorCodeRateLimitExceeded:
		return cloudapi.KindThrottled
	case hcloud.ErrorCodeUnauthorized, hcloud.ErrorCodeForbidden:
		return cloudapi.KindUnauthorized
	case hcloud.ErrorCodeLocked, hcloud.ErrorCodeConflict, hcloud.ErrorCodeResourceUnavailable,
		hcloud.ErrorCodeMaintenance, hcloud.ErrorCodeServerAlreadyAttached:
		return cloudapi.KindConflict
	case hcloud.ErrorCodeUniquenessError, hcloud.ErrorCodeTargetAlreadyDefined,
		hcloud.ErrorCodeSourcePortAlreadyUsed, hcloud.ErrorCodeLoadBalancerAlreadyAttached:
		return cloudapi.KindExists
	case hcloud.ErrorCodeServiceError, hcloud.ErrorCodeServerError, hcloud.ErrorCodeBadGateway,
		hcloud.ErrorCodeTimeout, hcloud.ErrorCodeUnknownError:
		return cloudapi.KindUnavailable
	case "":
		return cloudapi.KindUnknown
	}
	// invalid_input, json_error, resource_limit_exceeded, protected and the
	// resource-specific codes: repeating the request cannot help.
	return cloudapi.KindInvalid
}

// actionErrorKind: an action's error codes are few and mostly its own.
func actionErrorKind(code string) cloudapi.Kind {
	switch hcloud.ErrorCode(code) {
	case hcloud.ErrorCodeInvalidInput, hcloud.ErrorCodeResourceLimitExceeded, hcloud.ErrorCodeProtected:
		return cloudapi.KindInvalid
	case hcloud.ErrorCodeLocked, hcloud.ErrorCodeConflict:
		return cloudapi.KindConflict
	}
	// action_failed, timeout and the like: the cloud could not finish;
	// trying again may.
	return cloudapi.KindUnavailable
}

// retryAfter is when the next request may pass after a 429. The API's
// bucket refills at a steady rate and RateLimit-Reset is when it will be
// full again (an hour away when empty), so the wait for one request is
// that time spread over the requests still missing.
func retryAfter(h http.Header) time.Duration {
	if s, err := strconv.Atoi(h.Get("Retry-After")); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	reset, err1 := strconv.ParseInt(h.Get("RateLimit-Reset"), 10, 64)
	limit, err2 := strconv.Atoi(h.Get("RateLimit-Limit"))
	remaining, _ := strconv.Atoi(h.Get("RateLimit-Remaining"))
	if err1 != nil || err2 != nil || limit <= remaining {
		return 0
	}
	if d := time.Until(time.Unix(reset, 0)); d > 0 {
		return d / time.Duration(limit-remaining)
	}
	return 0
}
