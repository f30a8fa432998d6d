package main

import "testing"

func TestSettingsCheck(t *testing.T) {
	base := settings{n: 10, workers: 4, rounds: 1, operatorQPS: 200, memoryLimits: []string{""}}
	with := func(change func(*settings)) settings {
		s := base
		change(&s)
		return s
	}
	cases := []struct {
		name string
		s    settings
		ok   bool
	}{
		{"default run", base, true},
		{"operator alone", with(func(s *settings) { s.operatorOnly = true }), true},
		{"operator alone with a report", with(func(s *settings) { s.operatorOnly, s.report = true, "docs/benchmarks.md" }), false},
		{"operator alone with shards", with(func(s *settings) { s.operatorOnly, s.shards = true, 2 }), false},
		{"operator alone with distinct packages", with(func(s *settings) { s.operatorOnly, s.distinct = true, true }), false},
		{"one shard", with(func(s *settings) { s.shards = 1 }), false},
		{"request costs", with(func(s *settings) { s.requestCosts = true }), true},
		{"request costs with shards", with(func(s *settings) { s.requestCosts, s.shards = true, 2 }), false},
		{"request costs with a smaller fleet", with(func(s *settings) { s.requestCosts, s.smaller = true, 3 }), false},
		{"target clusters", with(func(s *settings) { s.multicluster = true }), true},
		{"target clusters with shards", with(func(s *settings) { s.multicluster, s.shards = true, 2 }), false},
		{"target clusters with a smaller fleet", with(func(s *settings) { s.multicluster, s.smaller = true, 3 }), false},
	}
	for _, c := range cases {
		if err := c.s.check(); (err == nil) != c.ok {
			t.Errorf("%s: check() = %v, want ok %v", c.name, err, c.ok)
		}
	}
	if got := with(func(s *settings) { s.operatorOnly = true }).baselineWorkers(); len(got) != 0 {
		t.Errorf("-operator-only runs baselines %v", got)
	}
	if got := base.baselineWorkers(); len(got) != 2 || got[0] != 1 || got[1] != 4 {
		t.Errorf("baselines %v, want [1 4]", got)
	}
}
