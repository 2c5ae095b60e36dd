package digitalocean

import "github.com/polyccm/polyccm/core/driver"

// Tasks are the DigitalOcean CCM's loops beside the service controller:
// the public-access firewall (drivers.digitalocean.firewall) and the
// k8s:<clusterID> tags on load balancers (drivers.digitalocean.clusterID).
// Each runs only when configured, as in that CCM.
func (c *Cloud) Tasks() []driver.Task {
	var ts []driver.Task
	for _, f := range []func() (driver.Task, bool){c.firewallTask, c.tagTask} {
		if t, ok := f(); ok {
			ts = append(ts, t)
		}
	}
	return ts
}
