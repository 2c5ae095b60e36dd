package digitalocean

import (
	"context"
	"fmt"

	"github.com/digitalocean/godo"
)

// pages calls one paged godo List through the cloud API client, page by
// page (perPage items each, the API's maximum), handing each page to visit
// until the last page or until visit says stop.
func pages[T any](ctx context.Context, c *Cloud, op string,
	list func(ctx context.Context, opt *godo.ListOptions) ([]T, *godo.Response, error),
	visit func(page []T, resp *godo.Response) (more bool),
) error {
	opt := &godo.ListOptions{Page: 1, PerPage: perPage}
	for {
		var page []T
		var resp *godo.Response
		err := c.api.Do(ctx, op, func(ctx context.Context) error {
			var err error
			page, resp, err = list(ctx, opt)
			return err
		})
		if err != nil {
			return err
		}
		if !visit(page, resp) || resp.Links == nil || resp.Links.IsLastPage() || len(page) == 0 {
			return nil
		}
		cur, err := resp.Links.CurrentPage()
		if err != nil {
			return fmt.Errorf("digitalocean %s: reading the page links: %w", op, err)
		}
		opt.Page = cur + 1
	}
}
