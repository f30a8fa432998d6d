package main

import (
	"testing"

	"k8s.io/apimachinery/pkg/labels"
)

// Every Service falls in exactly one shard, and the shards share the Services evenly.
func TestShards(t *testing.T) {
	for _, shards := range []int{2, 3} {
		var selectors []labels.Selector
		for _, s := range shardSelectors(shards) {
			selector, err := labels.Parse(s)
			if err != nil {
				t.Fatalf("%d shards: %q: %v", shards, s, err)
			}
			selectors = append(selectors, selector)
		}
		counts := make([]int, shards)
		for i := 0; i < 30; i++ {
			matched := 0
			for k, selector := range selectors {
				if selector.Matches(labels.Set(shardLabels(i, shards))) {
					matched++
					counts[k]++
				}
			}
			if matched != 1 {
				t.Errorf("%d shards: Service %d is in %d shards", shards, i, matched)
			}
		}
		for k, count := range counts {
			if count != 30/shards {
				t.Errorf("%d shards: shard %d has %d of 30 Services", shards, k, count)
			}
		}
	}
	if shardLabels(1, 0) != nil || shardLabels(1, 1) != nil {
		t.Error("Services are labelled without shards")
	}
}
