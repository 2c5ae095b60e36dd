package digitalocean

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/polyccm/polyccm/test/fakecloud/fakehttp"
	"github.com/polyccm/polyccm/test/fakecloud/faults"
)

// Nominal rate limit the real API reports (5,000 requests an hour), used in
// headers while the injector's rate limit is off.
const nominalRateLimit = 5000

// apiError is the error document every 4xx and 5xx carries.
type apiError struct {
	ID        string `json:"id"`
	Message   string `json:"message"`
	RequestID string `json:"request_id,omitempty"`
}

func newError(status int, id, message string) (int, any) {
	return status, &apiError{ID: id, Message: message}
}

// The real API's bodies for these, as observed and as in its reference.
func errUnauthorized() (int, any) {
	return newError(http.StatusUnauthorized, "Unauthorized", "Unable to authenticate you")
}

// errForbidden is what a token without the scope a request needs gets.
func errForbidden() (int, any) {
	return newError(http.StatusForbidden, "forbidden", "You are not authorized to perform this operation")
}

func errNotFound() (int, any) {
	return newError(http.StatusNotFound, "not_found", "The resource you were accessing could not be found.")
}

func errTooManyRequests() (int, any) {
	return newError(http.StatusTooManyRequests, "too_many_requests", "API Rate limit exceeded.")
}

func errServer() (int, any) {
	return newError(http.StatusInternalServerError, "server_error", "Unexpected server-side error")
}

func errMethodNotAllowed() (int, any) {
	return newError(http.StatusMethodNotAllowed, "method_not_allowed", "Method Not Allowed")
}

func errUnprocessable(message string) (int, any) {
	return newError(http.StatusUnprocessableEntity, "unprocessable_entity", message)
}

func errBadRequest(message string) (int, any) {
	return newError(http.StatusBadRequest, "bad_request", message)
}

// errNotJSON is the 400 for a request body that does not decode.
func errNotJSON(err error) (int, any) {
	return errBadRequest("The request body is not valid JSON: " + err.Error())
}

// errStatus builds the error for any other injected status: the id is the
// status text in snake case, following the API's convention ("not_found",
// "service_unavailable").
func errStatus(status int) (int, any) {
	switch status {
	case http.StatusUnauthorized:
		return errUnauthorized()
	case http.StatusForbidden:
		return errForbidden()
	case http.StatusNotFound:
		return errNotFound()
	case http.StatusTooManyRequests:
		return errTooManyRequests()
	case http.StatusInternalServerError:
		return errServer()
	}
	text := http.StatusText(status)
	if text == "" {
		text = "Error"
	}
	id := strings.ToLower(strings.NewReplacer(" ", "_", "-", "_", "'", "").Replace(text))
	return newError(status, id, text)
}

// replyWriter writes responses with the headers every real response has.
type replyWriter struct {
	w         http.ResponseWriter
	requestID string
	quota     faults.Quota
}

// reply writes a handler's result and returns the status written.
func (rw *replyWriter) reply(status int, body any) int {
	if e, ok := body.(*apiError); ok {
		e.RequestID = rw.requestID
	}
	h := rw.w.Header()
	// The real API sets the content type even on 204s.
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("X-Request-Id", rw.requestID)
	// Ratelimit-Limit is requests an hour, as DigitalOcean documents it
	// (5000), not the burst the bucket also caps.
	limit, remaining, reset := nominalRateLimit, nominalRateLimit, time.Now()
	if q := rw.quota; q.Enabled {
		limit, remaining, reset = int(math.Round(q.Rate*3600)), q.Remaining, q.Reset
	}
	if status == http.StatusTooManyRequests {
		remaining = 0
	}
	h.Set("Ratelimit-Limit", strconv.Itoa(limit))
	h.Set("Ratelimit-Remaining", strconv.Itoa(remaining))
	h.Set("Ratelimit-Reset", strconv.FormatInt(reset.Unix(), 10))
	fakehttp.WriteJSON(rw.w, status, body)
	return status
}

// tooManyRequests answers a throttled request. Retry-After is whole seconds
// and at least 1, as the real API sends it.
func (rw *replyWriter) tooManyRequests(retryAfter time.Duration) int {
	fakehttp.SetRetryAfter(rw.w.Header(), max(retryAfter, time.Second))
	return rw.reply(errTooManyRequests())
}

// injected answers with an injected failure.
func (rw *replyWriter) injected(status int, retryAfter time.Duration) int {
	fakehttp.SetRetryAfter(rw.w.Header(), retryAfter)
	return rw.reply(errStatus(status))
}
