//go:build custom

package all

// Built with -tags custom: only the drivers the other tags name are in.
func init() { customBuild = true }
