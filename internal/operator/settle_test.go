package operator

import (
	"testing"
	"time"
)

// --settle-delay 0 holds no status patch (the reconciler's negative delay); a positive
// one is the reconciler's, and the default holds for 2 s.
func TestSettleDelay(t *testing.T) {
	for in, want := range map[time.Duration]time.Duration{0: -1, -time.Second: -1, 500 * time.Millisecond: 500 * time.Millisecond} {
		if got := settleDelay(in); got != want {
			t.Errorf("settleDelay(%v) = %v, want %v", in, got, want)
		}
	}
	if got := settleDelay(DefaultOptions().SettleDelay); got != 2*time.Second {
		t.Errorf("the default settle delay is %v, want 2s", got)
	}
}
