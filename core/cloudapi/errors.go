package cloudapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// Kind says what a failed cloud call means for the caller. Only KindNotFound
// is a definitive answer about a resource; every other kind leaves its state
// unknown, so nothing may be deleted on it.
type Kind uint8

const (
	// KindUnknown is an error nobody could classify: treat it as ambiguous.
	KindUnknown Kind = iota
	// KindNotFound: the cloud says the resource does not exist.
	KindNotFound
	// KindThrottled: the cloud rejected the call for rate limiting; it was
	// not processed and is safe to repeat.
	KindThrottled
	// KindUnavailable: 5xx, timeouts, broken connections. The call may or
	// may not have taken effect.
	KindUnavailable
	// KindUnauthorized: the credentials were rejected (401/403).
	KindUnauthorized
	// KindInvalid: the cloud rejected the request as malformed or not
	// allowed (4xx other than the above); repeating it will not help.
	KindInvalid
	// KindConflict: the request clashes with the resource's current state
	// (409, "in use", a busy resource); it may succeed later.
	KindConflict
	// KindExists: what the call would create already exists. Repeating it
	// cannot help; callers making something idempotently treat it as done.
	KindExists
)

var kindNames = [...]string{
	KindUnknown:      "error",
	KindNotFound:     "not_found",
	KindThrottled:    "throttled",
	KindUnavailable:  "unavailable",
	KindUnauthorized: "unauthorized",
	KindInvalid:      "invalid",
	KindConflict:     "conflict",
	KindExists:       "exists",
}

// String is also the metric outcome label.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "error"
}

// retryable reports whether repeating a call that failed this way can help.
func (k Kind) retryable() bool {
	return k == KindThrottled || k == KindUnavailable || k == KindConflict
}

// Error is a failed cloud call, classified.
type Error struct {
	Driver     string
	Op         string
	Kind       Kind
	Status     int           // HTTP status, 0 if none
	RetryAfter time.Duration // from the cloud, 0 if none
	Attempts   int
	Err        error
}

func (e *Error) Error() string {
	status := ""
	if e.Status != 0 {
		status = fmt.Sprintf(" (HTTP %d)", e.Status)
	}
	attempts := ""
	if e.Attempts > 1 {
		attempts = fmt.Sprintf(" after %d attempts", e.Attempts)
	}
	return fmt.Sprintf("%s %s: %s%s%s: %v", e.Driver, e.Op, e.Kind, status, attempts, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// KindOf classifies any error returned through this package. Errors that
// did not pass through a Client are KindUnknown (ambiguous).
func KindOf(err error) Kind {
	if err == nil {
		return KindUnknown
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	var s *statusError
	if errors.As(err, &s) {
		return s.kind
	}
	return KindUnknown
}

// IsNotFound reports whether err is a definitive "does not exist".
func IsNotFound(err error) bool { return err != nil && KindOf(err) == KindNotFound }

// NotFound makes a definitive not-found error for drivers that learn it
// without an HTTP call failing (for example a resource missing from a
// complete listing).
func NotFound(format string, args ...any) error {
	return &statusError{kind: KindNotFound, msg: fmt.Sprintf(format, args...)}
}

// Invalid makes an error for a request polyccm refuses to send, such as a
// malformed provider ID.
func Invalid(format string, args ...any) error {
	return &statusError{kind: KindInvalid, msg: fmt.Sprintf(format, args...)}
}

type statusError struct {
	kind Kind
	msg  string
}

func (s *statusError) Error() string { return s.msg }

// Classification is what a driver's classifier says about one error.
type Classification struct {
	Kind       Kind
	Status     int
	RetryAfter time.Duration
}

// Classifier maps an SDK error to a Classification. Drivers supply one;
// ClassifyTransport handles what every HTTP client shares.
type Classifier func(err error) Classification

// ClassifyHTTPStatus is the usual meaning of an HTTP status for a cloud API.
func ClassifyHTTPStatus(status int) Kind {
	switch {
	case status == 404:
		return KindNotFound
	case status == 429:
		return KindThrottled
	case status == 401 || status == 403:
		return KindUnauthorized
	case status == 409 || status == 412:
		return KindConflict
	case status == 408 || status >= 500:
		return KindUnavailable
	case status >= 400:
		return KindInvalid
	}
	return KindUnknown
}

// ClassifyTransport recognises failures below the API: timeouts, cancelled
// requests, refused or reset connections. They are always ambiguous
// (KindUnavailable).
func ClassifyTransport(err error) (Kind, bool) {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return KindUnavailable, true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return KindUnavailable, true
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		return KindUnavailable, true
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return KindUnavailable, true
	}
	return KindUnknown, false
}
