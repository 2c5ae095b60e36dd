package hetzner

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// The API's page sizes: 25 unless asked, 50 at most.
const (
	defaultPerPage = 25
	maxPerPage     = 50
)

// wireMeta is the meta object of list answers.
type wireMeta struct {
	Pagination wirePagination `json:"pagination"`
}

// wirePagination: previous_page and next_page are null at the ends.
type wirePagination struct {
	Page         int  `json:"page"`
	PerPage      int  `json:"per_page"`
	PreviousPage *int `json:"previous_page"`
	NextPage     *int `json:"next_page"`
	LastPage     int  `json:"last_page"`
	TotalEntries int  `json:"total_entries"`
}

// listQuery is what every list endpoint reads: the page, and the name
// and label_selector filters.
type listQuery struct {
	page, perPage int
	name          string
	hasName       bool
	sel           selector
}

// parseList reads page, per_page, name and label_selector. A page size
// above 50 is cut to 50; a page or size that is not a positive number,
// and a selector that does not parse, are invalid_input.
func parseList(r *http.Request) (listQuery, int, any) {
	q := r.URL.Query()
	lq := listQuery{page: 1, perPage: defaultPerPage}
	for _, f := range []struct {
		name string
		dst  *int
	}{{"page", &lq.page}, {"per_page", &lq.perPage}} {
		if v := q.Get(f.name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				st, body := errInvalid(f.name, "must be a positive integer")
				return lq, st, body
			}
			*f.dst = n
		}
	}
	lq.perPage = min(lq.perPage, maxPerPage)
	lq.name, lq.hasName = q.Get("name"), q.Has("name")
	sel, err := parseSelector(q.Get("label_selector"))
	if err != nil {
		st, body := errInvalidMsg("label_selector", err.Error())
		return lq, st, body
	}
	lq.sel = sel
	return lq, 0, nil
}

// keep says whether an item passes the name and label filters.
func (lq listQuery) keep(name string, labels map[string]string) bool {
	if lq.hasName && name != lq.name {
		return false
	}
	return lq.sel.matches(labels)
}

// page answers a list request: items (already filtered, in the API's
// order) cut to the asked page under key, with meta and the Link header.
// Only the page's items are rendered, so long listings stay cheap.
func page[T, W any](r *http.Request, lq listQuery, key string, items []T, render func(T) W) (int, any) {
	total := len(items)
	last := max(1, (total+lq.perPage-1)/lq.perPage)
	lo := min((lq.page-1)*lq.perPage, total)
	hi := min(lo+lq.perPage, total)
	out := make([]W, 0, hi-lo)
	for _, it := range items[lo:hi] {
		out = append(out, render(it))
	}
	p := wirePagination{Page: lq.page, PerPage: lq.perPage, LastPage: last, TotalEntries: total}
	if lq.page > 1 {
		prev := min(lq.page-1, last)
		p.PreviousPage = &prev
	}
	if lq.page < last {
		next := lq.page + 1
		p.NextPage = &next
	}
	doc := map[string]any{key: out, "meta": wireMeta{Pagination: p}}
	return http.StatusOK, &listReply{doc: doc, link: links(r, p)}
}

// links builds the Link header the API sends with pages: prev, next and
// last, each the request's own URL with another page.
func links(r *http.Request, p wirePagination) string {
	var parts []string
	add := func(n int, rel string) {
		q := r.URL.Query()
		q.Set("page", strconv.Itoa(n))
		u := url.URL{Scheme: "http", Host: r.Host, Path: r.URL.Path, RawQuery: q.Encode()}
		if r.TLS != nil {
			u.Scheme = "https"
		}
		parts = append(parts, fmt.Sprintf("<%s>; rel=%q", u.String(), rel))
	}
	if p.PreviousPage != nil {
		add(*p.PreviousPage, "prev")
	}
	if p.NextPage != nil {
		add(*p.NextPage, "next")
	}
	if p.LastPage != p.Page {
		add(p.LastPage, "last")
	}
	return strings.Join(parts, ", ")
}
