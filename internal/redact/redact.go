// Package redact hides the values of Secrets in what leaves the operator: status, Events,
// Operation results, log lines. A Secret's value is registered by its structure — the
// whole, every leaf of a JSON- or YAML-shaped value, every line of a multi-line one (a PEM
// block's body) — each with the forms quoting gives it (Go's and JSON's escapes), so that
// it is found however a message quotes it; a quoted string that holds one is hidden whole,
// and a value cut short (a truncated message, the tail of a log) is hidden where it was
// cut. Values are redacted leaf by leaf, before they are encoded.
package redact

import (
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"calaf.io/calaf/internal/text"
)

// Mask replaces what is hidden.
const Mask = "*****"

// MinLength is the length (in bytes) from which a fragment is hidden wherever it appears.
// A shorter one of minWord bytes or more is hidden only where it stands alone — a whole
// value, a whole quoted string, a whole word — so that it does not mangle unrelated text;
// a still shorter one only as a whole value.
const MinLength = 4

// minWord is the shortest fragment hidden as a word.
const minWord = 3

// maxDepth bounds how deep structured values inside structured values are read.
const maxDepth = 8

// Secrets is a set of secret values. Its methods may be called concurrently; a nil
// *Secrets hides nothing.
type Secrets struct {
	mu        sync.Mutex
	fragments map[string]struct{}
	m         *matcher // made from fragments on first use after a change
}

// New returns an empty set.
func New() *Secrets { return &Secrets{} }

// Add registers a secret value by its structure: the value and its trimmed form, each of
// its lines but a PEM block's armor, and when it reads as JSON or YAML, each of its leaves
// (and theirs, when a leaf is itself structured).
func (s *Secrets) Add(value string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fragments == nil {
		s.fragments = map[string]struct{}{}
	}
	s.addStructured(value, 0)
	s.m = nil
}

func (s *Secrets) addStructured(value string, depth int) {
	s.addFragment(value)
	trimmed := strings.TrimSpace(value)
	s.addFragment(trimmed)
	if strings.ContainsAny(trimmed, "\r\n") {
		for _, line := range strings.FieldsFunc(trimmed, func(r rune) bool { return r == '\n' || r == '\r' }) {
			if line = strings.TrimSpace(line); !isArmor(line) {
				s.addFragment(line)
			}
		}
	}
	if depth >= maxDepth {
		return
	}
	var parsed any
	if yaml.Unmarshal([]byte(value), &parsed) == nil {
		s.addLeaves(parsed, value, depth)
	}
}

// addLeaves registers the leaves of a parsed value; a string leaf other than the value
// it was read from is registered by its structure in turn.
func (s *Secrets) addLeaves(parsed any, from string, depth int) {
	switch v := parsed.(type) {
	case map[string]any:
		for _, item := range v {
			s.addLeaves(item, from, depth)
		}
	case map[any]any:
		for _, item := range v {
			s.addLeaves(item, from, depth)
		}
	case []any:
		for _, item := range v {
			s.addLeaves(item, from, depth)
		}
	case string:
		if v != from && strings.TrimSpace(v) != strings.TrimSpace(from) {
			s.addStructured(v, depth+1)
		}
	case int, int64, uint64:
		s.addFragment(strconv.FormatInt(toInt64(v), 10))
	case float64:
		s.addFragment(strconv.FormatFloat(v, 'g', -1, 64))
	}
}

func toInt64(v any) int64 {
	switch n := v.(type) {
	case int:
		return int64(n)
	case int64:
		return n
	case uint64:
		return int64(n)
	}
	return 0
}

// addFragment records one fragment; YAML's words for booleans and null are no secret.
func (s *Secrets) addFragment(fragment string) {
	if fragment == "" || isPlainWord(fragment) {
		return
	}
	s.fragments[fragment] = struct{}{}
}

// isArmor tells whether a line is a PEM block's BEGIN or END line (public by definition).
func isArmor(line string) bool {
	return strings.HasPrefix(line, "-----BEGIN ") || strings.HasPrefix(line, "-----END ")
}

func isPlainWord(fragment string) bool {
	switch strings.ToLower(fragment) {
	case "true", "false", "null", "yes", "no", "on", "off", "~":
		return true
	}
	return false
}

// Empty tells whether no secret is registered.
func (s *Secrets) Empty() bool {
	if s == nil {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.fragments) == 0
}

// Fragments returns the registered fragments, sorted.
func (s *Secrets) Fragments() []string {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.fragments))
	for f := range s.fragments {
		out = append(out, f)
	}
	slices.Sort(out)
	return out
}

// String returns text with every secret hidden: a quoted string holding one hidden whole
// (a message quoting a value derived from a Secret keeps what quotes it, its path), every
// long fragment in any of its quoted forms, short ones where they stand alone as words,
// and the part of a fragment left where the text was cut.
func (s *Secrets) String(text string) string {
	m := s.matcher()
	if m == nil || text == "" {
		return text
	}
	return m.text(text)
}

// Value returns a copy of a JSON-like value with every string leaf redacted (String), a
// leaf that is a whole fragment (a number too) replaced by Mask. The value given is not
// changed.
func (s *Secrets) Value(value any) any {
	m := s.matcher()
	if m == nil {
		return value
	}
	out, _ := m.value(value)
	return out
}

// Touches tells whether a value holds a secret anywhere.
func (s *Secrets) Touches(value any) bool {
	m := s.matcher()
	if m == nil {
		return false
	}
	_, changed := m.value(value)
	return changed
}

// matcher returns the matcher of the current fragments (nil when there are none).
func (s *Secrets) matcher() *matcher {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil && len(s.fragments) > 0 {
		s.m = newMatcher(s.fragments)
	}
	return s.m
}

// matcher finds the fragments of a Secrets in their quoted forms.
type matcher struct {
	// long are the forms of MinLength bytes or more, longest first; replacer hides them.
	long     []string
	replacer *strings.Replacer
	// words are the shorter forms hidden as whole words; whole every form, and the
	// fragments too short to be words, hidden as whole values.
	words []string
	whole map[string]bool
}

func newMatcher(fragments map[string]struct{}) *matcher {
	m := &matcher{whole: map[string]bool{}}
	for fragment := range fragments {
		for _, form := range quotedForms(fragment) {
			if m.whole[form] {
				continue
			}
			m.whole[form] = true
			switch {
			case len(form) >= MinLength:
				m.long = append(m.long, form)
			case len(form) >= minWord:
				m.words = append(m.words, form)
			}
		}
	}
	byLength := func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	}
	slices.SortFunc(m.long, byLength)
	slices.SortFunc(m.words, byLength)
	pairs := make([]string, 0, 2*len(m.long))
	for _, form := range m.long {
		pairs = append(pairs, form, Mask)
	}
	m.replacer = strings.NewReplacer(pairs...)
	return m
}

// quotedForms returns a fragment as it is, with its control characters escaped (as
// diagnostics write it), and as Go's and JSON's quoting write it inside the quotes
// (escaped backslashes, quotes, line breaks, HTML characters, non-ASCII).
func quotedForms(fragment string) []string {
	forms := []string{fragment}
	add := func(quoted string) {
		if len(quoted) >= 2 {
			if inner := quoted[1 : len(quoted)-1]; !slices.Contains(forms, inner) {
				forms = append(forms, inner)
			}
		}
	}
	if escaped := text.Escape(fragment); escaped != fragment {
		add(`"` + escaped + `"`) // as diagnostics and one-line messages write it
	}
	add(strconv.Quote(fragment))
	add(strconv.QuoteToASCII(fragment))
	if data, err := json.Marshal(fragment); err == nil {
		add(string(data))
	}
	var b strings.Builder
	encoder := json.NewEncoder(&b)
	encoder.SetEscapeHTML(false)
	if encoder.Encode(fragment) == nil {
		add(strings.TrimSuffix(b.String(), "\n"))
	}
	return forms
}

// quoted finds double-quoted strings, as Go's %q and JSON write them.
var quoted = regexp.MustCompile(`"(?:[^"\\\n]|\\.)*"`)

func (m *matcher) text(text string) string {
	if m.whole[text] {
		return Mask
	}
	text = quoted.ReplaceAllStringFunc(text, func(literal string) string {
		if m.holds(unquote(literal)) {
			return `"` + Mask + `"`
		}
		return literal
	})
	text = m.replacer.Replace(text)
	text = m.hideWords(text)
	return m.hideCuts(text)
}

// unquote returns what a quoted string says (Go's or JSON's escapes), or its bare content
// when it reads as neither.
func unquote(literal string) string {
	if s, err := strconv.Unquote(literal); err == nil {
		return s
	}
	var s string
	if json.Unmarshal([]byte(literal), &s) == nil {
		return s
	}
	return literal[1 : len(literal)-1]
}

// holds tells whether a string holds a fragment: a long one anywhere, a short one as a
// word, or the whole string.
func (m *matcher) holds(s string) bool {
	if m.whole[s] {
		return true
	}
	for _, form := range m.long {
		if strings.Contains(s, form) {
			return true
		}
	}
	return m.hideWords(s) != s
}

// hideWords hides the short forms where they stand alone: not next to a letter or digit.
func (m *matcher) hideWords(text string) string {
	for _, word := range m.words {
		if !strings.Contains(text, word) {
			continue
		}
		var b strings.Builder
		last := 0
		for from := 0; ; {
			i := strings.Index(text[from:], word)
			if i < 0 {
				break
			}
			i += from
			end := i + len(word)
			before, _ := utf8.DecodeLastRuneInString(text[:i])
			after, _ := utf8.DecodeRuneInString(text[end:])
			if !isWordRune(before) && !isWordRune(after) {
				b.WriteString(text[last:i])
				b.WriteString(Mask)
				last = end
			}
			from = end
		}
		b.WriteString(text[last:])
		text = b.String()
	}
	return text
}

func isWordRune(r rune) bool {
	return r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsDigit(r))
}

// ellipses mark where text.Truncate, protocol.Tail and the runner cut a text.
var ellipses = []string{"…", "..."}

// hideCuts hides the part of a long fragment left where a text was cut, as the ellipsis
// that marks the cut shows: at the start of a line after one, at its end before one.
func (m *matcher) hideCuts(text string) string {
	if !strings.Contains(text, "…") && !strings.Contains(text, "...") {
		return text
	}
	lines := strings.Split(text, "\n")
	for i, line := range lines {
		if hasEllipsisPrefix(line) {
			line = m.hideCutStart(line)
		}
		if hasEllipsisSuffix(line) {
			line = m.hideCutEnd(line)
		}
		lines[i] = line
	}
	return strings.Join(lines, "\n")
}

func hasEllipsisPrefix(line string) bool {
	return slices.ContainsFunc(ellipses, func(e string) bool { return strings.HasPrefix(line, e) })
}

func hasEllipsisSuffix(line string) bool {
	return slices.ContainsFunc(ellipses, func(e string) bool { return strings.HasSuffix(line, e) })
}

// hideCutStart hides a text's beginning, after the ellipsis that marks a cut, that is the
// end of a long fragment.
func (m *matcher) hideCutStart(text string) string {
	marker := ""
	for _, e := range ellipses {
		if strings.HasPrefix(text, e) {
			marker, text = e, text[len(e):]
			break
		}
	}
	for _, form := range m.long {
		for k := min(len(form)-1, len(text)); k >= MinLength; k-- {
			if strings.HasPrefix(text, form[len(form)-k:]) {
				return marker + Mask + text[k:]
			}
		}
	}
	return marker + text
}

// hideCutEnd hides a text's end, before the ellipsis that marks a cut, that is the
// beginning of a long fragment.
func (m *matcher) hideCutEnd(text string) string {
	marker := ""
	for _, e := range ellipses {
		if strings.HasSuffix(text, e) {
			marker, text = e, text[:len(text)-len(e)]
			break
		}
	}
	for _, form := range m.long {
		for k := min(len(form)-1, len(text)); k >= MinLength; k-- {
			if strings.HasSuffix(text, form[:k]) {
				return text[:len(text)-k] + Mask + marker
			}
		}
	}
	return text + marker
}

// value redacts a JSON-like value leaf by leaf into a copy, and tells whether anything
// was hidden.
func (m *matcher) value(value any) (any, bool) {
	switch v := value.(type) {
	case nil, bool:
		return v, false
	case string:
		out := m.text(v)
		return out, out != v
	case json.Number:
		if m.whole[v.String()] {
			return Mask, true
		}
		return v, false
	case float64:
		return m.number(v, strconv.FormatFloat(v, 'g', -1, 64))
	case int64:
		return m.number(v, strconv.FormatInt(v, 10))
	case int:
		return m.number(v, strconv.Itoa(v))
	case map[string]any:
		out, changed := make(map[string]any, len(v)), false
		for key, item := range v {
			redacted, c := m.value(item)
			if m.whole[key] {
				key, c = Mask, true
			}
			out[key], changed = redacted, changed || c
		}
		return out, changed
	case []any:
		out, changed := make([]any, len(v)), false
		for i, item := range v {
			var c bool
			out[i], c = m.value(item)
			changed = changed || c
		}
		return out, changed
	}
	return m.encoded(value)
}

func (m *matcher) number(value any, text string) (any, bool) {
	if m.whole[text] {
		return Mask, true
	}
	return value, false
}

// encoded redacts a value of another Go type through its JSON form.
func (m *matcher) encoded(value any) (any, bool) {
	data, err := json.Marshal(value)
	if err != nil {
		return value, false
	}
	var plain any
	if json.Unmarshal(data, &plain) != nil {
		return value, false
	}
	out, changed := m.value(plain)
	if !changed {
		return value, false
	}
	return out, true
}
