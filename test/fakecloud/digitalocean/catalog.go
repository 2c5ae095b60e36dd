package digitalocean

import (
	"fmt"
	"hash/crc32"
	"time"
)

// The regions, sizes and images the fake knows. Values follow the real
// catalogue closely enough for clients that read them; droplets added with
// slugs outside it still work, with the nested objects filled from the
// droplet itself.

type regionInfo struct {
	slug, name string
}

var regions = []regionInfo{
	{"nyc1", "New York 1"},
	{"nyc2", "New York 2"},
	{"nyc3", "New York 3"},
	{"sfo2", "San Francisco 2"},
	{"sfo3", "San Francisco 3"},
	{"ams3", "Amsterdam 3"},
	{"sgp1", "Singapore 1"},
	{"lon1", "London 1"},
	{"fra1", "Frankfurt 1"},
	{"tor1", "Toronto 1"},
	{"blr1", "Bangalore 1"},
	{"syd1", "Sydney 1"},
	{"atl1", "Atlanta 1"},
}

var regionFeatures = []string{"backups", "ipv6", "metadata", "install_agent", "storage", "image_transfer"}

type sizeInfo struct {
	slug                      string
	memory, vcpus, disk       int
	transfer                  float64
	priceMonthly, priceHourly float64
	description               string
}

var sizes = []sizeInfo{
	{"s-1vcpu-512mb-10gb", 512, 1, 10, 0.5, 4, 0.00595, "Basic"},
	{"s-1vcpu-1gb", 1024, 1, 25, 1, 6, 0.00893, "Basic"},
	{"s-1vcpu-2gb", 2048, 1, 50, 2, 12, 0.01786, "Basic"},
	{"s-2vcpu-2gb", 2048, 2, 60, 3, 18, 0.02679, "Basic"},
	{"s-2vcpu-4gb", 4096, 2, 80, 4, 24, 0.03571, "Basic"},
	{"s-4vcpu-8gb", 8192, 4, 160, 5, 48, 0.07143, "Basic"},
	{"s-8vcpu-16gb", 16384, 8, 320, 6, 96, 0.14286, "Basic"},
	{"c-2", 4096, 2, 25, 4, 42, 0.0625, "CPU-Optimized"},
	{"g-2vcpu-8gb", 8192, 2, 25, 4, 63, 0.09375, "General Purpose"},
	{"m-2vcpu-16gb", 16384, 2, 50, 4, 84, 0.125, "Memory-Optimized"},
}

type imageInfo struct {
	id                       int
	slug, name, distribution string
	minDisk                  int
	sizeGB                   float64
}

var images = []imageInfo{
	{170000001, "ubuntu-24-04-x64", "24.04 (LTS) x64", "Ubuntu", 10, 2.84},
	{170000002, "ubuntu-22-04-x64", "22.04 (LTS) x64", "Ubuntu", 10, 2.36},
	{170000003, "debian-12-x64", "12 x64", "Debian", 10, 1.31},
}

const (
	defaultRegion = "nyc3"
	defaultSize   = "s-1vcpu-1gb"
	defaultImage  = "ubuntu-24-04-x64"
)

// imagesCreated is when the catalogue images claim to have been published.
var imagesCreated = time.Date(2024, 4, 25, 10, 0, 0, 0, time.UTC)

func findRegion(slug string) (regionInfo, bool) {
	for _, r := range regions {
		if r.slug == slug {
			return r, true
		}
	}
	return regionInfo{}, false
}

func findSize(slug string) (sizeInfo, bool) {
	for _, s := range sizes {
		if s.slug == slug {
			return s, true
		}
	}
	return sizeInfo{}, false
}

func findImageBySlug(slug string) (imageInfo, bool) {
	for _, i := range images {
		if i.slug == slug {
			return i, true
		}
	}
	return imageInfo{}, false
}

func findImageByID(id int) (imageInfo, bool) {
	for _, i := range images {
		if i.id == id {
			return i, true
		}
	}
	return imageInfo{}, false
}

func regionSlugs() []string {
	out := make([]string, len(regions))
	for k, r := range regions {
		out[k] = r.slug
	}
	return out
}

func sizeSlugs() []string {
	out := make([]string, len(sizes))
	for k, s := range sizes {
		out[k] = s.slug
	}
	return out
}

// defaultVPC is the UUID of a region's default VPC: stable, so tests can
// predict it, and distinct per region.
func defaultVPC(region string) string {
	return fmt.Sprintf("%08x-d0d0-4000-8000-000000000001", crc32.ChecksumIEEE([]byte(region)))
}
