package digitalocean

import (
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

const (
	defaultPerPage = 20
	maxPerPage     = 200
)

// paging is a list request's page and page size.
type paging struct {
	page    int
	perPage int
	// perPageGiven says the client sent per_page, so links carry it.
	perPageGiven bool
}

// parsePaging reads page and per_page. per_page above 200 is clamped to
// 200, as the real API does; missing, malformed or non-positive values fall
// back to the defaults (page 1, 20 per page).
func parsePaging(q url.Values) paging {
	p := paging{page: 1, perPage: defaultPerPage}
	if n, err := strconv.Atoi(q.Get("page")); err == nil && n > 0 {
		p.page = n
	}
	if n, err := strconv.Atoi(q.Get("per_page")); err == nil && n > 0 {
		p.perPage, p.perPageGiven = min(n, maxPerPage), true
	}
	return p
}

// window returns the [lo, hi) slice bounds of the page among total items;
// a page past the end is empty.
func (p paging) window(total int) (lo, hi int) {
	lo = min((p.page-1)*p.perPage, total)
	hi = min(lo+p.perPage, total)
	return lo, hi
}

func (p paging) lastPage(total int) int {
	return max(1, (total+p.perPage-1)/p.perPage)
}

// links builds the pages object with absolute URLs for the request's host,
// keeping the request's other query parameters (filters) so following a
// link lists the same collection.
func (p paging) links(r *http.Request, total int) wireLinks {
	last := p.lastPage(total)
	var pages wirePages
	if p.page > 1 {
		pages.First = p.url(r, 1)
		pages.Prev = p.url(r, p.page-1)
	}
	if p.page < last {
		pages.Next = p.url(r, p.page+1)
		pages.Last = p.url(r, last)
	}
	if pages == (wirePages{}) {
		return wireLinks{}
	}
	return wireLinks{Pages: &pages}
}

// url renders a page link as the real API does: page first, then per_page,
// then the remaining parameters.
func (p paging) url(r *http.Request, page int) string {
	var b strings.Builder
	b.WriteString(baseURL(r))
	b.WriteString(strings.TrimPrefix(r.URL.Path, "/"))
	b.WriteString("?page=")
	b.WriteString(strconv.Itoa(page))
	if p.perPageGiven {
		b.WriteString("&per_page=")
		b.WriteString(strconv.Itoa(p.perPage))
	}
	q := r.URL.Query()
	keys := make([]string, 0, len(q))
	for k := range q {
		if k != "page" && k != "per_page" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, v := range q[k] {
			b.WriteString("&")
			b.WriteString(url.QueryEscape(k))
			b.WriteString("=")
			b.WriteString(url.QueryEscape(v))
		}
	}
	return b.String()
}

// baseURL is the absolute root the client reached us at, with a trailing
// slash.
func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host + "/"
}
