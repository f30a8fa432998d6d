package outbound

import "time"

// Backoff is an exponential schedule of retries: after the n-th failure in a row the
// next attempt waits Base·2^(n−1), at most Max. Its state is the count of failures, which
// callers keep where it survives a restart (a subscription's status).
type Backoff struct {
	Base, Max time.Duration
}

// DefaultBackoff waits 1 s after a first failure, doubling up to 5 min.
func DefaultBackoff() Backoff {
	return Backoff{Base: time.Second, Max: 5 * time.Minute}
}

// withDefaults fills a zero Base or Max from DefaultBackoff, and raises Max to Base.
func (b Backoff) withDefaults() Backoff {
	if b.Base <= 0 {
		b.Base = DefaultBackoff().Base
	}
	if b.Max <= 0 {
		b.Max = DefaultBackoff().Max
	}
	b.Max = max(b.Max, b.Base)
	return b
}

// Delay is the wait before the next attempt after failures failures in a row (none
// before the first attempt).
func (b Backoff) Delay(failures int) time.Duration {
	if failures <= 0 {
		return 0
	}
	b = b.withDefaults()
	wait := b.Base
	for i := 1; i < failures && wait < b.Max; i++ {
		wait *= 2
	}
	return min(wait, b.Max)
}

// AttemptsWithin is the most attempts the schedule makes against an endpoint that always
// fails within any window of that length: the attempts of its start, where the waits are
// shortest.
func (b Backoff) AttemptsWithin(window time.Duration) int {
	attempts, at := 0, time.Duration(0)
	for at < window {
		attempts++
		at += b.Delay(attempts)
	}
	return attempts
}
