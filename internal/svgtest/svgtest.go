// Package svgtest reads SVG files back for the tests of the plots: one
// generic element tree and one check of the document's shape.
package svgtest

import (
	"bytes"
	"encoding/xml"
	"io"
	"testing"
)

// Node is a generic XML element.
type Node struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Nodes   []Node     `xml:",any"`
	Text    string     `xml:",chardata"`
}

// Attr returns the value of n's attribute name, "" when it has none.
func (n *Node) Attr(name string) string {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

// Walk calls fn for n and every element below it, in document order.
func (n *Node) Walk(fn func(*Node)) {
	fn(n)
	for i := range n.Nodes {
		n.Nodes[i].Walk(fn)
	}
}

// All returns n and the elements below it named name, in document order.
func (n *Node) All(name string) []*Node {
	var out []*Node
	n.Walk(func(m *Node) {
		if m.XMLName.Local == name {
			out = append(out, m)
		}
	})
	return out
}

// Texts returns the character data of every <text> element, in order.
func (n *Node) Texts() []string {
	var out []string
	for _, t := range n.All("text") {
		out = append(out, t.Text)
	}
	return out
}

// Parse checks that data is one well-formed XML document whose root is an
// SVG 1.1 <svg> with width, height and a matching viewBox, and returns
// its root. It fails t when data is not XML at all.
func Parse(t testing.TB, data []byte) *Node {
	t.Helper()
	if !bytes.HasPrefix(data, []byte(`<?xml version="1.0"`)) {
		t.Errorf("no XML declaration: %.40q", data)
	}
	// Well-formedness: the decoder's own token stream must end cleanly.
	d := xml.NewDecoder(bytes.NewReader(data))
	for {
		_, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, data)
		}
	}
	var root Node
	if err := xml.Unmarshal(data, &root); err != nil {
		t.Fatalf("unmarshal: %v", err)
	}
	if root.XMLName.Local != "svg" || root.XMLName.Space != "http://www.w3.org/2000/svg" || root.Attr("version") != "1.1" {
		t.Errorf("root %v version %q, want SVG 1.1 <svg>", root.XMLName, root.Attr("version"))
	}
	w, h := root.Attr("width"), root.Attr("height")
	if w == "" || h == "" || root.Attr("viewBox") != "0 0 "+w+" "+h {
		t.Errorf("width %q height %q viewBox %q", w, h, root.Attr("viewBox"))
	}
	return &root
}
