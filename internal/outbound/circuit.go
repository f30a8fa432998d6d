package outbound

import (
	"fmt"
	"sync"
	"time"

	"calaf.io/calaf/internal/lru"
)

// CircuitOpenError says that an endpoint failed too often in a row: no request goes to
// it until Until, when one request may try it again.
type CircuitOpenError struct {
	Endpoint string
	Failures int
	Until    time.Time
}

func (e *CircuitOpenError) Error() string {
	return fmt.Sprintf("%s failed %d times in a row: no request until %s", e.Endpoint, e.Failures, e.Until.UTC().Format(time.RFC3339))
}

// circuits keep, per endpoint (scheme, host and port), its failures in a row. After
// threshold of them the endpoint's circuit opens for the backoff's delay of the times it
// opened; then one request tries it (the others are refused meanwhile): a success
// closes the circuit, a failure opens it again for longer.
type circuits struct {
	threshold int
	backoff   Backoff
	now       func() time.Time
	mu        sync.Mutex
	states    *lru.Cache[*circuit]
}

type circuit struct {
	mu       sync.Mutex
	failures int
	opened   int
	until    time.Time
	trying   bool
}

// acquire asks to send a request to endpoint: nil, or a *CircuitOpenError.
func (c *circuits) acquire(endpoint string) error {
	state := c.state(endpoint)
	state.mu.Lock()
	defer state.mu.Unlock()
	if state.failures < c.threshold {
		return nil
	}
	now := c.now()
	if now.Before(state.until) || state.trying {
		return &CircuitOpenError{Endpoint: endpoint, Failures: state.failures, Until: state.until}
	}
	state.trying = true
	return nil
}

// release records how a request acquired for endpoint went.
func (c *circuits) release(endpoint string, failed bool) {
	state := c.state(endpoint)
	state.mu.Lock()
	defer state.mu.Unlock()
	state.trying = false
	if !failed {
		state.failures, state.opened, state.until = 0, 0, time.Time{}
		return
	}
	state.failures++
	if state.failures >= c.threshold {
		state.opened++
		state.until = c.now().Add(c.backoff.Delay(state.opened))
	}
}

func (c *circuits) state(endpoint string) *circuit {
	c.mu.Lock()
	defer c.mu.Unlock()
	if state, ok := c.states.Get(endpoint); ok {
		return state
	}
	state := &circuit{}
	c.states.Put(endpoint, state)
	return state
}
