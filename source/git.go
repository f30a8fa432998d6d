package source

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"github.com/go-git/go-git/v5/storage/memory"
	"golang.org/x/crypto/ssh"
	"golang.org/x/sync/singleflight"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/tosca"
)

// Git fetches packages from git repositories with go-git. A reconcile first resolves the
// ref with one cheap request (ls-remote); only a commit not in the Store is fetched, with a
// shallow single-ref fetch, and only the package path is written out. Services on the same
// repository, path, commit and credentials share one fetch and one stored package.
type Git struct {
	Store *Store
	// Reader reads the Secrets named by secretRef; ReaderFor, when set, instead.
	Reader    client.Reader
	ReaderFor ReaderFunc
	// Timeout bounds one ls-remote or fetch; default 2 minutes.
	Timeout time.Duration

	flight singleflight.Group
}

var _ GitFetcher = (*Git)(nil)

// gitRef is the ref a Service follows.
type gitRef struct {
	kind string // "branch", "tag" or "commit"
	name string
}

func refOf(ref *v1alpha1.GitRef) gitRef {
	switch {
	case ref == nil:
	case ref.Commit != "":
		return gitRef{kind: "commit", name: ref.Commit}
	case ref.Tag != "":
		return gitRef{kind: "tag", name: ref.Tag}
	case ref.Branch != "":
		return gitRef{kind: "branch", name: ref.Branch}
	}
	return gitRef{kind: "branch", name: "main"}
}

func (r gitRef) String() string {
	return r.kind + " " + r.name
}

// revision is "<branch|tag>@sha1:<commit>", or "sha1:<commit>" for a pinned commit.
func (r gitRef) revision(commit string) string {
	if r.kind == "commit" {
		return "sha1:" + commit
	}
	return r.name + "@sha1:" + commit
}

// Fetch resolves the Service's ref and returns the package at that commit.
func (g *Git) Fetch(ctx context.Context, svc *v1alpha1.Service) (*Artifact, error) {
	src := svc.Spec.Source.Git
	if _, err := url.Parse(src.URL); err != nil {
		return nil, permanent(v1alpha1.ReasonInvalidSource, "invalid git URL: %v", err)
	}
	reader, err := readerOf(g.ReaderFor, g.Reader, svc)
	if err != nil {
		return nil, err
	}
	creds, err := gitCredentials(ctx, reader, svc.Namespace, src)
	if err != nil {
		return nil, err
	}
	ref := refOf(src.Ref)
	commit := ref.name
	if ref.kind != "commit" {
		if commit, err = g.resolve(ctx, src.URL, creds, ref); err != nil {
			return nil, err
		}
	}
	key := g.key(src, creds, commit)
	if pkg, ok := g.Store.Get(key); ok {
		return &Artifact{Package: pkg, Revision: ref.revision(commit)}, nil
	}
	value, err, _ := g.flight.Do("fetch/"+key, func() (any, error) {
		return g.fetch(ctx, src, creds, ref, commit)
	})
	if err != nil {
		return nil, atRevision(err, ref.revision(commit))
	}
	fetched := value.(*gitFetched)
	return &Artifact{Package: fetched.pkg, Revision: ref.revision(fetched.commit)}, nil
}

// key identifies a stored package: repository, path, commit, and whose credentials
// fetched it (so a Service without access never reads what another fetched with its own).
func (g *Git) key(src *v1alpha1.GitSource, creds *gitCreds, commit string) string {
	sum := sha256.Sum256([]byte(strings.Join([]string{NormalizeRepoURL(src.URL), cleanGitPath(src.Path), commit, creds.id}, "\x00")))
	return fmt.Sprintf("git-%x", sum)
}

func (g *Git) timeout() time.Duration {
	if g.Timeout > 0 {
		return g.Timeout
	}
	return 2 * time.Minute
}

// resolve lists the remote's refs (one request, like git ls-remote) and returns the commit
// of a branch or tag. Concurrent resolutions of one ref share the request.
func (g *Git) resolve(ctx context.Context, repoURL string, creds *gitCreds, ref gitRef) (string, error) {
	value, err, _ := g.flight.Do("ls-remote/"+creds.id+"/"+repoURL, func() (any, error) {
		ctx, cancel := context.WithTimeout(ctx, g.timeout())
		defer cancel()
		remote := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: git.DefaultRemoteName, URLs: []string{repoURL}})
		refs, err := remote.ListContext(ctx, &git.ListOptions{Auth: creds.auth, CABundle: creds.caBundle, PeelingOption: git.AppendPeeled})
		if err != nil {
			return nil, gitError("listing refs of", repoURL, creds, err)
		}
		return refs, nil
	})
	if err != nil {
		return "", err
	}
	refs := value.([]*plumbing.Reference)
	var wanted []string
	switch ref.kind {
	case "branch":
		wanted = []string{"refs/heads/" + ref.name}
	case "tag":
		wanted = []string{"refs/tags/" + ref.name + "^{}", "refs/tags/" + ref.name}
	}
	for _, name := range wanted {
		for _, r := range refs {
			if r.Name().String() == name && r.Type() == plumbing.HashReference {
				return r.Hash().String(), nil
			}
		}
	}
	return "", permanent(v1alpha1.ReasonInvalidSource, "%s not found in %s", ref, redactURL(repoURL))
}

type gitFetched struct {
	pkg    *tosca.Package
	commit string
}

// fetch fetches one commit shallowly into a temporary bare repository and stores the
// package path of its tree.
func (g *Git) fetch(ctx context.Context, src *v1alpha1.GitSource, creds *gitCreds, ref gitRef, commit string) (*gitFetched, error) {
	ctx, cancel := context.WithTimeout(ctx, g.timeout())
	defer cancel()
	tmp, err := g.Store.TempDir()
	if err != nil {
		return nil, transient(v1alpha1.ReasonFetchFailed, "package cache: %v", err)
	}
	defer os.RemoveAll(tmp)
	repo, err := git.PlainInit(filepath.Join(tmp, "repo.git"), true)
	if err != nil {
		return nil, transient(v1alpha1.ReasonFetchFailed, "package cache: %v", err)
	}
	if _, err := repo.CreateRemote(&config.RemoteConfig{Name: git.DefaultRemoteName, URLs: []string{src.URL}}); err != nil {
		return nil, transient(v1alpha1.ReasonFetchFailed, "package cache: %v", err)
	}
	local := plumbing.ReferenceName("refs/calaf/fetched")
	var spec config.RefSpec
	switch ref.kind {
	case "branch":
		spec = config.RefSpec("+refs/heads/" + ref.name + ":" + local.String())
	case "tag":
		spec = config.RefSpec("+refs/tags/" + ref.name + ":" + local.String())
	default:
		spec = config.RefSpec(commit + ":" + local.String())
	}
	fetch := func(depth int, specs ...config.RefSpec) error {
		err := repo.FetchContext(ctx, &git.FetchOptions{RefSpecs: specs, Depth: depth, Auth: creds.auth, CABundle: creds.caBundle, Tags: git.NoTags, Force: true})
		if errors.Is(err, git.NoErrAlreadyUpToDate) {
			return nil
		}
		return err
	}
	err = fetch(1, spec)
	if err != nil && ref.kind == "commit" && !isAuthError(err) && ctx.Err() == nil {
		// The server does not serve unadvertised commits: fetch every branch and tag.
		err = fetch(0, "+refs/heads/*:refs/remotes/origin/*", "+refs/tags/*:refs/tags/*")
	}
	if err != nil {
		return nil, gitError("fetching", src.URL, creds, err)
	}
	hash := plumbing.NewHash(commit)
	if ref.kind != "commit" {
		fetched, err := repo.Reference(local, true)
		if err != nil {
			return nil, transient(v1alpha1.ReasonFetchFailed, "fetching %s from %s: %v", ref, redactURL(src.URL), err)
		}
		hash = fetched.Hash()
		if tag, err := repo.TagObject(hash); err == nil {
			c, err := tag.Commit()
			if err != nil {
				return nil, permanent(v1alpha1.ReasonInvalidSource, "tag %s does not point to a commit: %v", ref.name, err)
			}
			hash = c.Hash
		}
	}
	c, err := repo.CommitObject(hash)
	if err != nil {
		return nil, permanent(v1alpha1.ReasonInvalidSource, "commit %s not found in %s", hash, redactURL(src.URL))
	}
	key := g.key(src, creds, c.Hash.String())
	if pkg, ok := g.Store.Get(key); ok { // the branch moved to a commit already stored
		return &gitFetched{pkg: pkg, commit: c.Hash.String()}, nil
	}
	pkg, err := g.extract(c, src.Path, filepath.Join(tmp, "package"), key)
	if err != nil {
		return nil, err
	}
	return &gitFetched{pkg: pkg, commit: c.Hash.String()}, nil
}

// extract writes the package path of a commit's tree (a directory, or a CSAR or other
// archive file) and stores it; .git and everything outside the path never reach disk.
func (g *Git) extract(c *object.Commit, packagePath, dir, key string) (*tosca.Package, error) {
	tree, err := c.Tree()
	if err != nil {
		return nil, transient(v1alpha1.ReasonFetchFailed, "reading commit %s: %v", c.Hash, err)
	}
	clean := cleanGitPath(packagePath)
	if clean != "" {
		entry, err := tree.FindEntry(clean)
		if err != nil {
			return nil, permanent(v1alpha1.ReasonInvalidSource, "path %q not found at commit %s", packagePath, c.Hash)
		}
		switch {
		case entry.Mode == filemode.Dir:
			if tree, err = tree.Tree(clean); err != nil {
				return nil, transient(v1alpha1.ReasonFetchFailed, "reading %q at commit %s: %v", packagePath, c.Hash, err)
			}
		case entry.Mode.IsFile() && entry.Mode != filemode.Symlink:
			return g.storeFile(tree, clean, key, c)
		default:
			return nil, permanent(v1alpha1.ReasonInvalidSource, "path %q at commit %s is neither a directory nor a file", packagePath, c.Hash)
		}
	}
	limits := g.Store.Limits()
	var count int
	var total int64
	err = tree.Files().ForEach(func(f *object.File) error {
		if f.Mode == filemode.Symlink {
			return tosca.Invalid(f.Name, "symbolic links are not allowed in a package")
		}
		if count++; count > limits.MaxFiles {
			return tosca.Invalid(f.Name, "package has more than %d files", limits.MaxFiles)
		}
		if f.Size > limits.MaxFileBytes {
			return tosca.Invalid(f.Name, "file is %d bytes, more than the limit of %d", f.Size, limits.MaxFileBytes)
		}
		if total += f.Size; total > limits.MaxTotalBytes {
			return tosca.Invalid(f.Name, "package is larger than %d bytes", limits.MaxTotalBytes)
		}
		return writeBlob(dir, f)
	})
	if err != nil {
		if tosca.IsInvalid(err) {
			return nil, &Error{Reason: v1alpha1.ReasonInvalidPackage, Err: err}
		}
		return nil, transient(v1alpha1.ReasonFetchFailed, "writing commit %s: %v", c.Hash, err)
	}
	if count == 0 {
		return nil, permanent(v1alpha1.ReasonInvalidPackage, "path %q at commit %s holds no files", packagePath, c.Hash)
	}
	pkg, err := g.Store.PutDirectory(key, dir)
	if err != nil {
		return nil, storeError(err)
	}
	return pkg, nil
}

// storeFile stores a package that is one archive file in the repository (a .csar).
func (g *Git) storeFile(tree *object.Tree, name, key string, c *object.Commit) (*tosca.Package, error) {
	f, err := tree.File(name)
	if err != nil {
		return nil, transient(v1alpha1.ReasonFetchFailed, "reading %q at commit %s: %v", name, c.Hash, err)
	}
	if limit := g.Store.Limits().MaxTotalBytes; f.Size > limit {
		return nil, permanent(v1alpha1.ReasonInvalidPackage, "%s is %d bytes, more than the limit of %d", name, f.Size, limit)
	}
	reader, err := f.Reader()
	if err != nil {
		return nil, transient(v1alpha1.ReasonFetchFailed, "reading %q at commit %s: %v", name, c.Hash, err)
	}
	defer reader.Close()
	data, err := io.ReadAll(reader)
	if err != nil {
		return nil, transient(v1alpha1.ReasonFetchFailed, "reading %q at commit %s: %v", name, c.Hash, err)
	}
	pkg, err := g.Store.PutArchive(key, data, path.Base(name))
	if err != nil {
		return nil, storeError(err)
	}
	return pkg, nil
}

func writeBlob(dir string, f *object.File) error {
	full := filepath.Join(dir, filepath.FromSlash(f.Name))
	if !strings.HasPrefix(full, dir+string(filepath.Separator)) {
		return tosca.Invalid(f.Name, "path leaves the package")
	}
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		return err
	}
	reader, err := f.Reader()
	if err != nil {
		return err
	}
	defer reader.Close()
	out, err := os.OpenFile(full, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, io.LimitReader(reader, f.Size)); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// cleanGitPath normalizes the package path of a GitSource ("" for the repository root).
func cleanGitPath(p string) string {
	p = strings.Trim(path.Clean("/"+p), "/")
	if p == "." {
		return ""
	}
	return p
}

// gitCreds are the credentials of a GitSource and an identity for them.
type gitCreds struct {
	auth     transport.AuthMethod
	caBundle []byte
	// id is "<namespace>/<secret>" or "" for anonymous access.
	id     string
	secret string
}

// gitCredentials reads the Secret of a GitSource: "username"/"password" (or "password"
// alone, a token) or "bearerToken" for HTTPS, with an optional "ca.crt"; "identity",
// "known_hosts" and an optional "password" (the key's passphrase) for SSH.
func gitCredentials(ctx context.Context, reader client.Reader, namespace string, src *v1alpha1.GitSource) (*gitCreds, error) {
	creds := &gitCreds{}
	if src.SecretRef == nil {
		return creds, nil
	}
	data, err := readSecret(ctx, reader, namespace, src.SecretRef.Name)
	if err != nil {
		return nil, err
	}
	creds.id, creds.secret = namespace+"/"+src.SecretRef.Name, src.SecretRef.Name
	u, err := url.Parse(src.URL)
	if err != nil {
		return nil, permanent(v1alpha1.ReasonInvalidSource, "invalid git URL: %v", err)
	}
	if u.Scheme == "ssh" {
		identity := data["identity"]
		if len(identity) == 0 {
			return nil, permanent(v1alpha1.ReasonInvalidSource, "Secret %q has no \"identity\" (an SSH private key) for %s", src.SecretRef.Name, redactURL(src.URL))
		}
		knownHosts := data["known_hosts"]
		if len(knownHosts) == 0 {
			return nil, permanent(v1alpha1.ReasonInvalidSource, "Secret %q has no \"known_hosts\": Calaf never connects to an unverified SSH host", src.SecretRef.Name)
		}
		user := u.User.Username()
		if user == "" {
			user = "git"
		}
		keys, err := gitssh.NewPublicKeys(user, identity, string(data["password"]))
		if err != nil {
			return nil, permanent(v1alpha1.ReasonInvalidSource, "Secret %q: \"identity\" is not a usable private key: %v", src.SecretRef.Name, err)
		}
		callback, err := knownHostsCallback(knownHosts)
		if err != nil {
			return nil, permanent(v1alpha1.ReasonInvalidSource, "Secret %q: \"known_hosts\": %v", src.SecretRef.Name, err)
		}
		keys.HostKeyCallback = callback
		creds.auth = keys
		return creds, nil
	}
	switch {
	case len(data["bearerToken"]) > 0:
		creds.auth = &githttp.TokenAuth{Token: string(data["bearerToken"])}
	case len(data["password"]) > 0:
		user := string(data["username"])
		if user == "" {
			user = "git"
		}
		creds.auth = &githttp.BasicAuth{Username: user, Password: string(data["password"])}
	case len(data["username"]) > 0:
		return nil, permanent(v1alpha1.ReasonInvalidSource, "Secret %q has a \"username\" but no \"password\"", src.SecretRef.Name)
	}
	if ca := data["ca.crt"]; len(ca) > 0 {
		if !x509.NewCertPool().AppendCertsFromPEM(ca) {
			return nil, permanent(v1alpha1.ReasonInvalidSource, "Secret %q: ca.crt holds no PEM certificate", src.SecretRef.Name)
		}
		creds.caBundle = ca
	}
	return creds, nil
}

// knownHostsCallback verifies SSH host keys against known_hosts content.
func knownHostsCallback(knownHosts []byte) (ssh.HostKeyCallback, error) {
	f, err := os.CreateTemp("", "calaf-known-hosts-")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(knownHosts); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	callback, err := gitssh.NewKnownHostsCallback(f.Name())
	if err != nil {
		return nil, err
	}
	return callback, nil
}

func isAuthError(err error) bool {
	return errors.Is(err, transport.ErrAuthenticationRequired) || errors.Is(err, transport.ErrAuthorizationFailed) ||
		strings.Contains(err.Error(), "unable to authenticate") || strings.Contains(err.Error(), "knownhosts:")
}

// gitError classifies a go-git failure: refused credentials, a missing or empty
// repository and an untrusted certificate need a change (permanent); network trouble
// passes (transient).
func gitError(verb, repoURL string, creds *gitCreds, err error) error {
	where := redactURL(repoURL)
	switch {
	case errors.Is(err, transport.ErrAuthenticationRequired) && creds.auth == nil:
		return permanent(v1alpha1.ReasonAuthenticationFailed, "%s %s: the repository requires credentials: set secretRef", verb, where)
	case errors.Is(err, transport.ErrAuthenticationRequired), errors.Is(err, transport.ErrAuthorizationFailed):
		return permanent(v1alpha1.ReasonAuthenticationFailed, "%s %s: the server refused the credentials of Secret %q", verb, where, creds.secret)
	case strings.Contains(err.Error(), "unable to authenticate"):
		return permanent(v1alpha1.ReasonAuthenticationFailed, "%s %s: the SSH server refused the identity of Secret %q", verb, where, creds.secret)
	case strings.Contains(err.Error(), "knownhosts:"):
		return permanent(v1alpha1.ReasonAuthenticationFailed, "%s %s: the SSH host key is not in the known_hosts of Secret %q: %v", verb, where, creds.secret, err)
	case errors.Is(err, transport.ErrRepositoryNotFound):
		return permanent(v1alpha1.ReasonInvalidSource, "%s %s: repository not found", verb, where)
	case errors.Is(err, transport.ErrEmptyRemoteRepository):
		return permanent(v1alpha1.ReasonInvalidSource, "%s %s: the repository is empty", verb, where)
	case untrustedCertificate(err):
		return permanent(v1alpha1.ReasonInvalidSource, "%s %s: %v (add the CA as ca.crt to the source Secret)", verb, where, err)
	}
	return transient(v1alpha1.ReasonFetchFailed, "%s %s: %v", verb, where, redactError(err, repoURL))
}

// redactURL drops the user information (a password or token) of a URL.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	if _, hasPassword := u.User.Password(); hasPassword {
		u.User = url.User(u.User.Username())
	}
	return u.String()
}

// redactError removes a URL's password from an error message.
func redactError(err error, raw string) string {
	msg := err.Error()
	u, parseErr := url.Parse(raw)
	if parseErr != nil || u.User == nil {
		return msg
	}
	if password, ok := u.User.Password(); ok && password != "" {
		msg = strings.ReplaceAll(msg, password, "REDACTED")
	}
	return msg
}

// NormalizeRepoURL reduces a repository URL to "host/path" (lower-case host, no scheme,
// user, default port, trailing slash or .git), so the URLs of one repository compare
// equal. scp-like SSH addresses (git@host:owner/repo) are understood too.
func NormalizeRepoURL(raw string) string {
	raw = strings.TrimSpace(raw)
	if !strings.Contains(raw, "://") {
		if at := strings.Index(raw, "@"); at >= 0 {
			raw = raw[at+1:]
		}
		if host, rest, ok := strings.Cut(raw, ":"); ok {
			raw = "ssh://" + host + "/" + strings.TrimPrefix(rest, "/")
		}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return strings.ToLower(raw)
	}
	host := strings.ToLower(u.Hostname())
	if port := u.Port(); port != "" && !(port == "443" && u.Scheme == "https") && !(port == "80" && u.Scheme == "http") && !(port == "22" && u.Scheme == "ssh") {
		host += ":" + port
	}
	p := strings.TrimSuffix(strings.TrimRight(u.Path, "/"), ".git")
	return host + p
}
