//go:build !custom || drivers || drivers.hetzner

package all

import _ "github.com/polyccm/polyccm/drivers/hetzner" // registers "hetzner"
