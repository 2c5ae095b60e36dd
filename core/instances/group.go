package instances

// Grouped is a batch of keys split the way drivers look them up: by the
// cloud reference parsed from the providerID, or by Node name when there
// is none. Positions index the batch, as Answer.Results does.
type Grouped[R comparable] struct {
	ByRef  map[R][]int
	ByName map[string][]int
	// Results is aligned with the keys; a providerID that does not parse
	// has its error set already.
	Results []Result
}

// Group splits keys with parse, the driver's providerID parser.
func Group[R comparable](keys []Key, parse func(providerID string) (R, error)) Grouped[R] {
	g := Grouped[R]{ByRef: map[R][]int{}, ByName: map[string][]int{}, Results: make([]Result, len(keys))}
	for i, k := range keys {
		if k.ProviderID == "" {
			g.ByName[k.NodeName] = append(g.ByName[k.NodeName], i)
			continue
		}
		ref, err := parse(k.ProviderID)
		if err != nil {
			g.Results[i].Err = err
			continue
		}
		g.ByRef[ref] = append(g.ByRef[ref], i)
	}
	return g
}
