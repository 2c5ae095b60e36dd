package aws

import "strings"

// Tags. The Classic API names load balancers, not ARNs; tags are read
// and limited (50 a load balancer) as ELBv2's.

// readClassicNames reads LoadBalancerNames.member.N for the tag actions:
// one to 20, each existing.
func (s *Server) readClassicNamesLocked(p params) ([]*classicRec, *apiError) {
	names, _ := p.members("LoadBalancerNames")
	if len(names) == 0 {
		return nil, missing("loadBalancerNames")
	}
	if len(names) > 20 {
		return nil, validation("1 validation error detected: Value '[%s]' at 'loadBalancerNames' failed to satisfy constraint: Member must have length less than or equal to 20", strings.Join(names, ", "))
	}
	var out []*classicRec
	for _, n := range names {
		lb := s.clb.lbs[n]
		if lb == nil {
			return nil, classicNotFound(n)
		}
		out = append(out, lb)
	}
	return out, nil
}

func (s *Server) addClassicTags(c *call) (any, *apiError) {
	lbs, err := s.readClassicNamesLocked(c.p)
	if err != nil {
		return nil, err
	}
	tags, err := readELBTags(c.p)
	if err != nil {
		return nil, err
	}
	if len(tags) == 0 {
		return nil, missing("tags")
	}
	for _, lb := range lbs {
		merged := cloneTags(lb.Tags)
		if merged == nil {
			merged = map[string]string{}
		}
		for k, v := range tags {
			merged[k] = v
		}
		if len(merged) > maxTags {
			return nil, badRequest("TooManyTags", "The quota for the number of tags that can be assigned to a load balancer has been reached")
		}
	}
	for _, lb := range lbs {
		if lb.Tags == nil {
			lb.Tags = map[string]string{}
		}
		for k, v := range tags {
			lb.Tags[k] = v
		}
	}
	return nil, nil
}

func (s *Server) removeClassicTags(c *call) (any, *apiError) {
	lbs, err := s.readClassicNamesLocked(c.p)
	if err != nil {
		return nil, err
	}
	ts, _ := c.p.memberStructs("Tags")
	if len(ts) == 0 {
		return nil, missing("tags")
	}
	for _, lb := range lbs {
		for _, t := range ts {
			delete(lb.Tags, t.get("Key"))
		}
	}
	return nil, nil
}

func (s *Server) describeClassicTags(c *call) (any, *apiError) {
	lbs, err := s.readClassicNamesLocked(c.p)
	if err != nil {
		return nil, err
	}
	out := &xmlClassicTagDescriptions{TagDescriptions: xmlList[xmlClassicTagDescription]{}}
	for _, lb := range lbs {
		out.TagDescriptions = append(out.TagDescriptions, xmlClassicTagDescription{LoadBalancerName: lb.Name, Tags: xmlKVs(lb.Tags)})
	}
	return out, nil
}
