package hetzner

import (
	"context"
	"fmt"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"

	"github.com/polyccm/polyccm/core/cloudapi"
)

// networkID resolves drivers.hetzner.network (a name or an ID) once; 0
// when none is configured. A Network the API says does not exist is a
// configuration error, reported with the key to fix.
func (c *Cloud) networkID(ctx context.Context) (int64, error) {
	if c.cfg.Network == "" {
		return 0, nil
	}
	c.netMu.Lock()
	defer c.netMu.Unlock()
	if c.netID != 0 {
		return c.netID, nil
	}
	n, err := c.getNetwork(ctx, c.cfg.Network)
	if err != nil {
		return 0, err
	}
	c.netID = n.ID
	return n.ID, nil
}

// network reads the configured Network afresh (its routes change).
func (c *Cloud) network(ctx context.Context) (*hcloud.Network, error) {
	id, err := c.networkID(ctx)
	if err != nil || id == 0 {
		return nil, err
	}
	return c.getNetwork(ctx, fmt.Sprint(id))
}

func (c *Cloud) getNetwork(ctx context.Context, idOrName string) (*hcloud.Network, error) {
	var n *hcloud.Network
	err := c.api.Do(ctx, "networks.get", func(ctx context.Context) error {
		var err error
		n, _, err = c.client.Network.Get(ctx, idOrName)
		return err
	})
	if err != nil {
		return nil, err
	}
	if n == nil {
		return nil, cloudapi.Invalid("drivers.hetzner.network: the project has no Network %q; give the name or ID of the Network the cluster's servers are attached to (hcloud CCM's HCLOUD_NETWORK)", c.cfg.Network)
	}
	return n, nil
}

// Action polling: quick at first (most actions end within a second or
// two), then slower so a long one (a load balancer being built) costs
// few calls.
const (
	actionPollFirst = 250 * time.Millisecond
	actionPollMax   = 3 * time.Second
)

// wait polls an action until it ends, through the cloud API client so
// every poll is rate limited and counted. An action that ends in error
// returns an hcloud.ActionError.
func (c *Cloud) wait(ctx context.Context, a *hcloud.Action) error {
	if a == nil {
		return nil
	}
	delay := actionPollFirst
	for a.Status == hcloud.ActionStatusRunning {
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for action %d (%s): %w", a.ID, a.Command, ctx.Err())
		case <-time.After(delay):
		}
		delay = min(delay*2, actionPollMax)
		var cur *hcloud.Action
		err := c.api.Do(ctx, "actions.get", func(ctx context.Context) error {
			var err error
			cur, _, err = c.client.Action.GetByID(ctx, a.ID)
			return err
		})
		if err != nil {
			return fmt.Errorf("waiting for action %d (%s): %w", a.ID, a.Command, err)
		}
		if cur == nil {
			return fmt.Errorf("waiting for action %d (%s): the API no longer knows it", a.ID, a.Command)
		}
		a = cur
	}
	return a.Error()
}
