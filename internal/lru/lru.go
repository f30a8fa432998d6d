// Package lru is a small, concurrency-safe least-recently-used cache.
package lru

import (
	"container/list"
	"sync"
)

// Cache keeps the capacity most recently used values by key.
type Cache[V any] struct {
	lock     sync.Mutex
	capacity int
	order    *list.List
	items    map[string]*list.Element
}

type lruEntry[V any] struct {
	key   string
	value V
}

// New returns a cache of at least one entry.
func New[V any](capacity int) *Cache[V] {
	if capacity < 1 {
		capacity = 1
	}
	return &Cache[V]{capacity: capacity, order: list.New(), items: map[string]*list.Element{}}
}

// Get returns the value of key and marks it used.
func (c *Cache[V]) Get(key string) (V, bool) {
	c.lock.Lock()
	defer c.lock.Unlock()
	if element, ok := c.items[key]; ok {
		c.order.MoveToFront(element)
		return element.Value.(*lruEntry[V]).value, true
	}
	var zero V
	return zero, false
}

// Put stores value under key, evicting the least recently used entries beyond capacity.
func (c *Cache[V]) Put(key string, value V) {
	c.lock.Lock()
	defer c.lock.Unlock()
	if element, ok := c.items[key]; ok {
		element.Value.(*lruEntry[V]).value = value
		c.order.MoveToFront(element)
		return
	}
	c.items[key] = c.order.PushFront(&lruEntry[V]{key: key, value: value})
	for c.order.Len() > c.capacity {
		oldest := c.order.Back()
		c.order.Remove(oldest)
		delete(c.items, oldest.Value.(*lruEntry[V]).key)
	}
}
