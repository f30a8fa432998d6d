package framework

import (
	"bytes"
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
)

// ExecResult is what a command run in a container printed.
type ExecResult struct {
	Stdout, Stderr string
}

// Exec runs command in a container of a pod, like `kubectl exec`: over WebSocket, falling
// back to SPDY when the server does not upgrade. When the command exits non-zero, the error
// is a k8s.io/client-go/util/exec.CodeExitError carrying the exit code (errors.As); the
// output is returned in every case.
func (c *Cluster) Exec(ctx context.Context, ns, pod, container string, command ...string) (ExecResult, error) {
	req := c.Clientset.CoreV1().RESTClient().Post().
		Resource("pods").Namespace(ns).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{
			Container: container,
			Command:   command,
			Stdout:    true,
			Stderr:    true,
		}, scheme.ParameterCodec)

	websocket, err := remotecommand.NewWebSocketExecutor(c.Config, "GET", req.URL().String())
	if err != nil {
		return ExecResult{}, err
	}
	spdy, err := remotecommand.NewSPDYExecutor(c.Config, "POST", req.URL())
	if err != nil {
		return ExecResult{}, err
	}
	executor, err := remotecommand.NewFallbackExecutor(websocket, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return ExecResult{}, err
	}

	var stdout, stderr bytes.Buffer
	err = executor.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr})
	return ExecResult{Stdout: stdout.String(), Stderr: stderr.String()}, err
}
