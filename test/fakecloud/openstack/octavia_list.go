package openstack

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Octavia pages and filters its lists with its PaginationHelper
// (octavia/api/common/pagination.py), whose ways the fake keeps, quirks
// included:
//
//   - filters are exact matches on the object's attributes, any other
//     parameter is 400; tags, tags-any, not-tags and not-tags-any take
//     comma-separated lists;
//   - the order is created_at (to the second), then id, ascending, or as
//     sort_key/sort_dir say; the marker is the last item of the previous
//     page and must exist (else 400), page_reverse=True pages before it;
//   - limit defaults to [api_settings] pagination_max_limit (1000), and a
//     page as long as the limit links to the next even when none follows;
//   - the links carry limit, sort and sort_key but neither the filters nor
//     sort_dir, so a client that follows them pages through the whole
//     collection, unfiltered, as it would against a real Octavia.

const octaviaMaxLimit = 1000

// octItem is what the list helper sees of an object: its filterable
// attributes as strings (booleans "true"/"false"), its tags, and how to
// render it.
type octItem struct {
	id      string
	created time.Time // zero for objects without one (flavors)
	fields  map[string]string
	tags    []string
	render  func() any
}

var octaviaReserved = []string{"limit", "marker", "sort", "sort_key", "sort_dir", "fields", "page_reverse"}

// octaviaPage answers a list of collection: items are every object of it
// the caller may see, known the filters it takes.
func octaviaPage(c *call, collection string, known []string, items []octItem) (int, any) {
	q := c.r.URL.Query()
	limit, limitText := octaviaMaxLimit, strconv.Itoa(octaviaMaxLimit)
	if q.Has("limit") {
		v := q.Get("limit")
		n, err := strconv.Atoi(v)
		switch {
		case v == "infinite" || err == nil && n < 1:
			limit, limitText = 0, "None"
		case err != nil:
			return errWSME(http.StatusBadRequest, "Supplied pagination limit '"+v+"' is not valid.")
		default:
			limit = min(n, octaviaMaxLimit)
			limitText = strconv.Itoa(limit)
		}
	}
	keys, st, body := octaviaSortKeys(q.Get("sort_key"), q.Get("sort_dir"), known)
	if st != 0 {
		return st, body
	}
	filters := map[string][]string{}
	for k, vs := range q {
		switch {
		case slices.Contains(octaviaReserved, k):
		case slices.Contains(neutronTagFilters, k), slices.Contains(known, k):
			filters[k] = vs
		default:
			return errWSME(http.StatusBadRequest, "One or more arguments are either duplicate or invalid")
		}
	}
	less := func(a, b octItem) int {
		for _, k := range keys {
			if r := compareField(a, b, k.name); r != 0 {
				if k.desc {
					return -r
				}
				return r
			}
		}
		return 0
	}
	slices.SortFunc(items, less)
	var marker *octItem
	if m := q.Get("marker"); q.Has("marker") {
		k := slices.IndexFunc(items, func(it octItem) bool { return it.id == m })
		if k < 0 {
			return errWSME(http.StatusBadRequest, "Supplied pagination marker '"+m+"' is not valid.")
		}
		marker = &items[k]
	}
	reverse := q.Get("page_reverse") == "True"
	var page []octItem
	for _, it := range items {
		if marker != nil && (!reverse && less(it, *marker) <= 0 || reverse && less(it, *marker) >= 0) {
			continue
		}
		if !octaviaKeep(it, filters) {
			continue
		}
		if limit > 0 && len(page) == limit {
			break
		}
		page = append(page, it)
	}
	out := make([]any, 0, len(page))
	for _, it := range page {
		out = append(out, it.render())
	}
	return http.StatusOK, map[string]any{collection: out, collection + "_links": octaviaLinks(c, page, limit, limitText, marker != nil)}
}

// octaviaLinks is _make_links: a previous link when a marker was given,
// a next one when the page is as long as the limit (or there is none).
func octaviaLinks(c *call, page []octItem, limit int, limitText string, marked bool) []wireLink {
	links := []wireLink{}
	if len(page) == 0 {
		return links
	}
	q := c.r.URL.Query()
	attrs := []string{"limit=" + limitText}
	for _, k := range []string{"sort", "sort_key"} {
		if v := q.Get(k); v != "" {
			attrs = append(attrs, k+"="+v)
		}
	}
	base := c.host + c.r.URL.Path + "?"
	if marked {
		prev := append(slices.Clone(attrs), "marker="+page[0].id, "page_reverse=True")
		links = append(links, wireLink{Rel: "previous", Href: base + strings.Join(prev, "&")})
	}
	if limit == 0 || len(page) >= limit {
		next := append(slices.Clone(attrs), "marker="+page[len(page)-1].id)
		links = append(links, wireLink{Rel: "next", Href: base + strings.Join(next, "&")})
	}
	return links
}

type octSortKey struct {
	name string
	desc bool
}

// octaviaSortKeys reads sort_key and sort_dir (comma-separated), then
// adds created_at and id, as the helper does.
func octaviaSortKeys(keyParam, dirParam string, known []string) ([]octSortKey, int, any) {
	var keys []octSortKey
	var dirs []string
	if dirParam != "" {
		dirs = strings.Split(dirParam, ",")
	}
	dir := func(k int) (bool, int, any) {
		d := "asc"
		if k < len(dirs) {
			d = strings.ToLower(dirs[k])
		}
		if d != "asc" && d != "desc" {
			st, body := errWSME(http.StatusBadRequest, "Supplied sort direction '"+d+"' is not valid.")
			return false, st, body
		}
		return d == "desc", 0, nil
	}
	if keyParam != "" {
		for k, name := range strings.Split(keyParam, ",") {
			if !slices.Contains(known, name) && name != "created_at" && name != "updated_at" {
				st, body := errWSME(http.StatusBadRequest, "Supplied sort key '"+name+"' is not valid.")
				return nil, st, body
			}
			desc, st, body := dir(k)
			if st != 0 {
				return nil, st, body
			}
			keys = append(keys, octSortKey{name, desc})
		}
	}
	for _, name := range []string{"created_at", "id"} {
		if !slices.ContainsFunc(keys, func(k octSortKey) bool { return k.name == name }) {
			keys = append(keys, octSortKey{name: name})
		}
	}
	return keys, 0, nil
}

// compareField orders two items by one attribute: created_at to the
// second, as the database keeps it; numbers as numbers.
func compareField(a, b octItem, name string) int {
	switch name {
	case "created_at":
		return a.created.Truncate(time.Second).Compare(b.created.Truncate(time.Second))
	case "id":
		return strings.Compare(a.id, b.id)
	}
	x, y := a.fields[name], b.fields[name]
	if m, err1 := strconv.Atoi(x); err1 == nil {
		if n, err2 := strconv.Atoi(y); err2 == nil {
			return cmp.Compare(m, n)
		}
	}
	return strings.Compare(x, y)
}

// octaviaKeep applies the filters: each an exact match (booleans read as
// oslo's bool_from_string reads them), any of a repeated one's values.
func octaviaKeep(it octItem, filters map[string][]string) bool {
	for k, vs := range filters {
		var ok bool
		if slices.Contains(neutronTagFilters, k) {
			ok = tagsMatch(k, vs, it.tags)
		} else {
			have := it.fields[k]
			ok = slices.ContainsFunc(vs, func(v string) bool {
				if have == "true" || have == "false" {
					v = strconv.FormatBool(boolFromString(v))
				}
				return v == have
			})
		}
		if !ok {
			return false
		}
	}
	return true
}

// boolFromString is oslo's strutils.bool_from_string, not strict.
func boolFromString(v string) bool {
	return slices.Contains([]string{"1", "t", "true", "on", "y", "yes"}, strings.ToLower(strings.TrimSpace(v)))
}

// baseFields are the filterable attributes every object has.
func baseFields(b *octBase, project string) map[string]string {
	return map[string]string{"id": b.ID, "name": b.Name, "description": b.Description, "project_id": project,
		"admin_state_up": fmt.Sprint(b.AdminUp), "provisioning_status": b.prov}
}
