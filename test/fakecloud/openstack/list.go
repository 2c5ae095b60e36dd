package openstack

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Nova and Neutron page their lists the same way on the surface, limit
// and marker, with a "<collection>_links" list holding the next page's
// URL, but differ underneath, so each has its own helper.

// novaMaxLimit is Nova's [api] max_limit: no page is longer.
const novaMaxLimit = 1000

// novaPage pages a Nova list as its common.limited does. items are every
// item of the collection in the API's order, filtered or not: the marker
// may name one the filters drop, and an unknown marker is 400. keep is
// the filter. A page as long as the limit links to the next, even when
// nothing follows (the client then gets an empty page), as Nova does.
func novaPage[T any](c *call, collection string, items []T, id func(T) string, keep func(T) bool) (page []T, links []wireLink, status int, body any) {
	q := c.r.URL.Query()
	limit := novaMaxLimit
	if q.Has("limit") {
		v := q.Get("limit")
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || strings.ContainsAny(v, "+-") {
			status, body = errNova(http.StatusBadRequest, fmt.Sprintf(
				"Invalid input for query parameters limit. Value: %s. '%s' does not match '^[0-9]*$'", v, v))
			return nil, nil, status, body
		}
		limit = min(n, novaMaxLimit)
	}
	start := 0
	if q.Has("marker") {
		m := q.Get("marker")
		k := slices.IndexFunc(items, func(it T) bool { return id(it) == m })
		if k < 0 {
			status, body = errNova(http.StatusBadRequest, fmt.Sprintf("marker [%s] not found", m))
			return nil, nil, status, body
		}
		start = k + 1
	}
	for _, it := range items[start:] {
		if len(page) == limit {
			break
		}
		if keep(it) {
			page = append(page, it)
		}
	}
	if limit > 0 && len(page) == limit {
		q.Set("marker", id(page[len(page)-1]))
		links = []wireLink{{Rel: "next", Href: c.root + "/compute/v2.1/" + collection + "?" + q.Encode()}}
	}
	return page, links, 0, nil
}

// neutronQuery is a Neutron list's paging and filters.
type neutronQuery struct {
	limit   int // 0: no limit
	marker  string
	reverse bool
	filters url.Values
}

// Parameters of every Neutron list that are not filters. Neutron sorts
// by id unless told otherwise; the fake always does, and sends every
// field.
var neutronReserved = []string{"limit", "marker", "page_reverse", "sort_key", "sort_dir", "fields"}

// The tag filters, which every taggable resource takes.
var neutronTagFilters = []string{"tags", "tags-any", "not-tags", "not-tags-any"}

// parseNeutronQuery reads limit, marker and page_reverse, and checks
// every other parameter is a filter the resource has (known), as Neutron
// does since filter validation became the default.
func parseNeutronQuery(r *http.Request, known []string) (neutronQuery, int, any) {
	q := r.URL.Query()
	nq := neutronQuery{marker: q.Get("marker"), filters: url.Values{}}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			st, body := errNeutron(http.StatusBadRequest, "BadRequest",
				fmt.Sprintf("Bad limit request: Limit must be an integer 0 or greater and not '%s'.", v))
			return nq, st, body
		}
		nq.limit = n
	}
	nq.reverse, _ = strconv.ParseBool(q.Get("page_reverse"))
	for k, vs := range q {
		switch {
		case slices.Contains(neutronReserved, k):
		case slices.Contains(known, k) || slices.Contains(neutronTagFilters, k):
			nq.filters[k] = vs
		default:
			st, body := errNeutron(http.StatusBadRequest, webobType(http.StatusBadRequest),
				fmt.Sprintf("['%s'] is invalid attribute for filtering", k))
			return nq, st, body
		}
	}
	return nq, 0, nil
}

// neutronItem is what the filters see of a resource: its ID, its
// filterable attributes as strings (booleans "true"/"false"; fixed_ips as
// "ip_address=..." and "subnet_id=..."), and its tags.
type neutronItem struct {
	id     string
	fields map[string][]string
	tags   []string
}

// keep says whether an item passes every filter. Values of one filter
// are alternatives; different filters must all pass.
func (nq neutronQuery) keep(it neutronItem) bool {
	for k, vs := range nq.filters {
		var ok bool
		switch k {
		case "tags", "tags-any", "not-tags", "not-tags-any":
			ok = tagsMatch(k, vs, it.tags)
		case "fixed_ips":
			ok = fixedIPsMatch(vs, it.fields[k])
		default:
			ok = slices.ContainsFunc(vs, func(v string) bool {
				if b, err := strconv.ParseBool(v); err == nil && isBoolField(it.fields[k]) {
					v = strconv.FormatBool(b)
				}
				return slices.Contains(it.fields[k], v)
			})
		}
		if !ok {
			return false
		}
	}
	return true
}

func isBoolField(vals []string) bool {
	return len(vals) == 1 && (vals[0] == "true" || vals[0] == "false")
}

// tagsMatch applies a tag filter, each value a comma-separated list.
func tagsMatch(filter string, values, tags []string) bool {
	var want []string
	for _, v := range values {
		want = append(want, strings.Split(v, ",")...)
	}
	all := !slices.ContainsFunc(want, func(t string) bool { return !slices.Contains(tags, t) })
	anyOf := slices.ContainsFunc(want, func(t string) bool { return slices.Contains(tags, t) })
	switch filter {
	case "tags":
		return all
	case "tags-any":
		return anyOf
	case "not-tags":
		return !all
	}
	return !anyOf
}

// fixedIPsMatch applies fixed_ips filters ("ip_address=10.0.0.5",
// "subnet_id=..."): for each key asked, one of its values must match.
func fixedIPsMatch(values, have []string) bool {
	byKey := map[string][]string{}
	for _, v := range values {
		k, _, _ := strings.Cut(v, "=")
		byKey[k] = append(byKey[k], v)
	}
	for _, vs := range byKey {
		if !slices.ContainsFunc(vs, func(v string) bool { return slices.Contains(have, v) }) {
			return false
		}
	}
	return true
}

// neutronPage pages a Neutron list as its pagination helper does: by
// keyset on id, so the marker needs only to exist (else markerMissing's
// answer), and limit items after it (before it with page_reverse, still
// in ascending order). A limited page links to the next page unless it
// came up short, and always to the previous one.
func neutronPage(c *call, collection string, nq neutronQuery, items []neutronItem, render func(id string) any,
	markerMissing func(id string) (int, any)) (int, any) {
	slices.SortFunc(items, func(a, b neutronItem) int { return strings.Compare(a.id, b.id) })
	if nq.marker != "" && !slices.ContainsFunc(items, func(it neutronItem) bool { return it.id == nq.marker }) {
		return markerMissing(nq.marker)
	}
	var page []neutronItem
	for _, it := range items {
		after := nq.marker == "" || (!nq.reverse && it.id > nq.marker) || (nq.reverse && it.id < nq.marker)
		if after && nq.keep(it) {
			page = append(page, it)
		}
	}
	if nq.limit > 0 && len(page) > nq.limit {
		if nq.reverse {
			page = page[len(page)-nq.limit:]
		} else {
			page = page[:nq.limit]
		}
	}
	out := make([]any, 0, len(page))
	for _, it := range page {
		out = append(out, render(it.id))
	}
	doc := map[string]any{collection: out}
	if links := neutronLinks(c, collection, nq, page); len(links) > 0 {
		doc[collection+"_links"] = links
	}
	return http.StatusOK, doc
}

func neutronLinks(c *call, collection string, nq neutronQuery, page []neutronItem) []wireLink {
	if nq.limit == 0 {
		return nil
	}
	href := func(q url.Values) string {
		return c.root + "/network/v2.0/" + collection + "?" + q.Encode()
	}
	short := len(page) < nq.limit
	var links []wireLink
	if !(short && !nq.reverse) && len(page) > 0 {
		q := c.r.URL.Query()
		q.Set("marker", page[len(page)-1].id)
		q.Del("page_reverse")
		links = append(links, wireLink{Rel: "next", Href: href(q)})
	}
	if !(short && nq.reverse) {
		q := c.r.URL.Query()
		q.Del("marker")
		if len(page) > 0 {
			q.Set("marker", page[0].id)
		}
		q.Set("page_reverse", "True")
		links = append(links, wireLink{Rel: "previous", Href: href(q)})
	}
	return links
}
