package worker

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"time"

	cloutpkg "github.com/tliron/puccini/clout"

	"calaf.io/calaf/render"
	"calaf.io/calaf/tosca"
)

// The protocol: the pool writes a hello and reads one back, then writes one request at a
// time on the worker's stdin and reads its response on the worker's stdout. Every message
// is a frame: a 4-byte big-endian length, then the value in the wire codec. The worker
// writes nothing else on stdout; its stderr is its log, and the Go runtime's last words
// when it crashes.

// protocolVersion changes whenever the meaning of a message changes.
const protocolVersion = 1

// Operations of a request.
const (
	opCompile  = "compile"
	opRender   = "render"
	opEvaluate = "evaluate"
	// opProbe opens a file for reading: the pool checks what its workers can reach.
	opProbe = "probe"
	// opVNFD reads the VNFD of a VNF package being onboarded (tosca.Package.ReadVNFD).
	opVNFD = "vnfd"
)

// hello opens a conversation: both ends must speak the same version over the same wire
// types, which a worker started from another binary (an upgrade in place) would not.
type hello struct {
	Version int
	Layout  string
	// Pid, VirtualBytes, MemoryLimit, GCPercent, Confined and CPU are the worker's answer:
	// who it is, the address space it had reserved when it set its limit, the limit, its
	// garbage collection target, what it confined itself with, and the CPU time it used
	// to start.
	Pid          int
	VirtualBytes int64
	MemoryLimit  int64
	GCPercent    int
	Confined     Confined
	CPU          time.Duration
}

// request is one piece of package work.
type request struct {
	Op      string
	Package tosca.Descriptor
	// Inputs and Compile are a compile's.
	Inputs  map[string]any
	Compile tosca.CompileOptions
	// CompileKey identifies the Clout of a render or an evaluation; Clout is the Clout,
	// encoded (empty when the worker said it has it).
	CompileKey string
	Clout      []byte
	// Bind, when set, makes the Clout of CompileKey by binding Inputs onto a package's
	// template: Clout is then the template's base, sent once per worker.
	Bind *bindSpec
	// Render are the options of a render.
	Render render.Options
	// Timeout and Coerce are an evaluation's.
	Timeout time.Duration
	Coerce  bool
	// CPU is the CPU time the request may use.
	CPU time.Duration
	// Probe is the file a probe opens.
	Probe string
}

// response is what a worker answers to a request.
type response struct {
	// Clout is the result of a compile or an evaluation, encoded.
	Clout []byte
	// Result is the result of a render, its Objects left to be gathered from its nodes.
	Result *render.Result
	// VNFD is what a VNFD read found.
	VNFD *tosca.PackageVNFD
	// Invalid holds the diagnostics of a package problem (a *tosca.InvalidError).
	Invalid []tosca.Diagnostic
	// Failure is any other error.
	Failure string
	// Tainted says that the worker left work running (a scriptlet abandoned in Go code
	// past its deadline): it must not serve again.
	Tainted bool
	// CPU is the worker's CPU time so far; PeakBytes its peak resident memory.
	CPU       time.Duration
	PeakBytes int64
}

// maxRequestBytes bounds a request a worker reads.
const maxRequestBytes = 1 << 30

// errFrameTooLarge reports a frame above the reader's limit.
type errFrameTooLarge struct {
	size, limit int64
}

func (e *errFrameTooLarge) Error() string {
	return fmt.Sprintf("a message of %d MiB, more than the limit of %d MiB", e.size>>20, e.limit>>20)
}

// writeFrame writes one message.
func writeFrame(w io.Writer, v any) error {
	data, err := Marshal(v)
	if err != nil {
		return err
	}
	return writeEncoded(w, data)
}

// writeEncoded writes one message already encoded.
func writeEncoded(w io.Writer, data []byte) error {
	if len(data) > 1<<32-1 {
		return &errFrameTooLarge{size: int64(len(data)), limit: 1<<32 - 1}
	}
	header := binary.BigEndian.AppendUint32(nil, uint32(len(data)))
	if _, err := w.Write(header); err != nil {
		return err
	}
	_, err := w.Write(data)
	return err
}

// readFrame reads one message of at most limit bytes into v.
func readFrame(r io.Reader, limit int64, v any) error {
	var header [4]byte
	if _, err := io.ReadFull(r, header[:]); err != nil {
		return err
	}
	size := int64(binary.BigEndian.Uint32(header[:]))
	if size > limit {
		return &errFrameTooLarge{size: size, limit: limit}
	}
	data := make([]byte, size)
	if _, err := io.ReadFull(r, data); err != nil {
		if errors.Is(err, io.EOF) {
			return io.ErrUnexpectedEOF
		}
		return err
	}
	return Unmarshal(data, v)
}

// layout is a digest of the wire types, field by field: a worker built from other
// sources (another version of Calaf) has another.
func layout() string {
	var b strings.Builder
	seen := map[reflect.Type]bool{}
	describe(&b, reflect.TypeFor[hello](), seen)
	describe(&b, reflect.TypeFor[request](), seen)
	describe(&b, reflect.TypeFor[response](), seen)
	describe(&b, reflect.TypeFor[wireClout](), seen)
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:8])
}

// describe writes a type's shape: its kind, and the names and shapes of its exported
// fields, elements, keys.
func describe(b *strings.Builder, t reflect.Type, seen map[reflect.Type]bool) {
	fmt.Fprintf(b, "%s:%s(", t.String(), t.Kind())
	defer b.WriteString(")")
	if seen[t] {
		return
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Struct:
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() {
				b.WriteString(f.Name + " ")
				describe(b, f.Type, seen)
			}
		}
	case reflect.Pointer, reflect.Slice, reflect.Array:
		describe(b, t.Elem(), seen)
	case reflect.Map:
		describe(b, t.Key(), seen)
		describe(b, t.Elem(), seen)
	}
}

// bindSpec is a tosca.Template without its base Clout, which travels as a request's Clout.
type bindSpec struct {
	Key      string
	Required map[string]bool
	Bindable map[string]string
	Provided map[string]any
}

func newBindSpec(t *tosca.Template) *bindSpec {
	return &bindSpec{Key: t.Key, Required: t.Required, Bindable: t.Bindable, Provided: t.Provided}
}

// template is the tosca.Template the spec describes, with base as its Clout.
func (b *bindSpec) template(base *cloutpkg.Clout) *tosca.Template {
	return &tosca.Template{Key: b.Key, Base: base, Required: b.Required, Bindable: b.Bindable, Provided: b.Provided}
}

// cloutKey is the key of the Clout a request carries, or that the worker may have already:
// its template's base when it binds, its compile key otherwise.
func (r *request) cloutKey() string {
	if r.Bind != nil {
		return r.Bind.Key
	}
	return r.CompileKey
}
