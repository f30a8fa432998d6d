// Package rawpuccini compiles a TOSCA service template the way a Puccini user does: the
// baseline Calaf's own compiles are measured against.
package rawpuccini

import (
	"context"
	"fmt"

	"github.com/tliron/exturl"
	"github.com/tliron/puccini/tosca/parser"
)

// Compile parses and compiles the template at entry with a new parser and URL context: no
// preflight, no digest, no cache. imports maps URLs to others (the Calaf profile's public
// URLs to its embedded files: profiles.Imports); inputs, when set, are the template's. A
// problem Puccini reports is an error.
func Compile(ctx context.Context, entry string, imports map[string]string, inputs map[string]any) error {
	urlContext := exturl.NewContext()
	defer urlContext.Release()
	for public, internal := range imports {
		urlContext.Map(public, internal)
	}
	url, err := urlContext.NewValidFileURL(entry)
	if err != nil {
		return err
	}
	parserContext := parser.NewParser().NewContext()
	parserContext.URL = url
	parserContext.Inputs = inputs
	serviceTemplate, err := parserContext.Parse(ctx)
	if problems := parserContext.GetProblems(); err != nil || !problems.Empty() {
		return fmt.Errorf("parse %s: %v: %v", entry, err, problems)
	}
	_, err = serviceTemplate.Compile()
	return err
}
