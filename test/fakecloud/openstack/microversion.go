package openstack

import (
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
)

// microversion is a Nova API microversion, "2.47".
type microversion struct{ major, minor int }

// Nova's range: 2.1 when a request asks for none, and the highest of the
// 2024.1 (Caracal) release, which added pinned_availability_zone.
var (
	minMicroversion = microversion{2, 1}
	maxMicroversion = microversion{2, 96}
)

func (v microversion) String() string { return fmt.Sprintf("%d.%d", v.major, v.minor) }

// atLeast says whether v is minor or later (of major 2).
func (v microversion) atLeast(minor int) bool {
	return v.major > 2 || v.major == 2 && v.minor >= minor
}

func (v microversion) less(o microversion) bool {
	return v.major < o.major || v.major == o.major && v.minor < o.minor
}

// microversionRE is Nova's APIVersionRequest format: no leading zeros.
var microversionRE = regexp.MustCompile(`^([1-9]\d*)\.([1-9]\d*|0)$`)

// parseMicroversion reads "X.Y" as Nova's APIVersionRequest does.
func parseMicroversion(s string) (microversion, bool) {
	m := microversionRE.FindStringSubmatch(s)
	if m == nil {
		return microversion{}, false
	}
	a, err1 := strconv.Atoi(m[1])
	b, err2 := strconv.Atoi(m[2])
	return microversion{a, b}, err1 == nil && err2 == nil
}

// SetMaxMicroversion sets the highest compute microversion the cloud
// offers ("2.46" for a cloud older than Pike, which shows servers'
// flavors by ID only). It panics on a malformed version or one below 2.1.
func (s *Server) SetMaxMicroversion(v string) {
	mv, ok := parseMicroversion(v)
	if !ok || mv.less(minMicroversion) {
		panic("openstack fake: bad microversion " + v)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.maxMicro = mv
}

// requestedMicroversion reads the compute microversion a request asks for,
// as Nova does: "OpenStack-API-Version: compute X.Y" first, then the
// legacy X-OpenStack-Nova-API-Version, else 2.1; "latest" is the highest.
// A malformed version is 400, one out of range 406.
func (s *Server) requestedMicroversion(r *http.Request) (microversion, int, any) {
	s.mu.Lock()
	hi := s.maxMicro
	s.mu.Unlock()
	asked := ""
	for _, h := range r.Header.Values("OpenStack-API-Version") {
		for _, part := range strings.Split(h, ",") {
			svc, ver, _ := strings.Cut(strings.TrimSpace(part), " ")
			if strings.EqualFold(svc, "compute") {
				asked = strings.TrimSpace(ver)
			}
		}
	}
	if asked == "" {
		asked = strings.TrimSpace(r.Header.Get("X-OpenStack-Nova-API-Version"))
	}
	switch asked {
	case "":
		return minMicroversion, 0, nil
	case "latest":
		return hi, 0, nil
	}
	mv, ok := parseMicroversion(asked)
	if !ok {
		st, body := errNova(http.StatusBadRequest, fmt.Sprintf(
			"API Version String %s is of invalid format. Must be of format MajorNum.MinorNum.", asked))
		return microversion{}, st, body
	}
	if mv.less(minMicroversion) || hi.less(mv) {
		st, body := errNova(http.StatusNotAcceptable, fmt.Sprintf(
			"Version %s is not supported by the API. Minimum is %s and maximum is %s.", asked, minMicroversion, hi))
		return microversion{}, st, body
	}
	return mv, 0, nil
}

// Cinder's range: 3.0 when a request asks for none, up to 3.71, the
// highest since 2023.2 (Bobcat), which its version document offers.
var (
	minVolumeMicroversion = microversion{3, 0}
	maxVolumeMicroversion = microversion{3, 71}
)

// from says whether v is major.minor or later.
func (v microversion) from(major, minor int) bool { return !v.less(microversion{major, minor}) }

// requestedVolumeMicroversion reads the volume microversion a request asks
// for, as Cinder does: from "OpenStack-API-Version: volume X.Y" alone (it
// has no legacy header), else 3.0; "latest" is the highest. A header
// naming no volume version is refused as Cinder's fault wrapper refuses
// its VersionNotFoundForAPIMethod (400, in webob's words); a malformed
// version is 400, one out of range 406.
func requestedVolumeMicroversion(r *http.Request) (microversion, int, any) {
	hdrs := r.Header.Values("OpenStack-API-Version")
	if len(hdrs) == 0 {
		return minVolumeMicroversion, 0, nil
	}
	asked := ""
	for _, part := range strings.Split(strings.Join(hdrs, ","), ",") {
		if strings.Contains(part, svcVolume) {
			if f := strings.Fields(part); len(f) == 2 {
				asked = f[1]
			}
			break
		}
	}
	switch asked {
	case "":
		st, body := errNova(http.StatusBadRequest,
			"The server could not comply with the request since it is either malformed or otherwise incorrect.")
		return microversion{}, st, body
	case "latest":
		return maxVolumeMicroversion, 0, nil
	}
	mv, ok := parseMicroversion(asked)
	if !ok {
		st, body := errNova(http.StatusBadRequest, fmt.Sprintf(
			"API Version String %s is of invalid format. Must be of format MajorNum.MinorNum.", asked))
		return microversion{}, st, body
	}
	if mv.less(minVolumeMicroversion) || maxVolumeMicroversion.less(mv) {
		st, body := errNova(http.StatusNotAcceptable, fmt.Sprintf(
			"Version %s is not supported by the API. Minimum is %s and maximum is %s.", mv, minVolumeMicroversion, maxVolumeMicroversion))
		return microversion{}, st, body
	}
	return mv, 0, nil
}
