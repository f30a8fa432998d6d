package protocol

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestResultFrame(t *testing.T) {
	var buf bytes.Buffer
	buf.WriteString("noise before\n")
	if err := WriteResult(&buf, &Result{Error: "x", Attributes: map[string]any{"a": "b\n#calaf-result/1 9"}}); err != nil {
		t.Fatal(err)
	}
	res, err := ReadResult(buf.Bytes())
	if err != nil || res.Error != "x" || res.Attributes["a"] != "b\n#calaf-result/1 9" {
		t.Fatalf("%+v, %v", res, err)
	}
	for _, bad := range []string{"", "no frame", "\n#calaf-result/1 100\n{}", "\n#calaf-result/1 2\n{", "\n#calaf-result/1 x\n{}"} {
		if _, err := ReadResult([]byte(bad)); !errors.Is(err, ErrNoResult) {
			t.Errorf("%q: %v", bad, err)
		}
	}
	if _, err := ReadResult([]byte("\n#calaf-result/1 13\n{\"version\":7}\n")); err == nil || !strings.Contains(err.Error(), "protocol 7") {
		t.Errorf("version: %v", err)
	}
}

func TestRequestFrame(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteRequest(&buf, &Request{Kind: KindShell, Source: "echo hi"}); err != nil {
		t.Fatal(err)
	}
	buf.WriteString("more")
	req, err := ReadRequest(&buf)
	if err != nil || req.Kind != KindShell || req.Source != "echo hi" {
		t.Fatalf("%+v, %v", req, err)
	}
	for _, bad := range []string{"", "{}", "#calaf-request/1 99999999999\n", "#calaf-request/1 10\n{}"} {
		if _, err := ReadRequest(strings.NewReader(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestTail(t *testing.T) {
	if Tail("short", 10) != "short" {
		t.Error("short")
	}
	if got := Tail("line one\nline two\nline three", 14); got != "…line three" {
		t.Errorf("%q", got)
	}
}
