package hetzner

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/polyccm/polyccm/test/fakecloud/fakehttp"
	"github.com/polyccm/polyccm/test/fakecloud/faults"
)

// errorDoc is the envelope of every error: {"error": {...}}.
type errorDoc struct {
	Error apiError `json:"error"`
}

// apiError carries a code (what clients switch on), a message for humans
// and details, {} unless the code has some (invalid_input's fields,
// uniqueness_error's fields, resource_limit_exceeded's limits).
type apiError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Details any    `json:"details"`
}

type fieldError struct {
	Name     string   `json:"name"`
	Messages []string `json:"messages,omitempty"`
}

type fieldDetails struct {
	Fields []fieldError `json:"fields"`
}

type limitDetails struct {
	Limits []struct {
		Name string `json:"name"`
	} `json:"limits"`
}

type announcementDetails struct {
	Announcement string `json:"announcement"`
}

func newError(status int, code, message string) (int, any) {
	return status, &errorDoc{Error: apiError{Code: code, Message: message, Details: map[string]any{}}}
}

func withDetails(status int, code, message string, details any) (int, any) {
	return status, &errorDoc{Error: apiError{Code: code, Message: message, Details: details}}
}

// The generic errors, with the statuses the API reference gives them.

func errUnauthorized() (int, any) {
	return newError(http.StatusUnauthorized, "unauthorized", "unable to authenticate")
}

func errForbidden() (int, any) {
	return newError(http.StatusForbidden, "forbidden", "insufficient permissions for this request")
}

func errNotFound(message string) (int, any) {
	return newError(http.StatusNotFound, "not_found", message)
}

// errNoResource is the not_found of a resource by ID.
func errNoResource(kind string, id int64) (int, any) {
	return errNotFound(fmt.Sprintf("%s with ID '%d' not found", kind, id))
}

func errJSON() (int, any) {
	return newError(http.StatusBadRequest, "json_error", "invalid JSON in request body")
}

// errInvalid is invalid_input for one field, the message naming it as the
// API does ("invalid input in field 'name'").
func errInvalid(field string, messages ...string) (int, any) {
	return withDetails(http.StatusBadRequest, "invalid_input", "invalid input in field '"+field+"'",
		fieldDetails{Fields: []fieldError{{Name: field, Messages: messages}}})
}

// errInvalidMsg is invalid_input whose message says what is wrong, as the
// API's checks across fields do ("invalid gateway").
func errInvalidMsg(field, message string) (int, any) {
	return withDetails(http.StatusBadRequest, "invalid_input", message,
		fieldDetails{Fields: []fieldError{{Name: field, Messages: []string{message}}}})
}

func errUniqueness(field, message string) (int, any) {
	return withDetails(http.StatusConflict, "uniqueness_error", message,
		fieldDetails{Fields: []fieldError{{Name: field}}})
}

// errConflict is what a change to a network that another change is
// running on gets.
func errConflict(message string) (int, any) {
	return newError(http.StatusConflict, "conflict", message)
}

// errLocked is what an action on a resource another action runs on gets.
func errLocked(message string) (int, any) {
	return newError(http.StatusLocked, "locked", message)
}

func errProtected(message string) (int, any) {
	return newError(http.StatusForbidden, "protected", message)
}

func errResourceLimit(limit, message string) (int, any) {
	var d limitDetails
	d.Limits = append(d.Limits, struct {
		Name string `json:"name"`
	}{limit})
	return withDetails(http.StatusForbidden, "resource_limit_exceeded", message, d)
}

// errCode is a resource-specific error (source_port_already_used,
// target_already_defined, ...); the statuses are the reference's.
func errCode(status int, code, message string) (int, any) { return newError(status, code, message) }

func errRateLimited(limit int) (int, any) {
	return newError(http.StatusTooManyRequests, "rate_limit_exceeded",
		fmt.Sprintf("limit of %d requests per hour reached", limit))
}

// errGone is what removed endpoints answer, with the changelog entry.
func errGone(announcement string) (int, any) {
	return withDetails(http.StatusGone, "deprecated_api_endpoint", "API functionality was removed",
		announcementDetails{Announcement: announcement})
}

// errStatus is the error for an injected status, in the code the API
// uses for it.
func errStatus(status int) (int, any) {
	switch status {
	case http.StatusUnauthorized:
		return errUnauthorized()
	case http.StatusForbidden:
		return errForbidden()
	case http.StatusNotFound:
		return errNotFound("not found")
	case http.StatusConflict:
		return errConflict("the resource has changed during the request, please retry")
	case http.StatusLocked:
		return errLocked("the resource is locked by another action")
	case http.StatusInternalServerError:
		return newError(status, "server_error", "internal server error")
	case http.StatusBadGateway:
		return newError(status, "bad_gateway", "the request could not be answered by the API backend, please retry")
	case http.StatusServiceUnavailable:
		return newError(status, "service_error", "service temporarily unavailable")
	case http.StatusGatewayTimeout:
		return newError(status, "timeout", "the request could not be answered in time, please retry")
	}
	if status < 500 {
		return withDetails(status, "invalid_input", "invalid input", fieldDetails{Fields: []fieldError{}})
	}
	return newError(status, "unknown_error", strings.ToLower(http.StatusText(status)))
}

// listReply is a list answer: the document, and the Link header the API
// sends with it.
type listReply struct {
	doc  any
	link string
}

// replyWriter writes responses with the headers every real response has.
type replyWriter struct {
	w             http.ResponseWriter
	correlationID string
	quota         faults.Quota
}

// reply writes a handler's result and returns the status written.
func (rw *replyWriter) reply(status int, body any) int {
	h := rw.w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Correlation-Id", rw.correlationID)
	limit, remaining, reset := DefaultRateLimit, DefaultRateLimit, time.Now()
	if q := rw.quota; q.Enabled {
		limit, remaining, reset = q.Limit, q.Remaining, q.Reset
	}
	if status == http.StatusTooManyRequests {
		remaining = 0
	}
	h.Set("RateLimit-Limit", strconv.Itoa(limit))
	h.Set("RateLimit-Remaining", strconv.Itoa(remaining))
	h.Set("RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
	if lr, ok := body.(*listReply); ok {
		if lr.link != "" {
			h.Set("Link", lr.link)
		}
		body = lr.doc
	}
	if status == http.StatusNoContent {
		h.Del("Content-Type")
		body = nil
	}
	fakehttp.WriteJSON(rw.w, status, body)
	return status
}

// correlationID makes an ID like the API's: 16 hex digits.
func correlationID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
