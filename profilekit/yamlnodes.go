package profilekit

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"strings"
	"time"

	pucciniassets "github.com/tliron/puccini/assets/tosca/profiles"
	"gopkg.in/yaml.v3"
)

// mapping returns the top-level mapping of a document; nil when it is not one.
func mapping(doc *yaml.Node) *yaml.Node {
	if doc != nil && doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		doc = doc.Content[0]
	}
	if doc == nil || doc.Kind != yaml.MappingNode {
		return nil
	}
	return doc
}

// value returns the value of key in mapping m; nil when absent.
func value(m *yaml.Node, key string) *yaml.Node {
	for _, kv := range pairs(m) {
		if kv[0].Value == key {
			return kv[1]
		}
	}
	return nil
}

// pairs returns the key/value pairs of a mapping, in order.
func pairs(m *yaml.Node) [][2]*yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	kvs := make([][2]*yaml.Node, 0, len(m.Content)/2)
	for i := 0; i+1 < len(m.Content); i += 2 {
		kvs = append(kvs, [2]*yaml.Node{m.Content[i], m.Content[i+1]})
	}
	return kvs
}

func scalar(n *yaml.Node) string {
	if n == nil || n.Kind != yaml.ScalarNode {
		return ""
	}
	return n.Value
}

func stringMap(n *yaml.Node) map[string]string {
	m := map[string]string{}
	for _, kv := range pairs(n) {
		m[kv[0].Value] = scalar(kv[1])
	}
	return m
}

func stringList(n *yaml.Node) []string {
	if n == nil || n.Kind != yaml.SequenceNode {
		return nil
	}
	var list []string
	for _, item := range n.Content {
		list = append(list, scalar(item))
	}
	return list
}

func decodeList(n *yaml.Node) []any {
	if n == nil || n.Kind != yaml.SequenceNode {
		return nil
	}
	var list []any
	_ = n.Decode(&list)
	return list
}

// imports returns the nodes of a file's imports that name a file: "- file.yaml",
// "- file: file.yaml" and "- url: ..." (imports from a repository are left out).
func imports(n *yaml.Node) []*yaml.Node {
	if n == nil || n.Kind != yaml.SequenceNode {
		return nil
	}
	var files []*yaml.Node
	for _, item := range n.Content {
		switch item.Kind {
		case yaml.ScalarNode:
			files = append(files, item)
		case yaml.MappingNode:
			if value(item, "repository") != nil {
				continue
			}
			if f := value(item, "file"); f != nil {
				files = append(files, f)
			} else if u := value(item, "url"); u != nil {
				files = append(files, u)
			}
		}
	}
	return files
}

// flowYAML renders a value as YAML on one line: [1, 65535], {a: b}, text.
func flowYAML(v any) string {
	var n yaml.Node
	if err := n.Encode(v); err != nil {
		return ""
	}
	setFlow(&n)
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&n); err != nil {
		return ""
	}
	return strings.TrimSpace(b.String())
}

func setFlow(n *yaml.Node) {
	n.Style |= yaml.FlowStyle
	for _, c := range n.Content {
		setFlow(c)
	}
}

func asPathError(err error, target **fs.PathError) bool {
	return errors.As(err, target)
}

// pucciniAssets serves the files of Puccini's embedded profiles as an fs.FS (Puccini
// exports them by path only).
type pucciniAssets struct{}

func (pucciniAssets) Open(name string) (f fs.File, err error) {
	defer func() {
		if recover() != nil {
			f, err = nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
		}
	}()
	return &memFile{name: name, Reader: bytes.NewReader(pucciniassets.Get(name))}, nil
}

// memFile is a file held in memory.
type memFile struct {
	name string
	*bytes.Reader
}

func (f *memFile) Stat() (fs.FileInfo, error) { return memInfo{f}, nil }
func (f *memFile) Close() error               { return nil }

var _ io.Reader = (*memFile)(nil)

type memInfo struct{ f *memFile }

func (i memInfo) Name() string       { return i.f.name }
func (i memInfo) Size() int64        { return i.f.Size() }
func (i memInfo) Mode() fs.FileMode  { return 0o444 }
func (i memInfo) ModTime() time.Time { return time.Time{} }
func (i memInfo) IsDir() bool        { return false }
func (i memInfo) Sys() any           { return nil }
