package clusters

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// health is what the pool knows of a cluster's API server: whether it answers.
type health struct {
	// unreachable is why the last request or probe got no answer; nil while it answers.
	unreachable error
	// failures counts the probes that failed in a row; next is when the next one is due.
	failures int
	next     time.Time
	probing  bool
}

// UnreachableError says that a cluster's API server does not answer.
type UnreachableError struct {
	Server string
	Err    error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("the API server %s does not answer: %v", e.Server, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// Unreachable returns why the cluster's API server is taken not to answer, or nil: a
// request to it failed without an answer, and no probe has had one since.
func (c *Cluster) Unreachable() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.health.unreachable == nil {
		return nil
	}
	return &UnreachableError{Server: c.Server, Err: c.health.unreachable}
}

// Observe looks at the error of a request to the cluster: when it got no answer (the
// connection failed, timed out or broke), the cluster is marked unreachable, probed from
// now on, and an *UnreachableError returned; any other error is returned as it is.
func (c *Cluster) Observe(err error) error {
	var known *UnreachableError
	if errors.As(err, &known) {
		return known
	}
	if !noAnswer(err) || IsRefused(err) {
		return err
	}
	err = cause(err)
	c.mu.Lock()
	first := c.health.unreachable == nil
	if first {
		c.health.unreachable, c.health.failures = err, 0
		c.health.next = c.pool.opts.Now().Add(c.pool.opts.ProbeBackoff.Delay(1))
	}
	c.mu.Unlock()
	if first {
		c.pool.opts.Log.Info("target cluster unreachable", "server", c.Server, "error", err.Error())
		c.pool.poke()
		c.tellOwners()
	}
	return &UnreachableError{Server: c.Server, Err: err}
}

// noAnswer tells whether a request's error says that no answer came: a transport error
// (connection refused or reset, timeout, TLS failure) rather than an API status.
func noAnswer(err error) bool {
	if err == nil {
		return false
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return false
	}
	var urlErr *url.Error
	return errors.As(err, &urlErr) || errors.Is(err, context.DeadlineExceeded)
}

// cause is what a request that got no answer failed with, without the request's URL.
func cause(err error) error {
	var urlErr *url.Error
	if errors.As(err, &urlErr) && urlErr.Err != nil {
		return urlErr.Err
	}
	return err
}

// probeDue tells whether the cluster's next probe is due, and if so marks it under way:
// an unreachable cluster is probed with backoff, one in use that answers every
// CheckInterval (its watches do not say when it stops answering: they retry quietly).
func (c *Cluster) probeDue(now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.health.probing || len(c.users) == 0 && c.health.unreachable == nil || now.Before(c.health.next) {
		return false
	}
	c.health.probing = true
	return true
}

// probe asks the API server for its version. An answer — any, an error status included:
// the network and TLS work — marks an unreachable cluster reachable again and tells its
// Services; no answer marks it unreachable (telling them, the first time) and schedules
// the next probe with backoff. A name that resolves to another address now makes the
// connection stale (made again at the next use).
func (c *Cluster) probe(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, c.pool.opts.Timeout)
	defer cancel()
	err := c.ask(ctx)
	if err != nil {
		moved := c.moved(ctx)
		c.Observe(err)
		c.mu.Lock()
		c.health.probing = false
		c.health.failures++
		c.health.next = c.pool.opts.Now().Add(c.pool.opts.ProbeBackoff.Delay(c.health.failures + 1))
		c.stale = c.stale || moved
		c.mu.Unlock()
		return
	}
	c.mu.Lock()
	was := c.health.unreachable
	c.health = health{next: c.pool.opts.Now().Add(c.pool.opts.CheckInterval)}
	c.mu.Unlock()
	if was != nil {
		c.pool.opts.Log.Info("target cluster answers again", "server", c.Server)
		c.tellOwners()
	}
}

// ask sends GET /version; nil when an answer came.
func (c *Cluster) ask(ctx context.Context) error {
	d, err := c.discovery()
	if err != nil {
		return err
	}
	result := d.RESTClient().Get().AbsPath("/version").Do(ctx)
	if err := result.Error(); noAnswer(err) {
		return err
	}
	return nil
}

// moved tells whether the API server's name resolves to another address than the one
// the connection was made to.
func (c *Cluster) moved(ctx context.Context) bool {
	now, err := c.pool.pin(ctx, c.Server)
	return err == nil && now.address != c.Address
}

// tellOwners tells every Service that uses the cluster that it became unreachable or
// reachable again.
func (c *Cluster) tellOwners() {
	if c.pool.opts.HealthChanged == nil {
		return
	}
	for _, owner := range c.owners() {
		c.pool.opts.HealthChanged(owner)
	}
}
