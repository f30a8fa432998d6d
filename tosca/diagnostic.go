package tosca

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
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

// Bounds of what a diagnostic says.
const (
	// MaxDiagnosticLength bounds a diagnostic's line, in characters: a longer one loses its
	// middle (text.Elide), so that it keeps what failed and why.
	MaxDiagnosticLength = 460
	// MaxEcho bounds a name or a value that a message repeats (text.Shorten).
	MaxEcho = 80
	// MaxDiagnostics bounds the diagnostics an error lists; the others are counted.
	MaxDiagnostics = 20
)

// Echo returns a name or a value as a message repeats it: quoted, escaped and cut to
// MaxEcho characters.
func Echo(s string) string {
	return strconv.Quote(text.Shorten(s, MaxEcho))
}

// goTypeNames are the Go spellings of YAML and JSON values that messages of libraries
// show (a "%T" or "%#v" of a decoded value), and what a person calls them.
var goTypeNames = strings.NewReplacer(
	"map[string]interface {}", "map", "map[interface {}]interface {}", "map",
	"[]interface {}", "list", "interface {}", "value", "map[string]any", "map", "[]any", "list",
	"ard.StringMap", "map", "ard.Map", "map", "ard.List", "list",
)

// String renders the diagnostic as "file:line:column: path: message", on one line: the
// control characters of names and messages are escaped (text.Escape), so that a crafted
// file name cannot forge a line on a terminal or in a log; the Go spellings of values
// that a library's message may hold are named as values; and the line is at most
// MaxDiagnosticLength characters long.
func (d Diagnostic) String() string {
	var b strings.Builder
	if d.File != "" {
		b.WriteString(text.Escape(text.Shorten(d.File, 2*MaxEcho)))
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
	b.WriteString(text.Escape(goTypeNames.Replace(d.Message)))
	return text.Elide(b.String(), MaxDiagnosticLength)
}

// Lines renders diagnostics one per line (String), each once, at most MaxDiagnostics of
// them and a last line counting the others.
func Lines(diags []Diagnostic) []string {
	seen := map[string]bool{}
	var lines []string
	more := 0
	for _, d := range diags {
		line := d.String()
		switch {
		case seen[line]:
		case len(lines) == MaxDiagnostics:
			seen[line] = true
			more++
		default:
			seen[line] = true
			lines = append(lines, line)
		}
	}
	if more > 0 {
		lines = append(lines, fmt.Sprintf("… and %d more problems", more))
	}
	return lines
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
	}
	lines := Lines(e.Diagnostics)
	if len(lines) == 1 {
		return lines[0]
	}
	return fmt.Sprintf("problems:\n%s", strings.Join(lines, "\n"))
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

// KindOf names the kind of a decoded YAML or JSON value as a person would — "text", "a
// number", "a list", "a map" — where Go would print its type.
func KindOf(value any) string {
	switch value.(type) {
	case nil:
		return "null"
	case string:
		return "text"
	case bool:
		return "true or false"
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64, json.Number:
		return "a number"
	case []any:
		return "a list"
	case map[string]any, map[any]any:
		return "a map"
	}
	switch reflect.ValueOf(value).Kind() {
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "a map"
	case reflect.Func:
		return "a function"
	}
	return "a value of another kind"
}
