package operator

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"

	"calaf.io/calaf/controller"
	"calaf.io/calaf/lifecycle"
	"calaf.io/calaf/source/webhook"
)

// addWebhook serves the receivers that are configured — the push webhook and the
// Alertmanager receiver, each with its own token — over TLS (plain HTTP only when asked).
// It runs on the leader only, where the reconcilers it triggers run.
func addWebhook(mgr ctrl.Manager, opts Options, triggers *controller.Triggers, log logr.Logger) error {
	if opts.WebhookAddress == "" && opts.WebhookListener == nil {
		return nil
	}
	if err := checkReceiverTokens(opts); err != nil {
		return err
	}
	mux := http.NewServeMux()
	if opts.WebhookToken != nil {
		receiver := &webhook.Receiver{Token: opts.WebhookToken, Reader: mgr.GetClient(), Namespace: opts.Namespace,
			Trigger: triggers.Trigger, Log: log.WithName("webhook")}
		mux.Handle(webhook.Path, receiver)
		mux.Handle(webhook.OCIPath, receiver)
	}
	if opts.AlertToken != nil {
		mux.Handle(lifecycle.AlertPath, newAlertReceiver(mgr, opts, log))
	}
	server := &receiverServer{opts: opts, handler: mux, log: log.WithName("webhook")}
	if !opts.WebhookInsecureHTTP {
		if opts.WebhookCertFile == "" || opts.WebhookKeyFile == "" {
			return errors.New("the webhook serves TLS: give --webhook-tls-cert-file and --webhook-tls-key-file (plain HTTP only with --webhook-insecure-http)")
		}
		watcher, err := certwatcher.New(opts.WebhookCertFile, opts.WebhookKeyFile)
		if err != nil {
			return fmt.Errorf("webhook TLS certificate: %w", err)
		}
		server.certificates = watcher
	}
	return mgr.Add(server)
}

// checkReceiverTokens refuses a webhook with no receiver, a token that cannot be read, and
// receivers that share a token (the push token would create occurrences).
func checkReceiverTokens(opts Options) error {
	if opts.WebhookToken == nil && opts.AlertToken == nil {
		return errors.New("the webhook serves no receiver: give a push token (--webhook-token-file) or an Alertmanager token (--alert-token-file)")
	}
	var push, alert [][]byte
	if opts.WebhookToken != nil {
		data, err := opts.WebhookToken()
		if err != nil {
			return fmt.Errorf("webhook token: %w", err)
		}
		push = webhook.Tokens(data)
	}
	if opts.AlertToken != nil {
		data, err := opts.AlertToken()
		if err != nil {
			return fmt.Errorf("alert token: %w", err)
		}
		alert = webhook.Tokens(data)
	}
	for _, token := range alert {
		if slices.ContainsFunc(push, func(p []byte) bool { return bytes.Equal(p, token) }) {
			return errors.New("the push webhook and the Alertmanager receiver share a token: give each its own")
		}
	}
	return nil
}

// receiverServer serves the receivers while this process leads, over TLS with the
// certificate of its watcher, or over plain HTTP without one.
type receiverServer struct {
	opts         Options
	handler      http.Handler
	certificates *certwatcher.CertWatcher
	log          logr.Logger
}

// NeedLeaderElection: the receivers trigger the leader's reconcilers.
func (s *receiverServer) NeedLeaderElection() bool { return true }

// Start listens and serves until ctx ends, then shuts the server down (10 s at most).
func (s *receiverServer) Start(ctx context.Context) error {
	listener := s.opts.WebhookListener
	if listener == nil {
		var err error
		if listener, err = net.Listen("tcp", s.opts.WebhookAddress); err != nil {
			return err
		}
	}
	if s.certificates != nil {
		go func() {
			if err := s.certificates.Start(ctx); err != nil {
				s.log.Error(err, "watching the webhook's TLS certificate")
			}
		}()
		listener = tls.NewListener(listener, &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: s.certificates.GetCertificate})
	}
	server := &http.Server{Handler: s.handler, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute}
	done := make(chan error, 1)
	go func() { done <- server.Serve(listener) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return server.Shutdown(shutdown)
	}
}
