package tosca

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/dlclark/regexp2"
	"github.com/dop251/goja"
	"github.com/tliron/commonjs-goja/api"
	"github.com/tliron/go-ard"
	"gopkg.in/yaml.v3"
)

// Values that scriptlets hand to Go code are walked recursively by it (copying, hashing,
// formatting, coercing). A JavaScript object that contains itself, or shares its parts so
// that it unfolds exponentially, would then recurse until Go's stack overflows — which
// ends the process, uncatchably — or loop outside JavaScript, where no deadline reaches.
// The sandbox checks such values at the boundary instead.

// regexpTimeout bounds one match of a backtracking regular expression. goja runs
// JavaScript regular expressions that Go's regexp cannot (lookarounds, backreferences) with
// regexp2, in Go code that an interrupt does not reach: a pattern that backtracks forever
// would keep its goroutine busy after the sandbox abandoned it.
const regexpTimeout = 10 * time.Second

func init() {
	if regexp2.DefaultMatchTimeout > regexpTimeout {
		regexp2.DefaultMatchTimeout = regexpTimeout
	}
}

// maxValueDepth and maxValueNodes bound a value handed from a scriptlet to Go code.
const (
	maxValueDepth = 500
	maxValueNodes = 1_000_000
)

var errValueTooLarge = errors.New("value is cyclic, nested too deeply or too large")

// checkValue reports values that Go code must not walk: cyclic, deeper than
// maxValueDepth, or with more than maxValueNodes nodes once shared parts are unfolded.
func checkValue(value any) error {
	nodes := 0
	var walk func(v any, depth int) bool
	walk = func(v any, depth int) bool {
		if nodes++; nodes > maxValueNodes || depth > maxValueDepth {
			return false
		}
		switch v := v.(type) {
		case goja.Value:
			if v == nil {
				return true
			}
			if _, ok := v.(*goja.Object); ok {
				return walk(v.Export(), depth)
			}
		case map[string]any:
			for _, item := range v {
				if !walk(item, depth+1) {
					return false
				}
			}
		case map[any]any:
			for _, item := range v {
				if !walk(item, depth+1) {
					return false
				}
			}
		case []any:
			for _, item := range v {
				if !walk(item, depth+1) {
					return false
				}
			}
		}
		return true
	}
	if !walk(value, 0) {
		return errValueTooLarge
	}
	return nil
}

func checkValues(values ...any) error {
	for _, v := range values {
		if err := checkValue(v); err != nil {
			return err
		}
	}
	return nil
}

// sandboxUtil is the commonjs util API without goroutines, process-wide registries and
// locks, and with its value functions guarded.
type sandboxUtil struct {
	*api.Util
}

// Go is refused: a goroutine would escape the deadline and race the runtime.
func (sandboxUtil) Go(any, any, any) error {
	return errors.New("util.go is not available in Calaf scriptlets")
}

// Once is refused: it keeps state across runs in a process-wide registry.
func (sandboxUtil) Once(any, any, any, any) error {
	return errors.New("util.once is not available in Calaf scriptlets")
}

// Mutex is refused: locking twice would block outside JavaScript, beyond the deadline.
func (sandboxUtil) Mutex() (any, error) {
	return nil, errors.New("util.mutex is not available in Calaf scriptlets")
}

func (u sandboxUtil) DeepCopy(value ard.Value) (ard.Value, error) {
	if err := checkValue(value); err != nil {
		return nil, err
	}
	return u.Util.DeepCopy(value), nil
}

func (u sandboxUtil) DeepEquals(a ard.Value, b ard.Value) (bool, error) {
	if err := checkValues(a, b); err != nil {
		return false, err
	}
	return u.Util.DeepEquals(a, b), nil
}

func (u sandboxUtil) Hash(value ard.Value) (uint64, error) {
	if err := checkValue(value); err != nil {
		return 0, err
	}
	return u.Util.Hash(value)
}

func (u sandboxUtil) IsType(value ard.Value, typeName string) (bool, error) {
	if err := checkValue(value); err != nil {
		return false, err
	}
	return u.Util.IsType(value, typeName)
}

func (u sandboxUtil) Url(config ard.StringMap) (string, error) {
	if err := checkValue(map[string]any(config)); err != nil {
		return "", err
	}
	return u.Util.Url(config)
}

func (u sandboxUtil) Sprintf(format string, args ...any) (string, error) {
	if err := checkValues(args...); err != nil {
		return "", err
	}
	return fmt.Sprintf(format, args...), nil
}

func (u sandboxUtil) Failf(format string, args ...any) error {
	message, err := u.Sprintf(format, args...)
	if err != nil {
		return err
	}
	return errors.New(message)
}

// sandboxARD decodes as Puccini's does (its _format constraint validates with it), but
// refuses YAML alias bombs before decoding.
type sandboxARD struct {
	api.ARD
}

func (a sandboxARD) Decode(code []byte, format string, all bool) (ard.Value, error) {
	if err := checkDecodable(code, format); err != nil {
		return nil, err
	}
	return a.ARD.Decode(code, format, all)
}

func (a sandboxARD) ValidateFormat(code []byte, format string) error {
	if err := checkDecodable(code, format); err != nil {
		return err
	}
	return a.ARD.ValidateFormat(code, format)
}

// checkDecodable refuses YAML whose aliases expand by more than maxAliasNodes nodes.
func checkDecodable(code []byte, format string) error {
	if format != "yaml" {
		return nil
	}
	decoder := yaml.NewDecoder(bytes.NewReader(code))
	for {
		var doc yaml.Node
		if err := decoder.Decode(&doc); err != nil {
			return nil // the end, or a syntax error that decoding reports itself
		}
		if countNodes(&doc, map[*yaml.Node]int{}, true)-countNodes(&doc, nil, false) > maxAliasNodes {
			return fmt.Errorf("YAML aliases expand by more than %d nodes", maxAliasNodes)
		}
	}
}
