package profilekit

import (
	"bytes"
	"html"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
)

// HTML turns a reference written by Markdown into a standalone HTML page (GitHub's table
// syntax and heading ids, so that the links between types work).
func HTML(markdown []byte, title string) ([]byte, error) {
	md := goldmark.New(goldmark.WithExtensions(extension.Table), goldmark.WithParserOptions(parser.WithAutoHeadingID()))
	var body bytes.Buffer
	if err := md.Convert(markdown, &body); err != nil {
		return nil, err
	}
	if title == "" {
		title = "Profile reference"
	}
	var page bytes.Buffer
	page.WriteString("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" + html.EscapeString(title) + "</title>\n")
	page.WriteString("<style>body{font-family:sans-serif;max-width:70em;margin:auto;padding:1em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2em .5em;vertical-align:top}code{background:#f4f4f4}</style>\n</head>\n<body>\n")
	page.Write(body.Bytes())
	page.WriteString("</body>\n</html>\n")
	return page.Bytes(), nil
}
