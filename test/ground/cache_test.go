package ground

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// goStandIn: `go env` answers, `go build -o OUT` records "DIR ARGS" and writes OUT (an
// imagebuild stand-in when OUT is named imagebuild; that one records its arguments and writes
// the image's name into its -o file, which the ctr stand-in reads back); a build fails when
// STATE/fail-build exists.
func (g *ground) goStandIn() {
	g.standIn("go", `
case $1 in
env) for v in "$@"; do case $v in GOVERSION) echo go1.26.0 ;; GOARCH) echo amd64 ;; esac; done; exit 0 ;;
build) ;;
*) echo "stand-in go: $*" >&2; exit 2 ;;
esac
echo "$PWD $*" >> $STATE/go.log
if [ -e $STATE/fail-build ]; then echo "stand-in build failure" >&2; exit 1; fi
out=
while [ $# -gt 0 ]; do [ "$1" = -o ] && out=$2; shift; done
case $out in
*/imagebuild) cat > "$out" <<'IMAGEBUILD'
#!/bin/sh
{ printf '%s ' "$@" | tr '\n' '|'; echo; } >> `+g.state+`/imagebuild.log
name= out=
while [ $# -gt 0 ]; do case $1 in -name) name=$2 ;; -o) out=$2 ;; esac; shift; done
{ echo "$name"; echo "$out"; } > "$out"
IMAGEBUILD
;;
*) printf '#!/bin/sh\n' > "$out" ;;
esac
chmod +x "$out"
`)
}

// builtPackages returns what `go build` built, as "DIR PACKAGE" pairs, DIR relative to the
// repository.
func (g *ground) builtPackages() []string {
	repo := filepath.Dir(filepath.Dir(groundDir(g.t)))
	var built []string
	for _, line := range g.calls("go") {
		fields := strings.Fields(line)
		dir, err := filepath.Rel(repo, fields[0])
		if err != nil {
			g.t.Fatal(err)
		}
		built = append(built, dir+" "+fields[len(fields)-1])
	}
	return built
}

func TestBuildBuildsIntoAnEmptyCacheAndThenReusesIt(t *testing.T) {
	g := newGround(t)
	g.goStandIn()
	g.mustSucceed("build.sh")

	want := []string{". ./test/ground/provisioner", "test/ground/kube .", "test/ground/etcd go.etcd.io/etcd/server/v3"}
	if got := g.builtPackages(); !slices.Equal(got, want) {
		t.Fatalf("an empty cache built %q, want %q", got, want)
	}
	bin := filepath.Join(g.cache, "k8s-v1.37.2", "bin")
	for _, name := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kubectl"} {
		if target, err := os.Readlink(filepath.Join(bin, name)); err != nil || target != "kube" {
			t.Errorf("%s -> %q (%v), want a link to kube", name, target, err)
		}
	}

	g.clearCalls()
	g.mustSucceed("build.sh")
	if built := g.builtPackages(); built != nil {
		t.Errorf("a warm cache built %q again", built)
	}
}

func TestBuildRebuildsWhatTheCacheLacks(t *testing.T) {
	cases := []struct {
		name   string
		damage func(bin, provisioner string) error
		want   []string
	}{
		{
			name:   "a binary removed by hand",
			damage: func(bin, _ string) error { return os.Remove(filepath.Join(bin, "kube")) },
			want:   []string{"test/ground/kube .", "test/ground/etcd go.etcd.io/etcd/server/v3"},
		},
		{
			name:   "a link removed by hand",
			damage: func(bin, _ string) error { return os.Remove(filepath.Join(bin, "kubelet")) },
			want:   []string{"test/ground/kube .", "test/ground/etcd go.etcd.io/etcd/server/v3"},
		},
		{
			name: "sources changed since the stamp",
			damage: func(bin, _ string) error {
				return os.WriteFile(filepath.Join(bin, ".stamp"), []byte("0123456789abcdef\n"), 0o644)
			},
			want: []string{"test/ground/kube .", "test/ground/etcd go.etcd.io/etcd/server/v3"},
		},
		{
			name:   "the provisioner removed",
			damage: func(_, provisioner string) error { return os.RemoveAll(provisioner) },
			want:   []string{". ./test/ground/provisioner"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := newGround(t)
			g.goStandIn()
			g.mustSucceed("build.sh")
			if err := tc.damage(filepath.Join(g.cache, "k8s-v1.37.2", "bin"), filepath.Join(g.cache, "provisioner")); err != nil {
				t.Fatal(err)
			}
			g.clearCalls()
			g.mustSucceed("build.sh")
			if got := g.builtPackages(); !slices.Equal(got, tc.want) {
				t.Errorf("rebuilt %q, want %q", got, tc.want)
			}
		})
	}
}

func TestBuildFailureIsNamedAndLeavesNoStamp(t *testing.T) {
	g := newGround(t)
	g.goStandIn()
	g.write(filepath.Join(g.state, "fail-build"), "")
	out, code := g.script("build.sh")
	if code == 0 {
		t.Fatal("build.sh passed although go build failed")
	}
	if !strings.Contains(out, "error: build.sh:") || !strings.Contains(out, "stand-in build failure") {
		t.Errorf("the failure is not named:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(g.cache, "k8s-v1.37.2", "bin", ".stamp")); !os.IsNotExist(err) {
		t.Errorf("a failed build left a stamp (%v)", err)
	}
}

// --- images.sh --------------------------------------------------------------------------------

// ctrStandIn: a containerd image store in STATE/images ("NAME DIGEST" lines). `images import
// TAR` names the image after the tar's first line (written by the imagebuild stand-in) and,
// as the CRI plugin does, also as sha256:DIGEST; tag, rm and ls work on that store.
func (g *ground) ctrStandIn() {
	g.standIn("ctr", `
while [ $# -gt 0 ]; do case $1 in --address|--namespace|--timeout) shift 2 ;; *) break ;; esac; done
touch $STATE/images
case "$1 $2" in
"version "*) exit 0 ;;
"images ls")
  if [ "$3" = -q ]; then cut -d' ' -f1 $STATE/images; exit 0; fi
  echo "REF TYPE DIGEST SIZE PLATFORMS LABELS"
  while read -r name digest; do echo "$name application/x-tar $digest 1MiB linux/amd64 -"; done < $STATE/images ;;
"images import")
  echo "import $3" >> $STATE/ctr.log
  name=$(head -n1 "$3"); digest=sha256:$(sha256sum < "$3" | cut -c1-64)
  { grep -v "^$name " $STATE/images; echo "$name $digest"; echo "$digest $digest"; } > $STATE/images.new
  mv $STATE/images.new $STATE/images ;;
"images tag")
  echo "tag $4 $5" >> $STATE/ctr.log
  digest=$(grep "^$4 " $STATE/images | cut -d' ' -f2)
  { grep -v "^$5 " $STATE/images; echo "$5 $digest"; } > $STATE/images.new
  mv $STATE/images.new $STATE/images ;;
"images rm")
  echo "rm $3" >> $STATE/ctr.log
  grep -v "^$3 " $STATE/images > $STATE/images.new; mv $STATE/images.new $STATE/images ;;
*) echo "stand-in ctr: $*" >&2; exit 2 ;;
esac
`)
}

// clusterUp makes the cluster's containerd look alive (its PID file names this test process).
func (g *ground) clusterUp() {
	pids := filepath.Join(g.run, "pids")
	if err := os.MkdirAll(pids, 0o755); err != nil {
		g.t.Fatal(err)
	}
	g.write(filepath.Join(pids, "containerd.pid"), fmt.Sprintf("%d\n", os.Getpid()))
}

func (g *ground) imageStore() string {
	data, _ := os.ReadFile(filepath.Join(g.state, "images"))
	return string(data)
}

func TestImagesBuildIntoAnEmptyCacheAndThenReuseIt(t *testing.T) {
	g := newGround(t)
	g.goStandIn()
	out := g.mustSucceed("images.sh", "build")
	built := g.calls("imagebuild")
	if len(built) != 2 || !strings.Contains(built[0], "-name calaf.local/pause:1") ||
		!strings.Contains(built[1], "-name calaf.local/busybox:1") || !strings.Contains(built[1], "-symlink /bin/wget=busybox") {
		t.Fatalf("an empty cache built %q, want the pause and busybox images (with its applets)", built)
	}
	for _, tar := range strings.Fields(out) {
		if strings.HasSuffix(tar, ".tar") {
			if _, err := os.Stat(tar); err != nil {
				t.Errorf("printed tarball %s: %v", tar, err)
			}
		}
	}

	g.clearCalls()
	g.mustSucceed("images.sh", "build")
	if calls := append(g.calls("imagebuild"), g.calls("go")...); calls != nil {
		t.Errorf("a warm cache built again: %q", calls)
	}
}

func TestImagesBuildWithoutBusyboxSaysWhichPackage(t *testing.T) {
	g := newGround(t)
	g.goStandIn()
	os.Remove(g.busybox)
	out, code := g.script("images.sh", "build")
	if code == 0 || !strings.Contains(out, "busybox-static") {
		t.Errorf("exit %d without busybox, want a failure naming busybox-static:\n%s", code, out)
	}
}

func TestImagesImportOnlyWhatTheNodeLacks(t *testing.T) {
	g := newGround(t)
	g.goStandIn()
	g.ctrStandIn()

	out, code := g.script("images.sh", "import")
	if code == 0 || !strings.Contains(out, "no cluster is up") {
		t.Fatalf("import without a cluster: exit %d, want a failure saying no cluster is up:\n%s", code, out)
	}

	g.clusterUp()
	g.mustSucceed("images.sh", "import")
	calls := g.calls("ctr")
	if len(calls) != 3 || !strings.HasPrefix(calls[0], "import ") || !strings.HasPrefix(calls[1], "import ") ||
		calls[2] != "tag calaf.local/busybox:1 docker.io/library/busybox:1.36" {
		t.Fatalf("a new node got %q, want two imports and the busybox alias", calls)
	}

	g.clearCalls()
	g.mustSucceed("images.sh", "import")
	if calls := g.calls("ctr"); calls != nil {
		t.Errorf("a node with the images got %q again", calls)
	}

	// containerd lost the busybox image (its record of the import remains): imported again.
	store := strings.Split(g.imageStore(), "\n")
	store = slices.DeleteFunc(store, func(line string) bool { return strings.HasPrefix(line, "calaf.local/busybox:1 ") })
	g.write(filepath.Join(g.state, "images"), strings.Join(store, "\n"))
	g.clearCalls()
	g.mustSucceed("images.sh", "import")
	if calls := g.calls("ctr"); len(calls) != 1 || !strings.Contains(calls[0], "/busybox-") {
		t.Errorf("a node that lost the busybox image got %q, want its import only", calls)
	}
}

func TestOperatorImageIsRebuiltOnlyForANewBinary(t *testing.T) {
	g := newGround(t)
	g.goStandIn()
	g.ctrStandIn()
	g.clusterUp()
	binary := filepath.Join(g.state, "calaf")
	g.write(binary, "calaf build 1\n")

	g.mustSucceed("images.sh", "operator", binary)
	if built := g.calls("imagebuild"); len(built) != 1 || !strings.Contains(built[0], "-name calaf.local/calaf:dev") {
		t.Fatalf("built %q, want the operator image", built)
	}
	if calls := g.calls("ctr"); len(calls) != 1 || !strings.HasPrefix(calls[0], "import ") {
		t.Fatalf("ctr calls %q, want one import", calls)
	}

	g.clearCalls()
	g.mustSucceed("images.sh", "operator", binary)
	if calls := append(g.calls("imagebuild"), g.calls("ctr")...); calls != nil {
		t.Errorf("the same binary built or imported again: %q", calls)
	}

	g.write(binary, "calaf build 2\n")
	g.clearCalls()
	g.mustSucceed("images.sh", "operator", binary)
	calls := g.calls("ctr")
	if len(g.calls("imagebuild")) != 1 || len(calls) != 2 || !strings.HasPrefix(calls[0], "import ") || !strings.HasPrefix(calls[1], "rm sha256:") {
		t.Errorf("a new binary: imagebuild %q, ctr %q; want a build, an import and the old image's removal", g.calls("imagebuild"), calls)
	}
}

// --- demo.sh: is the cluster up? ----------------------------------------------------------------

func TestClusterRunningNeedsLiveComponents(t *testing.T) {
	g := newGround(t)
	check := func() int {
		script := filepath.Join(g.state, "check.sh")
		g.write(script, "#!/usr/bin/env bash\nset -euo pipefail\nsource \""+groundDir(t)+"/lib.sh\"\ncluster_running\n")
		_, code := g.script(script)
		return code
	}
	if err := os.MkdirAll(g.run, 0o755); err != nil {
		t.Fatal(err)
	}
	g.write(filepath.Join(g.run, "kubeconfig"), "apiVersion: v1\n")
	if check() == 0 {
		t.Error("a kubeconfig left behind with no component running counts as a running cluster")
	}
	g.clusterUp()
	for _, name := range []string{"etcd", "kube-apiserver", "kubelet"} {
		g.write(filepath.Join(g.run, "pids", name+".pid"), fmt.Sprintf("%d\n", os.Getpid()))
	}
	if check() != 0 {
		t.Error("a cluster whose components run does not count as running")
	}
}
