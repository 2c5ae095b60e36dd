package gce

import "testing"

func TestFilterGrammar(t *testing.T) {
	doc := map[string]any{
		"name":         "web-1",
		"status":       "RUNNING",
		"labels":       map[string]any{"env": "prod"},
		"tags":         map[string]any{"items": []any{"a", "b"}},
		"port":         float64(8080),
		"canIpForward": true,
	}
	cases := []struct {
		filter string
		want   bool
	}{
		{`name = web-1`, true},
		{`name = "web-1"`, true},
		{`name = 'web-1'`, true},
		{`name != web-1`, false},
		{`name = web-*`, true},
		{`name = *-1`, true},
		{`name = w*x*`, false},
		{`name eq web-.`, true},
		{`name eq 'web'`, false},
		{`name ne "web-2"`, true},
		{`(name eq web-1) (status eq RUN.*)`, true},
		{`(name eq web-1) (status ne RUN.*)`, false},
		{`labels.env = prod`, true},
		{`labels.env:*`, true},
		{`labels.team:*`, false},
		{`labels:env`, true},
		{`tags.items = b`, true},
		{`tags.items != b`, false},
		{`tags.items:a`, true},
		{`port > 8000`, true},
		{`port <= 80`, false},
		{`canIpForward = true`, true},
		{`name = a OR name = web-1`, true},
		{`name = a OR name = b`, false},
		{`(name = a) OR (name = web-1) AND (status = RUNNING)`, true},
		{`name = web-1 status = STOPPED`, false},
		{`name = web-1 AND NOT status = STOPPED`, true},
		{`NOT (name = web-1 OR name = x)`, false},
		{`missing = ""`, true},
		{`missing != x`, true},
	}
	for _, tc := range cases {
		e, err := parseFilter(tc.filter)
		if err != nil {
			t.Errorf("%s: %v", tc.filter, err)
			continue
		}
		if got := e.eval(doc); got != tc.want {
			t.Errorf("%s = %v, want %v", tc.filter, got, tc.want)
		}
	}
	for _, bad := range []string{`name`, `name =`, `(name = a`, `name = a)`, `= a`, `name eq (`, `(name eq a) name = b`, `AND name = a`} {
		if _, err := parseFilter(bad); err == nil {
			t.Errorf("%s: parsed", bad)
		}
	}
}
