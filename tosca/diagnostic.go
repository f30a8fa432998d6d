package tosca

import (
	"errors"
	"fmt"
	"strings"

	"calaf.io/calaf/internal/text"
)

// Diagnostic is one problem found in a package, located where the source allows.
type Diagnostic struct {
	// File is the package-relative path (or an internal profile URL) of the problem, if known.
	File string `json:"file,omitempty"`
	// Line and Column are 1-based; 0 means unknown.
	Line   int `json:"line,omitempty"`
	Column int `json:"column,omitempty"`
	// Path is the TOSCA path of the element, e.g. topology_template.node_templates["web"].
	Path    string `json:"path,omitempty"`
	Message string `json:"message"`
}

// String renders the diagnostic as "file:line:column: path: message", on one line: the
// control characters of names and messages are escaped (text.Escape), so that a crafted
// file name cannot forge a line on a terminal or in a log.
func (d Diagnostic) String() string {
	var b strings.Builder
	if d.File != "" {
		b.WriteString(text.Escape(d.File))
		if d.Line > 0 {
			fmt.Fprintf(&b, ":%d", d.Line)
			if d.Column > 0 {
				fmt.Fprintf(&b, ":%d", d.Column)
			}
		}
		b.WriteString(": ")
	}
	if d.Path != "" {
		b.WriteString(text.Escape(d.Path))
		b.WriteString(": ")
	}
	b.WriteString(text.Escape(d.Message))
	return b.String()
}

// InvalidError reports a package or inputs that cannot be compiled or rendered: a user
// error that retrying will not fix.
type InvalidError struct {
	Diagnostics []Diagnostic
}

func (e *InvalidError) Error() string {
	switch len(e.Diagnostics) {
	case 0:
		return "invalid package"
	case 1:
		return e.Diagnostics[0].String()
	}
	lines := make([]string, 0, len(e.Diagnostics))
	for _, d := range e.Diagnostics {
		lines = append(lines, d.String())
	}
	return fmt.Sprintf("%d problems:\n%s", len(lines), strings.Join(lines, "\n"))
}

// Invalid returns an InvalidError holding one diagnostic.
func Invalid(file, format string, args ...any) *InvalidError {
	return &InvalidError{Diagnostics: []Diagnostic{{File: file, Message: fmt.Sprintf(format, args...)}}}
}

// IsInvalid tells whether err (or an error it wraps) is an InvalidError.
func IsInvalid(err error) bool {
	var invalid *InvalidError
	return errors.As(err, &invalid)
}

// DiagnosticsOf returns the diagnostics carried by err, or one diagnostic with its message.
func DiagnosticsOf(err error) []Diagnostic {
	if err == nil {
		return nil
	}
	var invalid *InvalidError
	if errors.As(err, &invalid) {
		return invalid.Diagnostics
	}
	return []Diagnostic{{Message: err.Error()}}
}
