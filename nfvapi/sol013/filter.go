package sol013

import (
	"net/http"
	"strconv"
	"strings"
)

// Bounds of a filter: longer or larger ones are refused with 400.
const (
	MaxFilterLength = 4096
	maxExpressions  = 32
	maxValues       = 64
)

// Op is a comparison operator of an attribute-based filter.
type Op string

const (
	OpEq    Op = "eq"
	OpNeq   Op = "neq"
	OpGt    Op = "gt"
	OpGte   Op = "gte"
	OpLt    Op = "lt"
	OpLte   Op = "lte"
	OpIn    Op = "in"
	OpNin   Op = "nin"
	OpCont  Op = "cont"
	OpNcont Op = "ncont"
)

// negated maps each negative operator to the positive one it negates.
var negated = map[Op]Op{OpNeq: OpEq, OpNin: OpIn, OpNcont: OpCont}

func (o Op) valid() bool {
	switch o {
	case OpEq, OpNeq, OpGt, OpGte, OpLt, OpLte, OpIn, OpNin, OpCont, OpNcont:
		return true
	}
	return false
}

func (o Op) takesMany() bool { return o == OpIn || o == OpNin || o == OpCont || o == OpNcont }

// Expr is one simple filter expression: an operator, an attribute path and its values.
type Expr struct {
	Op     Op
	Path   []string
	Values []string
}

// Filter is the conjunction of a request's filter expressions; the zero Filter matches
// everything.
type Filter []Expr

// ParseFilter reads a filter query parameter (SOL013 5.2): "(op,attr,value[,value]…)"
// expressions separated by ";", attribute names with "/" between the levels of a path
// ("~1", "~a", "~b" and "~0" escape "/", ",", "@" and "~"), values plain or quoted with
// "'" (a quote doubled inside). known names the attributes a resource has at its top
// level: a path that starts elsewhere is refused, as is any syntax error, with a 400
// Problem saying where.
func ParseFilter(raw string, known map[string]bool) (Filter, error) {
	if raw == "" {
		return nil, nil
	}
	if len(raw) > MaxFilterLength {
		return nil, Errorf(http.StatusBadRequest, "the filter is %d characters long; at most %d are accepted", len(raw), MaxFilterLength)
	}
	p := filterParser{s: raw}
	var f Filter
	for {
		e, err := p.expr()
		if err != nil {
			return nil, err
		}
		if !known[e.Path[0]] {
			return nil, Errorf(http.StatusBadRequest, "the filter names the attribute %q, which this resource does not have", strings.Join(e.Path, "/"))
		}
		if f = append(f, e); len(f) > maxExpressions {
			return nil, Errorf(http.StatusBadRequest, "the filter has more than %d expressions", maxExpressions)
		}
		if p.pos == len(p.s) {
			return f, nil
		}
		if p.s[p.pos] != ';' {
			return nil, p.fail("';' or the end of the filter expected")
		}
		p.pos++
	}
}

type filterParser struct {
	s   string
	pos int
}

func (p *filterParser) fail(what string) error {
	return Errorf(http.StatusBadRequest, "the filter cannot be read at character %d: %s", p.pos+1, what)
}

func (p *filterParser) expect(c byte) error {
	if p.pos >= len(p.s) || p.s[p.pos] != c {
		return p.fail("'" + string(c) + "' expected")
	}
	p.pos++
	return nil
}

// token reads up to the next ',', ')' (not consumed).
func (p *filterParser) token() string {
	start := p.pos
	for p.pos < len(p.s) && p.s[p.pos] != ',' && p.s[p.pos] != ')' {
		p.pos++
	}
	return p.s[start:p.pos]
}

func (p *filterParser) expr() (Expr, error) {
	if err := p.expect('('); err != nil {
		return Expr{}, err
	}
	op := Op(p.token())
	if !op.valid() {
		return Expr{}, p.fail("unknown operator " + strconv.Quote(string(op)) + " (eq, neq, gt, gte, lt, lte, in, nin, cont, ncont)")
	}
	if err := p.expect(','); err != nil {
		return Expr{}, err
	}
	path, err := p.path()
	if err != nil {
		return Expr{}, err
	}
	e := Expr{Op: op, Path: path}
	for p.pos < len(p.s) && p.s[p.pos] == ',' {
		p.pos++
		v, err := p.value()
		if err != nil {
			return Expr{}, err
		}
		if e.Values = append(e.Values, v); len(e.Values) > maxValues {
			return Expr{}, p.fail("more than " + strconv.Itoa(maxValues) + " values")
		}
	}
	if err := p.expect(')'); err != nil {
		return Expr{}, err
	}
	switch {
	case len(e.Values) == 0:
		return Expr{}, p.fail("the expression has no value")
	case len(e.Values) > 1 && !op.takesMany():
		return Expr{}, p.fail(string(op) + " takes one value")
	}
	return e, nil
}

func (p *filterParser) path() ([]string, error) {
	raw := p.token()
	if raw == "" {
		return nil, p.fail("an attribute name expected")
	}
	parts := strings.Split(raw, "/")
	for i, part := range parts {
		if part == "" {
			return nil, p.fail("an empty level in the attribute name " + strconv.Quote(raw))
		}
		parts[i] = strings.NewReplacer("~1", "/", "~a", ",", "~b", "@", "~0", "~").Replace(part)
	}
	return parts, nil
}

func (p *filterParser) value() (string, error) {
	if p.pos < len(p.s) && p.s[p.pos] == '\'' {
		var b strings.Builder
		for p.pos++; ; p.pos++ {
			if p.pos >= len(p.s) {
				return "", p.fail("a quoted value is not closed")
			}
			if p.s[p.pos] == '\'' {
				if p.pos+1 < len(p.s) && p.s[p.pos+1] == '\'' {
					b.WriteByte('\'')
					p.pos++
					continue
				}
				p.pos++
				return b.String(), nil
			}
			b.WriteByte(p.s[p.pos])
		}
	}
	v := p.token()
	if v == "" {
		return "", p.fail("a value expected")
	}
	if strings.Contains(v, "'") {
		return "", p.fail("a value with a quote must be quoted")
	}
	return v, nil
}

// Match tells whether a resource (decoded JSON) satisfies every expression. A value of
// the wrong kind for its attribute (a word where the attribute is a number, a path into
// a string) is an error (400).
func (f Filter) Match(doc any) (bool, error) {
	for _, e := range f {
		ok, err := e.match(doc)
		if err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

// match: a negative operator is the negation of its positive one (an absent attribute is
// "not equal" to anything); a path through an array matches if any element does.
func (e Expr) match(doc any) (bool, error) {
	op, negate := e.Op, false
	if pos, ok := negated[e.Op]; ok {
		op, negate = pos, true
	}
	found, err := e.any(doc, e.Path, op)
	return found != negate, err
}

func (e Expr) any(v any, path []string, op Op) (bool, error) {
	if list, ok := v.([]any); ok {
		for _, item := range list {
			if ok, err := e.any(item, path, op); ok || err != nil {
				return ok, err
			}
		}
		return false, nil
	}
	if len(path) == 0 {
		return e.compare(v, op)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		if v == nil {
			return false, nil
		}
		return false, Errorf(http.StatusBadRequest, "the filter's attribute %q goes into a value that has no attributes", strings.Join(e.Path, "/"))
	}
	if path[0] == "@key" && len(path) == 1 {
		for k := range obj {
			if ok, err := e.compare(k, op); ok || err != nil {
				return ok, err
			}
		}
		return false, nil
	}
	child, ok := obj[path[0]]
	if !ok {
		return false, nil
	}
	return e.any(child, path[1:], op)
}

// compare applies a positive operator to one simple value.
func (e Expr) compare(v any, op Op) (bool, error) {
	for _, want := range e.Values {
		c, err := e.order(v, want, op)
		if err != nil {
			return false, err
		}
		var ok bool
		switch op {
		case OpEq, OpIn:
			ok = c == 0
		case OpGt:
			ok = c > 0
		case OpGte:
			ok = c >= 0
		case OpLt:
			ok = c < 0
		case OpLte:
			ok = c <= 0
		case OpCont:
			s, isString := v.(string)
			if !isString {
				return false, Errorf(http.StatusBadRequest, "cont and ncont apply to text; %q is not text", strings.Join(e.Path, "/"))
			}
			ok = strings.Contains(s, want)
		}
		if ok {
			return true, nil
		}
	}
	return false, nil
}

// order compares a resource value with a filter value read as the same kind: -1, 0, 1.
func (e Expr) order(v any, want string, op Op) (int, error) {
	name := strings.Join(e.Path, "/")
	switch v := v.(type) {
	case string:
		return strings.Compare(v, want), nil
	case float64:
		w, err := strconv.ParseFloat(want, 64)
		if err != nil {
			return 0, Errorf(http.StatusBadRequest, "the attribute %q is a number; %q is not", name, want)
		}
		switch {
		case v < w:
			return -1, nil
		case v > w:
			return 1, nil
		}
		return 0, nil
	case bool:
		w, err := strconv.ParseBool(want)
		if err != nil || (want != "true" && want != "false") {
			return 0, Errorf(http.StatusBadRequest, "the attribute %q is true or false; %q is neither", name, want)
		}
		if op != OpEq && op != OpIn {
			return 0, Errorf(http.StatusBadRequest, "the attribute %q is true or false: only eq, neq, in and nin apply", name)
		}
		if v == w {
			return 0, nil
		}
		return 1, nil
	case nil:
		return 1, nil
	}
	return 0, Errorf(http.StatusBadRequest, "the attribute %q is not a simple value; filter on one of its attributes", name)
}
