package aws

import (
	"errors"
	"net/http"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"

	"github.com/polyccm/polyccm/core/cloudapi"
)

// Error codes by meaning. Throttling codes come from the SDK's own list.
var (
	notFoundCodes = map[string]bool{
		"LoadBalancerNotFound": true, "TargetGroupNotFound": true, "ListenerNotFound": true,
		"PolicyNotFound": true,
	}
	authCodes = map[string]bool{
		"AuthFailure": true, "UnauthorizedOperation": true, "InvalidClientTokenId": true,
		"SignatureDoesNotMatch": true, "AccessDenied": true, "AccessDeniedException": true,
		"ExpiredToken": true, "ExpiredTokenException": true, "InvalidAccessKeyId": true,
		"MissingAuthenticationToken": true, "UnrecognizedClientException": true, "OptInRequired": true,
	}
	existsCodes = map[string]bool{
		"RouteAlreadyExists": true, "InvalidPermission.Duplicate": true, "InvalidGroup.Duplicate": true,
		"DuplicateLoadBalancerName": true, "DuplicateTargetGroupName": true, "DuplicateListener": true,
		"DuplicateTagKeys": true, "DuplicatePolicyName": true,
	}
	conflictCodes = map[string]bool{
		"DependencyViolation": true, "ResourceInUse": true, "IncorrectState": true,
		"OperationNotPermitted": true, "PriorRequestNotComplete": true,
	}
	unavailableCodes = map[string]bool{
		"InternalError": true, "InternalFailure": true, "ServiceUnavailable": true, "Unavailable": true,
		"RequestTimeout": true, "RequestTimeoutException": true,
	}
)

// classify maps SDK errors onto core's kinds, by AWS error code first (they
// are precise: EC2 throttles with HTTP 503, ELBv2 with 400), then by status.
func classify(err error) cloudapi.Classification {
	var ce *credentialsError
	if errors.As(err, &ce) {
		return cloudapi.Classification{Kind: cloudapi.KindUnauthorized}
	}
	status := 0
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		status = re.HTTPStatusCode()
	}
	cl := cloudapi.Classification{Status: status}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		code := ae.ErrorCode()
		_, throttle := retry.DefaultThrottleErrorCodes[code]
		switch {
		case throttle:
			cl.Kind = cloudapi.KindThrottled
		case notFoundCodes[code] || strings.HasSuffix(code, ".NotFound"):
			cl.Kind = cloudapi.KindNotFound
		case authCodes[code]:
			cl.Kind = cloudapi.KindUnauthorized
		case existsCodes[code]:
			cl.Kind = cloudapi.KindExists
		case conflictCodes[code]:
			cl.Kind = cloudapi.KindConflict
		case unavailableCodes[code]:
			cl.Kind = cloudapi.KindUnavailable
		}
		if cl.Kind != cloudapi.KindUnknown {
			return cl
		}
	}
	if status != 0 {
		cl.Kind = cloudapi.ClassifyHTTPStatus(status)
		if status == http.StatusNotFound {
			// A bare 404 without an AWS code is a wrong endpoint, not a
			// missing resource.
			cl.Kind = cloudapi.KindInvalid
		}
	}
	return cl
}

// errorCode is the AWS error code of err, or "".
func errorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}
