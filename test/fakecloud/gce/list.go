package gce

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// List paging, per the discovery document: maxResults is 0 to 500
// (default 500), results come in name order unless orderBy asks for
// "creationTimestamp desc" (the only other order supported), and a page
// that does not reach the end carries a nextPageToken.
const (
	defaultMaxResults = 500
	maxMaxResults     = 500
)

// listItem is one resource a list may return.
type listItem struct {
	scope   string // aggregated lists: "zones/us-central1-a"
	name    string
	created time.Time
	doc     any // the rendered document
}

type listQuery struct {
	filter   filterExpr
	max      int
	after    string // sort key of the last item of the previous page
	byCreate bool
}

// parseListQuery reads filter, maxResults, pageToken and orderBy, refusing
// bad values with the API's invalid-value errors.
func parseListQuery(c *call) (listQuery, int, any) {
	q := c.r.URL.Query()
	lq := listQuery{max: defaultMaxResults}
	if f := q.Get("filter"); f != "" {
		e, err := parseFilter(f)
		if err != nil {
			status, body := errInvalidField("filter", f, "Invalid list filter expression.")
			return lq, status, body
		}
		lq.filter = e
	}
	if m := q.Get("maxResults"); m != "" {
		n, err := strconv.ParseUint(m, 10, 32)
		switch {
		case err != nil:
			status, body := errInvalidField("maxResults", m, "Must be an unsigned integer.")
			return lq, status, body
		case n > maxMaxResults:
			status, body := errInvalidField("maxResults", m, fmt.Sprintf("Must be less than or equal to %d", maxMaxResults))
			return lq, status, body
		case n > 0:
			lq.max = int(n)
		}
	}
	switch o := strings.Join(strings.Fields(q.Get("orderBy")), " "); o {
	case "", "name", "name asc":
	case "creationTimestamp desc":
		lq.byCreate = true
	default:
		status, body := errInvalidField("orderBy", q.Get("orderBy"), "Sorting by this field is not supported. Only sorting by name and creationTimestamp desc is supported.")
		return lq, status, body
	}
	if t := q.Get("pageToken"); t != "" {
		key, ok := decodeToken(t, lq.byCreate)
		if !ok {
			status, body := errInvalidField("pageToken", t, "Invalid page token.")
			return lq, status, body
		}
		lq.after = key
	}
	return lq, 0, nil
}

// sortKey orders items; tokens carry the key of the last item sent, so a
// page after changes to the collection still starts in the right place.
func (lq listQuery) sortKey(it listItem) string {
	if lq.byCreate {
		return fmt.Sprintf("%020d\x00%s\x00%s", math.MaxInt64-it.created.UnixNano(), it.scope, it.name)
	}
	return it.scope + "\x00" + it.name
}

func encodeToken(key string, byCreate bool) string {
	mode := "n"
	if byCreate {
		mode = "c"
	}
	return base64.RawURLEncoding.EncodeToString([]byte("gce-fake:" + mode + ":" + key))
}

func decodeToken(t string, byCreate bool) (string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(t)
	if err != nil {
		return "", false
	}
	mode := "n"
	if byCreate {
		mode = "c"
	}
	return strings.CutPrefix(string(b), "gce-fake:"+mode+":")
}

// page filters, sorts and pages items.
func (lq listQuery) page(items []listItem) (page []listItem, next string) {
	type keyed struct {
		key string
		it  listItem
	}
	var ks []keyed
	for _, it := range items {
		if lq.filter != nil && !lq.filter.eval(asMap(it.doc)) {
			continue
		}
		key := lq.sortKey(it)
		if lq.after != "" && key <= lq.after {
			continue
		}
		ks = append(ks, keyed{key, it})
	}
	sort.Slice(ks, func(i, j int) bool { return ks[i].key < ks[j].key })
	if len(ks) > lq.max {
		ks = ks[:lq.max]
		next = encodeToken(ks[len(ks)-1].key, lq.byCreate)
	}
	for _, k := range ks {
		page = append(page, k.it)
	}
	return page, next
}

// asMap turns a document into the generic form filters evaluate.
func asMap(doc any) map[string]any {
	b, err := json.Marshal(doc)
	if err != nil {
		panic(fmt.Sprintf("gce fake: encoding %T: %v", doc, err))
	}
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return m
}

// listResponse answers a list call: kind "compute#xxxList", id the
// collection's path.
func (s *Server) listResponse(c *call, kind, id string, items []listItem) (int, any) {
	lq, status, body := parseListQuery(c)
	if status != 0 {
		return status, body
	}
	page, next := lq.page(items)
	out := listJSON{Kind: kind, ID: id, NextPageToken: next, SelfLink: link(c.base, id)}
	if len(page) > 0 {
		docs := make([]any, len(page))
		for k, it := range page {
			docs[k] = it.doc
		}
		out.Items = docs
	}
	return http.StatusOK, out
}

// aggregatedResponse answers an aggregatedList call. Every scope appears in
// items: with field ("instances") holding its results on this page, or
// with a NO_RESULTS_ON_PAGE warning. maxResults bounds the results across
// scopes.
func (s *Server) aggregatedResponse(c *call, kind, coll, field string, scopes []string, items []listItem) (int, any) {
	lq, status, body := parseListQuery(c)
	if status != 0 {
		return status, body
	}
	if v := c.r.URL.Query().Get("returnPartialSuccess"); v != "" {
		// Not in the current discovery document, but older clients send
		// it; a bool is all the API checked.
		if _, err := strconv.ParseBool(v); err != nil {
			return errInvalidField("returnPartialSuccess", v, "Must be a boolean.")
		}
	}
	page, next := lq.page(items)
	byScope := map[string][]any{}
	for _, it := range page {
		byScope[it.scope] = append(byScope[it.scope], it.doc)
	}
	id := "projects/" + s.project + "/aggregated/" + coll
	out := aggregatedJSON{Kind: kind, ID: id, Items: map[string]map[string]any{}, NextPageToken: next, SelfLink: link(c.base, id)}
	for _, sc := range scopes {
		if docs := byScope[sc]; len(docs) > 0 {
			out.Items[sc] = map[string]any{field: docs}
			continue
		}
		out.Items[sc] = map[string]any{"warning": warning{
			Code:    "NO_RESULTS_ON_PAGE",
			Message: fmt.Sprintf("There are no results for scope '%s' on this page.", sc),
			Data:    []warningData{{Key: "scope", Value: sc}},
		}}
	}
	return http.StatusOK, out
}

// zoneScopesLocked lists "zones/z" for every zone, sorted.
func (s *Server) zoneScopesLocked() []string {
	out := make([]string, 0, len(s.zones))
	for z := range s.zones {
		out = append(out, "zones/"+z)
	}
	sort.Strings(out)
	return out
}

// regionScopesLocked lists "regions/r" for every region, sorted.
func (s *Server) regionScopesLocked() []string {
	out := make([]string, 0, len(s.regions))
	for r := range s.regions {
		out = append(out, "regions/"+r)
	}
	sort.Strings(out)
	return out
}
