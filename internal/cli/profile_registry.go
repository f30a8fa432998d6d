//go:build !calaf_offline

package cli

import "github.com/spf13/cobra"

// profileRegistryCommands are the profile commands that reach a registry.
func profileRegistryCommands() []*cobra.Command { return nil }
