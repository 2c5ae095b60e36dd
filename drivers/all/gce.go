//go:build !custom || drivers || drivers.gce

package all

import _ "github.com/polyccm/polyccm/drivers/gce" // registers "gce"
