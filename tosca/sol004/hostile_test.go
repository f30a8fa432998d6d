package sol004

import (
	"archive/zip"
	"bytes"
	"crypto/rand"
	"encoding/pem"
	"runtime"
	"strings"
	"testing"

	"calaf.io/calaf/tosca"
)

// Hostile signature blocks get an error, never a panic, and bounded memory.
func TestHostileSignatures(t *testing.T) {
	ca := newPKI(t, "Hostile")
	noise := make([]byte, 4096)
	if _, err := rand.Read(noise); err != nil {
		t.Fatal(err)
	}
	// Nested indefinite-length BER: each level opens a constructed value that never closes.
	deep := bytes.Repeat([]byte{0x30, 0x80}, maxCMSBytes/2)
	// A length that claims far more bytes than there are.
	claims := []byte{0x30, 0x84, 0x7f, 0xff, 0xff, 0xff, 0x06, 0x09}
	cases := map[string][]byte{
		"random bytes":      noise,
		"deep nesting":      deep,
		"lying length":      claims,
		"empty":             {},
		"a certificate":     ca.vendor.cert.Raw,
		"oversized":         bytes.Repeat([]byte{0x04}, maxCMSBytes+1),
		"signed data, zero": {0x30, 0x00},
	}
	for name, der := range cases {
		t.Run(name, func(t *testing.T) {
			files := testFiles()
			files["service.mf"] = manifestOf(files) + "\n" + string(pem.EncodeToMemory(&pem.Block{Type: "CMS", Bytes: der}))
			dir := t.TempDir()
			for name, content := range files {
				write(t, dir, name, content)
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, err := verify(t, dir, ca.policy())
			runtime.ReadMemStats(&after)
			if err == nil || !tosca.IsIntegrity(err) {
				t.Fatalf("accepted or wrong error: %v", err)
			}
			if !strings.Contains(err.Error(), "service.mf:") {
				t.Fatalf("not located: %v", err)
			}
			if grown := after.TotalAlloc - before.TotalAlloc; grown > 256<<20 {
				t.Fatalf("verifying %d bytes allocated %d MiB", len(der), grown>>20)
			}
			t.Logf("%s (%d bytes): %d KiB allocated: %v", name, len(der), (after.TotalAlloc-before.TotalAlloc)>>10, err)
		})
	}
}

// An option 2 zip whose CSAR decompresses beyond the package limit is refused before it
// is read whole; a zip with files beside the CSAR, or two CSARs, is not an envelope.
func TestHostileEnvelopes(t *testing.T) {
	limits := tosca.DefaultLimits()
	limits.MaxTotalBytes = 1 << 20
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	w, _ := zw.Create("bomb.csar")
	zeros := make([]byte, 1<<20)
	for range 8 {
		w.Write(zeros)
	}
	w, _ = zw.Create("bomb.cms")
	w.Write([]byte("x"))
	zw.Close()
	if _, err := Unwrap(b.Bytes(), limits); err == nil || !strings.Contains(err.Error(), "bomb.csar decompresses to more than 1048576 bytes") {
		t.Fatalf("zip bomb: %v", err)
	}
	for name, files := range map[string][]string{
		"no signature":   {"a.csar", "a.cert"},
		"two CSARs":      {"a.csar", "b.csar", "a.cms"},
		"an extra file":  {"a.csar", "a.cms", "run.sh"},
		"two signatures": {"a.csar", "a.cms", "b.cms"},
	} {
		parts := map[string][]byte{}
		for _, f := range files {
			parts[f] = []byte("x")
		}
		_, err := Unwrap(zipFiles(t, files, parts), limits)
		if err == nil || !strings.Contains(err.Error(), "SOL004 option 2 zip: ") {
			t.Fatalf("%s: %v", name, err)
		}
	}
	// A CSAR (files in folders) is not an envelope, even holding a .csar.
	env, err := Unwrap(zipFiles(t, []string{"TOSCA-Metadata/TOSCA.meta", "inner.csar"}, map[string][]byte{"TOSCA-Metadata/TOSCA.meta": {}, "inner.csar": {}}), limits)
	if env != nil || err != nil {
		t.Fatalf("a CSAR taken for an envelope: %v, %v", env, err)
	}
}
