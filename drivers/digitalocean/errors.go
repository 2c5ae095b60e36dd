package digitalocean

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/digitalocean/godo"

	"github.com/polyccm/polyccm/config/secret"
	"github.com/polyccm/polyccm/core/cloudapi"
)

// classify maps godo errors onto core's kinds. DigitalOcean signals its
// limits with 429 and RateLimit-* headers; Retry-After when it sends one.
func classify(err error) cloudapi.Classification {
	var te *secret.TokenError
	if errors.As(err, &te) {
		return cloudapi.Classification{Kind: cloudapi.KindUnauthorized}
	}
	var er *godo.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		st := er.Response.StatusCode
		cl := cloudapi.Classification{Kind: cloudapi.ClassifyHTTPStatus(st), Status: st}
		// DigitalOcean answers 403 to changes of a load balancer that is
		// still busy: that is a conflict to wait out, not bad credentials.
		if st == http.StatusForbidden && strings.Contains(er.Message, "processes previous actions") {
			cl.Kind = cloudapi.KindConflict
		}
		if st == http.StatusTooManyRequests || st == http.StatusServiceUnavailable {
			cl.RetryAfter = retryAfter(er.Response.Header)
		}
		return cl
	}
	return cloudapi.Classification{Kind: cloudapi.KindUnknown}
}

func retryAfter(h http.Header) time.Duration {
	if s, err := strconv.Atoi(h.Get("Retry-After")); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	if h.Get("RateLimit-Remaining") == "0" {
		if reset, err := strconv.ParseInt(h.Get("RateLimit-Reset"), 10, 64); err == nil {
			if d := time.Until(time.Unix(reset, 0)); d > 0 {
				return d
			}
		}
	}
	return 0
}
