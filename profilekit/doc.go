// Package profilekit is the kit of the vendor who authors a TOSCA profile for Calaf: the
// catalog of a profile's types read from its files (catalog.go), its reference in Markdown
// and HTML and `calaf explain` (reference.go, explain.go), the JSON Schema of service
// templates written against it for editors (schema.go), what changed between two versions
// of it and whether that breaks packages (diff.go), the vendor's renderer test cases
// (testcases.go) and the scaffold of a new profile (scaffold.go).
//
// It reads type definitions as YAML, with their lines; whether a profile is valid TOSCA is
// Puccini's to say (the commands compile it first).
package profilekit
