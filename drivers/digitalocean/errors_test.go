package digitalocean_test

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/digitalocean/godo"

	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/driver"
	"github.com/polyccm/polyccm/drivers/digitalocean"
)

// apiError is what godo returns for an HTTP error status.
func apiError(status int, header http.Header) error {
	if header == nil {
		header = http.Header{}
	}
	return &godo.ErrorResponse{Response: &http.Response{StatusCode: status, Header: header}, Message: "x"}
}

func TestClassify(t *testing.T) {
	d, _ := driver.Default().Lookup(digitalocean.Name)
	future := strconv.FormatInt(time.Now().Add(30*time.Second).Unix(), 10)
	past := strconv.FormatInt(time.Now().Add(-time.Minute).Unix(), 10)
	cases := []struct {
		name       string
		err        error
		kind       cloudapi.Kind
		status     int
		retryAfter time.Duration // exact, unless minRetry is set
		minRetry   time.Duration
	}{
		{"404", apiError(404, nil), cloudapi.KindNotFound, 404, 0, 0},
		{"401", apiError(401, nil), cloudapi.KindUnauthorized, 401, 0, 0},
		{"403", apiError(403, nil), cloudapi.KindUnauthorized, 403, 0, 0},
		{"422", apiError(422, nil), cloudapi.KindInvalid, 422, 0, 0},
		{"409", apiError(409, nil), cloudapi.KindConflict, 409, 0, 0},
		{"500", apiError(500, nil), cloudapi.KindUnavailable, 500, 0, 0},
		{"503 honours Retry-After", apiError(503, http.Header{"Retry-After": {"5"}}), cloudapi.KindUnavailable, 503, 5 * time.Second, 0},
		{"429 with Retry-After", apiError(429, http.Header{"Retry-After": {"3"}}), cloudapi.KindThrottled, 429, 3 * time.Second, 0},
		{"429 with a reset in the future", apiError(429, http.Header{"Ratelimit-Remaining": {"0"}, "Ratelimit-Reset": {future}}), cloudapi.KindThrottled, 429, 0, 28 * time.Second},
		{"429 with a reset in the past", apiError(429, http.Header{"Ratelimit-Remaining": {"0"}, "Ratelimit-Reset": {past}}), cloudapi.KindThrottled, 429, 0, 0},
		{"429 with quota left ignores reset", apiError(429, http.Header{"Ratelimit-Remaining": {"7"}, "Ratelimit-Reset": {future}}), cloudapi.KindThrottled, 429, 0, 0},
		{"429 with junk Retry-After", apiError(429, http.Header{"Retry-After": {"soon"}}), cloudapi.KindThrottled, 429, 0, 0},
		{"403 busy load balancer is a conflict", &godo.ErrorResponse{Response: &http.Response{StatusCode: 403, Header: http.Header{}}, Message: "Load Balancer can't be updated while it processes previous actions"}, cloudapi.KindConflict, 403, 0, 0},
		{"wrapped", fmt.Errorf("listing: %w", apiError(404, nil)), cloudapi.KindNotFound, 404, 0, 0},
		{"not an API error", errors.New("boom"), cloudapi.KindUnknown, 0, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := d.Classify(c.err)
			if got.Kind != c.kind || got.Status != c.status {
				t.Errorf("Classify = %+v, want kind %v status %d", got, c.kind, c.status)
			}
			switch {
			case c.minRetry > 0:
				if got.RetryAfter < c.minRetry || got.RetryAfter > c.minRetry+3*time.Second {
					t.Errorf("RetryAfter = %v, want %v to %v", got.RetryAfter, c.minRetry, c.minRetry+3*time.Second)
				}
			case got.RetryAfter != c.retryAfter:
				t.Errorf("RetryAfter = %v, want %v", got.RetryAfter, c.retryAfter)
			}
		})
	}
}
