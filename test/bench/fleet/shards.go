package main

import "fmt"

// shardLabel is the label that puts a Service in a shard (deploy/sharding).
const shardLabel = "sharding.calaf.io/key"

// shardLabels returns the labels of Service i among shards: shard 0, the main one, is
// the Services without the label; shard k the Services labelled shard-k. Nil for fewer
// than two shards.
func shardLabels(i, shards int) map[string]string {
	if shards < 2 || i%shards == 0 {
		return nil
	}
	return map[string]string{shardLabel: fmt.Sprintf("shard-%d", i%shards)}
}

// shardSelectors returns the --watch-label-selector of each of shards operators, as
// deploy/sharding sets them.
func shardSelectors(shards int) []string {
	selectors := []string{"!" + shardLabel}
	for k := 1; k < shards; k++ {
		selectors = append(selectors, fmt.Sprintf("%s=shard-%d", shardLabel, k))
	}
	return selectors
}
