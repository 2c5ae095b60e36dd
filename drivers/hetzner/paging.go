package hetzner

import (
	"context"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"
)

// perPage is the API's largest page.
const perPage = 50

// pages runs one paged hcloud-go List through the cloud API client, page
// by page, handing each page to visit until the last page or until visit
// says stop. It returns the listing's total_entries (0 if not sent).
func pages[T any](ctx context.Context, c *Cloud, op string,
	list func(ctx context.Context, opts hcloud.ListOpts) ([]T, *hcloud.Response, error),
	visit func(page []T) (more bool),
) (total int, err error) {
	opts := hcloud.ListOpts{Page: 1, PerPage: perPage}
	for {
		var page []T
		var resp *hcloud.Response
		err := c.api.Do(ctx, op, func(ctx context.Context) error {
			var err error
			page, resp, err = list(ctx, opts)
			return err
		})
		if err != nil {
			return 0, err
		}
		var p *hcloud.Pagination
		if resp != nil && resp.Meta.Pagination != nil {
			p = resp.Meta.Pagination
			total = p.TotalEntries
		}
		if !visit(page) || p == nil || p.NextPage == 0 || len(page) == 0 {
			return total, nil
		}
		opts.Page = p.NextPage
	}
}
