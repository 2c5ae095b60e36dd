package digitalocean

import "github.com/polyccm/polyccm/core/driver"

func (c *Cloud) tagTask() (driver.Task, bool) { return driver.Task{}, false }
