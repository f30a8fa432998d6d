// Package ground holds the tests of the test ground's scripts. Each "is it there already?"
// check of test/ground/*.sh is run here against stand-ins first in PATH (dpkg-query, apt-get,
// id, go, ctr) and an empty cache directory, so that the path a fresh machine takes is proven
// on a machine that has everything installed.
package ground

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// ground runs the test ground's scripts with stand-in commands and temporary directories.
type ground struct {
	t       *testing.T
	bin     string // the stand-ins, first in PATH
	state   string // what the stand-ins remember and record
	cache   string // $CALAF_CACHE
	run     string // $CALAF_RUN
	busybox string // $CALAF_BUSYBOX_BIN
	policy  string // $CALAF_POLICY_RC_D
	env     []string
}

func newGround(t *testing.T) *ground {
	t.Helper()
	root := t.TempDir()
	g := &ground{
		t:       t,
		bin:     filepath.Join(root, "bin"),
		state:   filepath.Join(root, "state"),
		cache:   filepath.Join(root, "cache"),
		run:     filepath.Join(root, "run"),
		busybox: filepath.Join(root, "busybox"),
		policy:  filepath.Join(root, "policy-rc.d"),
	}
	for _, dir := range []string{g.bin, g.state} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	g.write(g.busybox, "#!/bin/sh\nprintf 'busybox\\nsh\\nls\\nwget\\n'\n")
	return g
}

// standIn installs a stand-in command NAME (a shell script) first in PATH.
func (g *ground) standIn(name, script string) {
	g.write(filepath.Join(g.bin, name), "#!/bin/sh\nSTATE="+g.state+"\n"+script)
}

func (g *ground) write(path, content string) {
	g.t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
		g.t.Fatal(err)
	}
}

// script runs test/ground/NAME with ARGS; it returns stderr and the exit code.
func (g *ground) script(name string, args ...string) (string, int) {
	g.t.Helper()
	cmd := exec.Command("bash", append([]string{name}, args...)...)
	cmd.Env = append([]string{
		"PATH=" + g.bin + ":/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=" + g.state,
		"CALAF_CACHE=" + g.cache,
		"CALAF_RUN=" + g.run,
		"CALAF_BUSYBOX_BIN=" + g.busybox,
		"CALAF_POLICY_RC_D=" + g.policy,
	}, g.env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	code := 0
	if exit, ok := err.(*exec.ExitError); ok {
		code = exit.ExitCode()
	} else if err != nil {
		g.t.Fatalf("%s: %v", name, err)
	}
	g.t.Logf("%s %s: exit %d\nstdout:\n%sstderr:\n%s", name, strings.Join(args, " "), code, out, stderr.String())
	return stderr.String() + string(out), code
}

// calls returns the lines a stand-in recorded in STATE/NAME.log (none when it never ran).
func (g *ground) calls(name string) []string {
	data, err := os.ReadFile(filepath.Join(g.state, name+".log"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		g.t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

// clearCalls forgets what the stand-ins recorded so far.
func (g *ground) clearCalls() {
	for _, name := range []string{"apt-get", "dpkg-query", "go", "imagebuild", "ctr"} {
		os.Remove(filepath.Join(g.state, name+".log"))
	}
}

func (g *ground) mustSucceed(name string, args ...string) string {
	g.t.Helper()
	out, code := g.script(name, args...)
	if code != 0 {
		g.t.Fatalf("%s %v: exit %d:\n%s", name, args, code, out)
	}
	return out
}

// --- deps.sh ----------------------------------------------------------------------------------

// dpkgStandIns: dpkg-query knows the packages listed in STATE/installed (or every package
// when STATE/all exists), like the real one exits 1 naming each unknown package; apt-get
// records its arguments, "installs" by adding to STATE/installed, notes whether the
// policy-rc.d that keeps services from starting was in place, and fails a command named in
// STATE/fail.
func (g *ground) dpkgStandIns() {
	g.standIn("dpkg-query", `
rc=0
for arg in "$@"; do
  case $arg in -*) continue ;; esac
  echo "$arg" >> $STATE/dpkg-query.log
  if [ -e $STATE/all ] || grep -qxF "$arg" $STATE/installed 2>/dev/null; then
    echo "$arg=install ok installed"
  else
    echo "dpkg-query: no packages found matching $arg" >&2
    rc=1
  fi
done
exit $rc
`)
	g.standIn("apt-get", `
echo "$*" >> $STATE/apt-get.log
[ -x "$CALAF_POLICY_RC_D" ] && echo "policy-rc.d in place" >> $STATE/apt-get.log
if grep -qxF "$1" $STATE/fail 2>/dev/null; then echo "E: stand-in $1 failure" >&2; exit 100; fi
if [ "$1" = install ]; then
  for arg in "$@"; do
    case $arg in install|-*) ;; *) echo "$arg" >> $STATE/installed ;; esac
  done
fi
`)
	g.standIn("id", `if [ "$1" = -u ]; then cat $STATE/uid 2>/dev/null || echo 0; else exec /usr/bin/id "$@"; fi`)
}

// queried returns the packages deps.sh asked dpkg-query about, each once.
func (g *ground) queried() []string {
	seen := slices.Clone(g.calls("dpkg-query"))
	slices.Sort(seen)
	return slices.Compact(seen)
}

func TestDepsInstallsEveryPackageOnAFreshMachine(t *testing.T) {
	g := newGround(t)
	g.dpkgStandIns()
	out := g.mustSucceed("deps.sh")

	wanted := g.queried()
	for _, pkg := range []string{"make", "containerd", "runc", "containernetworking-plugins", "busybox-static", "iptables", "openssl", "python3-openstackclient", "python3-tackerclient"} {
		if !slices.Contains(wanted, pkg) {
			t.Errorf("deps.sh never asks about %s; it asked about %v", pkg, wanted)
		}
	}
	apt := g.calls("apt-get")
	if len(apt) < 3 || apt[0] != "update -qq" || !strings.HasPrefix(apt[2], "install ") {
		t.Fatalf("apt-get calls = %q, want update, then install", apt)
	}
	installed := strings.Fields(strings.TrimPrefix(apt[2], "install -y -qq --no-install-recommends "))
	slices.Sort(installed)
	if !slices.Equal(installed, wanted) {
		t.Errorf("apt-get install %v, want every package dpkg did not know: %v", installed, wanted)
	}
	if !slices.Contains(apt, "policy-rc.d in place") {
		t.Errorf("apt-get ran without a policy-rc.d keeping the containerd service from starting: %q", apt)
	}
	if _, err := os.Stat(g.policy); !os.IsNotExist(err) {
		t.Errorf("deps.sh left its policy-rc.d behind (%v)", err)
	}
	if !strings.Contains(out, "installing Debian packages: ") || strings.Contains(out, "warning") {
		t.Errorf("output does not say what it installs, or warns:\n%s", out)
	}
}

func TestDepsTouchesNoAptWhenEverythingIsInstalled(t *testing.T) {
	g := newGround(t)
	g.dpkgStandIns()
	g.write(filepath.Join(g.state, "all"), "")
	out := g.mustSucceed("deps.sh")
	if apt := g.calls("apt-get"); apt != nil {
		t.Errorf("apt-get was called although every package is installed: %q", apt)
	}
	if len(g.queried()) == 0 {
		t.Error("deps.sh never asked dpkg-query")
	}
	if strings.TrimSpace(out) != "" {
		t.Errorf("deps.sh printed something although nothing was missing:\n%s", out)
	}
}

func TestDepsInstallsOnlyWhatIsMissing(t *testing.T) {
	g := newGround(t)
	g.dpkgStandIns()
	g.write(filepath.Join(g.state, "installed"), "make\ncontainerd\nopenssl\n")
	g.mustSucceed("deps.sh")
	apt := g.calls("apt-get")
	if len(apt) < 3 {
		t.Fatalf("apt-get calls = %q, want update and install", apt)
	}
	install := strings.Fields(apt[2])
	for _, present := range []string{"make", "containerd", "openssl"} {
		if slices.Contains(install, present) {
			t.Errorf("apt-get asked to install %s, which is installed: %q", present, apt[2])
		}
	}
	for _, absent := range []string{"runc", "busybox-static", "containernetworking-plugins"} {
		if !slices.Contains(install, absent) {
			t.Errorf("apt-get not asked to install missing %s: %q", absent, apt[2])
		}
	}
}

func TestDepsFailuresSayWhy(t *testing.T) {
	cases := []struct {
		name, uid, fail, want string
		aptCalls              int
	}{
		{name: "not root", uid: "1000", want: "run as root to install them", aptCalls: 0},
		{name: "apt-get update fails", fail: "update", want: "apt-get update failed", aptCalls: 2},
		{name: "apt-get install fails", fail: "install", want: "apt-get install make containerd", aptCalls: 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := newGround(t)
			g.dpkgStandIns()
			if tc.uid != "" {
				g.write(filepath.Join(g.state, "uid"), tc.uid+"\n")
			}
			if tc.fail != "" {
				g.write(filepath.Join(g.state, "fail"), tc.fail+"\n")
			}
			out, code := g.script("deps.sh")
			if code == 0 {
				t.Fatalf("deps.sh passed:\n%s", out)
			}
			if !strings.Contains(out, "error: ") || !strings.Contains(out, tc.want) {
				t.Errorf("output does not say %q:\n%s", tc.want, out)
			}
			if got := len(g.calls("apt-get")); got != tc.aptCalls {
				t.Errorf("apt-get log has %d lines, want %d: %q", got, tc.aptCalls, g.calls("apt-get"))
			}
			if _, err := os.Stat(g.policy); !os.IsNotExist(err) {
				t.Errorf("deps.sh left its policy-rc.d behind (%v)", err)
			}
		})
	}
}

// --- every script: no silent exit --------------------------------------------------------------

// A command that fails a script is named with the script, the line and the command.
func TestFailingCommandIsNamedWithFileAndLine(t *testing.T) {
	g := newGround(t)
	script := filepath.Join(g.state, "fails.sh")
	g.write(script, `#!/usr/bin/env bash
set -euo pipefail
source "`+groundDir(t)+`/lib.sh"
quiet=$(false; echo tolerated)
helper() {
  grep -q nothing /dev/null
}
helper
`)
	out, code := g.script(script)
	if code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	if !strings.Contains(out, `error: fails.sh:6: "grep -q nothing /dev/null" failed with status 1`) {
		t.Errorf("the failing command is not named with file and line:\n%s", out)
	}
	if strings.Contains(out, `"false"`) {
		t.Errorf("a tolerated failure inside a command substitution was reported:\n%s", out)
	}
}

// groundDir is test/ground in this checkout (the scripts under test).
func groundDir(t *testing.T) string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no caller")
	}
	return filepath.Dir(file)
}

// --- yaml-language-server.sh ----------------------------------------------------------------

// yamllsGround is a ground whose PATH holds the stand-ins and the few tools the script
// needs, and no Node.js or npm of the machine's: npm and node are stand-ins when given.
func yamllsGround(t *testing.T, npm string) *ground {
	g := newGround(t)
	tools := filepath.Join(g.state, "tools")
	if err := os.MkdirAll(tools, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"dirname", "date", "mkdir", "rm", "mv", "cat"} {
		path, err := exec.LookPath(tool)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(path, filepath.Join(tools, tool)); err != nil {
			t.Fatal(err)
		}
	}
	g.env = append(g.env, "PATH="+g.bin+":"+tools)
	if npm != "" {
		g.standIn("npm", npm)
		g.standIn("node", "exit 0")
	}
	return g
}

// npmInstalls stands in for npm install --prefix DIR PACKAGE: it records its arguments and
// writes the package's bin/yaml-language-server under DIR.
const npmInstalls = `
echo "$*" >> $STATE/npm.log
while [ $# -gt 0 ]; do
  if [ "$1" = --prefix ]; then prefix=$2; fi
  shift
done
mkdir -p $prefix/node_modules/yaml-language-server/bin
echo server > $prefix/node_modules/yaml-language-server/bin/yaml-language-server
`

func TestYAMLLanguageServerInstalledOnceFromNpm(t *testing.T) {
	g := yamllsGround(t, npmInstalls)
	want := filepath.Join(g.cache, "tools", "yaml-language-server-1.19.2", "node_modules", "yaml-language-server", "bin", "yaml-language-server")
	out, code := g.script("yaml-language-server.sh")
	if code != 0 || !strings.HasSuffix(strings.TrimSpace(out), want) {
		t.Fatalf("exit %d, output:\n%s\nwant the path %s", code, out, want)
	}
	npm := g.calls("npm")
	if len(npm) != 1 || !strings.Contains(npm[0], "install --prefix "+filepath.Join(g.cache, "tools", "yaml-language-server-1.19.2.new")) || !strings.HasSuffix(npm[0], "yaml-language-server@1.19.2") {
		t.Fatalf("npm calls = %q", npm)
	}
	os.Remove(filepath.Join(g.state, "npm.log"))
	if out, code := g.script("yaml-language-server.sh"); code != 0 || strings.TrimSpace(out) != want {
		t.Fatalf("second run: exit %d, output:\n%s", code, out)
	}
	if npm := g.calls("npm"); npm != nil {
		t.Errorf("npm called although the server is installed: %q", npm)
	}
}

func TestYAMLLanguageServerFailuresSayWhy(t *testing.T) {
	for _, c := range []struct{ name, npm, want string }{
		{"no npm", "", "npm is missing: yaml-language-server is installed from the npm registry"},
		{"npm fails", "echo 'npm ERR! network' >&2; exit 1", "npm install yaml-language-server@1.19.2 failed (is the npm registry reachable?)"},
		{"npm installs nothing", "exit 0", "npm installed yaml-language-server@1.19.2 without its bin/yaml-language-server"},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := yamllsGround(t, c.npm)
			out, code := g.script("yaml-language-server.sh")
			if code == 0 || !strings.Contains(out, c.want) {
				t.Errorf("exit %d, output:\n%s\nwant %q", code, out, c.want)
			}
			if _, err := os.Stat(filepath.Join(g.cache, "tools", "yaml-language-server-1.19.2")); !os.IsNotExist(err) {
				t.Errorf("a failed install left the tool's directory (%v)", err)
			}
		})
	}
}
