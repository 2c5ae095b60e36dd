package openstack

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/gophercloud/gophercloud/v2"

	"github.com/polyccm/polyccm/core/cloudapi"
)

// classify maps gophercloud's errors onto core's kinds. Every OpenStack
// service answers with a status and a service-specific body; the status
// says what happened, except that Octavia's 409 on a load balancer in a
// PENDING_* state is a wait (conflict), and over-limit answers (413 from
// Nova and Neutron, 429 from the rest) carry Retry-After.
func classify(err error) cloudapi.Classification {
	var ce *credentialErr
	if errors.As(err, &ce) {
		return cloudapi.Classification{Kind: cloudapi.KindUnauthorized}
	}
	// gophercloud returns it as a pointer: a service refused the token
	// and asking Keystone for a new one failed. Keystone's answer says
	// why (the credentials refused, or Keystone itself failing).
	var reauth *gophercloud.ErrUnableToReauthenticate
	if errors.As(err, &reauth) {
		if c := classify(reauth.ErrReauth); c.Kind != cloudapi.KindUnknown {
			return c
		}
		if k, ok := cloudapi.ClassifyTransport(reauth.ErrReauth); ok {
			return cloudapi.Classification{Kind: k}
		}
		return cloudapi.Classification{Kind: cloudapi.KindUnauthorized, Status: http.StatusUnauthorized}
	}
	var ec *catalogErr
	if errors.As(err, &ec) {
		return cloudapi.Classification{Kind: cloudapi.KindInvalid}
	}
	var ue gophercloud.ErrUnexpectedResponseCode
	if errors.As(err, &ue) {
		st := ue.Actual
		cl := cloudapi.Classification{Kind: cloudapi.ClassifyHTTPStatus(st), Status: st}
		switch st {
		case http.StatusRequestEntityTooLarge:
			// Nova's and Neutron's over-limit answer (overLimit).
			if ue.ResponseHeader.Get("Retry-After") != "" {
				cl.Kind = cloudapi.KindThrottled
			}
		case http.StatusConflict:
			cl.Kind = cloudapi.KindConflict
		}
		if cl.Kind == cloudapi.KindThrottled || st == http.StatusServiceUnavailable {
			cl.RetryAfter = retryAfter(ue.ResponseHeader)
		}
		return cl
	}
	var nf gophercloud.ErrResourceNotFound
	if errors.As(err, &nf) {
		return cloudapi.Classification{Kind: cloudapi.KindNotFound}
	}
	return cloudapi.Classification{Kind: cloudapi.KindUnknown}
}

func retryAfter(h http.Header) time.Duration {
	if s, err := strconv.Atoi(h.Get("Retry-After")); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(h.Get("Retry-After")); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

// credentialErr is a credential polyccm could not read: the cloud was
// never asked.
type credentialErr struct {
	key string
	err error
}

func credentialError(key string, err error) error { return &credentialErr{key: key, err: err} }

func (e *credentialErr) Error() string {
	return fmt.Sprintf("OpenStack credentials: drivers.openstack.%s: %v", e.key, e.err)
}
func (e *credentialErr) Unwrap() error { return e.err }

// catalogErr is a service the catalog has no endpoint of in the region.
type catalogErr struct {
	service, region string
	err             error
}

func catalogError(service, region string, err error) error {
	return &catalogErr{service: service, region: region, err: err}
}

func (e *catalogErr) Error() string {
	return fmt.Sprintf("Keystone's catalog has no public %s endpoint in region %q (drivers.openstack.region): %v", e.service, e.region, e.err)
}
func (e *catalogErr) Unwrap() error { return e.err }
