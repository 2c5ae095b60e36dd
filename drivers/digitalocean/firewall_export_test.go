package digitalocean

import (
	"time"

	"github.com/polyccm/polyccm/core/driver"
)

// FirewallTaskEvery is the public-access firewall task of c with a resync
// every resync and retries backing off from retry, since tests cannot
// wait the minutes the task waits.
func FirewallTaskEvery(c driver.Cloud, resync, retry time.Duration) (driver.Task, bool) {
	return c.(*Cloud).firewallTaskWith(fwTiming{resync: resync, retryBase: retry, retryMax: 20 * retry})
}
