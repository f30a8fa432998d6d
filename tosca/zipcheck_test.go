package tosca

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
)

// oneEntryZip is an archive of service.yaml, stored uncompressed; with a data descriptor
// after its data when described.
func oneEntryZip(t *testing.T, described bool) []byte {
	t.Helper()
	body := []byte("tosca_definitions_version: tosca_simple_yaml_1_3\n")
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	header := &zip.FileHeader{Name: "service.yaml", Method: zip.Store}
	create := w.CreateHeader // writes the sizes in a data descriptor after the data
	if !described {
		header.CompressedSize64, header.UncompressedSize64 = uint64(len(body)), uint64(len(body))
		create = w.CreateRaw // writes the sizes in the local header
	}
	entry, err := create(header)
	if err == nil {
		_, err = entry.Write(body)
	}
	if err == nil {
		err = w.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// withUint16 and withUint32 return a copy of data with the little-endian value at offset set.
func withUint16(data []byte, offset int, value uint16) []byte {
	out := bytes.Clone(data)
	binary.LittleEndian.PutUint16(out[offset:], value)
	return out
}

func withUint32(data []byte, offset int, value uint32) []byte {
	out := bytes.Clone(data)
	binary.LittleEndian.PutUint32(out[offset:], value)
	return out
}

// TestZipLayoutRefusesLengthsPastTheEnd feeds the package loader archives whose headers give
// lengths that run past the end of the data (the fuzzer found the first): each is refused
// with an *InvalidError that says so, and nothing is read out of range.
func TestZipLayoutRefusesLengthsPastTheEnd(t *testing.T) {
	const (
		localNameLen        = 26 // offsets in a local header
		localExtraLen       = 28
		centralCompressed   = 20 // offset in a central directory header
		dataOffset          = localHeaderLen + len("service.yaml")
		descriptorWithSigLn = 16
	)
	plain, described := oneEntryZip(t, false), oneEntryZip(t, true)
	central := func(data []byte) int { return bytes.Index(data, []byte(centralHeaderSignature)) }
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"local name length", withUint16(plain, localNameLen, 0xffff), "name and extra field run past the end"},
		{"local extra length", withUint16(plain, localExtraLen, 0xfff0), "name and extra field run past the end"},
		{"compressed size", withUint32(plain, central(plain)+centralCompressed, 0xffff_fff0), "data runs past the end"},
		{"data descriptor", withUint32(described, central(described)+centralCompressed,
			uint32(len(described)-dataOffset-descriptorWithSigLn/2)), "data descriptor runs past the end"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := OpenArchive(c.data, "hostile.csar", fuzzLimits())
			if err == nil || !IsInvalid(err) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an *InvalidError saying %q", err, c.want)
			}
		})
	}
	for name, data := range map[string][]byte{"plain": plain, "described": described} {
		if _, err := OpenArchive(data, name+".csar", fuzzLimits()); err != nil {
			t.Errorf("the unpatched %s archive: %v", name, err)
		}
	}
}
