//go:build !custom || drivers || drivers.digitalocean

package all

import _ "github.com/polyccm/polyccm/drivers/digitalocean" // registers "digitalocean"
