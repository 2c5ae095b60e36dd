package gce

// ResourceStats counts one kind of resource over the fake's life: how many
// were created (through the API, once their operation was DONE, or by a
// helper) and deleted, how many exist now, and the most that existed at
// once. Tests use it to assert that nothing leaked and that nothing was
// created twice.
type ResourceStats struct {
	Created int
	Deleted int
	Live    int
	Peak    int
}

// Stats returns the counts per kind, keyed by the API's collection name:
// "instances", "disks", "targetPools", "httpHealthChecks", "healthChecks",
// "forwardingRules", "addresses", "firewalls", "backendServices",
// "instanceGroups" and "routes" ("healthChecks" counts global and regional
// ones, as both are that collection). Kinds never created are absent.
func (s *Server) Stats() map[string]ResourceStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleLocked()
	out := make(map[string]ResourceStats, len(s.stats))
	for k, v := range s.stats {
		out[k] = *v
	}
	return out
}

func (s *Server) statLocked(kind string) *ResourceStats {
	st := s.stats[kind]
	if st == nil {
		st = &ResourceStats{}
		s.stats[kind] = st
	}
	return st
}

func (s *Server) countCreateLocked(kind string) {
	st := s.statLocked(kind)
	st.Created++
	st.Live++
	st.Peak = max(st.Peak, st.Live)
}

func (s *Server) countDeleteLocked(kind string) {
	st := s.statLocked(kind)
	st.Deleted++
	st.Live--
}
