package aws

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/polyccm/polyccm/test/fakecloud/fakehttp"
)

// apiError is an error answer: the HTTP status, the error code clients
// switch on and the message.
type apiError struct {
	status  int
	code    string
	message string
}

func (e *apiError) Error() string { return e.code + ": " + e.message }

func errorf(status int, code, format string, args ...any) *apiError {
	return &apiError{status: status, code: code, message: fmt.Sprintf(format, args...)}
}

// badRequest is the usual 400 of a client error.
func badRequest(code, format string, args ...any) *apiError {
	return errorf(http.StatusBadRequest, code, format, args...)
}

// The EC2 query protocol's envelope: <ActionResponse xmlns=...> with the
// requestId first, then the output's fields directly, lowercase-first, lists
// as "xxxSet" of "item"s.
const ec2Namespace = "http://ec2.amazonaws.com/doc/2016-11-15/"

// ec2Head starts every EC2 response body; embedding it makes a type an
// EC2 output.
type ec2Head struct {
	RequestID string `xml:"requestId"`
}

func (h *ec2Head) setRequestID(id string) { h.RequestID = id }

type ec2Output interface{ setRequestID(string) }

// ec2Return is the output of actions that answer only <return>true</return>.
type ec2Return struct {
	ec2Head
	Return bool `xml:"return"`
}

func returnTrue() *ec2Return { return &ec2Return{Return: true} }

// encodeEC2 renders an EC2 success body.
func encodeEC2(action, requestID string, out ec2Output) []byte {
	out.setRequestID(requestID)
	var b bytes.Buffer
	b.WriteString(fakehttp.XMLHeader)
	enc := xml.NewEncoder(&b)
	start := xml.StartElement{
		Name: xml.Name{Local: action + "Response"},
		Attr: []xml.Attr{{Name: xml.Name{Local: "xmlns"}, Value: ec2Namespace}},
	}
	if err := enc.EncodeElement(out, start); err != nil {
		panic(fmt.Sprintf("aws fake: encoding %T: %v", out, err))
	}
	return b.Bytes()
}

// encodeEC2Error renders the EC2 error envelope, which has no namespace and
// spells the request id "RequestID".
func encodeEC2Error(e *apiError, requestID string) []byte {
	type xmlError struct {
		Code    string `xml:"Code"`
		Message string `xml:"Message"`
	}
	type xmlResponse struct {
		XMLName   xml.Name   `xml:"Response"`
		Errors    []xmlError `xml:"Errors>Error"`
		RequestID string     `xml:"RequestID"`
	}
	return fakehttp.EncodeXML(xmlResponse{Errors: []xmlError{{Code: e.code, Message: e.message}}, RequestID: requestID})
}

// encodeQuery renders an AWS query protocol success body:
// <ActionResponse xmlns><ActionResult>...</ActionResult>
// <ResponseMetadata><RequestId/></ResponseMetadata></ActionResponse>.
// A nil result is sent as an empty <ActionResult/>, as the services do.
func encodeQuery(namespace, action, requestID string, result any) []byte {
	var b bytes.Buffer
	enc := xml.NewEncoder(&b)
	resp := xml.StartElement{
		Name: xml.Name{Local: action + "Response"},
		Attr: []xml.Attr{{Name: xml.Name{Local: "xmlns"}, Value: namespace}},
	}
	mustEncode(enc.EncodeToken(resp))
	resultStart := xml.StartElement{Name: xml.Name{Local: action + "Result"}}
	if result == nil {
		mustEncode(enc.EncodeToken(resultStart))
		mustEncode(enc.EncodeToken(resultStart.End()))
	} else {
		mustEncode(enc.EncodeElement(result, resultStart))
	}
	type metadata struct {
		RequestID string `xml:"RequestId"`
	}
	mustEncode(enc.EncodeElement(metadata{RequestID: requestID}, xml.StartElement{Name: xml.Name{Local: "ResponseMetadata"}}))
	mustEncode(enc.EncodeToken(resp.End()))
	mustEncode(enc.Flush())
	return b.Bytes()
}

// encodeQueryError renders the AWS query protocol's error envelope. Type is
// Sender for client errors and Receiver for server ones.
func encodeQueryError(namespace string, e *apiError, requestID string) []byte {
	type xmlError struct {
		Type    string `xml:"Type"`
		Code    string `xml:"Code"`
		Message string `xml:"Message"`
	}
	type xmlResponse struct {
		XMLName   xml.Name `xml:"ErrorResponse"`
		Xmlns     string   `xml:"xmlns,attr"`
		Error     xmlError `xml:"Error"`
		RequestID string   `xml:"RequestId"`
	}
	typ := "Sender"
	if e.status >= 500 {
		typ = "Receiver"
	}
	return fakehttp.EncodeXML(xmlResponse{Xmlns: namespace, Error: xmlError{Type: typ, Code: e.code, Message: e.message}, RequestID: requestID})
}

func mustEncode(err error) {
	if err != nil {
		panic(fmt.Sprintf("aws fake: encoding: %v", err))
	}
}

// isoTime formats a timestamp the way the query services do.
func isoTime(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

// joinQuoted renders ids the way several messages list them: 'a, b'.
func joinQuoted(ids []string) string { return "'" + strings.Join(ids, ", ") + "'" }
