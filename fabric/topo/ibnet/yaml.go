package ibnet

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/rdmashuffle/rdmashuffle/fabric/topo"
)

// yamlFabric is the YAML format for fabrics written by hand:
//
//	name: two leaves            # optional: the Topology's name
//	switches:
//	  - {name: leaf-0, ports: 36, lid: 1}
//	  - {name: spine-0, ports: 36, lid: 2, guid: 0x0002c90200402c08, level: 1}
//	hosts:
//	  - {name: node01, lid: 10, switch: leaf-0, port: 1, guid: 0x0002c903000a1b2d, link: 2xHDR}
//	links:
//	  - [leaf-0/19, spine-0/1]
//	  - [leaf-0/20, spine-0/2, 4xHDR]
//
// A switch has a name (unique), a port count (1..255) and optionally a
// LID, a GUID and a level (inferred when absent). A host names the switch
// and port it is cabled to. A link joins two switch ports, each written
// switch-name/port (the last '/' separates the port). A host's cable and
// a link may give their active width and speed (as ibnetdiscover prints
// them: 4xEDR, 2xHDR, 1xSDR); without one a cable runs at the simulated
// profile's rate. LIDs are given to
// every device or to none (then assigned as OpenSM would: switches
// first).
type yamlFabric struct {
	Name     string       `yaml:"name"`
	Switches []yamlSwitch `yaml:"switches"`
	Hosts    []yamlHost   `yaml:"hosts"`
	Links    [][]string   `yaml:"links"`
}

type yamlSwitch struct {
	Name  string `yaml:"name"`
	Ports int    `yaml:"ports"`
	LID   int    `yaml:"lid"`
	GUID  uint64 `yaml:"guid"`
	Level *int   `yaml:"level"`
}

type yamlHost struct {
	Name   string `yaml:"name"`
	LID    int    `yaml:"lid"`
	GUID   uint64 `yaml:"guid"`
	Switch string `yaml:"switch"`
	Port   int    `yaml:"port"`
	Link   string `yaml:"link"`
}

var (
	yamlLine     = regexp.MustCompile(`line (\d+): (.*)`)
	yamlNotFound = regexp.MustCompile(`field (\S+) not found in type ibnet\.(\w+)`)
	yamlKinds    = map[string]string{
		"yamlFabric": "the fabric (known: name, switches, hosts, links)",
		"yamlSwitch": "a switch (known: name, ports, lid, guid, level)",
		"yamlHost":   "a host (known: name, lid, guid, switch, port, link)",
	}
	docStart = regexp.MustCompile(`(?m)^---(\s|$)`)
	// yamlTypes names the Go types of yaml.v3's messages for users.
	yamlTypes = strings.NewReplacer(
		"[]ibnet.yamlSwitch", "the list of switches",
		"[]ibnet.yamlHost", "the list of hosts",
		"[][]string", "the list of links",
		"[]string", "a link ([switch/port, switch/port] or [switch/port, switch/port, 4xEDR])",
		"ibnet.yamlFabric", "a fabric (a mapping with name, switches, hosts, links)",
		"ibnet.yamlSwitch", "a switch ({name, ports, lid, guid, level})",
		"ibnet.yamlHost", "a host ({name, lid, guid, switch, port, link})",
	)
)

// maxYAML is the largest YAML file ReadYAML reads.
const maxYAML = 64 << 20

// ReadYAML reads a fabric written by hand in the YAML format documented
// on yamlFabric and in docs/fabric-files.md. Unknown keys, a second YAML
// document, unknown switches, ports out of range, ports cabled twice and
// duplicate LIDs are errors naming the line. name prefixes errors and is
// the Topology's Name unless the file gives one. The result has passed
// Validate.
func ReadYAML(r io.Reader, name string) (*topo.Topology, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxYAML+1))
	if err != nil {
		return nil, &Error{File: name, Err: err}
	}
	if len(data) > maxYAML {
		return nil, &Error{File: name, Err: fmt.Errorf("%w: the file is larger than %d MiB; a fabric of that size belongs in ibnetdiscover's format", ErrUnsupported, maxYAML>>20)}
	}
	var f yamlFabric
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &Error{File: name, Err: fmt.Errorf("%w: the file holds no YAML document; a fabric has switches:, hosts: and links:", ErrSyntax)}
		}
		return nil, yamlErr(name, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		line := 0
		if m := docStart.FindAllIndex(data, -1); len(m) > 0 {
			// The first marker may open the first document.
			at := m[len(m)-1][0]
			if len(m) > 1 || len(bytes.TrimSpace(stripComments(data[:at]))) > 0 {
				line = bytes.Count(data[:at], []byte("\n")) + 1
			}
		}
		return nil, &Error{File: name, Line: line, Err: fmt.Errorf("%w: a second YAML document (after ---); a fabric file holds one document, remove the --- line or split the file", ErrSyntax)}
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, yamlErr(name, err)
	}
	b := &yamlBuilder{file: name, f: &f, lines: listLines(&root)}
	t, err := b.build()
	if err != nil {
		return nil, err
	}
	t.Name = name
	if f.Name != "" {
		t.Name = f.Name
	}
	return t, nil
}

// stripComments drops # comments, to tell whether text holds content.
func stripComments(b []byte) []byte {
	var out []byte
	for _, l := range bytes.Split(b, []byte("\n")) {
		if i := bytes.IndexByte(l, '#'); i >= 0 {
			l = l[:i]
		}
		out = append(out, l...)
	}
	return out
}

// yamlErr turns a yaml.v3 error into an *Error with its line.
func yamlErr(file string, err error) error {
	msg := err.Error()
	if te, ok := err.(*yaml.TypeError); ok && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	msg = strings.TrimPrefix(msg, "yaml: ")
	line := 0
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	}
	sentinel := ErrSyntax
	if m := yamlNotFound.FindStringSubmatch(msg); m != nil {
		msg = fmt.Sprintf("unknown key %q in %s", m[1], yamlKinds[m[2]])
	}
	msg = yamlTypes.Replace(msg)
	return &Error{File: file, Line: line, Err: fmt.Errorf("%w: %s", sentinel, msg)}
}

// listLines finds the line of each item of switches, hosts and links.
func listLines(root *yaml.Node) map[string][]int {
	out := make(map[string][]int)
	if root.Kind != yaml.DocumentNode || len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return out
	}
	m := root.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if seq := m.Content[i+1]; seq.Kind == yaml.SequenceNode {
			for _, it := range seq.Content {
				out[m.Content[i].Value] = append(out[m.Content[i].Value], it.Line)
			}
		}
	}
	return out
}
