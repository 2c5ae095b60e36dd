package gce

// Placeholder so the module requires the SDK the fake is tested with;
// replaced by the fake's real tests.
import (
	_ "cloud.google.com/go/compute/apiv1"
	_ "cloud.google.com/go/compute/apiv1/computepb"
	_ "cloud.google.com/go/compute/metadata"
	_ "google.golang.org/api/option"
)
