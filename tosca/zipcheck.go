package tosca

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"fmt"
	"sort"
)

// Zip record signatures and sizes (APPNOTE.TXT).
const (
	localHeaderSignature   = "PK\x03\x04"
	centralHeaderSignature = "PK\x01\x02"
	endSignature           = "PK\x05\x06"
	descriptorSignature    = "PK\x07\x08"
	localHeaderLen         = 30
	flagDataDescriptor     = 0x8
	zip64ExtraID           = 0x0001
)

// checkZipLayout refuses a zip that different readers could read differently: every entry
// of the central directory must have its local header where the previous entry ended,
// starting at the first byte (no data before it: no concatenated zips, no prepended
// archive), with the same name, method and flags (no mismatched headers), and the central
// directory must follow the last entry (no hidden or overlapping entries).
func checkZipLayout(data []byte, files []*zip.File) error {
	ordered := make([]*zip.File, len(files))
	copy(ordered, files)
	offsets := make(map[*zip.File]int64, len(files))
	for _, f := range ordered {
		offset, err := f.DataOffset()
		if err != nil {
			return fmt.Errorf("entry %s: its local header cannot be read: %s", Echo(f.Name), archiveProblem(err))
		}
		offsets[f] = offset
	}
	sort.SliceStable(ordered, func(i, j int) bool { return offsets[ordered[i]] < offsets[ordered[j]] })
	var at int64
	for _, f := range ordered {
		next, err := checkLocalHeader(data, at, f, offsets[f])
		if err != nil {
			return err
		}
		at = next
	}
	rest := data[at:]
	switch {
	case len(ordered) == 0 && !bytes.HasPrefix(rest, []byte(endSignature)):
		return fmt.Errorf("data before the end of its (empty) central directory: concatenated or prepended archives are not allowed")
	case len(ordered) > 0 && !bytes.HasPrefix(rest, []byte(centralHeaderSignature)):
		return fmt.Errorf("%d bytes after the last entry that are no central directory: concatenated, hidden or overlapping entries are not allowed", len(rest))
	}
	return nil
}

// checkLocalHeader checks the local header of f, expected at offset at with its data at
// dataOffset, against its central directory entry, and returns where the entry ends.
func checkLocalHeader(data []byte, at int64, f *zip.File, dataOffset int64) (int64, error) {
	if at+localHeaderLen > int64(len(data)) || string(data[at:at+4]) != localHeaderSignature {
		return 0, fmt.Errorf("entry %s: no local header where the previous entry ends (byte %d): concatenated, prepended or overlapping data is not allowed", Echo(f.Name), at)
	}
	header := data[at : at+localHeaderLen]
	flags := binary.LittleEndian.Uint16(header[6:])
	method := binary.LittleEndian.Uint16(header[8:])
	nameLen := int64(binary.LittleEndian.Uint16(header[26:]))
	extraLen := int64(binary.LittleEndian.Uint16(header[28:]))
	if at+localHeaderLen+nameLen+extraLen != dataOffset {
		return 0, fmt.Errorf("entry %s: the central directory places it at byte %d, not after the previous entry: hidden or overlapping entries are not allowed", Echo(f.Name), dataOffset)
	}
	if dataOffset > int64(len(data)) {
		return 0, fmt.Errorf("entry %s: its local header's name and extra field run past the end of the archive", Echo(f.Name))
	}
	name := string(data[at+localHeaderLen : at+localHeaderLen+nameLen])
	switch {
	case name != f.Name:
		return 0, fmt.Errorf("entry %s is named %s in its local header: mismatched headers are not allowed", Echo(f.Name), Echo(name))
	case method != f.Method:
		return 0, fmt.Errorf("entry %s: its local and central headers disagree on the compression method", Echo(f.Name))
	case flags&flagDataDescriptor != f.Flags&flagDataDescriptor:
		return 0, fmt.Errorf("entry %s: its local and central headers disagree on its data descriptor", Echo(f.Name))
	}
	if f.CompressedSize64 > uint64(int64(len(data))-dataOffset) {
		return 0, fmt.Errorf("entry %s: its data runs past the end of the archive", Echo(f.Name))
	}
	end := dataOffset + int64(f.CompressedSize64)
	if flags&flagDataDescriptor != 0 {
		end += descriptorLen(data, end, data[at+localHeaderLen+nameLen:dataOffset])
		if end > int64(len(data)) {
			return 0, fmt.Errorf("entry %s: its data descriptor runs past the end of the archive", Echo(f.Name))
		}
	} else if crc := binary.LittleEndian.Uint32(header[14:]); crc != f.CRC32 {
		return 0, fmt.Errorf("entry %s: its local and central headers disagree on its checksum", Echo(f.Name))
	}
	return end, nil
}

// descriptorLen is the length of the data descriptor at offset at: with or without its
// signature, with 64-bit sizes when the local header's extra field has a zip64 record.
func descriptorLen(data []byte, at int64, extra []byte) int64 {
	length := int64(12)
	if hasZip64Extra(extra) {
		length = 20
	}
	if at+4 <= int64(len(data)) && string(data[at:at+4]) == descriptorSignature {
		length += 4
	}
	return length
}

// hasZip64Extra tells whether an extra field holds a zip64 record.
func hasZip64Extra(extra []byte) bool {
	for len(extra) >= 4 {
		id := binary.LittleEndian.Uint16(extra)
		size := int(binary.LittleEndian.Uint16(extra[2:]))
		if id == zip64ExtraID {
			return true
		}
		if 4+size > len(extra) {
			return false
		}
		extra = extra[4+size:]
	}
	return false
}
