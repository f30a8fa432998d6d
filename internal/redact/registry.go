package redact

import (
	"maps"
	"slices"
	"sync"
)

// Registry holds the secrets of many owners (the Services whose inputs the operator read
// from Secrets, by UID), so that what leaves the operator beside any one Service's own
// status — log lines, Events — is redacted of all of them. A nil *Registry hides nothing.
type Registry struct {
	mu sync.RWMutex
	// owners are the fragments of each owner.
	owners map[string][]string
	union  *Secrets
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{owners: map[string][]string{}} }

// Set records the secrets of an owner in place of those it had; none forgets it. The
// union is made again only when they changed.
func (r *Registry) Set(owner string, secrets *Secrets) {
	if r == nil {
		return
	}
	fragments := secrets.Fragments()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(fragments) == 0 {
		r.forget(owner)
		return
	}
	if slices.Equal(r.owners[owner], fragments) {
		return
	}
	r.owners[owner] = fragments
	r.rebuild()
}

// Forget drops the secrets of an owner (a Service deleted).
func (r *Registry) Forget(owner string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.forget(owner)
}

func (r *Registry) forget(owner string) {
	if _, ok := r.owners[owner]; ok {
		delete(r.owners, owner)
		r.rebuild()
	}
}

// rebuild makes the union of every owner's fragments; the caller holds the lock.
func (r *Registry) rebuild() {
	union := &Secrets{fragments: map[string]struct{}{}}
	for _, owner := range slices.Sorted(maps.Keys(r.owners)) {
		for _, fragment := range r.owners[owner] {
			union.fragments[fragment] = struct{}{}
		}
	}
	r.union = union
}

// secrets returns the union of every owner's secrets (nil when there are none).
func (r *Registry) secrets() *Secrets {
	if r == nil {
		return nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.union
}

// String returns text with every owner's secrets hidden (Secrets.String).
func (r *Registry) String(text string) string { return r.secrets().String(text) }

// Value returns a copy of a value with every owner's secrets hidden (Secrets.Value).
func (r *Registry) Value(value any) any { return r.secrets().Value(value) }
