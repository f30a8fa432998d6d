package runner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
)

// values are the attributes and outputs an artifact set, within a size bound.
type values struct {
	attributes map[string]any
	outputs    map[string]any
	sizes      map[string]int
	total      int
	limit      int
}

func newValues(limit int) *values {
	return &values{sizes: map[string]int{}, limit: limit}
}

// set records an attribute ("attribute") or output ("output").
func (v *values) set(kind, name string, value any) error {
	if name == "" {
		return fmt.Errorf("%s name is empty", kind)
	}
	data, err := json.Marshal(value)
	if err != nil {
		return fmt.Errorf("%s %q: value is not JSON: %v", kind, name, err)
	}
	var plain any
	if err := json.Unmarshal(data, &plain); err != nil {
		return fmt.Errorf("%s %q: %v", kind, name, err)
	}
	key := kind + "/" + name
	total := v.total - v.sizes[key] + len(data) + len(name)
	if total > v.limit {
		return fmt.Errorf("%s %q: attributes and outputs exceed %d bytes", kind, name, v.limit)
	}
	v.total, v.sizes[key] = total, len(data)+len(name)
	target := &v.attributes
	if kind == "output" {
		target = &v.outputs
	}
	if *target == nil {
		*target = map[string]any{}
	}
	(*target)[name] = plain
	return nil
}

// logs keep the newest lines within a byte bound.
type logs struct {
	mu      sync.Mutex
	lines   []string
	size    int
	limit   int
	dropped int
}

func newLogs(limit int) *logs {
	return &logs{limit: limit}
}

// add appends a message, one entry per line; lines longer than a quarter of the bound
// are cut.
func (l *logs) add(message string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range strings.Split(strings.TrimRight(message, "\n"), "\n") {
		if max := l.limit / 4; len(line) > max {
			line = line[:max] + "…"
		}
		l.lines = append(l.lines, line)
		l.size += len(line) + 1
		for l.size > l.limit && len(l.lines) > 0 {
			l.size -= len(l.lines[0]) + 1
			l.lines = l.lines[1:]
			l.dropped++
		}
	}
}

// headBuffer keeps the first limit bytes written to it and counts the rest.
type headBuffer struct {
	mu        sync.Mutex
	data      []byte
	limit     int
	truncated int64
}

func (b *headBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	room := b.limit - len(b.data)
	if room > len(p) {
		room = len(p)
	}
	if room > 0 {
		b.data = append(b.data, p[:room]...)
	}
	b.truncated += int64(len(p) - room)
	return len(p), nil
}

func (b *headBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.data)
}

// tailBuffer keeps the last limit bytes written to it.
type tailBuffer struct {
	mu        sync.Mutex
	data      []byte
	limit     int
	truncated int64
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.data = append(b.data, p...)
	if over := len(b.data) - b.limit; over > 0 {
		b.truncated += int64(over)
		b.data = append(b.data[:0], b.data[over:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.data)
}

// lineWriter passes complete lines to a logs, prefixed.
type lineWriter struct {
	mu      sync.Mutex
	logs    *logs
	prefix  string
	partial []byte
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		w.logs.add(w.prefix + string(w.partial[:i]))
		w.partial = w.partial[i+1:]
	}
	if len(w.partial) > w.logs.limit {
		w.logs.add(w.prefix + string(w.partial))
		w.partial = w.partial[:0]
	}
	return len(p), nil
}

func (w *lineWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.partial) > 0 {
		w.logs.add(w.prefix + string(w.partial))
		w.partial = nil
	}
}
