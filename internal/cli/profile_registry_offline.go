//go:build calaf_offline

package cli

import "github.com/spf13/cobra"

// profileRegistryCommands: none in an offline build (pushing needs calaf-full).
func profileRegistryCommands() []*cobra.Command { return nil }
