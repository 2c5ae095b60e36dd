package digitalocean

import "github.com/polyccm/polyccm/test/fakecloud/faults"

// Throttling gives each call the token bucket DigitalOcean throttles it
// by, for faults.Injector.SetFamilies. The API documents one limit per
// token for every endpoint together: 5,000 requests an hour, with bursts
// capped at 250 a minute; a bucket of 250 refilled at 5,000 an hour is
// both.
func Throttling(endpoint string) (string, faults.Limit) {
	return "api", faults.Limit{RPS: 5000.0 / 3600, Burst: 250}
}
