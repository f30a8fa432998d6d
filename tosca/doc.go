// Package tosca turns a TOSCA service package — a directory, a CSAR (zip or tar), or one
// YAML file — into a validated Puccini Clout, safely: extraction is bounded and confined,
// imports may not leave the package, every scriptlet runs in a sandbox with a deadline,
// and every problem becomes a Diagnostic instead of a panic or a hang.
//
// The pipeline is Open (package) → Compiler.Compile (parse, compile, resolve) → the
// Compiled result, which later stages coerce and render through RunScriptlet.
package tosca
