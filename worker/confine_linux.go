//go:build linux

package worker

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// landlockConfig returns go-landlock's configuration of an ABI (1 to maxLandlockABI): it
// restricts every access right the ABI knows.
func landlockConfig(abi int) landlock.Config {
	return []landlock.Config{landlock.V1, landlock.V2, landlock.V3, landlock.V4, landlock.V5, landlock.V6, landlock.V7,
		landlock.V8, landlock.V9, landlock.V10, landlock.V11}[abi-1]
}

// maxLandlockABI is the newest ABI go-landlock names.
const maxLandlockABI = 11

// landlockABI returns the Landlock ABI this process may use under c, and why none.
func (c Confinement) landlockABI() (int, string) {
	if c.MaxABI < 0 {
		return 0, "Landlock disabled (simulated)"
	}
	abi, err := ll.LandlockGetABIVersion()
	switch {
	case errors.Is(err, unix.ENOSYS):
		return 0, "the kernel has no Landlock: Linux 5.13 or later is needed"
	case errors.Is(err, unix.EOPNOTSUPP):
		return 0, "Landlock is not enabled in this kernel (boot option lsm=…,landlock)"
	case err != nil:
		return 0, "Landlock: " + err.Error()
	case abi <= 0:
		return 0, "the kernel reports no Landlock ABI"
	}
	if c.MaxABI > 0 && abi > c.MaxABI {
		abi = c.MaxABI
	}
	return min(abi, maxLandlockABI), ""
}

// Confine confines this process: no_new_privs on every thread, then, where the kernel
// has Landlock and c.Read is set, read access to c.Read alone (without c.Read, the
// process restricts itself with restrictReads before it reads anything untrusted). It is
// irrevocable. The local time zone is loaded first (the zone file is out of reach
// afterwards).
func Confine(c Confinement) (Confined, error) {
	_ = time.Local.String()
	if err := ll.AllThreadsPrctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return Confined{}, fmt.Errorf("no_new_privs: %w", err)
	}
	confined := Confined{NoNewPrivs: true}
	abi, why := c.landlockABI()
	if abi == 0 {
		confined.Unconfined = why
		return confined, nil
	}
	if len(c.Read) > 0 {
		if err := restrictReads(abi, c.Read); err != nil {
			return confined, err
		}
	}
	confined.Landlock = abi
	return confined, nil
}

// restrictReads adds a Landlock layer on this process: every access right of abi is
// denied but reading the files under paths (directories) and the files of paths.
func restrictReads(abi int, paths []string) error {
	var rules []landlock.Rule
	for _, path := range paths {
		info, err := os.Stat(path)
		if err != nil {
			return fmt.Errorf("confinement: %w", err)
		}
		rights := landlock.AccessFSSet(ll.AccessFSReadFile)
		if info.IsDir() {
			rights |= ll.AccessFSReadDir
		}
		rules = append(rules, landlock.PathAccess(rights, path))
	}
	if err := landlockConfig(abi).BestEffort().Restrict(rules...); err != nil {
		return fmt.Errorf("confinement (Landlock ABI %d): %w", abi, err)
	}
	return nil
}
