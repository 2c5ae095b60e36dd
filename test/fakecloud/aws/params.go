package aws

import (
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// params reads the form-encoded parameters of a query-protocol request,
// optionally under a prefix, so nested structures read like top-level ones:
// for "Filter.2.Value.1" the filter's params has prefix "Filter.2.".
//
// The EC2 query protocol flattens lists ("InstanceId.1", "Filter.1.Name",
// "Filter.1.Value.1"); the AWS query protocol wraps them in "member"
// ("Names.member.1", "Tags.member.1.Key") and sends an empty list as the
// bare name with an empty value ("SecurityGroups="). Indexes start at 1 and
// are read in numeric order; gaps are tolerated, as the services do.
type params struct {
	v      url.Values
	prefix string
}

func newParams(v url.Values) params { return params{v: v} }

// str returns a parameter and whether it was sent.
func (p params) str(key string) (string, bool) {
	vs, ok := p.v[p.prefix+key]
	if !ok || len(vs) == 0 {
		return "", false
	}
	return vs[0], true
}

// get returns a parameter, "" if absent.
func (p params) get(key string) string {
	s, _ := p.str(key)
	return s
}

// has reports whether a parameter, or any parameter nested under it, was
// sent.
func (p params) has(key string) bool {
	full := p.prefix + key
	if _, ok := p.v[full]; ok {
		return true
	}
	for k := range p.v {
		if strings.HasPrefix(k, full+".") {
			return true
		}
	}
	return false
}

// indexes returns the list indexes sent under key ("key.N" or "key.N.*"),
// in numeric order.
func (p params) indexes(key string) []int {
	full := p.prefix + key + "."
	seen := map[int]bool{}
	for k := range p.v {
		rest, ok := strings.CutPrefix(k, full)
		if !ok {
			continue
		}
		n, _, _ := strings.Cut(rest, ".")
		if i, err := strconv.Atoi(n); err == nil && i > 0 && strconv.Itoa(i) == n {
			seen[i] = true
		}
	}
	out := make([]int, 0, len(seen))
	for i := range seen {
		out = append(out, i)
	}
	sort.Ints(out)
	return out
}

// flat returns an EC2-style flattened list of strings, "key.1", "key.2"...
func (p params) flat(key string) []string {
	var out []string
	for _, i := range p.indexes(key) {
		if s, ok := p.str(key + "." + strconv.Itoa(i)); ok {
			out = append(out, s)
		}
	}
	return out
}

// flatStructs returns an EC2-style flattened list of structures, "key.N.*".
func (p params) flatStructs(key string) []params {
	var out []params
	for _, i := range p.indexes(key) {
		out = append(out, params{v: p.v, prefix: p.prefix + key + "." + strconv.Itoa(i) + "."})
	}
	return out
}

// members returns an AWS query list of strings, "key.member.N", and
// whether the list was sent at all (an empty list is sent as "key=").
func (p params) members(key string) ([]string, bool) {
	var out []string
	for _, i := range p.indexes(key + ".member") {
		if s, ok := p.str(key + ".member." + strconv.Itoa(i)); ok {
			out = append(out, s)
		}
	}
	if len(out) > 0 {
		return out, true
	}
	_, sent := p.str(key)
	return nil, sent
}

// memberStructs returns an AWS query list of structures,
// "key.member.N.*", and whether the list was sent at all.
func (p params) memberStructs(key string) ([]params, bool) {
	var out []params
	for _, i := range p.indexes(key + ".member") {
		out = append(out, params{v: p.v, prefix: p.prefix + key + ".member." + strconv.Itoa(i) + "."})
	}
	if len(out) > 0 {
		return out, true
	}
	_, sent := p.str(key)
	return nil, sent
}

// sub returns the params of a nested structure, "key.*".
func (p params) sub(key string) params {
	return params{v: p.v, prefix: p.prefix + key + "."}
}

// intParam is a parsed integer parameter: sent says it was present, ok
// that it parsed.
type intParam struct {
	n        int64
	sent, ok bool
	raw      string
}

func (p params) integer(key string) intParam {
	s, sent := p.str(key)
	if !sent {
		return intParam{}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	return intParam{n: n, sent: true, ok: err == nil, raw: s}
}

// boolean parses a boolean parameter the way the services do: "true" and
// "false", case-insensitively.
func (p params) boolean(key string) (value, sent, ok bool) {
	s, sent := p.str(key)
	if !sent {
		return false, false, true
	}
	switch strings.ToLower(s) {
	case "true":
		return true, true, true
	case "false":
		return false, true, true
	}
	return false, true, false
}

// filter is one EC2 Filter.N: a name and the values any of which match.
type filter struct {
	name   string
	values []string
}

// filters reads EC2 "Filter.N.Name" / "Filter.N.Value.M".
func (p params) filters() []filter {
	var out []filter
	for _, f := range p.flatStructs("Filter") {
		out = append(out, filter{name: f.get("Name"), values: f.flat("Value")})
	}
	return out
}

// ec2Tags reads an EC2 flattened tag list, "key.N.Key" / "key.N.Value",
// keeping whether each value was sent (DeleteTags tells them apart).
type tagParam struct {
	key, value string
	valueSent  bool
}

func (p params) ec2Tags(key string) []tagParam {
	var out []tagParam
	for _, t := range p.flatStructs(key) {
		v, sent := t.str("Value")
		out = append(out, tagParam{key: t.get("Key"), value: v, valueSent: sent})
	}
	return out
}

// tagSpecs reads EC2 "TagSpecification.N.ResourceType" / ".Tag.M.Key".
func (p params) tagSpecs() map[string][]tagParam {
	out := map[string][]tagParam{}
	for _, ts := range p.flatStructs("TagSpecification") {
		rt := ts.get("ResourceType")
		out[rt] = append(out[rt], ts.ec2Tags("Tag")...)
	}
	return out
}
