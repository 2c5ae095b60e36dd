package openstack

// RegionName is the region the driver settled on (config, else the
// clouds.yaml entry), for tests.
func (c *Cloud) RegionName() string { return c.cfg.Region }
