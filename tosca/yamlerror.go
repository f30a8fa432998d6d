package tosca

import (
	"errors"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

var (
	yamlLinePrefix = regexp.MustCompile(`^line (\d+): (.*)$`)
	yamlCannot     = regexp.MustCompile(`^cannot unmarshal (!!\w+)(?: ` + "`" + `.*` + "`" + `)? into (.+)$`)
)

// yamlKinds name the YAML tags of the YAML library's messages.
var yamlKinds = map[string]string{
	"!!seq": "a list", "!!map": "a map", "!!str": "text", "!!int": "an integer",
	"!!float": "a number", "!!bool": "true or false", "!!null": "null",
	"!!binary": "binary data", "!!timestamp": "a timestamp", "!!merge": "a merge key",
}

// YAMLProblem words an error of the YAML library for a person: the line it names (0 when
// none) and what is wrong, without the Go types the library names ("cannot unmarshal
// !!seq into map[string]interface {}" is "a list where a map is expected").
func YAMLProblem(err error) (line int, message string) {
	var typeErr *yaml.TypeError
	if errors.As(err, &typeErr) && len(typeErr.Errors) > 0 {
		message = typeErr.Errors[0]
	} else {
		message = strings.TrimPrefix(err.Error(), "yaml: ")
	}
	if m := yamlLinePrefix.FindStringSubmatch(message); m != nil {
		line, _ = strconv.Atoi(m[1])
		message = m[2]
	}
	switch {
	case strings.HasPrefix(message, "invalid map key:"):
		message = "a key that is a map or a list: keys are text"
	case strings.Contains(message, "UTF-8 octet"), strings.Contains(message, "UTF-16 character"):
		message = "the text is not UTF-8 (a binary file?)"
	case strings.HasPrefix(message, "control characters are not allowed"):
		message = "control characters are not allowed (a binary file?)"
	}
	if m := yamlCannot.FindStringSubmatch(message); m != nil {
		message = kindOf(m[1]) + " where " + goKindOf(m[2]) + " is expected"
	}
	return line, message
}

func kindOf(tag string) string {
	if kind, ok := yamlKinds[tag]; ok {
		return kind
	}
	return "a " + strings.TrimPrefix(tag, "!!")
}

// goKindOf names the Go type a value was decoded into as a YAML kind.
func goKindOf(goType string) string {
	switch {
	case strings.HasPrefix(goType, "map["), strings.HasPrefix(goType, "struct"):
		return "a map"
	case strings.HasPrefix(goType, "[]"):
		return "a list"
	case goType == "string":
		return "text"
	case goType == "bool":
		return "true or false"
	case strings.HasPrefix(goType, "int"), strings.HasPrefix(goType, "uint"):
		return "an integer"
	case strings.HasPrefix(goType, "float"):
		return "a number"
	}
	return "another kind of value"
}
