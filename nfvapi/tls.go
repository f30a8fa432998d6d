package nfvapi

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CertificateSource gives the server's certificate, read anew when it changes, so that a
// certificate cert-manager renews is served without a restart: from PEM files (a mounted
// Secret), or from a kubernetes.io/tls Secret read through the API.
type CertificateSource struct {
	load  func() (certPEM, keyPEM []byte, err error)
	every time.Duration
	now   func() time.Time

	lock    sync.Mutex
	current *tls.Certificate
	pem     string
	checked time.Time
}

// CertificateFiles reads the certificate from files, looking for a change every minute.
func CertificateFiles(certFile, keyFile string) *CertificateSource {
	return &CertificateSource{every: time.Minute, now: time.Now, load: func() ([]byte, []byte, error) {
		cert, err := os.ReadFile(certFile)
		if err != nil {
			return nil, nil, err
		}
		key, err := os.ReadFile(keyFile)
		return cert, key, err
	}}
}

// CertificateSecret reads the certificate from a Secret's tls.crt and tls.key, looking for
// a change every minute.
func CertificateSecret(c client.Reader, key client.ObjectKey) *CertificateSource {
	return &CertificateSource{every: time.Minute, now: time.Now, load: func() ([]byte, []byte, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		secret := &corev1.Secret{}
		if err := c.Get(ctx, key, secret); err != nil {
			return nil, nil, err
		}
		return secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey], nil
	}}
}

// GetCertificate serves tls.Config.GetCertificate: the current certificate, read again
// when it is older than the source's interval; a source that fails keeps the last good one.
func (s *CertificateSource) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	s.lock.Lock()
	defer s.lock.Unlock()
	if s.current != nil && s.now().Sub(s.checked) < s.every {
		return s.current, nil
	}
	s.checked = s.now()
	certPEM, keyPEM, err := s.load()
	if err == nil && string(certPEM)+string(keyPEM) != s.pem {
		cert, perr := tls.X509KeyPair(certPEM, keyPEM)
		if perr == nil {
			s.current, s.pem = &cert, string(certPEM)+string(keyPEM)
		}
		err = perr
	}
	if s.current == nil {
		return nil, fmt.Errorf("no serving certificate: %w", err)
	}
	return s.current, nil
}

// TLSConfig is the server's TLS configuration: its certificate, and, when clientCAs is
// set, client certificates verified against them (a request may also come with a bearer
// token instead).
func TLSConfig(certs *CertificateSource, clientCAs *x509.CertPool) *tls.Config {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: certs.GetCertificate}
	if clientCAs != nil {
		cfg.ClientCAs, cfg.ClientAuth = clientCAs, tls.VerifyClientCertIfGiven
	}
	return cfg
}
