//go:build !custom || drivers || drivers.openstack

package all

import _ "github.com/polyccm/polyccm/drivers/openstack" // registers "openstack"
