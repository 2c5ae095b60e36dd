package main

import (
	"strings"
	"testing"
)

// A timeout of 0 or less would leave the plan unbounded: refused before
// anything is read, with an exit status of 1 and nothing on stdout.
func TestPlanRefusesTimeoutsThatDoNotBound(t *testing.T) {
	p := goodConfig(t, 0o600, "")
	for _, v := range []string{"0s", "0", "-5s"} {
		t.Run(v, func(t *testing.T) {
			code, out, errOut := cli("plan", "--config", p, "--timeout", v)
			if code != 1 || out != "" || !strings.Contains(errOut, "--timeout") || !strings.Contains(errOut, "above 0") {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 1 and why", code, out, errOut)
			}
		})
	}
}
