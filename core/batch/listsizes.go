package batch

import (
	"context"
	"sync"
)

// ListSizes prices the two ways a Source can answer a batch: filtered
// listings (a call per chunk of the batch's keys) or one full listing of a
// scope (a call per page), which answers for every instance in it and so
// fills the cache for the lookups that follow, as when a few hundred Nodes
// register at once. It remembers each scope's size at its last full
// listing; a scope never listed is listed in full once, to learn it.
type ListSizes struct {
	mu   sync.Mutex
	size map[string]int
}

// Set records how many instances a full listing of scope returned.
func (l *ListSizes) Set(scope string, n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.size == nil {
		l.size = map[string]int{}
	}
	l.size[scope] = n
}

// PreferFullFor is PreferFull for a batch of batchKeys keys whose
// filtered listings in scope take filteredCalls, when more keys are
// expected (batch.Expected: waiting behind it, or asked for lately): they
// would take filtered calls at the same rate, and one full listing
// answers them too. When a refresh of every Node comes round, a few keys
// a batch, each batch priced alone would choose one filtered call over a
// listing: 250 calls where 5 pages do.
func (l *ListSizes) PreferFullFor(ctx context.Context, scope string, filteredCalls, batchKeys, pageSize int) bool {
	if w := Expected(ctx); w > 0 && batchKeys > 0 && filteredCalls > 0 {
		filteredCalls = (filteredCalls*(batchKeys+w) + batchKeys - 1) / batchKeys
	}
	return l.PreferFull(scope, filteredCalls, pageSize)
}

// PreferFull reports whether listing scope in full, pageSize instances a
// call, costs no more calls than the filtered listings would.
func (l *ListSizes) PreferFull(scope string, filteredCalls, pageSize int) bool {
	if filteredCalls == 0 {
		return false
	}
	l.mu.Lock()
	size, known := l.size[scope]
	l.mu.Unlock()
	return !known || (size+pageSize-1)/pageSize <= filteredCalls
}
