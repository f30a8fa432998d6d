package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	cloutpkg "github.com/tliron/puccini/clout"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"calaf.io/calaf/internal/lru"
	"calaf.io/calaf/render"
	"calaf.io/calaf/tosca"
)

// Error is package work whose worker ended before it answered: stopped at a limit (memory,
// time, CPU time) or crashed (a stack overflow, a fatal error of the runtime). It is a
// problem of the package — it unwraps to a *tosca.InvalidError naming the package's
// entry — which the operator reports on the Service, and nothing else stops.
type Error struct {
	// Op is "compile", "render" or "evaluate".
	Op string
	// Entry is the package's entry template.
	Entry  string
	Ending Ending
}

func (e *Error) Error() string {
	return e.invalid().Error()
}

// Unwrap makes the error a package problem for tosca.IsInvalid and tosca.DiagnosticsOf.
func (e *Error) Unwrap() error {
	return e.invalid()
}

func (e *Error) invalid() *tosca.InvalidError {
	return tosca.Invalid(e.Entry, "%s of the package %s", e.Op, e.Ending.Text)
}

// Compile compiles a package in a worker: tosca.Compiler's Run.
func (p *Pool) Compile(ctx context.Context, pkg *tosca.Package, inputs map[string]any, opts tosca.CompileOptions) (*cloutpkg.Clout, error) {
	req := &request{Op: opCompile, Package: pkg.Describe(), Inputs: inputs, Compile: opts}
	resp, err := p.do(ctx, req, p.opts.CompileTimeout)
	if err != nil {
		return nil, err
	}
	if err := resp.err(); err != nil {
		return nil, err
	}
	clout, err := decodeClout(resp.Clout)
	if err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}
	p.encoded.Put(tosca.CompileKey(pkg.Digest, inputs, opts), resp.Clout)
	return clout, nil
}

// ReadVNFD reads the VNFD of an ETSI SOL001 VNF package in a worker
// (tosca.Package.ReadVNFD), within the compile deadline: what onboarding a VNF package
// reads of it.
func (p *Pool) ReadVNFD(ctx context.Context, pkg *tosca.Package) (*tosca.PackageVNFD, error) {
	resp, err := p.do(ctx, &request{Op: opVNFD, Package: pkg.Describe()}, p.opts.CompileTimeout)
	if err != nil {
		return nil, err
	}
	if err := resp.err(); err != nil {
		return nil, err
	}
	if resp.VNFD == nil {
		return nil, errors.New("worker: a VNFD read without a VNFD")
	}
	return resp.VNFD, nil
}

// Render renders a compiled package in a worker: render.Renderer's Run.
func (p *Pool) Render(ctx context.Context, compiled *tosca.Compiled, opts render.Options) (*render.Result, error) {
	resp, err := p.withClout(ctx, compiled, &request{Op: opRender, Render: opts}, render.Budget(compiled, opts.Timeout)+p.opts.RenderGrace)
	if err != nil {
		return nil, err
	}
	if resp.Result == nil {
		return nil, errors.New("worker: a render without a result")
	}
	result := resp.Result
	for _, node := range result.Nodes {
		result.Objects = append(result.Objects, node.Objects...)
	}
	if result.Objects == nil {
		result.Objects = []*unstructured.Unstructured{}
	}
	// The worker ran the package's code: what it answers is checked again here.
	entry := compiled.Package.Entry
	if vnfd := compiled.VNFD(); vnfd != nil {
		entry = vnfd.FlavourFile
	}
	if err := render.ValidateObjects(entry, result.Nodes); err != nil {
		return nil, err
	}
	if err := render.ValidateOutputs(entry, result.Outputs); err != nil {
		return nil, err
	}
	return result, nil
}

// Evaluate resolves requirements and, with coerce, evaluates functions in a worker, as
// render.Evaluate does in this process.
func (p *Pool) Evaluate(ctx context.Context, compiled *tosca.Compiled, timeout time.Duration, coerce bool) (*cloutpkg.Clout, error) {
	if timeout <= 0 {
		timeout = tosca.DefaultScriptTimeout
	}
	resp, err := p.withClout(ctx, compiled, &request{Op: opEvaluate, Timeout: timeout, Coerce: coerce}, render.Budget(compiled, timeout)+p.opts.RenderGrace)
	if err != nil {
		return nil, err
	}
	clout, err := decodeClout(resp.Clout)
	if err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}
	return clout, nil
}

// withClout sends a request on a compiled package's Clout, the Clout encoded once per
// compile key; a worker that lost it (its cache and the pool's view of it disagree) gets
// it again. A Clout bound onto a template is not sent: the worker binds the inputs onto
// the template's base, sent once (encoding and decoding a Clout cost as much as the
// bind saves: 0.3 ms each for a package of four nodes and its profile's scriptlets).
func (p *Pool) withClout(ctx context.Context, compiled *tosca.Compiled, req *request, deadline time.Duration) (*response, error) {
	key, clout := compiled.Key, compiled.Clout
	if t := compiled.Template; t != nil {
		req.Bind = newBindSpec(t)
		key, clout = t.Key, t.Base
	}
	encoded, ok := p.encoded.Get(key)
	if !ok {
		var err error
		if encoded, err = encodeClout(clout); err != nil {
			return nil, fmt.Errorf("worker: %w", err)
		}
		p.encoded.Put(key, encoded)
	}
	req.Package, req.Inputs, req.CompileKey, req.Clout = compiled.Package.Describe(), compiled.Inputs, compiled.Key, encoded
	resp, err := p.do(ctx, req, deadline)
	if err == nil && strings.HasPrefix(resp.Failure, noClout) {
		req.Clout = encoded
		resp, err = p.do(ctx, req, deadline)
	}
	if err != nil {
		return nil, err
	}
	return resp, resp.err()
}

// noClout starts the failure of a worker asked to reuse a Clout it does not have.
const noClout = "no Clout sent for compile key"

// err returns the response's error: a package problem, or another failure.
func (r *response) err() error {
	switch {
	case len(r.Invalid) > 0:
		return &tosca.InvalidError{Diagnostics: r.Invalid}
	case r.Failure != "":
		return fmt.Errorf("worker: %s", r.Failure)
	}
	return nil
}

// encodedClouts keeps encoded Clouts by compile key.
type encodedClouts = lru.Cache[[]byte]

func newEncodedClouts(size int) *encodedClouts {
	return lru.New[[]byte](size)
}
