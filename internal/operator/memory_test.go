package operator

import (
	"runtime/debug"
	"testing"
)

// gcPercent reads the runtime's garbage collection target without changing it.
func gcPercent() int {
	current := debug.SetGCPercent(100)
	debug.SetGCPercent(current)
	return current
}

func TestSetGCPercent(t *testing.T) {
	defer debug.SetGCPercent(gcPercent())

	t.Setenv("GOGC", "")
	debug.SetGCPercent(100)
	if got := SetGCPercent(DefaultGCPercent); got != DefaultGCPercent {
		t.Errorf("without $GOGC: SetGCPercent returned %d, want %d", got, DefaultGCPercent)
	}
	if got := gcPercent(); got != DefaultGCPercent {
		t.Errorf("without $GOGC: the runtime's target is %d, want %d", got, DefaultGCPercent)
	}

	// The runtime read $GOGC when the process started; the operator leaves it alone.
	t.Setenv("GOGC", "80")
	debug.SetGCPercent(80)
	if got := SetGCPercent(DefaultGCPercent); got != 80 {
		t.Errorf("with GOGC=80: SetGCPercent returned %d, want 80", got)
	}
	if got := gcPercent(); got != 80 {
		t.Errorf("with GOGC=80: the runtime's target is %d, want 80", got)
	}
}
