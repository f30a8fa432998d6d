package main

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// runOrder draws the order in which a round runs its runs, from a seed: no run always
// goes first (and pays for a cold cluster) or last (for a warm one), and a seed repeats
// a bench's orders.
type runOrder struct {
	rng *rand.Rand
}

func newRunOrder(seed uint64) *runOrder {
	return &runOrder{rng: rand.New(rand.NewPCG(seed, seed))}
}

// next returns the order of the next round of n runs: a permutation of 0..n-1.
func (o *runOrder) next(n int) []int {
	return o.rng.Perm(n)
}

// run runs each of runs once, in the next order drawn, and returns their results in the
// order of runs (the report's).
func (o *runOrder) run(runs []func() (result, error)) ([]result, error) {
	results := make([]result, len(runs))
	var ran []string
	for _, j := range o.next(len(runs)) {
		r, err := runs[j]()
		if err != nil {
			return nil, err
		}
		results[j] = r
		ran = append(ran, r.name)
	}
	fmt.Printf("the round ran: %s\n", strings.Join(ran, "; "))
	return results, nil
}
