package source_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"encoding/pem"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/source"
)

// sshGitServer serves the repositories under root over SSH (git-upload-pack only) to
// one authorized key, on loopback.
func sshGitServer(t *testing.T, root string, authorized ssh.PublicKey) (addr string, hostKey ssh.PublicKey) {
	t.Helper()
	_, hostPrivate, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	hostSigner, err := ssh.NewSignerFromKey(hostPrivate)
	if err != nil {
		t.Fatal(err)
	}
	config := &ssh.ServerConfig{PublicKeyCallback: func(_ ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
		if string(key.Marshal()) == string(authorized.Marshal()) {
			return &ssh.Permissions{}, nil
		}
		return nil, errUnauthorized
	}}
	config.AddHostKey(hostSigner)
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { listener.Close() })
	go func() {
		for {
			conn, err := listener.Accept()
			if err != nil {
				return
			}
			go serveSSH(conn, config, root)
		}
	}()
	return listener.Addr().String(), hostSigner.PublicKey()
}

type sshError string

func (e sshError) Error() string { return string(e) }

const errUnauthorized = sshError("unauthorized")

func serveSSH(conn net.Conn, config *ssh.ServerConfig, root string) {
	_, channels, requests, err := ssh.NewServerConn(conn, config)
	if err != nil {
		conn.Close()
		return
	}
	go ssh.DiscardRequests(requests)
	for newChannel := range channels {
		if newChannel.ChannelType() != "session" {
			newChannel.Reject(ssh.UnknownChannelType, "only sessions")
			continue
		}
		channel, reqs, err := newChannel.Accept()
		if err != nil {
			continue
		}
		go func() {
			defer channel.Close()
			for req := range reqs {
				if req.Type != "exec" || len(req.Payload) < 4 {
					req.Reply(false, nil)
					continue
				}
				command := string(req.Payload[4:])
				name, arg, _ := strings.Cut(command, " ")
				if name != "git-upload-pack" {
					req.Reply(false, nil)
					continue
				}
				req.Reply(true, nil)
				cmd := exec.Command("git-upload-pack", filepath.Join(root, strings.Trim(arg, "'/")))
				cmd.Stdin, cmd.Stdout, cmd.Stderr = channel, channel, channel.Stderr()
				status := uint32(0)
				if err := cmd.Run(); err != nil {
					status = 1
				}
				payload := make([]byte, 4)
				binary.BigEndian.PutUint32(payload, status)
				channel.SendRequest("exit-status", false, payload)
				return
			}
		}()
	}
}

// Git over SSH with the identity and known_hosts of the Secret; an unknown host key or
// a refused identity stall with a clear message; no known_hosts is refused outright.
func TestGitSSH(t *testing.T) {
	g := NewWithT(t)
	server, repo := newGit(t)
	commit := mustCommit(t, repo, "first", map[string]string{"service.yaml": template("over ssh")})

	_, clientPrivate, err := ed25519.GenerateKey(rand.Reader)
	g.Expect(err).NotTo(HaveOccurred())
	clientSigner, err := ssh.NewSignerFromKey(clientPrivate)
	g.Expect(err).NotTo(HaveOccurred())
	block, err := ssh.MarshalPrivateKey(clientPrivate, "")
	g.Expect(err).NotTo(HaveOccurred())
	identity := pem.EncodeToMemory(block)
	_, otherPrivate, _ := ed25519.GenerateKey(rand.Reader)
	otherBlock, _ := ssh.MarshalPrivateKey(otherPrivate, "")

	addr, hostKey := sshGitServer(t, server.Root, clientSigner.PublicKey())
	_, impostor, _ := ed25519.GenerateKey(rand.Reader)
	impostorSigner, _ := ssh.NewSignerFromKey(impostor)
	host := knownhosts.Normalize(addr)
	knownHosts := knownhosts.Line([]string{host}, hostKey) + "\n"
	wrongHosts := knownhosts.Line([]string{host}, impostorSigner.PublicKey()) + "\n"

	secret := func(name string, data map[string][]byte) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: name}, Data: data}
	}
	reader := secrets(
		secret("ssh", map[string][]byte{"identity": identity, "known_hosts": []byte(knownHosts)}),
		secret("wrong-host", map[string][]byte{"identity": identity, "known_hosts": []byte(wrongHosts)}),
		secret("wrong-key", map[string][]byte{"identity": pem.EncodeToMemory(otherBlock), "known_hosts": []byte(knownHosts)}),
		secret("no-known-hosts", map[string][]byte{"identity": identity}),
	)
	fetcher := &source.Git{Store: newStore(t, 1<<30), Reader: reader}
	url := "ssh://git@" + addr + "/packages.git"

	artifact, err := fetcher.Fetch(context.Background(), gitService(url, nil, "", "ssh"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(artifact.Revision).To(Equal("main@sha1:" + commit))
	g.Expect(readTemplate(g, artifact)).To(ContainSubstring("over ssh"))

	for _, c := range []struct {
		secret, reason, message string
	}{
		{"wrong-host", v1alpha1.ReasonAuthenticationFailed, "host key"},
		{"wrong-key", v1alpha1.ReasonAuthenticationFailed, "refused the identity"},
		{"no-known-hosts", v1alpha1.ReasonInvalidSource, "known_hosts"},
	} {
		_, err := fetcher.Fetch(context.Background(), gitService(url, nil, "", c.secret))
		e := sourceError(err)
		g.Expect(e).NotTo(BeNil(), "%s: %v", c.secret, err)
		g.Expect(e.Reason).To(Equal(c.reason), "%s: %v", c.secret, err)
		g.Expect(e.Transient).To(BeFalse())
		g.Expect(err.Error()).To(ContainSubstring(c.message))
	}
}
